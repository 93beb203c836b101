//! Topology builders: preset counts, structural invariants, wiring rules, errors.

use crate::common::*;
use proptest::prelude::*;
use tracewatt_net::topology::{build, size, Size};
use tracewatt_net::{Device, DragonflyArrangement, LinkClass, Shape, Topology, TopologySpec};

/// Invariants every built topology must satisfy, whatever the family.
pub fn check_consistent(t: &Topology) {
    assert_eq!(t.node_injection.len(), t.num_nodes as usize);
    assert_eq!(t.node_ejection.len(), t.num_nodes as usize);
    assert_eq!(t.switch_out.len(), t.num_switches as usize);
    assert_eq!(t.switch_ports.len(), t.num_switches as usize);
    assert_eq!(t.channels.len() % 2, 0);
    assert_eq!(t.num_links() * 2, t.channels.len());
    for (i, c) in t.channels.iter().enumerate() {
        let r = &t.channels[c.reverse as usize];
        assert_eq!(r.reverse as usize, i, "reverse of reverse of {i}");
        assert_ne!(c.reverse as usize, i);
        assert_eq!((r.src, r.dst), (c.dst, c.src), "channel {i}");
        assert_eq!(
            (r.src_port, r.dst_port),
            (c.dst_port, c.src_port),
            "channel {i}"
        );
        assert_eq!(r.class, c.class);
        assert_eq!(
            c.bandwidth_bps,
            link(c.class).bandwidth_bps,
            "channel {i} params"
        );
        assert_eq!(c.latency_ps, link(c.class).latency_ps);
        let node_link = matches!(c.src, Device::Node(_)) || matches!(c.dst, Device::Node(_));
        assert_eq!(
            node_link,
            c.class == LinkClass::Node,
            "channel {i} class {:?}",
            c.class
        );
    }
    for n in 0..t.num_nodes {
        let inj = &t.channels[t.node_injection[n as usize] as usize];
        assert_eq!(inj.src, Device::Node(n));
        assert_eq!(inj.src_port, 0);
        assert_eq!(inj.reverse, t.node_ejection[n as usize]);
        assert!(matches!(inj.dst, Device::Switch(_)));
    }
    // Output ports: switch_out[s][p] leaves s on port p. Input ports: a permutation of 0..ports.
    let mut inputs = vec![Vec::new(); t.num_switches as usize];
    for (s, outs) in t.switch_out.iter().enumerate() {
        assert_eq!(outs.len(), t.switch_ports[s] as usize);
        for (p, &ch) in outs.iter().enumerate() {
            let c = &t.channels[ch as usize];
            assert_eq!(c.src, Device::Switch(s as u32));
            assert_eq!(c.src_port as usize, p);
        }
    }
    for c in &t.channels {
        if let Device::Switch(s) = c.dst {
            inputs[s as usize].push(c.dst_port);
        }
    }
    for (s, mut ins) in inputs.into_iter().enumerate() {
        ins.sort_unstable();
        let expected: Vec<u16> = (0..t.switch_ports[s]).collect();
        assert_eq!(ins, expected, "input ports of switch {s}");
    }
    // Every channel is some switch's output or some node's injection.
    let from_switches: usize = t.switch_out.iter().map(Vec::len).sum();
    assert_eq!(from_switches + t.num_nodes as usize, t.channels.len());
}

fn switch_level(shape: &Shape, s: u32) -> u8 {
    let Shape::FatTree {
        switches_per_level, ..
    } = shape
    else {
        panic!("not a fat tree")
    };
    let mut acc = 0;
    for (l, &c) in switches_per_level.iter().enumerate() {
        acc += c;
        if s < acc {
            return l as u8 + 1;
        }
    }
    panic!("switch {s} beyond levels")
}

