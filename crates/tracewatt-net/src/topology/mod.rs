//! Topologies as a directed graph of channels (one per link direction) between nodes and switches.
//! Builders for each topology family live in submodules; all produce the same [`Topology`].

use serde::{Deserialize, Serialize};
use tracewatt_core::Ps;

pub type NodeId = u32;
pub type SwitchId = u32;
/// Index of one link direction in [`Topology::channels`].
pub type ChannelId = u32;

/// An endpoint of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Device {
    Node(NodeId),
    Switch(SwitchId),
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Node(n) => write!(f, "n{n}"),
            Device::Switch(s) => write!(f, "s{s}"),
        }
    }
}

/// What kind of link a channel belongs to. Link parameters (bandwidth, latency, and later the
/// PHY power figures) can be set per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LinkClass {
    /// Between a node's NIC and its switch (both directions).
    Node,
    /// Fat-tree link between switch level `level` and `level + 1` (leaves are level 1).
    Tree { level: u8 },
    /// Torus link along dimension `dim`.
    Torus { dim: u8 },
    /// Dragonfly link between routers of one group.
    Local,
    /// Dragonfly link between groups.
    Global,
}

impl LinkClass {
    /// Stable short name used in result tables (`links.parquet` column `kind`).
    pub fn name(&self) -> String {
        match self {
            LinkClass::Node => "node".to_string(),
            LinkClass::Tree { level } => format!("tree{level}"),
            LinkClass::Torus { dim } => format!("torus{dim}"),
            LinkClass::Local => "local".to_string(),
            LinkClass::Global => "global".to_string(),
        }
    }
}

/// One direction of a physical link.
#[derive(Debug, Clone)]
pub struct Channel {
    pub src: Device,
    pub dst: Device,
    /// Output port index on `src` (for a node: 0).
    pub src_port: u16,
    /// Input port index on `dst` (for a node: 0).
    pub dst_port: u16,
    pub class: LinkClass,
    pub bandwidth_bps: u64,
    pub latency_ps: Ps,
    /// The opposite direction of the same physical link.
    pub reverse: ChannelId,
}

/// Link bandwidth (bits per second) and propagation latency for a link class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkParams {
    pub bandwidth_bps: u64,
    pub latency_ps: Ps,
}

/// Family-specific facts that routing and reporting need.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    SingleSwitch,
    FatTree {
        levels: u8,
        /// Switch ids per level, level 1 (leaves) first.
        switches_per_level: Vec<u32>,
        nodes_per_leaf: u32,
    },
    Torus {
        dims: Vec<u32>,
        nodes_per_switch: u32,
    },
    Dragonfly {
        groups: u32,
        routers_per_group: u32,
        nodes_per_router: u32,
        global_links_per_router: u32,
    },
}

/// The whole machine's wiring.
#[derive(Debug, Clone)]
pub struct Topology {
    pub shape: Shape,
    pub num_nodes: u32,
    pub num_switches: u32,
    pub channels: Vec<Channel>,
    /// Per node: the channel from the node to its switch.
    pub node_injection: Vec<ChannelId>,
    /// Per node: the channel from its switch to the node.
    pub node_ejection: Vec<ChannelId>,
    /// Per switch: its output channels indexed by output port.
    pub switch_out: Vec<Vec<ChannelId>>,
    /// Per switch: the number of input ports (equal to output ports for every family here).
    pub switch_ports: Vec<u16>,
}

/// A topology that cannot be built as described.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct TopologyError {
    /// The configuration field at fault, e.g. `machine.topology.radix`.
    pub field: String,
    pub message: String,
}

impl TopologyError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl Topology {
    /// The switch a node hangs off.
    pub fn node_switch(&self, node: NodeId) -> SwitchId {
        match self.channels[self.node_injection[node as usize] as usize].dst {
            Device::Switch(s) => s,
            Device::Node(_) => unreachable!("node injection channel ends at a node"),
        }
    }
}

mod builder;
mod dragonfly;
mod fat_tree;
mod single_switch;
pub mod torus;

use crate::spec::TopologySpec;

/// Most nodes or switches a built topology may have: far above any machine we simulate, low
/// enough that a typo in a spec fails fast instead of exhausting memory.
pub const MAX_DEVICES: u64 = 1 << 24;

/// How big a topology is: known from its spec before it is built (see [`size`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub nodes: u32,
    pub switches: u32,
    /// Physical links, node links included (each is two channels).
    pub links: u64,
}

