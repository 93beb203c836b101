//! Routing: reachability, hop counts, VC discipline and deadlock freedom (acyclic channel
//! dependency graph) for every family and every applicable algorithm.

use crate::common::*;
use proptest::prelude::*;
use tracewatt_core::Rng;
use tracewatt_net::{
    make_router, Device, LinkClass, NodeId, QueueView, Router, RoutingAlgorithm, RoutingSpec,
    Shape, Topology, TopologySpec,
};

fn router(spec: &RoutingSpec, t: &Topology) -> Box<dyn Router> {
    match make_router(spec, t) {
        Ok(r) => r,
        Err(e) => panic!("{spec:?} on {:?}: {e}", t.shape),
    }
}

fn walk_ok(
    t: &Topology,
    r: &dyn Router,
    src: NodeId,
    dst: NodeId,
    view: &dyn QueueView,
    rng: &mut Rng,
) -> Vec<Step> {
    match walk(t, r, src, dst, view, rng) {
        Ok(s) => s,
        Err(e) => panic!("{:?} {r:?}: {e}", t.shape),
    }
}

/// Switch hops of a minimal route between two nodes, computed from the spec alone.
fn expected_minimal_hops(spec: &TopologySpec, src: NodeId, dst: NodeId) -> Option<usize> {
    match spec {
        TopologySpec::SingleSwitch { .. } => Some(0),
        TopologySpec::FatTree {
            levels,
            radix,
            nodes_per_leaf,
            leaves_per_pod,
            ..
        } => {
            let npl = nodes_per_leaf.unwrap_or(radix / 2);
            let (ls, ld) = (src / npl, dst / npl);
            let lpp = leaves_per_pod.unwrap_or(radix / 2);
            Some(if ls == ld {
                0
            } else if *levels == 2 || ls / lpp == ld / lpp {
                2
            } else {
                4
            })
        }
        TopologySpec::Torus {
            dims,
            nodes_per_switch,
        } => {
            let (mut a, mut b) = (src / nodes_per_switch, dst / nodes_per_switch);
            let mut hops = 0;
            for &k in dims {
                let d = (a % k).abs_diff(b % k);
                hops += d.min(k - d) as usize;
                a /= k;
                b /= k;
            }
            Some(hops)
        }
        TopologySpec::Dragonfly { .. } => None,
    }
}

fn is_minimal(alg: RoutingAlgorithm) -> bool {
    // `adaptive` is minimal on fat-trees; on a dragonfly (an alias of UGAL) no hop count is
    // checked, as `expected_minimal_hops` has none for dragonflies.
    !matches!(alg, RoutingAlgorithm::Valiant | RoutingAlgorithm::Ugal)
}

/// Checks the per-family VC discipline of one path.
fn check_vcs(t: &Topology, r: &dyn Router, steps: &[Step]) {
    let hops = &steps[..steps.len() - 1];
    match &t.shape {
        Shape::Dragonfly { .. } => {
            for (i, s) in hops.iter().enumerate() {
                assert_eq!(usize::from(s.vc), i, "dragonfly hop {i} uses vc {}", s.vc);
            }
            assert!(hops.windows(2).all(|w| w[0].vc < w[1].vc));
        }
        Shape::Torus {
            dims,
            nodes_per_switch,
        } => {
            let mut current_dim = None;
            let mut crossed = false;
            for s in hops {
                let c = &t.channels[s.ch as usize];
                let LinkClass::Torus { dim } = c.class else {
                    panic!("non-torus hop")
                };
                let dim = usize::from(dim);
                if current_dim != Some(dim) {
                    assert!(
                        !matches!(current_dim, Some(d) if d >= dim),
                        "dimension order"
                    );
                    current_dim = Some(dim);
                    crossed = false;
                }
                let Device::Switch(sw) = c.src else { panic!() };
                let k = dims[dim];
                let stride: u32 = dims[..dim].iter().product();
                let coord = sw / stride % k;
                let plus = u32::from(c.src_port) == nodes_per_switch + 2 * dim as u32;
                crossed |= if plus { coord == k - 1 } else { coord == 0 };
                assert_eq!(s.vc, u8::from(crossed), "dateline vc in dim {dim}");
            }
        }
        _ => assert!(hops.iter().all(|s| s.vc == 0)),
    }
    assert!(steps.iter().all(|s| s.vc < r.num_vcs()));
}

