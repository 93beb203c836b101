//! One switch with every node on it: node `n` on port `n`. The baseline with no network hops.

use super::builder::{check_count, check_ports, Builder, Layout};
use super::{LinkClass, LinkParams, Shape, Topology, TopologyError};

pub(crate) fn layout(nodes: u32) -> Result<Layout, TopologyError> {
    const FIELD: &str = "machine.topology.nodes";
    let nodes = check_count(u64::from(nodes), FIELD, "nodes")?;
    let ports = check_ports(u64::from(nodes), FIELD)?;
    Layout::new(nodes, vec![ports])
}

pub(crate) fn build(
    nodes: u32,
    link: &dyn Fn(LinkClass) -> LinkParams,
) -> Result<Topology, TopologyError> {
    let layout = layout(nodes)?;
    let mut b = Builder::new(&layout, link);
    for n in 0..nodes {
        b.node_link(n, 0, n as u16);
    }
    b.finish(Shape::SingleSwitch)
}
