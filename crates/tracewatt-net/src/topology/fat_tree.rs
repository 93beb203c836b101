//! Fat-trees (folded Clos) with 2 levels (leaf + spine) or 3 levels (leaf + aggregation + core,
//! in pods).
//!
//! Wiring rule (`k` = radix, `n` = nodes_per_leaf, default `k / 2`; `u` = uplinks per leaf =
//! `max(1, round(n / taper))`):
//! - Switch ids level by level, leaves first; within a level in order (3 levels: leaves and
//!   aggregation switches pod-major). Node `i` hangs off leaf `i / n` on port `i % n`; a leaf's
//!   uplinks are ports `n..n + u`.
//! - Uplinks are spread round-robin: uplink `j` of the `i`-th switch of a group goes to upper
//!   switch `(i * up + j) mod count`, where `up` is the uplinks per switch and `count` the
//!   switches it may reach. When `count < up` this yields parallel links.
//! - 2 levels: `leaves` leaves (default: `k`, or the most the given `spines` can serve), `spines`
//!   spines (default `ceil(leaves * u / k)`), leaf `i` uplink `j` -> spine `(i * u + j) mod
//!   spines`. Requires `spines <= u`, so every leaf reaches every spine (up/down routing may then
//!   take any uplink).
//! - 3 levels: `pods` pods (default `k`, or `leaves / leaves_per_pod` when `leaves` is given) of
//!   `L = leaves_per_pod` leaves (default `k / 2`) and `A = u` aggregation switches; leaf `i`
//!   (within its pod) uplink `j` -> aggregation switch `j` of the pod (exactly one link per
//!   leaf/aggregation pair). Each aggregation switch has `L` down and `L` up links (non-blocking
//!   above the leaves; the taper applies at the leaves only). `spines` counts the core switches
//!   `C` (default: `ceil(A * L / floor(k / pods))`, the fewest that fit the radix); aggregation
//!   switch `a` of **every** pod sends uplink `j` to core `(a * L + j) mod C`, so each core has
//!   the same links into every pod and is an ancestor of every leaf. Requires `C <= A * L`.
//! - Channels are created: node links, leaf->upper links (leaf by leaf, uplink by uplink), then
//!   aggregation->core links (pod, aggregation switch, uplink). Down ports of an upper switch are
//!   numbered in creation order, before its up ports.
//!
//! Presets: `miwa2014-16node` is levels 2, radix 24, nodes_per_leaf 8, leaves 2, spines 1 (each
//! leaf has 8 parallel links to the one spine); `tracerp-fattree-288` is levels 3, radix 24,
//! nodes_per_leaf 12, pods 2, leaves_per_pod 12 (12 aggregation switches per pod with 12 uplinks;
//! 12 cores, each linked once to all 24 aggregation switches).

use super::builder::{check_count, check_ports, Builder, Layout};
use super::{LinkClass, LinkParams, Shape, Topology, TopologyError};
use crate::spec::TopologySpec;

const LEVELS: &str = "machine.topology.levels";
const RADIX: &str = "machine.topology.radix";
const NPL: &str = "machine.topology.nodes_per_leaf";
const TAPER: &str = "machine.topology.taper";
const LEAVES: &str = "machine.topology.leaves";
const PODS: &str = "machine.topology.pods";
const LPP: &str = "machine.topology.leaves_per_pod";
const SPINES: &str = "machine.topology.spines";