fn check_fat_tree(t: &Topology, radix: u32) {
    for (s, &p) in t.switch_ports.iter().enumerate() {
        assert!(
            u32::from(p) <= radix,
            "switch {s} has {p} ports > radix {radix}"
        );
    }
    for c in &t.channels {
        if let (Device::Switch(a), Device::Switch(b)) = (c.src, c.dst) {
            let (la, lb) = (switch_level(&t.shape, a), switch_level(&t.shape, b));
            assert_eq!(la.abs_diff(lb), 1, "{a} (level {la}) - {b} (level {lb})");
            assert_eq!(c.class, LinkClass::Tree { level: la.min(lb) });
        }
    }
    for n in 0..t.num_nodes {
        assert_eq!(switch_level(&t.shape, t.node_switch(n)), 1);
    }
}

/// Number of links between each pair of switches `(a, b)` with `a < b`.
fn parallel_links(t: &Topology, a: u32, b: u32) -> usize {
    t.channels
        .iter()
        .filter(|c| c.src == Device::Switch(a) && c.dst == Device::Switch(b))
        .count()
}

#[test]
fn preset_counts() {
    // (spec, nodes, switches, links, diameter in links)
    let cases = [
        (miwa2014_16node(), 16, 3, 16 + 16, 4),
        (tracerp_fattree_288(), 288, 24 + 24 + 12, 288 + 288 + 288, 6),
        (
            tracerp_torus_4x8x8(),
            256,
            256,
            256 + 3 * 256,
            2 + 2 + 4 + 4,
        ),
        (tracerp_dragonfly_342(), 342, 114, 342 + 19 * 15 + 19 * 9, 5),
        (
            benchmark_dragonfly_1056(),
            1056,
            264,
            1056 + 33 * 28 + 33 * 16,
            5,
        ),
        (TopologySpec::SingleSwitch { nodes: 7 }, 7, 1, 7, 2),
    ];
    for (spec, nodes, switches, links, diameter) in cases {
        let t = build_ok(&spec);
        check_consistent(&t);
        assert_eq!(t.num_nodes, nodes, "{spec:?}");
        assert_eq!(t.num_switches, switches, "{spec:?}");
        assert_eq!(t.num_links(), links, "{spec:?}");
        assert_eq!(t.diameter_hops(), diameter, "{spec:?}");
    }
}

#[test]
fn miwa_has_eight_parallel_uplinks_per_leaf() {
    let t = build_ok(&miwa2014_16node());
    check_fat_tree(&t, 24);
    assert_eq!(
        t.shape,
        Shape::FatTree {
            levels: 2,
            switches_per_level: vec![2, 1],
            nodes_per_leaf: 8
        }
    );
    assert_eq!(parallel_links(&t, 0, 2), 8);
    assert_eq!(parallel_links(&t, 1, 2), 8);
    assert_eq!(t.switch_ports, vec![16, 16, 16]);
    for n in 0..16 {
        assert_eq!(t.node_switch(n), n / 8);
    }
}

#[test]
fn fattree_288_wiring() {
    let t = build_ok(&tracerp_fattree_288());
    check_fat_tree(&t, 24);
    let (leaves, aggs, cores) = (0..24u32, 24..48u32, 48..60u32);
    for leaf in leaves {
        let pod = leaf / 12;
        for agg in aggs.clone() {
            let same_pod = (agg - 24) / 12 == pod;
            assert_eq!(parallel_links(&t, leaf, agg), usize::from(same_pod));
        }
    }
    for agg in aggs {
        assert_eq!(t.switch_ports[agg as usize], 24);
        for core in cores.clone() {
            assert_eq!(parallel_links(&t, agg, core), 1, "agg {agg} core {core}");
        }
    }
    for core in cores {
        assert_eq!(t.switch_ports[core as usize], 24);
    }
}

#[test]
fn full_k_ary_trees_by_default() {
    // 2 levels: k leaves x k/2 nodes, k/2 spines; 3 levels: k pods, k^3/4 nodes, k^2/4 cores.
    for k in [4u32, 6, 8] {
        let t = build_ok(&fat_tree(2, k));
        check_consistent(&t);
        check_fat_tree(&t, k);
        assert_eq!(t.num_nodes, k * k / 2);
        assert_eq!(t.num_switches, k + k / 2);
        assert_eq!(t.switch_ports.iter().map(|&p| u32::from(p)).max(), Some(k));
        let t = build_ok(&fat_tree(3, k));
        check_consistent(&t);
        check_fat_tree(&t, k);
        assert_eq!(t.num_nodes, k * k * k / 4);
        assert_eq!(
            t.shape,
            Shape::FatTree {
                levels: 3,
                switches_per_level: vec![k * k / 2, k * k / 2, k * k / 4],
                nodes_per_leaf: k / 2
            }
        );
        assert!(t.switch_ports.iter().all(|&p| u32::from(p) == k));
    }
}