/// The size of the topology `spec` describes, with every check [`build`] makes, but without
/// building it: a run can refuse a machine too large for memory before allocating it.
pub fn size(spec: &TopologySpec) -> Result<Size, TopologyError> {
    let layout = match spec {
        TopologySpec::SingleSwitch { nodes } => single_switch::layout(*nodes)?,
        TopologySpec::FatTree { .. } => fat_tree::plan(spec)?.layout,
        TopologySpec::Torus {
            dims,
            nodes_per_switch,
        } => torus::layout(dims, *nodes_per_switch)?,
        TopologySpec::Dragonfly { .. } => dragonfly::layout(&dragonfly::Params::of(spec)?)?,
    };
    Ok(layout.size())
}

/// Builds the topology described by `spec`, asking `link` for the parameters of each link class.
///
/// Construction is deterministic: the same spec always yields the same channel ids. In every
/// family, node links come first (channels `2n` / `2n + 1` are node `n`'s injection / ejection
/// channel) and a switch's node ports are its lowest ports (`0..nodes_per_switch`); nodes are
/// numbered consecutively per switch. The family modules document the rest of the wiring.
pub fn build(
    spec: &TopologySpec,
    link: &dyn Fn(LinkClass) -> LinkParams,
) -> Result<Topology, TopologyError> {
    match spec {
        TopologySpec::SingleSwitch { nodes } => single_switch::build(*nodes, link),
        TopologySpec::FatTree { .. } => fat_tree::build(spec, link),
        TopologySpec::Torus {
            dims,
            nodes_per_switch,
        } => torus::build(dims, *nodes_per_switch, link),
        TopologySpec::Dragonfly { .. } => dragonfly::build(&dragonfly::Params::of(spec)?, link),
    }
}

impl Topology {
    /// Number of physical (bidirectional) links, node links included.
    pub fn num_links(&self) -> usize {
        self.channels.len() / 2
    }

    /// The network diameter in links: the largest, over pairs of distinct nodes, of the number of
    /// links on a shortest path between them (the two node links plus the switch-to-switch hops).
    ///
    /// This is a property of the wiring, found by breadth-first search from the switches of
    /// [`Topology::diameter_sources`] only (O(channels) each), not from every switch; a routing
    /// algorithm may take longer paths (dragonfly minimal routing can use 3 switch hops where a
    /// 2-hop path through another group exists). Returns 0 for a machine with fewer than two
    /// nodes.
    pub fn diameter_hops(&self) -> u32 {
        if self.num_nodes < 2 {
            return 0;
        }
        let n = self.num_switches as usize;
        let mut has_nodes = vec![false; n];
        for node in 0..self.num_nodes {
            has_nodes[self.node_switch(node) as usize] = true;
        }
        let mut dist = vec![u32::MAX; n];
        let mut queue: Vec<usize> = Vec::with_capacity(n);
        let mut worst = 0u32;
        for start in self.diameter_sources() {
            dist.fill(u32::MAX);
            queue.clear();
            dist[start] = 0;
            queue.push(start);
            let mut head = 0;
            while head < queue.len() {
                let s = queue[head];
                head += 1;
                for &ch in &self.switch_out[s] {
                    if let Device::Switch(t) = self.channels[ch as usize].dst {
                        let t = t as usize;
                        if dist[t] == u32::MAX {
                            dist[t] = dist[s] + 1;
                            queue.push(t);
                        }
                    }
                }
            }
            for t in (0..n).filter(|&t| has_nodes[t]) {
                // Same switch: only meaningful when it holds two nodes, i.e. always 2 links.
                worst = worst.max(dist[t]);
            }
        }
        worst.saturating_add(2)
    }

    /// Switches whose largest distance to a switch with nodes is the diameter, by the symmetry
    /// of each family (an all-pairs search took minutes on a 100,000-switch torus):
    /// - a torus looks the same from every switch (a shift of coordinates maps any switch to
    ///   any other), and so does a single switch;
    /// - in a fat-tree every leaf reaches every spine (2 levels), and every aggregation switch
    ///   of its pod and through them every core (3 levels), so leaf 0 is as far from the
    ///   farthest leaf as any leaf is; upper switches hold no nodes;
    /// - in a dragonfly every group is wired alike (relative arrangement: rotating the group
    ///   numbers maps the wiring onto itself; absolute: swapping the numbers of groups G and
    ///   G + 1 does), so the routers of group 0 see every distance there is.
    ///
    /// The tests check each family against the search from every switch.
    fn diameter_sources(&self) -> std::ops::Range<usize> {
        match &self.shape {
            Shape::Dragonfly {
                routers_per_group, ..
            } => 0..*routers_per_group as usize,
            Shape::SingleSwitch | Shape::FatTree { .. } | Shape::Torus { .. } => 0..1,
        }
    }
}