/// All pairs, every algorithm, several occupancy views: delivery, hop counts, VC discipline and an
/// acyclic channel dependency graph per algorithm.
#[test]
fn all_pairs_on_small_instances() {
    for spec in small_instances() {
        let t = build_ok(&spec);
        for rspec in algorithms(&t.shape) {
            let r = router(&rspec, &t);
            let mut cdg = Cdg::new(r.num_vcs());
            let views: Vec<Box<dyn QueueView>> = if is_adaptive_or_random(rspec.algorithm) {
                vec![
                    Box::new(ZeroView),
                    Box::new(RandView(1)),
                    Box::new(RandView(2)),
                    Box::new(RandView(3)),
                ]
            } else {
                vec![Box::new(ZeroView)]
            };
            let mut rng = Rng::new(7);
            let mut max_hops = 0;
            for view in &views {
                for src in 0..t.num_nodes {
                    for dst in 0..t.num_nodes {
                        let steps = walk_ok(&t, r.as_ref(), src, dst, view.as_ref(), &mut rng);
                        let hops = switch_hops(&steps);
                        max_hops = max_hops.max(hops);
                        if is_minimal(rspec.algorithm) {
                            if let Some(want) = expected_minimal_hops(&spec, src, dst) {
                                assert_eq!(hops, want, "{spec:?} {rspec:?} {src}->{dst}");
                            }
                        }
                        check_vcs(&t, r.as_ref(), &steps);
                        cdg.add_path(&steps);
                    }
                }
            }
            if let Shape::Dragonfly { .. } = t.shape {
                let bound = match rspec.algorithm {
                    RoutingAlgorithm::Default | RoutingAlgorithm::Minimal => 3,
                    _ => 5,
                };
                assert!(max_hops <= bound, "{spec:?} {rspec:?}: {max_hops} hops");
            }
            assert_eq!(
                cdg.find_cycle_vertex(),
                None,
                "{spec:?} {rspec:?}: cyclic CDG"
            );
        }
    }
}

#[test]
fn dragonfly_342_minimal_hop_distribution() {
    let spec = tracerp_dragonfly_342();
    let t = build_ok(&spec);
    let r = router(&RoutingSpec::default(), &t);
    let (a, p, h) = (6u32, 3u32, 3u32);
    // Independent: canonical arrangement, global port j of group G (router j / h) goes to group
    // j (j < G) or j + 1.
    let holder = |from: u32, to: u32| (if to < from { to } else { to - 1 }) / h;
    let expected = |src: u32, dst: u32| {
        let (rs, rd) = (src / p, dst / p);
        let (gs, gd) = (rs / a, rd / a);
        if rs == rd {
            0
        } else if gs == gd {
            1
        } else {
            usize::from(rs % a != holder(gs, gd)) + 1 + usize::from(rd % a != holder(gd, gs))
        }
    };
    let mut hist = [0usize; 4];
    let mut rng = Rng::new(1);
    let mut cdg = Cdg::new(r.num_vcs());
    for src in 0..t.num_nodes {
        for dst in 0..t.num_nodes {
            if src == dst {
                continue;
            }
            let steps = walk_ok(&t, r.as_ref(), src, dst, &ZeroView, &mut rng);
            let hops = switch_hops(&steps);
            assert_eq!(hops, expected(src, dst), "{src}->{dst}");
            hist[hops] += 1;
            cdg.add_path(&steps);
        }
    }
    // Ordered node pairs: same router 114 x 3 x 2; same group 19 x 30 x 9 plus one router pair
    // per ordered group pair at 1 hop (342 x 9); 2 hops: 342 x 10 x 9; 3 hops: 342 x 25 x 9.
    assert_eq!(hist, [684, 5130 + 3078, 30_780, 76_950]);
    assert_eq!(cdg.find_cycle_vertex(), None);
}

