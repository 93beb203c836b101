//! End-to-end checks of the simulator against hand calculations.

use tracewatt_core::time::serialization_ps;
use tracewatt_sim::{simulate, simulate_with, Config, Format, Results, SimError};
use tracewatt_workload::{CollAlgo, CollKind, Op, SrcSel, TagSel, WORLD};

mod script;
use script::{recv, send, Script};

/// A config with the given topology table, zero MPI overheads and one job on `nodes`.
fn config(topology: &str, extra_machine: &str, nodes: &[u32]) -> Config {
    let node_list = nodes
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        r#"
seed = 7
[machine]
packet_bytes = 1000
buffer_bytes = 8000
switch_latency_ns = 100
{extra_machine}
[machine.topology]
{topology}
[machine.links]
bandwidth_gbps = 8.0
latency_ns = 50
[mpi]
send_overhead_ns = 0
recv_overhead_ns = 0
eager_limit_bytes = 100000
control_bytes = 64
[[jobs]]
ranks = {n}
allocation = "list"
node_list = [{node_list}]
mapping = "round_robin"
[jobs.workload]
kind = "pingpong"
"#,
        n = nodes.len()
    );
    Config::parse(&text, Format::Toml, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn run(config: &Config, programs: Vec<Vec<Op>>) -> Result<Results, SimError> {
    simulate_with(
        config,
        "test.toml",
        vec![Box::new(Script(programs))],
        &mut |_| true,
    )
}

fn makespan_ps(r: &Results) -> u64 {
    (r.summary["makespan_s"].as_f64().unwrap() * 1e12).round() as u64
}

fn switch_hops(r: &Results) -> f64 {
    r.summary["network"]["mean_switch_hops"].as_f64().unwrap()
}

const BW: u64 = 8_000_000_000;
const LAT: u64 = 50_000;
const SW: u64 = 100_000;

struct Case {
    name: &'static str,
    topology: &'static str,
    nodes: [u32; 2],
    hops: u64,
}

fn cases() -> Vec<Case> {
    vec![
        Case { name: "single switch", topology: "kind = \"single_switch\"\nnodes = 4", nodes: [0, 3], hops: 0 },
        Case {
            name: "fat-tree 2-level, two leaves",
            topology: "kind = \"fat_tree\"\nlevels = 2\nradix = 4",
            nodes: [0, 7],
            hops: 2,
        },
        Case {
            name: "fat-tree 3-level, two pods",
            topology: "kind = \"fat_tree\"\nlevels = 3\nradix = 4",
            nodes: [0, 15],
            hops: 4,
        },
        Case { name: "torus ring, 2 apart", topology: "kind = \"torus\"\ndims = [6]", nodes: [0, 2], hops: 2 },
        Case {
            name: "torus 2-D, wrap-around",
            topology: "kind = \"torus\"\ndims = [4, 4]",
            nodes: [0, 15],
            hops: 2,
        },
        Case {
            name: "dragonfly, same router",
            topology: "kind = \"dragonfly\"\ngroups = 5\nrouters_per_group = 2\nnodes_per_router = 2\nglobal_links_per_router = 2",
            nodes: [0, 1],
            hops: 0,
        },
    ]
}

#[test]
fn one_message_latency_matches_hand_calculation_on_every_topology() {
    for cut_through in [true, false] {
        let switching = if cut_through {
            "cut_through"
        } else {
            "store_and_forward"
        };
        for case in cases() {
            for bytes in [100u64, 1000, 3500] {
                let c = config(
                    case.topology,
                    &format!("switching = \"{switching}\""),
                    &case.nodes,
                );
                let r = run(&c, vec![vec![send(1, bytes)], vec![recv(0, bytes)]]).unwrap();
                assert!(
                    (switch_hops(&r) - case.hops as f64).abs() < 1e-12,
                    "{}: hops",
                    case.name
                );
                let want = expected(case.hops + 2, bytes, cut_through);
                assert_eq!(makespan_ps(&r), want, "{} {switching} {bytes} B", case.name);
            }
        }
    }
}

/// Cut-through from a slower link into a faster one: the head leaves a switch the switch latency
/// after it came in, and so does the tail at the soonest, so the faster link ends its packet
/// then. A 1000 B packet from node 0 to node 2 of a radix-4 fat-tree, node links at 8 Gb/s
/// (1000 ns a packet), tree links at 4 Gb/s (2000 ns), 50 ns links, 100 ns switches:
/// n0 -> leaf [0, 1000], tail in at 1050; leaf -> spine [150, 2150], tail in at 2200;
/// spine -> leaf [300, 2300], tail in at 2350; leaf -> n2 starts at 450 and would end at 1450,
/// but its tail came in at 2350: it ends at 2450 and is in at 2500.
#[test]
fn a_packet_from_a_slower_link_leaves_a_switch_the_switch_latency_after_its_tail() {
    let c = config(
        "kind = \"fat_tree\"\nradix = 4",
        "switching = \"cut_through\"\n[[machine.links.tree]]\nbandwidth_gbps = 4.0",
        &[0, 2],
    );
    let r = run(&c, vec![vec![send(1, 1000)], vec![recv(0, 1000)]]).unwrap();
    assert_eq!(makespan_ps(&r), 2_500_000);
    let latency = r.summary["network"]["packet_latency_mean_s"]
        .as_f64()
        .unwrap();
    assert!((latency - 2500e-9).abs() < 1e-18, "{latency}");
}

/// Hand calculation of one message of `bytes` crossing `links` equal links (switch hops + 2) in
/// 1000-byte packets with no other traffic: on every link a packet starts when it is ready there
/// and the previous packet has left; cut-through forwards once the head is in (never finishing
/// before the tail), store-and-forward once the tail is in.
fn expected(links: u64, bytes: u64, cut_through: bool) -> u64 {
    expected_with_buffer(links, bytes, cut_through, u64::MAX, LAT)
}

/// [`expected`] with switch input buffers of `buffer` bytes: a packet also waits on each link
/// until the switch at its end has room, and a buffer's space comes back to the link feeding it
/// `credit_ps` after the packet's tail has left on the next link.
fn expected_with_buffer(
    links: u64,
    bytes: u64,
    cut_through: bool,
    buffer: u64,
    credit_ps: u64,
) -> u64 {
    let packet = 1000u64;
    let sizes: Vec<u64> = if bytes == 0 {
        vec![0]
    } else {
        (0..bytes.div_ceil(packet))
            .map(|k| (bytes - k * packet).min(packet))
            .collect()
    };
    let mut link_free = vec![0u64; links as usize];
    // Per link into a switch: (time its buffer space comes back, bytes) of every packet sent.
    let mut held: Vec<Vec<(u64, u64)>> = vec![Vec::new(); links as usize];
    let mut delivered = 0;
    for s in sizes {
        let ser = serialization_ps(s, BW);
        let (mut ready, mut tail) = (0u64, 0u64);
        for j in 0..links as usize {
            let mut start = ready.max(link_free[j]);
            if j + 1 < links as usize {
                // Space frees in send order: wait for the oldest packets still in the buffer.
                let mut in_buffer: u64 = held[j].iter().map(|&(_, b)| b).sum();
                for &(back, b) in &held[j] {
                    if in_buffer + s <= buffer {
                        break;
                    }
                    in_buffer -= b;
                    start = start.max(back);
                }
                held[j].retain(|&(back, _)| back > start);
            }
            let end = if j == 0 {
                start + ser
            } else {
                (start + ser).max(tail)
            };
            if j > 0 {
                // This packet leaves the buffer it held at the end of link j - 1.
                let last = held[j - 1].last_mut().expect("sent on the previous link");
                last.0 = end + credit_ps;
            }
            if j + 1 < links as usize {
                held[j].push((u64::MAX, s));
            }
            link_free[j] = end;
            tail = end + LAT;
            let last = j + 1 == links as usize;
            ready = if last {
                tail
            } else if cut_through {
                start + LAT + SW
            } else {
                end + LAT + SW
            };
        }
        delivered = ready;
    }
    delivered
}

#[test]
fn credit_flow_control_matches_hand_calculation() {
    // Buffers of one packet and of one and a half (the 500-byte last packet fits beside a full
    // one): the credits' round trip, not the links' bandwidth, sets the pace, and every port
    // waits for credit in turn. Out of band a credit is back one link latency after the tail
    // left; as a frame on the reverse link (awake: the run is far shorter than the idle
    // timeout, and nothing else uses the reverse links) 8 B of serialisation later.
    let frame = serialization_ps(8, BW);
    for case in cases() {
        for (credits, credit_ps) in [("out_of_band", LAT), ("reverse_link", frame + LAT)] {
            for buffer in [1000u64, 1500] {
                for cut_through in [true, false] {
                    let switching = if cut_through {
                        "cut_through"
                    } else {
                        "store_and_forward"
                    };
                    let mut c = config(
                        case.topology,
                        &format!("switching = \"{switching}\"\ncredits = \"{credits}\""),
                        &case.nodes,
                    );
                    c.machine.buffer_bytes = buffer as u32;
                    let bytes = 9_500;
                    let r = run(&c, vec![vec![send(1, bytes)], vec![recv(0, bytes)]]).unwrap();
                    let want =
                        expected_with_buffer(case.hops + 2, bytes, cut_through, buffer, credit_ps);
                    assert_eq!(
                        makespan_ps(&r),
                        want,
                        "{} {switching} buffer {buffer} B, credits {credits}",
                        case.name
                    );
                    assert!(want > expected(case.hops + 2, bytes, cut_through));
                }
            }
        }
    }
}

#[test]
fn a_credit_wakes_the_sleeping_reverse_link_it_travels_on() {
    // One switch, a buffer of one packet, every link direction asleep as soon as it is idle
    // (timeout 0, no sleep transition, wake 0.5 us). Node 0 sends M packets to node 1: each
    // waits for the previous one's credit. As a frame, that credit first wakes the switch's
    // port towards node 0 (idle since the previous credit, as a packet takes 1 us and the wake
    // and frame 0.508 us), so every packet after the first starts W + 8 B later than with
    // credits out of band, and that port wakes once per packet. Everything else (each data hop
    // finds its link asleep and waits W either way) is the same in both runs.
    const M: u64 = 5;
    const W: u64 = 500_000;
    let frame = serialization_ps(8, BW);
    let run_with = |credits: &str| {
        // The power tables follow `[machine]`'s own fields (TOML allows `[machine.topology]`
        // after them).
        let mut c = config(
            "kind = \"single_switch\"\nnodes = 2",
            &format!(
                "credits = \"{credits}\"\n[power]\ncontrol = \"independent\"\n\
                 [power.links]\nidle_timeout_us = 0.0\nsleep_time_us = 0.0\nwake_time_us = 0.5"
            ),
            &[0, 1],
        );
        c.machine.buffer_bytes = 1000;
        run(&c, vec![vec![send(1, M * 1000)], vec![recv(0, M * 1000)]]).unwrap()
    };
    let oob = run_with("out_of_band");
    let rev = run_with("reverse_link");
    assert_eq!(makespan_ps(&rev) - makespan_ps(&oob), (M - 1) * (W + frame));
    // The switch's port towards node 0: no traffic out of band, one wake per credit here.
    let wakes = |r: &Results| {
        let t = r.table("links").expect("links table");
        let col = |name: &str| &t.columns.iter().find(|c| c.0 == name).unwrap().1;
        let (
            tracewatt_sim::Column::Str(src),
            tracewatt_sim::Column::Str(dst),
            tracewatt_sim::Column::U64(wakes),
        ) = (col("src"), col("dst"), col("wakes"))
        else {
            panic!("link columns")
        };
        (0..src.len())
            .find(|&i| src[i] == "s0" && dst[i] == "n0")
            .map(|i| wakes[i])
            .expect("link s0 -> n0")
    };
    assert_eq!(wakes(&oob), 0);
    assert_eq!(wakes(&rev), M);
}

#[test]
fn two_flows_sharing_one_link_take_twice_as_long() {
    let topo = "kind = \"single_switch\"\nnodes = 3";
    let bytes = 400_000;
    let c = config(topo, "", &[0, 1, 2]);
    let alone = run(&c, vec![vec![send(2, bytes)], vec![], vec![recv(0, bytes)]]).unwrap();
    let shared = run(
        &c,
        vec![
            vec![send(2, bytes)],
            vec![send(2, bytes)],
            vec![recv(0, bytes), recv(1, bytes)],
        ],
    )
    .unwrap();
    let ratio = makespan_ps(&shared) as f64 / makespan_ps(&alone) as f64;
    assert!((ratio - 2.0).abs() < 0.01, "ratio {ratio}");
}

#[test]
fn rendezvous_message_costs_the_handshake() {
    let topo = "kind = \"single_switch\"\nnodes = 2";
    let bytes = 90_000u64; // below the configured eager limit of 100,000
    let mut c = config(topo, "", &[0, 1]);
    let eager = run(&c, vec![vec![send(1, bytes)], vec![recv(0, bytes)]]).unwrap();
    c.mpi.eager_limit_bytes = 1000;
    let rdv = run(&c, vec![vec![send(1, bytes)], vec![recv(0, bytes)]]).unwrap();
    // RTS there and CTS back: two one-packet messages of 64 bytes over 2 links.
    let control = 2 * expected(2, 64, true);
    assert_eq!(makespan_ps(&rdv), makespan_ps(&eager) + control);
    assert_eq!(makespan_ps(&eager), expected(2, bytes, true));
}

#[test]
fn a_receive_nobody_sends_to_is_reported_with_the_waiting_ranks() {
    let c = config("kind = \"single_switch\"\nnodes = 3", "", &[0, 1, 2]);
    let err = run(&c, vec![vec![recv(1, 8)], vec![recv(0, 8)], vec![]]).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, SimError::Deadlock { blocked: 2, .. }),
        "{msg}"
    );
    assert!(
        msg.contains("rank 0") && msg.contains("receive from rank 1"),
        "{msg}"
    );
    assert!(
        msg.contains("rank 1") && msg.contains("receive from rank 0"),
        "{msg}"
    );
}

