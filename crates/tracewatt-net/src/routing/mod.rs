//! Routing: at each switch, which output channel and virtual channel a packet takes next.

use crate::topology::{ChannelId, NodeId, SwitchId};
use tracewatt_core::Rng;

/// Per-packet routing state, carried with the packet (small and `Copy`: no allocation per packet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteState {
    /// Switch-to-switch hops taken so far.
    pub hops: u8,
    /// Virtual channel the packet currently occupies.
    pub vc: u8,
    /// Algorithm-specific phase (e.g. fat-tree going up/down, Valiant before/after the
    /// intermediate group).
    pub phase: u8,
    /// Algorithm-specific target (e.g. Valiant intermediate group); `u32::MAX` when unset.
    pub inter: u32,
}

impl RouteState {
    pub fn new() -> Self {
        Self {
            inter: u32::MAX,
            ..Self::default()
        }
    }
}

/// Read access to the current occupancy of output ports, for adaptive routing.
pub trait QueueView {
    /// Bytes waiting at (or in flight on) channel `ch`'s output port, summed over virtual channels.
    fn queued_bytes(&self, ch: ChannelId) -> u64;
}

/// A routing algorithm bound to one topology.
///
/// Contract: following `route` from a packet's source switch reaches the destination node's
/// ejection channel in a bounded number of hops, and the (channel, vc) dependency graph it induces
/// is acyclic, so the fabric cannot deadlock with finite buffers.
pub trait Router: std::fmt::Debug + Send + Sync {
    /// Number of virtual channels this algorithm needs on every port.
    fn num_vcs(&self) -> u8;

    /// At switch `sw`, choose the output channel and the virtual channel it will use there for a
    /// packet from `src` to `dst`; update `state` (hops, vc, phase) accordingly. `state.hops == 0`
    /// means `sw` is the source node's switch.
    fn route(
        &self,
        sw: SwitchId,
        src: NodeId,
        dst: NodeId,
        state: &mut RouteState,
        view: &dyn QueueView,
        rng: &mut Rng,
    ) -> (ChannelId, u8);
}

mod dragonfly;
mod fat_tree;
mod single_switch;
mod torus;

use crate::spec::{RoutingAlgorithm, RoutingSpec};
use crate::topology::{Shape, Topology, TopologyError};

/// The algorithms that apply to a topology family, as spelled in the TOML (`default` first).
pub fn valid_algorithms(shape: &Shape) -> &'static [&'static str] {
    match shape {
        Shape::SingleSwitch => &["default", "minimal"],
        Shape::FatTree { .. } => &["default", "dmodk", "hashed", "adaptive"],
        Shape::Torus { .. } => &["default", "dimension_order"],
        Shape::Dragonfly { .. } => &["default", "minimal", "valiant", "ugal", "adaptive"],
    }
}

fn algorithm_name(alg: RoutingAlgorithm) -> &'static str {
    match alg {
        RoutingAlgorithm::Default => "default",
        RoutingAlgorithm::Dmodk => "dmodk",
        RoutingAlgorithm::Hashed => "hashed",
        RoutingAlgorithm::Adaptive => "adaptive",
        RoutingAlgorithm::DimensionOrder => "dimension_order",
        RoutingAlgorithm::Minimal => "minimal",
        RoutingAlgorithm::Valiant => "valiant",
        RoutingAlgorithm::Ugal => "ugal",
    }
}

/// Binds the routing algorithm of `spec` to `topo`. Fails when the algorithm does not apply to
/// the topology family (the error lists the ones that do) or the topology's wiring does not
/// satisfy what the algorithm relies on.
pub fn make_router(spec: &RoutingSpec, topo: &Topology) -> Result<Box<dyn Router>, TopologyError> {
    use RoutingAlgorithm as A;
    let alg = spec.algorithm;
    let router: Option<Box<dyn Router>> =
        match (&topo.shape, alg) {
            (Shape::SingleSwitch, A::Default | A::Minimal) => {
                Some(Box::new(single_switch::Direct::new(topo)))
            }
            (Shape::FatTree { .. }, A::Default | A::Dmodk) => Some(Box::new(
                fat_tree::UpDown::new(topo, fat_tree::UpChoice::Dmodk)?,
            )),
            (Shape::FatTree { .. }, A::Hashed) => Some(Box::new(fat_tree::UpDown::new(
                topo,
                fat_tree::UpChoice::Hashed,
            )?)),
            (Shape::FatTree { .. }, A::Adaptive) => Some(Box::new(fat_tree::UpDown::new(
                topo,
                fat_tree::UpChoice::Adaptive,
            )?)),
            (Shape::Torus { .. }, A::Default | A::DimensionOrder) => {
                Some(Box::new(torus::DimensionOrder::new(topo)?))
            }
            (Shape::Dragonfly { .. }, A::Default | A::Minimal) => Some(Box::new(
                dragonfly::DragonflyRouter::new(topo, dragonfly::Mode::Minimal)?,
            )),
            (Shape::Dragonfly { .. }, A::Valiant) => Some(Box::new(
                dragonfly::DragonflyRouter::new(topo, dragonfly::Mode::Valiant)?,
            )),
            (Shape::Dragonfly { .. }, A::Ugal | A::Adaptive) => {
                Some(Box::new(dragonfly::DragonflyRouter::new(
                    topo,
                    dragonfly::Mode::Ugal {
                        threshold_bytes: spec.ugal_threshold_bytes,
                    },
                )?))
            }
            _ => None,
        };
    router.ok_or_else(|| {
        let family = match topo.shape {
            Shape::SingleSwitch => "single_switch",
            Shape::FatTree { .. } => "fat_tree",
            Shape::Torus { .. } => "torus",
            Shape::Dragonfly { .. } => "dragonfly",
        };
        TopologyError::new(
            "machine.routing.algorithm",
            format!(
                "`{}` does not apply to a {family} topology; expected one of: {}",
                algorithm_name(alg),
                valid_algorithms(&topo.shape).join(", ")
            ),
        )
    })
}
