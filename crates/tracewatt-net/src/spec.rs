//! Configuration of a topology and its routing, as written in a run's TOML (`[machine.topology]`,
//! `[machine.routing]`). Every field has a default; unknown fields are errors.

use serde::{Deserialize, Serialize};

/// `[machine.topology]`: which family and its shape. Selected by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Every node on one switch.
    SingleSwitch { nodes: u32 },
    /// k-ary n-tree / folded Clos with 2 or 3 switch levels.
    FatTree {
        /// Switch levels: 2 (leaf + spine) or 3 (leaf + aggregation + core).
        #[serde(default = "default_levels")]
        levels: u8,
        /// Ports per switch.
        radix: u32,
        /// Nodes on each leaf switch (default: radix / 2).
        #[serde(default)]
        nodes_per_leaf: Option<u32>,
        /// Down:up bandwidth ratio at the leaves, e.g. 2.0 halves the uplinks (default 1.0).
        #[serde(default = "default_taper")]
        taper: f64,
        /// Number of leaf switches in all; default: the full tree the radix allows. With 3
        /// levels it must equal pods x leaves_per_pod (and sets pods when pods is unset).
        #[serde(default)]
        leaves: Option<u32>,
        /// Pods (3 levels only; default: radix, or leaves / leaves_per_pod).
        #[serde(default)]
        pods: Option<u32>,
        /// Leaf switches per pod (3 levels; default radix / 2).
        #[serde(default)]
        leaves_per_pod: Option<u32>,
        /// Top-level switches: spines (2 levels) or core switches (3 levels); default: the
        /// fewest that give every uplink a port within the radix.
        #[serde(default)]
        spines: Option<u32>,
    },
    /// Torus with any number of dimensions, wrap-around in each.
    Torus {
        dims: Vec<u32>,
        #[serde(default = "default_one")]
        nodes_per_switch: u32,
    },
    /// Dragonfly with all-to-all groups and the canonical ("absolute") global arrangement.
    Dragonfly {
        groups: u32,
        routers_per_group: u32,
        nodes_per_router: u32,
        global_links_per_router: u32,
        #[serde(default)]
        arrangement: DragonflyArrangement,
    },
}

/// How a dragonfly's global links are assigned to routers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DragonflyArrangement {
    /// Global port j of group g (over all routers, router-major) goes to the j-th other group.
    #[default]
    Absolute,
    /// Group g's global port j goes to group (g + j + 1) mod groups.
    Relative,
}

/// `[machine.routing]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// Algorithm; `default` picks the family's standard one (fat-tree d-mod-k, torus
    /// dimension-order, dragonfly minimal).
    #[serde(default)]
    pub algorithm: RoutingAlgorithm,
    /// UGAL: take the non-minimal path when its queue x hops is below the minimal one's by more
    /// than this many bytes.
    #[serde(default)]
    pub ugal_threshold_bytes: u64,
}

impl Default for RoutingSpec {
    fn default() -> Self {
        Self {
            algorithm: RoutingAlgorithm::Default,
            ugal_threshold_bytes: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutingAlgorithm {
    #[default]
    Default,
    /// Fat-tree: up-port chosen by destination (d-mod-k).
    Dmodk,
    /// Fat-tree: up-port chosen by a hash of (source, destination).
    Hashed,
    /// Fat-tree: least-occupied up-port; dragonfly: alias of `ugal`.
    Adaptive,
    /// Torus: dimension-order with wrap-around (dateline virtual channels).
    DimensionOrder,
    /// Dragonfly minimal.
    Minimal,
    /// Dragonfly Valiant (random intermediate group).
    Valiant,
    /// Dragonfly UGAL (minimal or Valiant chosen at the source router by queue occupancy).
    Ugal,
}

fn default_levels() -> u8 {
    2
}
fn default_taper() -> f64 {
    1.0
}
fn default_one() -> u32 {
    1
}