#[test]
fn taper_reduces_uplinks() {
    let t = build_ok(&with_ft(fat_tree(2, 8), None, 2.0, None, None, None, None));
    check_fat_tree(&t, 8);
    // 4 nodes + round(4 / 2) = 2 uplinks per leaf; 8 leaves; ceil(16 / 8) = 2 spines.
    assert_eq!(t.num_nodes, 32);
    assert_eq!(t.num_switches, 10);
    assert_eq!(t.switch_ports[0], 6);
    // Heavy taper still leaves one uplink.
    let t = build_ok(&with_ft(
        fat_tree(2, 8),
        Some(4),
        100.0,
        Some(3),
        None,
        None,
        None,
    ));
    assert_eq!(t.switch_ports[0], 5);
    assert_eq!(t.num_switches, 4);
}

#[test]
fn torus_wiring() {
    let t = build_ok(&torus(&[2, 3], 2));
    check_consistent(&t);
    assert_eq!(t.num_switches, 6);
    assert_eq!(t.num_nodes, 12);
    // 2 nodes + 2 per dimension; a size-2 dimension gets two links between its two switches.
    assert!(t.switch_ports.iter().all(|&p| p == 6));
    assert_eq!(parallel_links(&t, 0, 1), 2);
    // dim 1 ring 0 -> 2 -> 4 -> 0 (stride 2).
    let plus = |s: usize, dim: usize| &t.channels[t.switch_out[s][2 + 2 * dim] as usize];
    assert_eq!(plus(0, 1).dst, Device::Switch(2));
    assert_eq!(plus(4, 1).dst, Device::Switch(0));
    assert_eq!(plus(1, 0).dst, Device::Switch(0));
    assert_eq!(plus(0, 1).class, LinkClass::Torus { dim: 1 });
    let minus = |s: usize, dim: usize| &t.channels[t.switch_out[s][3 + 2 * dim] as usize];
    assert_eq!(minus(0, 1).dst, Device::Switch(4));
    assert_eq!(t.node_switch(5), 2);
}

#[test]
fn dragonfly_wiring() {
    for (spec, links_per_pair) in [
        (tracerp_dragonfly_342(), 1),
        (dragonfly(3, 2, 1, 2, DragonflyArrangement::Absolute), 2),
        (dragonfly(5, 2, 2, 2, DragonflyArrangement::Relative), 1),
        (dragonfly(4, 2, 1, 3, DragonflyArrangement::Relative), 2),
    ] {
        let t = build_ok(&spec);
        check_consistent(&t);
        let Shape::Dragonfly {
            groups: g,
            routers_per_group: a,
            nodes_per_router: p,
            global_links_per_router: h,
        } = t.shape
        else {
            panic!()
        };
        let mut pairs = vec![0usize; (g * g) as usize];
        for s in 0..t.num_switches as usize {
            let outs = &t.switch_out[s];
            assert_eq!(outs.len() as u32, p + a - 1 + h);
            for (port, &ch) in outs.iter().enumerate() {
                let c = &t.channels[ch as usize];
                let port = port as u32;
                let expected = if port < p {
                    LinkClass::Node
                } else if port < p + a - 1 {
                    LinkClass::Local
                } else {
                    LinkClass::Global
                };
                assert_eq!(c.class, expected);
                if let Device::Switch(d) = c.dst {
                    let (gs, gd) = (s as u32 / a, d / a);
                    assert_eq!(gs == gd, c.class == LinkClass::Local);
                    if c.class == LinkClass::Global {
                        pairs[(gs * g + gd) as usize] += 1;
                    }
                }
            }
        }
        for gs in 0..g {
            for gd in 0..g {
                let want = if gs == gd { 0 } else { links_per_pair };
                assert_eq!(pairs[(gs * g + gd) as usize], want, "{spec:?} {gs}->{gd}");
            }
        }
    }
}

