//! Dragonfly: groups of routers, all-to-all local links inside a group, global links between
//! groups.
//!
//! Wiring rule (`g` groups, `a` routers per group, `p` nodes per router, `h` global links per
//! router):
//! - Router ids are group-major: router `r` of group `G` is switch `G * a + r`. Node `n` hangs off
//!   router `n / p` on port `n % p`.
//! - Router ports: `0..p` nodes; `p..p + a - 1` local links, to the other routers of the group in
//!   increasing router order (the own index skipped); `p + a - 1..p + a - 1 + h` global links.
//! - A group's global ports are numbered router-major, `j = r * h + k` for router `r`'s `k`-th
//!   global port, `j` in `0..a * h`. With `m = g - 1` and `q = j mod m`, port `j` goes to group
//!   - `Absolute` (canonical): `q` if `q < G`, else `q + 1`;
//!   - `Relative`: `(G + q + 1) mod g`.
//!
//!   The far end is the port of the target group in the same "round" `j / m` whose `q` points
//!   back at `G`, so every group pair gets `a * h / (g - 1)` links (one in a balanced dragonfly,
//!   `a * h = g - 1`). `a * h` must therefore be a multiple of `g - 1` (an error otherwise;
//!   leaving ports dark would break "port index = output channel").
//!   With one group, `h` must be 0.
//! - Channels are created: node links, then local links (group-major, router pairs `r1 < r2`
//!   lexicographically), then global links (group `G` ascending, its port `j` ascending, created
//!   from the lower-numbered group of each pair).

use super::builder::{check_count, check_ports, Builder, Layout};
use super::{LinkClass, LinkParams, Shape, Topology, TopologyError};
use crate::spec::{DragonflyArrangement, TopologySpec};

pub(crate) struct Params {
    pub groups: u32,
    pub routers_per_group: u32,
    pub nodes_per_router: u32,
    pub global_links_per_router: u32,
    pub arrangement: DragonflyArrangement,
}

impl Params {
    pub(crate) fn of(spec: &TopologySpec) -> Result<Self, TopologyError> {
        match *spec {
            TopologySpec::Dragonfly {
                groups,
                routers_per_group,
                nodes_per_router,
                global_links_per_router,
                arrangement,
            } => Ok(Params {
                groups,
                routers_per_group,
                nodes_per_router,
                global_links_per_router,
                arrangement,
            }),
            _ => Err(TopologyError::new(
                "machine.topology.kind",
                "expected dragonfly",
            )),
        }
    }
}

const GROUPS: &str = "machine.topology.groups";
const ROUTERS: &str = "machine.topology.routers_per_group";
const NODES: &str = "machine.topology.nodes_per_router";
const GLOBAL: &str = "machine.topology.global_links_per_router";

/// Target group of global port `j` of group `grp` (see the module doc); `g >= 2`.
fn target_group(arr: DragonflyArrangement, g: u32, grp: u32, j: u32) -> u32 {
    let q = j % (g - 1);
    match arr {
        DragonflyArrangement::Absolute => {
            if q < grp {
                q
            } else {
                q + 1
            }
        }
        DragonflyArrangement::Relative => (grp + q + 1) % g,
    }
}

/// The global port of group `to` that is the far end of port `j` of group `from`.
fn partner_port(arr: DragonflyArrangement, g: u32, from: u32, to: u32, j: u32) -> u32 {
    let round = j / (g - 1);
    let q = match arr {
        DragonflyArrangement::Absolute => {
            if from < to {
                from
            } else {
                from - 1
            }
        }
        // (to + q + 1) mod g == from
        DragonflyArrangement::Relative => (from + g - to - 1) % g,
    };
    round * (g - 1) + q
}

/// Checks the parameters and works out the layout (without building anything).
pub(crate) fn layout(params: &Params) -> Result<Layout, TopologyError> {
    let &Params {
        groups: g,
        routers_per_group: a,
        nodes_per_router: p,
        global_links_per_router: h,
        ..
    } = params;
    check_count(u64::from(g), GROUPS, "groups")?;
    check_count(u64::from(a), ROUTERS, "routers per group")?;
    check_count(u64::from(p), NODES, "nodes per router")?;
    let switches = check_count(u64::from(g) * u64::from(a), ROUTERS, "routers")?;
    let nodes = check_count(u64::from(switches) * u64::from(p), NODES, "nodes")?;
    let ports = check_ports(u64::from(p) + u64::from(a) - 1 + u64::from(h), GLOBAL)?;
    let group_ports = u64::from(a) * u64::from(h);
    if g == 1 {
        if h != 0 {
            return Err(TopologyError::new(
                GLOBAL,
                format!("a single group has no global links; expected 0, got {h}"),
            ));
        }
    } else if group_ports < u64::from(g - 1) {
        return Err(TopologyError::new(
            GLOBAL,
            format!(
                "routers_per_group x global_links_per_router = {group_ports} global ports per \
                 group, but reaching the other {} groups needs at least {}",
                g - 1,
                g - 1
            ),
        ));
    } else if group_ports % u64::from(g - 1) != 0 {
        return Err(TopologyError::new(
            GLOBAL,
            format!(
                "routers_per_group x global_links_per_router = {group_ports} global ports per \
                 group must be a multiple of groups - 1 = {} so that every group pair gets the \
                 same number of links",
                g - 1
            ),
        ));
    }
    Layout::new(nodes, vec![ports; switches as usize])
}

pub(crate) fn build(
    params: &Params,
    link: &dyn Fn(LinkClass) -> LinkParams,
) -> Result<Topology, TopologyError> {
    let layout = layout(params)?;
    let &Params {
        groups: g,
        routers_per_group: a,
        nodes_per_router: p,
        global_links_per_router: h,
        arrangement: arr,
    } = params;
    let mut b = Builder::new(&layout, link);
    for n in 0..layout.nodes {
        b.node_link(n, n / p, (n % p) as u16);
    }
    let local_port = |r: u32, other: u32| (p + if other < r { other } else { other - 1 }) as u16;
    for grp in 0..g {
        for r1 in 0..a {
            for r2 in r1 + 1..a {
                b.switch_link(
                    grp * a + r1,
                    local_port(r1, r2),
                    grp * a + r2,
                    local_port(r2, r1),
                    LinkClass::Local,
                );
            }
        }
    }
    if g > 1 {
        let global_port = |j: u32| (p + a - 1 + j % h) as u16;
        for grp in 0..g {
            for j in 0..a * h {
                let to = target_group(arr, g, grp, j);
                if to < grp {
                    continue; // created from the other side
                }
                let k = partner_port(arr, g, grp, to, j);
                debug_assert_eq!(target_group(arr, g, to, k), grp);
                b.switch_link(
                    grp * a + j / h,
                    global_port(j),
                    to * a + k / h,
                    global_port(k),
                    LinkClass::Global,
                );
            }
        }
    }
    b.finish(Shape::Dragonfly {
        groups: g,
        routers_per_group: a,
        nodes_per_router: p,
        global_links_per_router: h,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partner_port_points_back() {
        for arr in [
            DragonflyArrangement::Absolute,
            DragonflyArrangement::Relative,
        ] {
            for g in 2..9 {
                for grp in 0..g {
                    for j in 0..3 * (g - 1) {
                        let to = target_group(arr, g, grp, j);
                        assert_ne!(to, grp);
                        let k = partner_port(arr, g, grp, to, j);
                        assert_eq!(target_group(arr, g, to, k), grp);
                        assert_eq!(partner_port(arr, g, to, grp, k), j);
                    }
                }
            }
        }
    }
}
