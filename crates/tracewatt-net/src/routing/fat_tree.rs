//! Up/down routing on fat-trees: climb until the current switch is an ancestor of the
//! destination's leaf, then descend.
//!
//! Works on any wiring where switch levels are given by [`Shape::FatTree`] and every top-level
//! switch is an ancestor of every leaf (checked when the router is built), which the builders
//! guarantee. Every path is a run of up-channels followed by a run of down-channels, and no
//! down-channel ever leads to an up-channel, so the channel dependency graph is acyclic with a
//! single virtual channel.
//!
//! Up-port choice at a level-`l` switch with `w` uplinks (`D_l` = product of the uplink counts of
//! the levels below):
//! - `Dmodk`: `(dst / D_l) mod w`. All packets for one destination take the same upper switches,
//!   so down paths converge (the classic d-mod-k of XGFTs).
//! - `Hashed`: as `Dmodk` with `dst` replaced by a fixed integer hash of `(src, dst)`, spreading
//!   one destination's traffic while keeping each flow on one path.
//! - `Adaptive`: the uplink with the fewest queued bytes; ties go to the first one found scanning
//!   cyclically from the `Dmodk` choice, so an idle network routes exactly like `Dmodk`.
//!
//! Down-port choice (several children can lead to the destination leaf, or parallel links): the
//! `(dst mod count)`-th such channel in port order, a function of the destination only.

use super::{QueueView, RouteState, Router};
use crate::topology::{ChannelId, Device, NodeId, Shape, SwitchId, Topology, TopologyError};
use tracewatt_core::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpChoice {
    Dmodk,
    Hashed,
    Adaptive,
}

#[derive(Debug)]
pub(crate) struct UpDown {
    choice: UpChoice,
    ejection: Vec<ChannelId>,
    /// Per node: its leaf switch (leaf ids are `0..num_leaves`).
    node_leaf: Vec<SwitchId>,
    /// Per switch: level index (0 = leaves).
    level: Vec<u8>,
    /// Per switch: up-channels in port order.
    up: Vec<Vec<ChannelId>>,
    /// Per switch: down-channels in port order with the child they lead to.
    down: Vec<Vec<(ChannelId, SwitchId)>>,
    /// Per level: product of the uplink counts of the levels below (`D_l`).
    divisor: Vec<u64>,
    /// Per switch: bitset of the leaves below it, `words` u64s each.
    below: Vec<u64>,
    words: usize,
}