#[test]
fn fat_tree_288_all_pairs_and_convergence() {
    let spec = tracerp_fattree_288();
    let t = build_ok(&spec);
    for rspec in algorithms(&t.shape) {
        let r = router(&rspec, &t);
        let mut rng = Rng::new(3);
        let mut cdg = Cdg::new(r.num_vcs());
        let view = RandView(9);
        // Per destination, the set of core switches used (d-mod-k must use exactly one).
        let mut cores = vec![Vec::new(); t.num_nodes as usize];
        for src in 0..t.num_nodes {
            for dst in 0..t.num_nodes {
                let steps = walk_ok(&t, r.as_ref(), src, dst, &view, &mut rng);
                assert_eq!(
                    Some(switch_hops(&steps)),
                    expected_minimal_hops(&spec, src, dst)
                );
                for s in &steps {
                    if let Device::Switch(sw) = t.channels[s.ch as usize].dst {
                        if sw >= 48 {
                            cores[dst as usize].push(sw);
                        }
                    }
                }
                cdg.add_path(&steps);
            }
        }
        assert_eq!(cdg.find_cycle_vertex(), None, "{rspec:?}");
        if matches!(
            rspec.algorithm,
            RoutingAlgorithm::Default | RoutingAlgorithm::Dmodk
        ) {
            for (d, mut c) in cores.into_iter().enumerate() {
                c.sort_unstable();
                c.dedup();
                assert_eq!(c.len(), 1, "d-mod-k routes to {d} via cores {c:?}");
            }
        }
    }
}

#[test]
fn fat_tree_dmodk_spreads_parallel_links() {
    // miwa: each of a leaf's 8 destinations gets its own uplink and its own downlink.
    let t = build_ok(&miwa2014_16node());
    let r = router(&RoutingSpec::default(), &t);
    let mut rng = Rng::new(0);
    let mut used = Vec::new();
    for dst in 8..16 {
        let steps = walk_ok(&t, r.as_ref(), 0, dst, &ZeroView, &mut rng);
        used.push((steps[0].ch, steps[1].ch));
    }
    let (mut ups, mut downs): (Vec<_>, Vec<_>) = used.into_iter().unzip();
    ups.sort_unstable();
    ups.dedup();
    downs.sort_unstable();
    downs.dedup();
    assert_eq!((ups.len(), downs.len()), (8, 8));
}

#[test]
fn fat_tree_adaptive_avoids_busy_uplink() {
    let t = build_ok(&fat_tree(2, 4));
    let dmodk = router(&RoutingSpec::default(), &t);
    let adaptive = router(
        &RoutingSpec {
            algorithm: RoutingAlgorithm::Adaptive,
            ugal_threshold_bytes: 0,
        },
        &t,
    );
    let mut rng = Rng::new(0);
    let (src, dst) = (0, 7);
    let base = walk_ok(&t, dmodk.as_ref(), src, dst, &ZeroView, &mut rng);
    let idle = walk_ok(&t, adaptive.as_ref(), src, dst, &ZeroView, &mut rng);
    assert_eq!(
        base.iter().map(|s| s.ch).collect::<Vec<_>>(),
        idle.iter().map(|s| s.ch).collect::<Vec<_>>()
    );
    struct Busy(u32);
    impl QueueView for Busy {
        fn queued_bytes(&self, ch: u32) -> u64 {
            if ch == self.0 {
                1000
            } else {
                0
            }
        }
    }
    let busy = walk_ok(&t, adaptive.as_ref(), src, dst, &Busy(base[0].ch), &mut rng);
    assert_ne!(busy[0].ch, base[0].ch);
    assert_eq!(busy.len(), base.len());
}