#[test]
fn dragonfly_absolute_is_canonical() {
    // Group G's global port j (router-major) goes to group j if j < G else j + 1.
    let t = build_ok(&tracerp_dragonfly_342());
    let (a, p, h) = (6usize, 3usize, 3usize);
    for grp in 0..19usize {
        for j in 0..a * h {
            let router = grp * a + j / h;
            let ch = t.switch_out[router][p + a - 1 + j % h];
            let Device::Switch(d) = t.channels[ch as usize].dst else {
                panic!()
            };
            let want = if j < grp { j } else { j + 1 };
            assert_eq!(d as usize / a, want);
        }
    }
}

#[test]
fn construction_is_deterministic() {
    for spec in small_instances()
        .into_iter()
        .chain([tracerp_fattree_288(), tracerp_dragonfly_342()])
    {
        let a = build_ok(&spec);
        let b = build_ok(&spec);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        // Node links come first: channels 2n / 2n + 1.
        for n in 0..a.num_nodes {
            assert_eq!(a.node_injection[n as usize], 2 * n);
            assert_eq!(a.node_ejection[n as usize], 2 * n + 1);
        }
    }
}

#[test]
fn small_instances_are_consistent() {
    for spec in small_instances() {
        let t = build_ok(&spec);
        check_consistent(&t);
        if let TopologySpec::FatTree { radix, .. } = spec {
            check_fat_tree(&t, radix);
        }
    }
}

#[test]
fn bad_specs_name_the_field() {
    use DragonflyArrangement::Absolute;
    let ft = |levels, radix| fat_tree(levels, radix);
    let cases: Vec<(TopologySpec, &str)> = vec![
        (
            TopologySpec::SingleSwitch { nodes: 0 },
            "machine.topology.nodes",
        ),
        (
            TopologySpec::SingleSwitch { nodes: 70_000 },
            "machine.topology.nodes",
        ),
        (ft(4, 8), "machine.topology.levels"),
        (ft(2, 1), "machine.topology.radix"),
        (
            with_ft(ft(2, 24), Some(20), 1.0, None, None, None, None),
            "machine.topology.nodes_per_leaf",
        ),
        (
            with_ft(ft(2, 24), Some(0), 1.0, None, None, None, None),
            "machine.topology.nodes_per_leaf",
        ),
        (
            with_ft(ft(2, 24), None, 0.0, None, None, None, None),
            "machine.topology.taper",
        ),
        (
            with_ft(ft(2, 24), None, f64::NAN, None, None, None, None),
            "machine.topology.taper",
        ),
        (
            with_ft(ft(2, 24), Some(8), 1.0, Some(4), None, None, Some(1)),
            "machine.topology.spines",
        ),
        (
            with_ft(ft(2, 24), Some(8), 1.0, Some(2), None, None, Some(9)),
            "machine.topology.spines",
        ),
        (
            with_ft(ft(2, 8), None, 1.0, Some(9), None, None, None),
            "machine.topology.leaves",
        ),
        (
            with_ft(ft(2, 8), None, 1.0, None, Some(2), None, None),
            "machine.topology.pods",
        ),
        (
            with_ft(ft(3, 24), None, 1.0, None, None, Some(13), None),
            "machine.topology.leaves_per_pod",
        ),
        (
            with_ft(ft(3, 24), None, 1.0, None, Some(25), None, None),
            "machine.topology.pods",
        ),
        (
            with_ft(ft(3, 24), None, 1.0, Some(30), None, None, None),
            "machine.topology.leaves",
        ),
        (
            with_ft(ft(3, 24), None, 1.0, Some(36), Some(2), None, None),
            "machine.topology.leaves",
        ),
        (
            with_ft(ft(3, 24), Some(12), 1.0, None, Some(2), Some(12), Some(11)),
            "machine.topology.spines",
        ),
        (
            with_ft(ft(3, 24), Some(12), 1.0, None, Some(2), Some(12), Some(145)),
            "machine.topology.spines",
        ),
        (torus(&[], 1), "machine.topology.dims"),
        (torus(&[4, 1], 1), "machine.topology.dims"),
        (torus(&[4, 4], 0), "machine.topology.nodes_per_switch"),
        (torus(&[65_536, 65_536, 65_536], 1), "machine.topology.dims"),
        (dragonfly(0, 2, 2, 2, Absolute), "machine.topology.groups"),
        (
            dragonfly(4, 0, 2, 2, Absolute),
            "machine.topology.routers_per_group",
        ),
        (
            dragonfly(4, 2, 0, 2, Absolute),
            "machine.topology.nodes_per_router",
        ),
        (
            dragonfly(10, 2, 2, 2, Absolute),
            "machine.topology.global_links_per_router",
        ),
        (
            dragonfly(4, 2, 2, 2, Absolute),
            "machine.topology.global_links_per_router",
        ),
        (
            dragonfly(1, 2, 2, 1, Absolute),
            "machine.topology.global_links_per_router",
        ),
    ];
    for (spec, field) in cases {
        match build(&spec, &link) {
            Ok(_) => panic!("{spec:?} should fail on {field}"),
            Err(e) => {
                assert_eq!(e.field, field, "{spec:?}: {e}");
                assert!(!e.message.is_empty());
                assert!(e.to_string().starts_with(field));
            }
        }
    }
}