#[test]
fn an_unmatched_rendezvous_send_is_reported() {
    let mut c = config("kind = \"single_switch\"\nnodes = 2", "", &[0, 1]);
    c.mpi.eager_limit_bytes = 10;
    let err = run(&c, vec![vec![send(1, 100)], vec![]]).unwrap_err();
    assert!(
        err.to_string().contains("send of 100 bytes to rank 1"),
        "{err}"
    );
}

#[test]
fn same_config_and_seed_give_identical_results() {
    let text = r#"
seed = 11
[machine]
preset = "bench-dragonfly-1056"
[[jobs]]
ranks = 64
allocation = "random"
[jobs.workload]
kind = "uniform_random"
messages = 5
"#;
    let c = Config::parse(text, Format::Toml, "t.toml").unwrap();
    let a = simulate(&c, "t.toml", &mut |_| true).unwrap();
    let b = simulate(&c, "t.toml", &mut |_| true).unwrap();
    assert_eq!(a, b);
    let mut c2 = c.clone();
    c2.seed = 12;
    let d = simulate(&c2, "t.toml", &mut |_| true).unwrap();
    assert_ne!(a.summary["makespan_s"], d.summary["makespan_s"]);
}

/// Every topology family with every routing algorithm that applies to it, small enough for
/// all-to-all in a test.
fn routed_machines() -> Vec<(&'static str, &'static str, &'static str, u32)> {
    let ft2 = "kind = \"fat_tree\"\nlevels = 2\nradix = 4";
    let ft3 = "kind = \"fat_tree\"\nlevels = 3\nradix = 4";
    let torus = "kind = \"torus\"\ndims = [4, 4]";
    let torus3 = "kind = \"torus\"\ndims = [3, 2, 3]";
    let df = "kind = \"dragonfly\"\ngroups = 5\nrouters_per_group = 2\nnodes_per_router = 2\nglobal_links_per_router = 2";
    let mut v = Vec::new();
    for algo in ["dmodk", "hashed", "adaptive"] {
        v.push(("fat-tree 2-level", ft2, algo, 8));
        v.push(("fat-tree 3-level", ft3, algo, 16));
    }
    v.push(("torus 4x4", torus, "dimension_order", 16));
    v.push(("torus 3x2x3", torus3, "dimension_order", 18));
    for algo in ["minimal", "valiant", "ugal"] {
        v.push(("dragonfly", df, algo, 20));
    }
    v
}

