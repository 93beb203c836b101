//! The interconnect: what is connected to what (`topology`), which way packets go (`routing`),
//! and how packets move through ports and links with contention (`fabric`), or, faster, how
//! messages flow as max-min shared streams (`flow`); [`Network`] is the one interface over both.

pub mod fabric;
pub mod flow;
pub mod network;
pub mod routing;
pub mod spec;
pub mod topology;

pub use network::Network;
pub use routing::{make_router, QueueView, RouteState, Router};
pub use spec::{DragonflyArrangement, RoutingAlgorithm, RoutingSpec, TopologySpec};
pub use topology::{
    Channel, ChannelId, Device, LinkClass, LinkParams, NodeId, Shape, SwitchId, Topology,
    TopologyError,
};