#[test]
fn hashed_is_deterministic_per_flow() {
    let t = build_ok(&fat_tree(3, 4));
    let r = router(
        &RoutingSpec {
            algorithm: RoutingAlgorithm::Hashed,
            ugal_threshold_bytes: 0,
        },
        &t,
    );
    let mut rng = Rng::new(0);
    let mut distinct_first_hops = Vec::new();
    for src in 0..14 {
        let a = walk_ok(&t, r.as_ref(), src, 15, &ZeroView, &mut rng);
        let b = walk_ok(&t, r.as_ref(), src, 15, &RandView(5), &mut rng);
        let chans = |s: &[Step]| s.iter().map(|x| x.ch).collect::<Vec<_>>();
        assert_eq!(chans(&a), chans(&b));
        distinct_first_hops.push(a[a.len() - 2].ch);
    }
    // One destination's traffic is spread over more than one last switch hop.
    distinct_first_hops.sort_unstable();
    distinct_first_hops.dedup();
    assert!(distinct_first_hops.len() > 1);
}

#[test]
fn ugal_is_minimal_when_idle_and_valiant_under_load() {
    let t = build_ok(&tracerp_dragonfly_342());
    let ugal = |threshold| {
        router(
            &RoutingSpec {
                algorithm: RoutingAlgorithm::Ugal,
                ugal_threshold_bytes: threshold,
            },
            &t,
        )
    };
    let minimal = router(&RoutingSpec::default(), &t);
    let (u, u_high) = (ugal(0), ugal(u64::MAX));
    let mut rng = Rng::new(11);
    let mut non_minimal = 0;
    for (src, dst) in [(0u32, 341u32), (5, 200), (100, 3), (50, 51), (7, 300)] {
        let m = walk_ok(&t, minimal.as_ref(), src, dst, &ZeroView, &mut rng);
        let idle = walk_ok(&t, u.as_ref(), src, dst, &ZeroView, &mut rng);
        assert_eq!(switch_hops(&m), switch_hops(&idle));
        // Minimal first hop congested: UGAL detours unless the threshold forbids it.
        struct Hot(u32);
        impl QueueView for Hot {
            fn queued_bytes(&self, ch: u32) -> u64 {
                if ch == self.0 {
                    1 << 20
                } else {
                    0
                }
            }
        }
        let hot = Hot(m[0].ch);
        let loaded = walk_ok(&t, u.as_ref(), src, dst, &hot, &mut rng);
        if loaded[0].state.phase == 1 {
            non_minimal += 1;
            assert_ne!(loaded[0].ch, m[0].ch);
        }
        let capped = walk_ok(&t, u_high.as_ref(), src, dst, &hot, &mut rng);
        assert_eq!(switch_hops(&capped), switch_hops(&m));
    }
    assert!(non_minimal >= 4, "UGAL took Valiant {non_minimal} times");
}

#[test]
fn valiant_visits_an_intermediate_group() {
    let t = build_ok(&dragonfly(
        5,
        2,
        2,
        2,
        tracewatt_net::DragonflyArrangement::Absolute,
    ));
    let r = router(
        &RoutingSpec {
            algorithm: RoutingAlgorithm::Valiant,
            ugal_threshold_bytes: 0,
        },
        &t,
    );
    let mut rng = Rng::new(4);
    for src in 0..t.num_nodes {
        for dst in 0..t.num_nodes {
            let steps = walk_ok(&t, r.as_ref(), src, dst, &ZeroView, &mut rng);
            let (rs, rd) = (t.node_switch(src), t.node_switch(dst));
            if rs == rd {
                assert_eq!(steps.len(), 1);
                continue;
            }
            let inter = steps[0].state.inter;
            assert!(inter != rs / 2 && inter != rd / 2 && inter < 5);
            let groups: Vec<u32> = steps
                .iter()
                .filter_map(|s| match t.channels[s.ch as usize].dst {
                    Device::Switch(x) => Some(x / 2),
                    Device::Node(_) => None,
                })
                .collect();
            // The only way to skip the intermediate group: passing through the destination's
            // router (same group) on the way to it, where the packet is delivered.
            let via_dst = rs / 2 == rd / 2 && steps.len() == 2;
            assert!(
                via_dst || groups.contains(&inter),
                "{src}->{dst} skipped group {inter}: {steps:?} {groups:?}"
            );
        }
    }
}