fn torus_spec() -> impl Strategy<Value = TopologySpec> {
    (prop::collection::vec(2u32..=5, 1..=3), 1u32..=3).prop_map(|(d, n)| torus(&d, n))
}

fn dragonfly_spec() -> impl Strategy<Value = TopologySpec> {
    // Pick a, h, then g - 1 among the divisors of a * h.
    (1u32..=4, 1u32..=4, 1u32..=3, any::<u32>(), any::<bool>()).prop_map(|(a, h, p, pick, rel)| {
        let divs: Vec<u32> = (1..=a * h).filter(|d| (a * h) % d == 0).collect();
        let g = divs[pick as usize % divs.len()] + 1;
        let arr = if rel {
            DragonflyArrangement::Relative
        } else {
            DragonflyArrangement::Absolute
        };
        dragonfly(g, a, p, h, arr)
    })
}

fn fat_tree_spec() -> impl Strategy<Value = TopologySpec> {
    (2u8..=3, 2u32..=5, prop::bool::ANY, 1u32..=3).prop_map(|(levels, half, taper2, pods)| {
        let radix = 2 * half;
        let taper = if taper2 { 2.0 } else { 1.0 };
        let pods = (levels == 3).then_some(pods);
        with_ft(fat_tree(levels, radix), None, taper, None, pods, None, None)
    })
}

