//! Dimension-order routing on a torus with dateline virtual channels.
//!
//! The packet corrects dimension 0 first, then 1, and so on, each along the shorter way round
//! the ring (the `+` direction when both are equally short, i.e. distance `k / 2`).
//!
//! Deadlock freedom (2 VCs): within a dimension a packet uses VC 0 until it takes that
//! dimension's wrap link (`k-1 -> 0` going `+`, `0 -> k-1` going `-`), which it takes on VC 1 and
//! stays on VC 1 for the rest of that dimension; entering the next dimension resets it to VC 0
//! (`RouteState::phase` holds the current dimension + 1). Per ring and direction, the VC 0
//! channels never include the wrap link, so their dependencies form a chain, not a cycle; the
//! VC 1 channels start at the wrap link and a minimal path (at most `k / 2` hops) never gets back
//! to it, so they form a chain too; dependencies go only VC 0 -> VC 1 within a dimension and
//! from a lower to a higher dimension across dimensions. Hence the (channel, VC) dependency graph
//! is acyclic.

use super::{QueueView, RouteState, Router};
use crate::topology::torus::{minus_port, plus_port};
use crate::topology::{ChannelId, NodeId, Shape, SwitchId, Topology, TopologyError};
use tracewatt_core::Rng;

#[derive(Debug)]
pub(crate) struct DimensionOrder {
    dims: Vec<u32>,
    ejection: Vec<ChannelId>,
    node_switch: Vec<SwitchId>,
    /// Per switch and dimension: `[plus, minus]` output channels, at `s * ndims + dim`.
    out: Vec<[ChannelId; 2]>,
    /// Per switch and dimension: the coordinate, at `s * ndims + dim` (looked up rather than
    /// divided out of the switch id on every hop).
    coord: Vec<u32>,
}

impl DimensionOrder {
    pub(crate) fn new(topo: &Topology) -> Result<Self, TopologyError> {
        let Shape::Torus {
            dims,
            nodes_per_switch,
        } = &topo.shape
        else {
            return Err(TopologyError::new("machine.topology", "not a torus"));
        };
        let mut out = Vec::with_capacity(topo.num_switches as usize * dims.len());
        for outs in &topo.switch_out {
            for dim in 0..dims.len() {
                let plus = outs.get(plus_port(*nodes_per_switch, dim) as usize);
                let minus = outs.get(minus_port(*nodes_per_switch, dim) as usize);
                match (plus, minus) {
                    (Some(&p), Some(&m)) => out.push([p, m]),
                    _ => {
                        return Err(TopologyError::new(
                            "machine.topology",
                            "torus switch lacks the ports of its dimensions",
                        ))
                    }
                }
            }
        }
        let mut coord = Vec::with_capacity(out.len());
        for s in 0..topo.num_switches {
            let mut rest = s;
            for &k in dims {
                coord.push(rest % k);
                rest /= k;
            }
        }
        Ok(Self {
            dims: dims.clone(),
            ejection: topo.node_ejection.clone(),
            node_switch: (0..topo.num_nodes).map(|d| topo.node_switch(d)).collect(),
            out,
            coord,
        })
    }
}

impl Router for DimensionOrder {
    fn num_vcs(&self) -> u8 {
        2
    }

    fn route(
        &self,
        sw: SwitchId,
        _src: NodeId,
        dst: NodeId,
        state: &mut RouteState,
        _view: &dyn QueueView,
        _rng: &mut Rng,
    ) -> (ChannelId, u8) {
        let target = self.node_switch[dst as usize];
        let nd = self.dims.len();
        let here = &self.coord[sw as usize * nd..][..nd];
        let there = &self.coord[target as usize * nd..][..nd];
        for (dim, &k) in self.dims.iter().enumerate() {
            let (c, t) = (here[dim], there[dim]);
            if c == t {
                continue;
            }
            let forward = if t > c { t - c } else { t + k - c }; // hops going `+`
            let plus = forward <= k - forward;
            let wraps = if plus { c == k - 1 } else { c == 0 };
            if usize::from(state.phase) != dim + 1 {
                state.phase = (dim + 1) as u8;
                state.vc = 0;
            }
            if wraps {
                state.vc = 1;
            }
            state.hops = state.hops.saturating_add(1);
            let ch = self.out[sw as usize * nd + dim][usize::from(!plus)];
            return (ch, state.vc);
        }
        state.vc = 0;
        (self.ejection[dst as usize], 0)
    }
}
