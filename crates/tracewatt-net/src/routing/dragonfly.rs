//! Dragonfly routing: minimal, Valiant and UGAL.
//!
//! - Minimal: at most local, global, local. When several global links join the two groups, a
//!   router holding one takes it directly; otherwise the `(dst mod count)`-th in port order.
//! - Valiant: the source router draws an intermediate group (uniform over groups other than the
//!   source's and the destination's, kept in `RouteState::inter`), routes minimally to it, then
//!   minimally to the destination: at most 5 switch hops. Intra-group pairs are also sent through
//!   an intermediate group. With no eligible group (fewer than 3 groups) it routes minimally. A
//!   packet that reaches its destination router on the way to the intermediate group (possible
//!   for intra-group pairs) is delivered there rather than sent on a detour and back.
//! - UGAL (also `adaptive`): the source router draws an intermediate group as Valiant does and
//!   takes the Valiant path only if `queued(first Valiant hop) x Valiant hops + threshold <
//!   queued(first minimal hop) x minimal hops`; the choice is kept for the whole path.
//!
//! `RouteState::phase`: 0 = not yet decided (source router), 1 = heading to the intermediate
//! group, 2 = heading to the destination.
//!
//! Deadlock freedom: a packet's `n`-th switch-to-switch hop (0-based) uses VC `n`. VCs strictly
//! increase along a path, so every dependency goes from VC `n` to VC `n + 1` (or to an ejection
//! channel) and the dependency graph is acyclic. Minimal paths need 3 VCs, Valiant/UGAL 5.

use super::{QueueView, RouteState, Router};
use crate::topology::{
    ChannelId, Device, LinkClass, NodeId, Shape, SwitchId, Topology, TopologyError,
};
use tracewatt_core::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Minimal,
    Valiant,
    Ugal { threshold_bytes: u64 },
}

const UNDECIDED: u8 = 0;
const TO_INTER: u8 = 1;
const TO_DST: u8 = 2;
const NONE: ChannelId = ChannelId::MAX;

/// A global link of a group: (target group, router holding it, channel, router at the far end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Global {
    to: u32,
    router: SwitchId,
    ch: ChannelId,
    far: SwitchId,
}

#[derive(Debug, Clone, Copy)]
struct Place {
    group: u32,
    index: u32,
}

#[derive(Debug)]
pub(crate) struct DragonflyRouter {
    mode: Mode,
    groups: u32,
    routers_per_group: u32,
    ejection: Vec<ChannelId>,
    node_switch: Vec<SwitchId>,
    /// Per router: its group and its index in the group, looked up rather than divided out of
    /// the router's id (several integer divisions per hop otherwise).
    place: Vec<Place>,
    /// Per router `s` and router index `r` of its group: the local channel, at `s * a + r`.
    local: Vec<ChannelId>,
    /// Global links of every group, sorted by (group, target, router, channel); those from
    /// group `G` to group `T` are `globals[pair_start[G * groups + T]..pair_start[G * groups + T
    /// + 1]]` (a direct index: this lookup is on every hop's path).
    globals: Vec<Global>,
    pair_start: Vec<u32>,
    /// Per router `s` and group `g` (not `s`'s): the next channel towards `g` when it does not
    /// depend on the packet (one global link usable), else `NONE`; at `s * groups + g`.
    toward: Vec<ChannelId>,
}

