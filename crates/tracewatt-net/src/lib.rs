//! The interconnect: what is connected to what (`topology`), which way packets go (`routing`),
//! and how packets move through ports and links with contention (`fabric`), or, faster, how
//! messages flow as max-min shared streams (`flow`).

pub mod fabric;
pub mod flow;
pub mod routing;
pub mod spec;
pub mod topology;

pub use routing::{make_router, QueueView, RouteState, Router};
pub use spec::{DragonflyArrangement, RoutingAlgorithm, RoutingSpec, TopologySpec};
pub use topology::{
    Channel, ChannelId, Device, LinkClass, LinkParams, NodeId, Shape, SwitchId, Topology,
    TopologyError,
};
