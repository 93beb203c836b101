//! k-ary n-cube (torus) with wrap-around links in every dimension.
//!
//! Wiring rule:
//! - Switch ids are row-major with **dimension 0 fastest**: the switch at coordinates
//!   `(c0, c1, ..)` is `c0 + k0 * (c1 + k1 * (c2 + ..))`.
//! - Node `n` hangs off switch `n / nodes_per_switch` on port `n % nodes_per_switch`.
//! - Switch port `nodes_per_switch + 2 * dim` is the `+1` direction of `dim` and the next port
//!   the `-1` direction ([`plus_port`], [`minus_port`]). The `+` port of `c` is linked to the `-`
//!   port of `c + 1 (mod k)`, so each ring of size `k` has exactly `k` physical links.
//! - A dimension of size 2 therefore gets **two** physical links between its two switches (the
//!   `+` link of each); every switch keeps the same port layout and routing needs no special
//!   case.
//! - Links are created switch by switch (in id order), dimension by dimension, each switch
//!   creating the link on its `+` port.

use super::builder::{check_count, check_ports, Builder, Layout};
use super::{LinkClass, LinkParams, Shape, SwitchId, Topology, TopologyError};

/// Output port for the `+1` direction of `dim` on a switch with `nodes_per_switch` nodes.
pub fn plus_port(nodes_per_switch: u32, dim: usize) -> u16 {
    (nodes_per_switch as usize + 2 * dim) as u16
}

/// Output port for the `-1` direction of `dim`.
pub fn minus_port(nodes_per_switch: u32, dim: usize) -> u16 {
    plus_port(nodes_per_switch, dim) + 1
}

pub(crate) fn layout(dims: &[u32], nodes_per_switch: u32) -> Result<Layout, TopologyError> {
    const DIMS: &str = "machine.topology.dims";
    const NPS: &str = "machine.topology.nodes_per_switch";
    if dims.is_empty() {
        return Err(TopologyError::new(DIMS, "need at least one dimension"));
    }
    if dims.len() > u8::MAX as usize {
        return Err(TopologyError::new(
            DIMS,
            format!("{} dimensions; at most {} supported", dims.len(), u8::MAX),
        ));
    }
    if let Some((i, &k)) = dims.iter().enumerate().find(|(_, &k)| k < 2) {
        return Err(TopologyError::new(
            DIMS,
            format!("dimension {i} has size {k}; every size must be at least 2"),
        ));
    }
    if nodes_per_switch == 0 {
        return Err(TopologyError::new(NPS, "must be at least 1"));
    }
    let switches = dims
        .iter()
        .try_fold(1u64, |acc, &k| {
            acc.checked_mul(u64::from(k))
                .filter(|&v| v <= u64::from(u32::MAX))
        })
        .unwrap_or(u64::MAX);
    let switches = check_count(switches, DIMS, "switches")?;
    let nodes = check_count(
        u64::from(switches) * u64::from(nodes_per_switch),
        NPS,
        "nodes",
    )?;
    let ports = check_ports(u64::from(nodes_per_switch) + 2 * dims.len() as u64, NPS)?;
    Layout::new(nodes, vec![ports; switches as usize])
}

pub(crate) fn build(
    dims: &[u32],
    nodes_per_switch: u32,
    link: &dyn Fn(LinkClass) -> LinkParams,
) -> Result<Topology, TopologyError> {
    let layout = layout(dims, nodes_per_switch)?;
    let (nodes, switches) = (layout.nodes, layout.ports.len() as u32);
    let mut b = Builder::new(&layout, link);
    for n in 0..nodes {
        b.node_link(n, n / nodes_per_switch, (n % nodes_per_switch) as u16);
    }
    let mut coords = vec![0u32; dims.len()];
    for s in 0..switches {
        let mut stride = 1u32;
        for (dim, &k) in dims.iter().enumerate() {
            let next: SwitchId = if coords[dim] + 1 == k {
                s - (k - 1) * stride
            } else {
                s + stride
            };
            b.switch_link(
                s,
                plus_port(nodes_per_switch, dim),
                next,
                minus_port(nodes_per_switch, dim),
                LinkClass::Torus { dim: dim as u8 },
            );
            stride *= k;
        }
        // Advance the coordinates (dimension 0 fastest).
        for (c, &k) in coords.iter_mut().zip(dims) {
            *c += 1;
            if *c < k {
                break;
            }
            *c = 0;
        }
    }
    b.finish(Shape::Torus {
        dims: dims.to_vec(),
        nodes_per_switch,
    })
}