impl DragonflyRouter {
    pub(crate) fn new(topo: &Topology, mode: Mode) -> Result<Self, TopologyError> {
        let bad = |msg: String| {
            TopologyError::new(
                "machine.topology",
                format!("dragonfly wiring does not allow routing: {msg}"),
            )
        };
        let Shape::Dragonfly {
            groups,
            routers_per_group,
            ..
        } = topo.shape
        else {
            return Err(bad("not a dragonfly".into()));
        };
        let a = routers_per_group as usize;
        let n = topo.num_switches as usize;
        if n != groups as usize * a {
            return Err(bad("switch count is not groups x routers_per_group".into()));
        }
        let mut local = vec![NONE; n * a];
        let mut per_group: Vec<Vec<Global>> = vec![Vec::new(); groups as usize];
        for (s, outs) in topo.switch_out.iter().enumerate() {
            for &ch in outs {
                let c = &topo.channels[ch as usize];
                let Device::Switch(t) = c.dst else { continue };
                let t = t as usize;
                match c.class {
                    LinkClass::Local if t / a == s / a => local[s * a + t % a] = ch,
                    LinkClass::Global if t / a != s / a => per_group[s / a].push(Global {
                        to: (t / a) as u32,
                        router: s as SwitchId,
                        ch,
                        far: t as SwitchId,
                    }),
                    _ => return Err(bad(format!("unexpected link {s} -> {t}"))),
                }
            }
        }
        for s in 0..n {
            if let Some(r) = (0..a).find(|&r| r != s % a && local[s * a + r] == NONE) {
                return Err(bad(format!(
                    "router {s} has no local link to router {r} of its group"
                )));
            }
        }
        let mut globals = Vec::new();
        let mut pair_start = Vec::with_capacity(groups as usize * groups as usize + 1);
        for (g, mut list) in per_group.into_iter().enumerate() {
            list.sort_unstable();
            for t in 0..groups {
                let from = list.partition_point(|x| x.to < t);
                if t as usize != g && list.get(from).is_none_or(|x| x.to != t) {
                    return Err(bad(format!("group {g} has no global link to group {t}")));
                }
                pair_start.push((globals.len() + from) as u32);
            }
            globals.extend(list);
        }
        pair_start.push(globals.len() as u32);
        let mut router = Self {
            mode,
            groups,
            routers_per_group,
            ejection: topo.node_ejection.clone(),
            node_switch: (0..topo.num_nodes).map(|d| topo.node_switch(d)).collect(),
            place: (0..n as u32)
                .map(|s| Place {
                    group: s / routers_per_group,
                    index: s % routers_per_group,
                })
                .collect(),
            local,
            globals,
            pair_start,
            toward: Vec::new(),
        };
        router.toward = (0..n as u32)
            .flat_map(|s| (0..groups).map(move |g| (s, g)))
            .map(|(s, g)| {
                let here = router.candidates(s, g).filter(|x| x.router == s).count();
                let fixed = match here {
                    0 => router.candidates(s, g).count() == 1,
                    n => n == 1,
                };
                if router.group(s) != g && fixed {
                    router.towards_group_slow(s, g, 0)
                } else {
                    NONE
                }
            })
            .collect();
        Ok(router)
    }

    /// The global links from `sw`'s group to group `to`.
    fn candidates(&self, sw: SwitchId, to: u32) -> impl Iterator<Item = &Global> {
        let pair = (self.group(sw) * self.groups + to) as usize;
        self.globals[self.pair_start[pair] as usize..self.pair_start[pair + 1] as usize].iter()
    }

    fn group(&self, s: SwitchId) -> u32 {
        self.place[s as usize].group
    }

    fn local_channel(&self, from: SwitchId, to: SwitchId) -> ChannelId {
        self.local[(from * self.routers_per_group + self.place[to as usize].index) as usize]
    }

    /// The global link from `sw`'s group to group `to` a packet keyed `key` uses: one at `sw`
    /// itself if there is any, else the `(key mod count)`-th.
    fn global_link(&self, sw: SwitchId, to: u32, key: u32) -> Global {
        let pair = (self.group(sw) * self.groups + to) as usize;
        let cands =
            &self.globals[self.pair_start[pair] as usize..self.pair_start[pair + 1] as usize];
        if let [only] = cands {
            return *only;
        }
        let here = cands.iter().filter(|x| x.router == sw).count();
        if here > 0 {
            let pick = key as usize % here;
            if let Some(x) = cands.iter().filter(|x| x.router == sw).nth(pick) {
                return *x;
            }
        }
        // Non-empty: checked when the router was built.
        cands[key as usize % cands.len()]
    }

    /// Next channel from `sw` towards group `to` (not `sw`'s own group).
    #[inline]
    fn towards_group(&self, sw: SwitchId, to: u32, key: u32) -> ChannelId {
        let ch = self.toward[(sw * self.groups + to) as usize];
        if ch != NONE {
            return ch;
        }
        self.towards_group_slow(sw, to, key)
    }

    fn towards_group_slow(&self, sw: SwitchId, to: u32, key: u32) -> ChannelId {
        let link = self.global_link(sw, to, key);
        if link.router == sw {
            link.ch
        } else {
            self.local_channel(sw, link.router)
        }
    }

    /// Next channel from `sw` towards router `rd` (`sw != rd`) on a minimal path.
    fn towards_router(&self, sw: SwitchId, rd: SwitchId, key: u32) -> ChannelId {
        let to = self.group(rd);
        if self.group(sw) == to {
            self.local_channel(sw, rd)
        } else {
            self.towards_group(sw, to, key)
        }
    }

    /// Switch hops of the minimal path from `sw` to router `rd`.
    fn minimal_hops(&self, sw: SwitchId, rd: SwitchId, key: u32) -> u64 {
        if sw == rd {
            0
        } else if self.group(sw) == self.group(rd) {
            1
        } else {
            let link = self.global_link(sw, self.group(rd), key);
            u64::from(link.router != sw) + 1 + u64::from(link.far != rd)
        }
    }