/// A fixed 64-bit mix (splitmix64 finalizer): deterministic across runs and platforms.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl UpDown {
    pub(crate) fn new(topo: &Topology, choice: UpChoice) -> Result<Self, TopologyError> {
        let bad = |msg: String| {
            TopologyError::new(
                "machine.topology",
                format!("fat-tree wiring does not allow up/down routing: {msg}"),
            )
        };
        let Shape::FatTree {
            switches_per_level, ..
        } = &topo.shape
        else {
            return Err(bad("not a fat-tree".into()));
        };
        let n = topo.num_switches as usize;
        let mut level = Vec::with_capacity(n);
        for (l, &count) in switches_per_level.iter().enumerate() {
            level.resize(level.len() + count as usize, l as u8);
        }
        if level.len() != n {
            return Err(bad(
                "switches_per_level does not add up to num_switches".into()
            ));
        }
        let num_leaves = switches_per_level.first().copied().unwrap_or(0) as usize;
        let words = num_leaves.div_ceil(64).max(1);
        let node_leaf: Vec<SwitchId> = (0..topo.num_nodes).map(|d| topo.node_switch(d)).collect();
        if let Some(d) = node_leaf.iter().position(|&s| level[s as usize] != 0) {
            return Err(bad(format!("node {d} is not on a leaf switch")));
        }
        let mut up = vec![Vec::new(); n];
        let mut down = vec![Vec::new(); n];
        for (s, outs) in topo.switch_out.iter().enumerate() {
            for &ch in outs {
                if let Device::Switch(t) = topo.channels[ch as usize].dst {
                    if level[t as usize] > level[s] {
                        up[s].push(ch);
                    } else if level[t as usize] < level[s] {
                        down[s].push((ch, t));
                    } else {
                        return Err(bad(format!("link between same-level switches {s} and {t}")));
                    }
                }
            }
        }
        let levels = switches_per_level.len();
        let mut divisor = vec![1u64; levels];
        for l in 1..levels {
            let w = (0..n)
                .filter(|&s| level[s] as usize == l - 1)
                .map(|s| up[s].len() as u64)
                .max()
                .unwrap_or(1)
                .max(1);
            divisor[l] = divisor[l - 1].saturating_mul(w);
        }
        let mut below = vec![0u64; n * words];
        for leaf in 0..num_leaves {
            below[leaf * words + leaf / 64] |= 1 << (leaf % 64);
        }
        // Switch ids are level by level, so children are always done before their parents.
        for s in num_leaves..n {
            for &(_, child) in &down[s] {
                for w in 0..words {
                    below[s * words + w] |= below[child as usize * words + w];
                }
            }
        }
        let router = Self {
            choice,
            ejection: topo.node_ejection.clone(),
            node_leaf,
            level,
            up,
            down,
            divisor,
            below,
            words,
        };
        for s in 0..n {
            if router.up[s].is_empty() {
                if let Some(leaf) = (0..num_leaves).find(|&l| !router.is_below(s, l as SwitchId)) {
                    return Err(bad(format!(
                        "top switch {s} is not an ancestor of leaf {leaf}"
                    )));
                }
            }
        }
        Ok(router)
    }

    fn is_below(&self, sw: usize, leaf: SwitchId) -> bool {
        let leaf = leaf as usize;
        self.below[sw * self.words + leaf / 64] & (1 << (leaf % 64)) != 0
    }

    fn dmodk_index(&self, sw: usize, key: u64, width: usize) -> usize {
        ((key / self.divisor[self.level[sw] as usize]) % width as u64) as usize
    }

    fn choose_up(&self, sw: usize, src: NodeId, dst: NodeId, view: &dyn QueueView) -> ChannelId {
        let ups = &self.up[sw];
        match self.choice {
            UpChoice::Dmodk => ups[self.dmodk_index(sw, u64::from(dst), ups.len())],
            UpChoice::Hashed => {
                let key = mix64((u64::from(src) << 32) | u64::from(dst));
                ups[self.dmodk_index(sw, key, ups.len())]
            }
            UpChoice::Adaptive => {
                let start = self.dmodk_index(sw, u64::from(dst), ups.len());
                let mut best = ups[start];
                let mut best_q = view.queued_bytes(best);
                for i in 1..ups.len() {
                    let ch = ups[(start + i) % ups.len()];
                    let q = view.queued_bytes(ch);
                    if q < best_q {
                        best = ch;
                        best_q = q;
                    }
                }
                best
            }
        }
    }

    fn choose_down(&self, sw: usize, dst: NodeId, leaf: SwitchId) -> ChannelId {
        let down = &self.down[sw];
        let count = down
            .iter()
            .filter(|&&(_, child)| self.is_below(child as usize, leaf))
            .count();
        // `count >= 1` because `leaf` is below `sw`, hence below one of its children.
        let pick = dst as usize % count.max(1);
        down.iter()
            .filter(|&&(_, child)| self.is_below(child as usize, leaf))
            .nth(pick)
            .map_or(down[0].0, |&(ch, _)| ch)
    }
}

impl Router for UpDown {
    fn num_vcs(&self) -> u8 {
        1
    }

    fn route(
        &self,
        sw: SwitchId,
        src: NodeId,
        dst: NodeId,
        state: &mut RouteState,
        view: &dyn QueueView,
        _rng: &mut Rng,
    ) -> (ChannelId, u8) {
        state.vc = 0;
        let leaf = self.node_leaf[dst as usize];
        if sw == leaf {
            return (self.ejection[dst as usize], 0);
        }
        let s = sw as usize;
        let ch = if self.is_below(s, leaf) {
            state.phase = 1;
            self.choose_down(s, dst, leaf)
        } else {
            self.choose_up(s, src, dst, view)
        };
        state.hops = state.hops.saturating_add(1);
        (ch, 0)
    }
}