fn err(field: &str, message: String) -> TopologyError {
    TopologyError::new(field, message)
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// Most links the round-robin rule puts between one lower switch group and one upper switch:
/// `total` uplinks spread over `count` upper switches.
fn max_share(total: u64, count: u64) -> u64 {
    ceil_div(total, count)
}

/// A fat-tree's switch counts, checked, with its layout: everything but the wiring.
pub(crate) struct Plan {
    /// Nodes and uplinks per leaf.
    n: u64,
    u: u64,
    /// Leaves, then (2 levels) spines or (3 levels) aggregation and core switches.
    levels: Levels,
    pub(crate) layout: Layout,
}

enum Levels {
    Two {
        leaves: u32,
        spines: u32,
    },
    Three {
        /// Leaves per pod.
        l: u64,
        pods: u64,
        leaves: u32,
        aggs: u32,
        cores: u32,
    },
}

pub(crate) fn build(
    spec: &TopologySpec,
    link: &dyn Fn(LinkClass) -> LinkParams,
) -> Result<Topology, TopologyError> {
    let p = plan(spec)?;
    match p.levels {
        Levels::Two { leaves, spines } => two_level(&p, leaves, spines, link),
        Levels::Three {
            l,
            pods,
            leaves,
            aggs,
            cores,
        } => three_level(&p, l, pods, [leaves, aggs, cores], link),
    }
}

/// Checks `spec` and works out its switch counts and ports (without building anything).
pub(crate) fn plan(spec: &TopologySpec) -> Result<Plan, TopologyError> {
    let &TopologySpec::FatTree {
        levels,
        radix,
        nodes_per_leaf,
        taper,
        leaves,
        pods,
        leaves_per_pod,
        spines,
    } = spec
    else {
        return Err(err("machine.topology.kind", "expected fat_tree".into()));
    };
    let k = u64::from(radix);
    if radix < 2 || radix > u32::from(u16::MAX) {
        return Err(err(
            RADIX,
            format!("expected 2..={} ports per switch, got {radix}", u16::MAX),
        ));
    }
    let n = u64::from(nodes_per_leaf.unwrap_or(radix / 2));
    if n == 0 {
        return Err(err(NPL, "must be at least 1".into()));
    }
    if !taper.is_finite() || taper <= 0.0 {
        return Err(err(
            TAPER,
            format!("must be a positive number, got {taper}"),
        ));
    }
    let up = (n as f64 / taper).round();
    let u: u64 = if up < 1.0 {
        1
    } else if up > k as f64 {
        k + 1 // rejected just below
    } else {
        up as u64
    };
    if n + u > k {
        return Err(err(
            NPL,
            format!(
                "a leaf needs nodes_per_leaf ({n}) + uplinks ({u} = round({n} / taper {taper})) \
                 = {} ports, more than radix {k}",
                n + u
            ),
        ));
    }
    match levels {
        2 => {
            if pods.is_some() || leaves_per_pod.is_some() {
                let field = if pods.is_some() { PODS } else { LPP };
                return Err(err(field, "only applies to levels = 3".into()));
            }
            two_level_plan(k, n, u, leaves, spines)
        }
        3 => three_level_plan(k, n, u, leaves, pods, leaves_per_pod, spines),
        _ => Err(err(LEVELS, format!("expected 2 or 3, got {levels}"))),
    }
}

fn two_level_plan(
    k: u64,
    n: u64,
    u: u64,
    leaves: Option<u32>,
    spines: Option<u32>,
) -> Result<Plan, TopologyError> {
    if let Some(s) = spines {
        if s == 0 || u64::from(s) > u {
            return Err(err(
                SPINES,
                format!(
                    "expected 1..={u} (the uplinks per leaf, so every leaf reaches every spine), \
                     got {s}"
                ),
            ));
        }
    }
    let leaves = match (leaves, spines) {
        (Some(l), _) => u64::from(l),
        (None, Some(s)) => (k * u64::from(s) / u).min(k),
        (None, None) => k,
    };
    if leaves == 0 || leaves > k {
        return Err(err(
            LEAVES,
            format!("expected 1..={k} (each spine links to every leaf), got {leaves}"),
        ));
    }
    let spines = match spines {
        Some(s) => u64::from(s),
        None => ceil_div(leaves * u, k),
    };
    let spine_ports = max_share(leaves * u, spines);
    if spine_ports > k {
        return Err(err(
            SPINES,
            format!(
                "{spines} spine(s) would need {spine_ports} ports each for {leaves} leaves x {u} \
                 uplinks, more than radix {k}; need at least {}",
                ceil_div(leaves * u, k)
            ),
        ));
    }
    let num_leaves = check_count(leaves, LEAVES, "leaves")?;
    let nodes = check_count(leaves * n, NPL, "nodes")?;
    let num_spines = check_count(spines, SPINES, "spines")?;
    let leaf_ports = check_ports(n + u, RADIX)?;
    let mut ports = vec![leaf_ports; num_leaves as usize];
    for s in 0..spines {
        // Round-robin: spine s receives the uplinks with global index = s (mod spines).
        let total = leaves * u;
        let count = total / spines + u64::from(s < total % spines);
        ports.push(count as u16);
    }
    Ok(Plan {
        n,
        u,
        levels: Levels::Two {
            leaves: num_leaves,
            spines: num_spines,
        },
        layout: Layout::new(nodes, ports)?,
    })
}

fn two_level(
    p: &Plan,
    num_leaves: u32,
    num_spines: u32,
    link: &dyn Fn(LinkClass) -> LinkParams,
) -> Result<Topology, TopologyError> {
    let (n, u, spines) = (p.n, p.u, u64::from(num_spines));
    let mut b = Builder::new(&p.layout, link);
    let n32 = n as u32;
    for node in 0..p.layout.nodes {
        b.node_link(node, node / n32, (node % n32) as u16);
    }
    let mut next_port = vec![0u16; num_spines as usize];
    for leaf in 0..num_leaves {
        for j in 0..u as u32 {
            let s = ((u64::from(leaf) * u + u64::from(j)) % spines) as usize;
            b.switch_link(
                leaf,
                (n32 + j) as u16,
                num_leaves + s as u32,
                next_port[s],
                LinkClass::Tree { level: 1 },
            );
            next_port[s] += 1;
        }
    }
    b.finish(Shape::FatTree {
        levels: 2,
        switches_per_level: vec![num_leaves, num_spines],
        nodes_per_leaf: n32,
    })
}

fn three_level_plan(
    k: u64,
    n: u64,
    u: u64,
    leaves: Option<u32>,
    pods: Option<u32>,
    leaves_per_pod: Option<u32>,
    spines: Option<u32>,
) -> Result<Plan, TopologyError> {
    let l = u64::from(leaves_per_pod.unwrap_or((k / 2) as u32));
    if l == 0 || 2 * l > k {
        return Err(err(
            LPP,
            format!(
                "expected 1..={} (an aggregation switch has leaves_per_pod down and as many up \
                 ports), got {l}",
                k / 2
            ),
        ));
    }
    let pods = match (pods, leaves) {
        (Some(p), Some(lv)) if u64::from(p) * l != u64::from(lv) => {
            return Err(err(
                LEAVES,
                format!(
                    "expected pods x leaves_per_pod = {p} x {l} = {}, got {lv}",
                    u64::from(p) * l
                ),
            ));
        }
        (Some(p), _) => u64::from(p),
        (None, Some(lv)) => {
            if u64::from(lv) % l != 0 || lv == 0 {
                return Err(err(
                    LEAVES,
                    format!("expected a positive multiple of leaves_per_pod ({l}), got {lv}"),
                ));
            }
            u64::from(lv) / l
        }
        (None, None) => k,
    };
    if pods == 0 || pods > k {
        return Err(err(
            PODS,
            format!("expected 1..={k} (each core switch links to every pod), got {pods}"),
        ));
    }
    let aggs = u; // per pod
    let agg_up = l; // per aggregation switch
    let per_pod_uplinks = aggs * agg_up;
    let cores = match spines {
        Some(c) => u64::from(c),
        None => ceil_div(per_pod_uplinks, k / pods),
    };
    if cores == 0 || cores > per_pod_uplinks {
        return Err(err(
            SPINES,
            format!(
                "expected 1..={per_pod_uplinks} core switches (aggregation uplinks per pod, so \
                 every core reaches every pod), got {cores}"
            ),
        ));
    }
    let core_ports = pods * max_share(per_pod_uplinks, cores);
    if core_ports > k {
        return Err(err(
            SPINES,
            format!(
                "{cores} core switch(es) would need {core_ports} ports each for {pods} pods, more \
                 than radix {k}; need at least {}",
                ceil_div(per_pod_uplinks, k / pods)
            ),
        ));
    }
    let num_leaves = check_count(pods * l, LEAVES, "leaves")?;
    let nodes = check_count(pods * l * n, NPL, "nodes")?;
    let num_aggs = check_count(pods * aggs, NPL, "aggregation switches")?;
    let num_cores = check_count(cores, SPINES, "core switches")?;
    let mut ports = vec![check_ports(n + u, RADIX)?; num_leaves as usize];
    ports.resize(ports.len() + num_aggs as usize, check_ports(2 * l, LPP)?);
    for c in 0..cores {
        let per_pod = per_pod_uplinks / cores + u64::from(c < per_pod_uplinks % cores);
        ports.push(check_ports(pods * per_pod, SPINES)?);
    }
    Ok(Plan {
        n,
        u,
        levels: Levels::Three {
            l,
            pods,
            leaves: num_leaves,
            aggs: num_aggs,
            cores: num_cores,
        },
        layout: Layout::new(nodes, ports)?,
    })
}

fn three_level(
    p: &Plan,
    l: u64,
    pods: u64,
    [num_leaves, num_aggs, num_cores]: [u32; 3],
    link: &dyn Fn(LinkClass) -> LinkParams,
) -> Result<Topology, TopologyError> {
    let (n, u, cores) = (p.n, p.u, u64::from(num_cores));
    let aggs = u; // per pod
    let mut b = Builder::new(&p.layout, link);
    let (n32, l32, u32_, a32) = (n as u32, l as u32, u as u32, aggs as u32);
    for node in 0..p.layout.nodes {
        b.node_link(node, node / n32, (node % n32) as u16);
    }
    let mut next_port = vec![0u16; (num_aggs + num_cores) as usize];
    let agg_id = |pod: u32, a: u32| num_leaves + pod * a32 + a;
    for leaf in 0..num_leaves {
        let (pod, i) = (leaf / l32, leaf % l32);
        for j in 0..u32_ {
            // Round-robin (i * u + j) mod A with A = u: aggregation switch j.
            let a = ((u64::from(i) * u + u64::from(j)) % aggs) as u32;
            let agg = agg_id(pod, a);
            let slot = &mut next_port[(agg - num_leaves) as usize];
            b.switch_link(
                leaf,
                (n32 + j) as u16,
                agg,
                *slot,
                LinkClass::Tree { level: 1 },
            );
            *slot += 1;
        }
    }
    for pod in 0..pods as u32 {
        for a in 0..a32 {
            let agg = agg_id(pod, a);
            for j in 0..l32 {
                let c = ((u64::from(a) * l + u64::from(j)) % cores) as u32;
                let core = num_leaves + num_aggs + c;
                let agg_port = next_port[(agg - num_leaves) as usize];
                next_port[(agg - num_leaves) as usize] += 1;
                let core_port = next_port[(core - num_leaves) as usize];
                next_port[(core - num_leaves) as usize] += 1;
                b.switch_link(agg, agg_port, core, core_port, LinkClass::Tree { level: 2 });
            }
        }
    }
    b.finish(Shape::FatTree {
        levels: 3,
        switches_per_level: vec![num_leaves, num_aggs, num_cores],
        nodes_per_leaf: n32,
    })
}