    /// Switch hops of the Valiant path from `sw` via group `inter` to router `rd`.
    fn valiant_hops(&self, sw: SwitchId, inter: u32, rd: SwitchId, key: u32) -> u64 {
        let link = self.global_link(sw, inter, key);
        u64::from(link.router != sw) + 1 + self.minimal_hops(link.far, rd, key)
    }

    /// Uniform intermediate group other than `gs` and `gd`, if one exists.
    fn draw_intermediate(&self, gs: u32, gd: u32, rng: &mut Rng) -> Option<u32> {
        let excluded = if gs == gd { 1 } else { 2 };
        let count = self.groups.checked_sub(excluded).filter(|&c| c > 0)?;
        let mut v = rng.below(u64::from(count)) as u32;
        let (lo, hi) = (gs.min(gd), gs.max(gd));
        if v >= lo {
            v += 1;
        }
        if hi != lo && v >= hi {
            v += 1;
        }
        Some(v)
    }

    fn decide(
        &self,
        sw: SwitchId,
        rd: SwitchId,
        key: u32,
        state: &mut RouteState,
        view: &dyn QueueView,
        rng: &mut Rng,
    ) {
        state.phase = TO_DST;
        if self.mode == Mode::Minimal {
            return;
        }
        let Some(inter) = self.draw_intermediate(self.group(sw), self.group(rd), rng) else {
            return;
        };
        let take_valiant = match self.mode {
            Mode::Minimal => false,
            Mode::Valiant => true,
            Mode::Ugal { threshold_bytes } => {
                let min_cost = view
                    .queued_bytes(self.towards_router(sw, rd, key))
                    .saturating_mul(self.minimal_hops(sw, rd, key));
                let val_cost = view
                    .queued_bytes(self.towards_group(sw, inter, key))
                    .saturating_mul(self.valiant_hops(sw, inter, rd, key));
                val_cost.saturating_add(threshold_bytes) < min_cost
            }
        };
        if take_valiant {
            state.phase = TO_INTER;
            state.inter = inter;
        }
    }
}

impl Router for DragonflyRouter {
    fn num_vcs(&self) -> u8 {
        match self.mode {
            Mode::Minimal => 3,
            Mode::Valiant | Mode::Ugal { .. } => 5,
        }
    }

    fn route(
        &self,
        sw: SwitchId,
        _src: NodeId,
        dst: NodeId,
        state: &mut RouteState,
        view: &dyn QueueView,
        rng: &mut Rng,
    ) -> (ChannelId, u8) {
        let rd = self.node_switch[dst as usize];
        if sw == rd {
            state.vc = 0;
            return (self.ejection[dst as usize], 0);
        }
        if state.phase == UNDECIDED {
            self.decide(sw, rd, dst, state, view, rng);
        }
        if state.phase == TO_INTER && self.group(sw) == state.inter {
            state.phase = TO_DST;
        }
        let ch = if state.phase == TO_INTER {
            self.towards_group(sw, state.inter, dst)
        } else {
            self.towards_router(sw, rd, dst)
        };
        state.vc = state.hops;
        state.hops = state.hops.saturating_add(1);
        (ch, state.vc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::DragonflyArrangement;
    use crate::topology::{build, LinkParams};

    fn router(groups: u32) -> DragonflyRouter {
        let spec = crate::spec::TopologySpec::Dragonfly {
            groups,
            routers_per_group: groups - 1,
            nodes_per_router: 1,
            global_links_per_router: 1,
            arrangement: DragonflyArrangement::Absolute,
        };
        let link = |_| LinkParams {
            bandwidth_bps: 1,
            latency_ps: 1,
        };
        let topo = build(&spec, &link).expect("valid dragonfly");
        DragonflyRouter::new(&topo, Mode::Valiant).expect("valid router")
    }

    #[test]
    fn intermediate_group_is_uniform_over_the_others() {
        let r = router(5);
        let mut rng = Rng::new(1);
        for (gs, gd) in [(0, 4), (4, 0), (2, 2), (1, 3)] {
            let mut seen = [0u32; 5];
            for _ in 0..3000 {
                let g = r.draw_intermediate(gs, gd, &mut rng).expect("5 groups");
                seen[g as usize] += 1;
            }
            assert_eq!((seen[gs as usize], seen[gd as usize]), (0, 0));
            let others = if gs == gd { 4 } else { 3 };
            for (g, &c) in seen.iter().enumerate() {
                if g as u32 != gs && g as u32 != gd {
                    let expect = 3000 / others;
                    assert!(c.abs_diff(expect) < expect / 5, "{seen:?}");
                }
            }
        }
        assert_eq!(router(2).draw_intermediate(0, 1, &mut rng), None);
        assert_eq!(router(2).draw_intermediate(1, 1, &mut rng), Some(0));
    }
}