/// One-packet input buffers: the tightest back-pressure the fabric allows.
fn tight(topology: &str, algo: &str, nodes: u32, workload: &str) -> Config {
    tight_with(topology, algo, nodes, workload, "out_of_band", "")
}

/// [`tight`] with the machine's credit path and `[power]` tables (empty: the defaults).
fn tight_with(
    topology: &str,
    algo: &str,
    nodes: u32,
    workload: &str,
    credits: &str,
    power: &str,
) -> Config {
    let text = format!(
        r#"
seed = 3
[machine]
packet_bytes = 256
buffer_bytes = 256
credits = "{credits}"
[machine.topology]
{topology}
[machine.routing]
algorithm = "{algo}"
[machine.links]
bandwidth_gbps = 10.0
[[jobs]]
ranks = {nodes}
[jobs.workload]
{workload}
{power}
"#
    );
    Config::parse(&text, Format::Toml, "tight.toml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn all_to_all_with_one_packet_buffers_completes_on_every_topology_and_routing() {
    // Also with every credit a frame on a reverse link that sleeps as soon as it is idle and
    // takes 1 us to wake: credits then wait for wakes while every buffer is full.
    let on_off = "[power]\ncontrol = \"independent\"\n[power.links]\nidle_timeout_us = 0.0\n\
                  sleep_time_us = 0.0\nwake_time_us = 1.0";
    for (credits, power) in [("out_of_band", ""), ("reverse_link", on_off)] {
        for (name, topo, algo, nodes) in routed_machines() {
            // Every rank posts all its sends at once (the scattered algorithm): maximum
            // contention.
            let c = tight_with(
                topo,
                algo,
                nodes,
                "kind = \"a2a\"\nbytes = 2000\nalgo = \"scattered\"",
                credits,
                power,
            );
            let r = simulate(&c, "tight.toml", &mut |_| true)
                .unwrap_or_else(|e| panic!("{name} / {algo} / {credits}: {e}"));
            let pairs = (nodes * (nodes - 1)) as u64;
            assert_eq!(
                r.summary["messages"]["count"].as_u64(),
                Some(pairs),
                "{name} / {algo} / {credits}"
            );
            assert_eq!(
                r.summary["messages"]["bytes"].as_u64(),
                Some(pairs * 2000),
                "{name} / {algo} / {credits}"
            );
        }
    }
}

#[test]
fn adversarial_permutations_with_one_packet_buffers_complete() {
    for (name, topo, algo, nodes) in routed_machines() {
        // Tornado (i -> i + n/2) and its mirror at once: every flow crosses the bisection.
        let half = nodes / 2;
        let mut progs: Vec<Vec<Op>> = vec![Vec::new(); nodes as usize];
        for (i, p) in progs.iter_mut().enumerate() {
            let i = i as u32;
            let to = (i + half) % nodes;
            let from = (i + nodes - half) % nodes;
            p.push(Op::Isend {
                comm: WORLD,
                dst: to,
                tag: 1,
                bytes: 50_000,
                req: 1,
            });
            p.push(Op::Irecv {
                comm: WORLD,
                src: SrcSel::Rank(from),
                tag: TagSel::Tag(1),
                bytes: 50_000,
                req: 2,
            });
            p.push(Op::Waitall {
                reqs: vec![1, 2].into_boxed_slice(),
            });
        }
        let c = tight(topo, algo, nodes, "kind = \"pingpong\"");
        let r = simulate_with(&c, "tight.toml", vec![Box::new(Script(progs))], &mut |_| {
            true
        })
        .unwrap_or_else(|e| panic!("{name} / {algo}: {e}"));
        assert_eq!(
            r.summary["messages"]["bytes"].as_u64(),
            Some(nodes as u64 * 50_000),
            "{name} / {algo}"
        );
    }
}

#[test]
fn a_clear_to_send_does_not_wait_behind_bulk_data_at_its_nic() {
    // Node 0 streams 100 kB to node 2 (1 byte/ns: 100 us). At 20 us node 1 asks (RTS) to send
    // node 0 100 kB; node 0's clear-to-send leaves after at most the 1,000-byte packet on its
    // wire (1 us), not after the 80 us of data still queued. A 64-byte control message's tail
    // arrives 50 ns (link) + 100 ns (switch) + 64 ns + 50 ns = 0.264 us after it leaves (cut-
    // through); the data's last packet starts 99 us after the first and arrives 1.2 us later.
    // So node 0 has the data between 20 + 0.264 + 0.264 + 100.2 = 120.728 us (no wait) and
    // 121.728 us (a whole packet's wait).
    let mut c = config("kind = \"single_switch\"\nnodes = 3", "", &[0, 1, 2]);
    c.mpi.eager_limit_bytes = 1000;
    let big = 100_000;
    let r0 = vec![
        Op::Isend {
            comm: WORLD,
            dst: 2,
            tag: 0,
            bytes: big,
            req: 1,
        },
        Op::Irecv {
            comm: WORLD,
            src: SrcSel::Rank(1),
            tag: TagSel::Tag(0),
            bytes: big,
            req: 2,
        },
        Op::Waitall {
            reqs: vec![1, 2].into(),
        },
    ];
    let r1 = vec![Op::Compute { ps: 20_000_000 }, send(0, big)];
    let r2 = vec![recv(0, big)];
    let res = run(&c, vec![r0, r1, r2]).unwrap();
    let mk = makespan_ps(&res);
    assert!(
        (120_728_000..=121_728_000).contains(&mk),
        "{mk} ps (queued behind the bulk data, the clear-to-send would leave at ~100 us)"
    );
}

fn allreduce(bytes: u64, req: Option<u32>) -> Op {
    let (comm, kind, root, algo) = (WORLD, CollKind::Allreduce, 0, CollAlgo::Auto);
    match req {
        Some(req) => Op::Icollective {
            comm,
            kind,
            root,
            bytes,
            algo,
            req,
        },
        None => Op::Collective {
            comm,
            kind,
            root,
            bytes,
            algo,
        },
    }
}

fn compute_us(us: u64) -> Op {
    Op::Compute { ps: us * 1_000_000 }
}

/// A non-blocking allreduce overlaps the compute after it: the rank waits at its `Wait` only
/// for what is left of it. Two ranks on one switch, a 1000-byte allreduce (recursive doubling:
/// one 1000-byte message each way, the two directions on links of their own): one packet of
/// 1000 ns on the first link, forwarded 50 + 100 ns after its head, out of the second link at
/// 1150 ns and in 50 ns later: C = 1.2 us. Then, with 1 us of compute after the wait:
/// - blocking, then 5 us of compute: C + 5 + 1 = 7.2 us;
/// - non-blocking over 5 us of compute: max(5, C) + 1 = 6 us;
/// - non-blocking over 0.5 us of compute: max(0.5, C) + 1 = 2.2 us;
/// - with a send overhead of 100 ns, the non-blocking one's message leaves at 0.1 us and it ends
///   at 1.3 us; the overhead is not the rank's (its progress runs beside the program), so over
///   5 us of compute the run still takes 6 us, and over 0.5 us 2.3 us.
/// - two non-blocking allreduces in flight together, waited for in the other order: the
///   second message each way follows the first on the links (out of the second link at 2150
///   ns), so both are done at 2.2 us, and neither takes the other's message.
#[test]
fn a_nonblocking_collective_overlaps_compute_until_its_wait() {
    let topo = "kind = \"single_switch\"\nnodes = 2";
    let mut c = config(topo, "", &[0, 1]);
    let both = |ops: Vec<Op>| vec![ops.clone(), ops];
    let wait = Op::Wait { req: 0 };
    let overlapped = |compute: u64| {
        both(vec![
            allreduce(1000, Some(0)),
            Op::Compute { ps: compute },
            wait.clone(),
            compute_us(1),
        ])
    };
    let span = |c: &Config, p| makespan_ps(&run(c, p).unwrap());
    assert_eq!(
        span(
            &c,
            both(vec![allreduce(1000, None), compute_us(5), compute_us(1)])
        ),
        7_200_000
    );
    assert_eq!(span(&c, overlapped(5_000_000)), 6_000_000);
    assert_eq!(span(&c, overlapped(500_000)), 2_200_000);
    let two = both(vec![
        allreduce(1000, Some(0)),
        allreduce(1000, Some(1)),
        Op::Waitall {
            reqs: vec![1, 0].into_boxed_slice(),
        },
    ]);
    assert_eq!(span(&c, two), 2_200_000);
    c.mpi.send_overhead_ns = 100.0;
    assert_eq!(span(&c, overlapped(5_000_000)), 6_000_000);
    assert_eq!(span(&c, overlapped(500_000)), 2_300_000);
}

#[test]
fn full_lane_alltoall_follows_the_ranks_per_node() {
    // 6 ranks on 3 nodes of one switch, blocks of 1,000 B. Two ranks per node in order
    // (linear): each rank sends the other 2 nodes one message of 2 blocks and its node's other
    // rank one of 3 blocks (one from each node's rank of its lane): 6 x 3 = 18 messages,
    // 6 x (2 x 2,000 + 3,000) = 42,000 B, and the 12 between nodes one packet each. Round robin
    // puts consecutive ranks on different nodes: no lanes, a flat alltoall of 30 blocks, 24 of
    // them between nodes.
    for (mapping, messages, bytes, packets) in
        [("linear", 18, 42_000, 12), ("round_robin", 30, 30_000, 24)]
    {
        let text = format!(
            r#"
seed = 1
[machine]
ranks_per_node = 2
packet_bytes = 4096
[machine.topology]
kind = "single_switch"
nodes = 3
[machine.links]
bandwidth_gbps = 10.0
[[jobs]]
ranks = 6
mapping = "{mapping}"
[jobs.workload]
kind = "a2a"
bytes = 1000
algo = "full_lane"
"#
        );
        let c = Config::parse(&text, Format::Toml, "lanes.toml").unwrap_or_else(|e| panic!("{e}"));
        let r = simulate(&c, "lanes.toml", &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.summary["messages"]["count"].as_u64(),
            Some(messages),
            "{mapping}"
        );
        assert_eq!(
            r.summary["messages"]["bytes"].as_u64(),
            Some(bytes),
            "{mapping}"
        );
        assert_eq!(
            r.summary["network"]["packets"].as_u64(),
            Some(packets),
            "{mapping}"
        );
    }
}