#[test]
fn inapplicable_algorithms_are_rejected() {
    use RoutingAlgorithm as A;
    let cases = [
        (torus(&[4, 4], 1), A::Valiant),
        (torus(&[4, 4], 1), A::Dmodk),
        (fat_tree(2, 4), A::Ugal),
        (fat_tree(2, 4), A::DimensionOrder),
        (tracerp_dragonfly_342(), A::Dmodk),
        (tracerp_dragonfly_342(), A::Hashed),
        (TopologySpec::SingleSwitch { nodes: 3 }, A::Valiant),
    ];
    for (spec, algorithm) in cases {
        let t = build_ok(&spec);
        let err = make_router(
            &RoutingSpec {
                algorithm,
                ugal_threshold_bytes: 0,
            },
            &t,
        )
        .expect_err("should be rejected");
        assert_eq!(err.field, "machine.routing.algorithm");
        assert!(err.message.contains("default"), "{}", err.message);
    }
    let t = build_ok(&torus(&[4, 4], 1));
    let err = make_router(
        &RoutingSpec {
            algorithm: A::Valiant,
            ugal_threshold_bytes: 0,
        },
        &t,
    )
    .expect_err("valiant on torus");
    assert!(err.message.contains("dimension_order"), "{}", err.message);
    assert!(err.message.contains("valiant"), "{}", err.message);
}

fn big_instances() -> Vec<TopologySpec> {
    vec![
        tracerp_torus_4x8x8(),
        benchmark_dragonfly_1056(),
        tracerp_fattree_288(),
        tracerp_dragonfly_342(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Sampled pairs on the large presets, every algorithm, random occupancy.
    #[test]
    fn sampled_pairs_on_presets(which in 0usize..4, src in any::<u32>(), dst in any::<u32>(), seed in any::<u64>()) {
        let spec = &big_instances()[which];
        let t = build_ok(spec);
        let (src, dst) = (src % t.num_nodes, dst % t.num_nodes);
        for rspec in algorithms(&t.shape) {
            let r = router(&rspec, &t);
            let mut rng = Rng::new(seed);
            let steps = walk_ok(&t, r.as_ref(), src, dst, &RandView(seed), &mut rng);
            let hops = switch_hops(&steps);
            if is_minimal(rspec.algorithm) {
                if let Some(want) = expected_minimal_hops(spec, src, dst) {
                    prop_assert_eq!(hops, want);
                }
            }
            if let Shape::Dragonfly { .. } = t.shape {
                let bound = if is_adaptive_or_random(rspec.algorithm) { 5 } else { 3 };
                prop_assert!(hops <= bound);
            }
            check_vcs(&t, r.as_ref(), &steps);
        }
    }

    /// Random small specs of every family: every pair delivered by every algorithm.
    #[test]
    fn random_specs_route_all_pairs(spec in crate::builders::any_small_spec(), seed in any::<u64>()) {
        let t = build_ok(&spec);
        for rspec in algorithms(&t.shape) {
            let r = router(&rspec, &t);
            let mut rng = Rng::new(seed);
            let mut cdg = Cdg::new(r.num_vcs());
            for src in 0..t.num_nodes {
                for dst in 0..t.num_nodes {
                    let steps = walk_ok(&t, r.as_ref(), src, dst, &RandView(seed), &mut rng);
                    if is_minimal(rspec.algorithm) {
                        if let Some(want) = expected_minimal_hops(&spec, src, dst) {
                            prop_assert_eq!(switch_hops(&steps), want);
                        }
                    }
                    check_vcs(&t, r.as_ref(), &steps);
                    cdg.add_path(&steps);
                }
            }
            prop_assert_eq!(cdg.find_cycle_vertex(), None);
        }
    }
}