pub fn any_small_spec() -> impl Strategy<Value = TopologySpec> {
    prop_oneof![
        (1u32..=9).prop_map(|nodes| TopologySpec::SingleSwitch { nodes }),
        fat_tree_spec(),
        torus_spec(),
        dragonfly_spec(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_specs_build_consistently(spec in any_small_spec()) {
        let t = build_ok(&spec);
        check_consistent(&t);
        // The size known before building is the built one's.
        let want = Size { nodes: t.num_nodes, switches: t.num_switches, links: t.num_links() as u64 };
        prop_assert_eq!(size(&spec), Ok(want));
        match &spec {
            TopologySpec::Torus { dims, nodes_per_switch } => {
                let switches: u32 = dims.iter().product();
                prop_assert_eq!(t.num_switches, switches);
                prop_assert_eq!(t.num_nodes, switches * nodes_per_switch);
                prop_assert_eq!(t.num_links() as u32, t.num_nodes + switches * dims.len() as u32);
                let expect: u32 = dims.iter().map(|k| k / 2).sum::<u32>() + 2;
                prop_assert_eq!(t.diameter_hops(), expect);
            }
            TopologySpec::Dragonfly { groups: g, routers_per_group: a, nodes_per_router: p, global_links_per_router: h, .. } => {
                prop_assert_eq!(t.num_switches, g * a);
                prop_assert_eq!(t.num_nodes, g * a * p);
                prop_assert_eq!(t.num_links() as u32, g * a * p + g * a * (a - 1) / 2 + g * a * h / 2);
            }
            TopologySpec::FatTree { radix, .. } => check_fat_tree(&t, *radix),
            TopologySpec::SingleSwitch { nodes } => {
                prop_assert_eq!(t.num_nodes, *nodes);
                prop_assert_eq!(t.diameter_hops(), if *nodes > 1 { 2 } else { 0 });
            }
        }
    }
}

/// The diameter by breadth-first search from every switch that has nodes: the definition
/// `diameter_hops` shortens by symmetry.
fn all_pairs_diameter(t: &Topology) -> u32 {
    if t.num_nodes < 2 {
        return 0;
    }
    let n = t.num_switches as usize;
    let with_nodes: Vec<usize> = (0..t.num_nodes)
        .map(|v| t.node_switch(v) as usize)
        .collect();
    let mut worst = 0;
    for &start in &with_nodes {
        let mut dist = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::from([start]);
        dist[start] = 0;
        while let Some(s) = queue.pop_front() {
            for &ch in &t.switch_out[s] {
                if let Device::Switch(d) = t.channels[ch as usize].dst {
                    if dist[d as usize] == u32::MAX {
                        dist[d as usize] = dist[s] + 1;
                        queue.push_back(d as usize);
                    }
                }
            }
        }
        worst = with_nodes.iter().map(|&s| dist[s]).fold(worst, u32::max);
    }
    worst + 2
}

/// Every dragonfly of up to 5 routers per group and 5 global links per router, in both
/// arrangements, and fat-trees with every leaf, spine, pod and leaves-per-pod count their radix
/// allows: the search from a few switches finds the all-pairs diameter.
#[test]
fn diameter_from_representative_switches_is_the_all_pairs_one() {
    let mut specs = Vec::new();
    for a in 1..=5 {
        specs.push(dragonfly(1, a, 2, 0, DragonflyArrangement::Absolute));
        for h in 1..=5 {
            for m in (1..=a * h).filter(|m| (a * h) % m == 0) {
                for arr in [
                    DragonflyArrangement::Absolute,
                    DragonflyArrangement::Relative,
                ] {
                    specs.push(dragonfly(m + 1, a, 1, h, arr));
                }
            }
        }
    }
    for radix in [4, 6, 8] {
        for leaves in 1..=radix {
            for spines in [None, Some(1), Some(2), Some(3)] {
                specs.push(with_ft(
                    fat_tree(2, radix),
                    None,
                    1.0,
                    Some(leaves),
                    None,
                    None,
                    spines,
                ));
            }
        }
        for pods in 1..=radix {
            for lpp in 1..=radix / 2 {
                specs.push(with_ft(
                    fat_tree(3, radix),
                    None,
                    1.0,
                    None,
                    Some(pods),
                    Some(lpp),
                    None,
                ));
            }
        }
    }
    let mut checked = 0;
    for spec in &specs {
        let Ok(t) = build(spec, &link) else { continue };
        assert_eq!(t.diameter_hops(), all_pairs_diameter(&t), "{spec:?}");
        checked += 1;
    }
    assert!(checked > 250, "only {checked} topologies built");
}

/// A 2^20-switch torus: the search from one switch takes well under a second, where the
/// all-pairs one took hours. The diameter is the sum of half of each ring, plus the node links.
#[test]
fn a_million_switch_torus_diameter_is_found_fast() {
    let t = build_ok(&torus(&[128, 128, 64], 1));
    let t0 = std::time::Instant::now();
    assert_eq!(t.diameter_hops(), 64 + 64 + 32 + 2);
    assert!(t0.elapsed().as_secs_f64() < 10.0, "{:?}", t0.elapsed());
}
