//! `cargo bench -p tracewatt-bench --bench flow`: the flow-level network alone, in flow events
//! per second, with the packet model beside it (packet events per second, and the time of the
//! whole exchange in each): all-to-all and random traffic whose flows share saturated links, and
//! one iteration of TraceRP's benchmarks (permutation, stencil4d, near-neighbour, a throttled
//! all-to-all) at 8,192 nodes.
//!
//! What the flow side measures: the model with its default parameters on the scenarios' whole
//! messages. Flow mode sends a message of up to `short_bytes` (32 KiB with these 64 KiB buffers)
//! whole, one of up to `TRAIN_SEGMENTS` segments (512 KiB) as a train of such short messages, and
//! shares bandwidth by max-min fairness only among larger messages; so every scenario but one
//! sends messages of 1 MiB or more, TraceRP's own sizes where it has them, and measures the rate
//! updates (`flow::share`). The 1 KiB throttled all-to-all measures the short messages' path
//! instead (no rate update at all). The model's parameters stay the defaults, rather than
//! `train_segments = 0` on smaller messages, so that the numbers are those of the model as runs
//! use it.
//!
//! What the packet side measures: where the packet model would take minutes on the whole
//! messages (its cost grows with the packets, the flow model's does not), it runs them made
//! smaller (`Scenario::packet_cut`, named in the output), so its events per second are those of a
//! smaller exchange, and its exchange time is compared with the flow model's on the same smaller
//! messages (printed beside it; a cut message may be a train or a short message in flow mode),
//! not with the flow side's whole exchange.
//!
//! Before the timed runs, each scenario prints how many flows one rate update recomputes on
//! average (the locality of the max-min updates) and the wall time of one run of each model
//! (`-- nomatch` prints these alone).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Instant;
use tracewatt_core::{EventQueue, Ps, Rng, Schedule};
use tracewatt_net::fabric::{Credits, Fabric, FabricParams, LinkObserver, Notice, Switching};
use tracewatt_net::flow::FlowFabric;
use tracewatt_net::topology::build;
use tracewatt_net::{
    make_router, ChannelId, DragonflyArrangement, LinkParams, Network, NodeId, RoutingAlgorithm,
    RoutingSpec, Topology, TopologySpec,
};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NS: Ps = 1_000;

#[derive(Debug, Clone, Copy)]
enum Ev<E> {
    Send(u32),
    Net(E),
}

struct Q<'a, E>(&'a mut EventQueue<Ev<E>>);
impl<E: Copy> Schedule<E> for Q<'_, E> {
    fn schedule(&mut self, time: Ps, event: E) {
        self.0.push(time, Ev::Net(event));
    }
}

/// Counts the busy time reported, as statistics would.
#[derive(Default)]
struct Busy(Ps);
impl LinkObserver for Busy {
    fn on_transmit(&mut self, _ch: ChannelId, start: Ps, end: Ps, _bytes: u32, _src: NodeId) {
        self.0 += end - start;
    }
}

struct Scenario {
    name: &'static str,
    spec: TopologySpec,
    routing: RoutingAlgorithm,
    /// (time, src, dst, bytes)
    sends: Vec<(Ps, NodeId, NodeId, u64)>,
    /// The packet model runs the same messages this many times smaller where the whole would
    /// take it minutes (its cost grows with the packets, the flow model's does not); 1 for the
    /// whole.
    packet_cut: u64,
}

impl Scenario {
    /// What the packet model runs: the messages divided by `packet_cut`.
    fn packet_cut(&self) -> Scenario {
        Scenario {
            name: self.name,
            spec: self.spec.clone(),
            routing: self.routing,
            sends: self
                .sends
                .iter()
                .map(|&(t, s, d, b)| (t, s, d, b.div_ceil(self.packet_cut)))
                .collect(),
            packet_cut: 1,
        }
    }
}

fn params() -> FabricParams {
    FabricParams {
        packet_bytes: 4096,
        buffer_bytes: 65536,
        switch_latency_ps: 100 * NS,
        switching: Switching::CutThrough,
        credits: Credits::OutOfBand,
        train_segments: tracewatt_net::flow::TRAIN_SEGMENTS,
        segment_packets: tracewatt_net::flow::SEGMENT_PACKETS,
        short_unit_packets: 0,
    }
}

fn topo(spec: &TopologySpec) -> Topology {
    build(spec, &|_| LinkParams {
        bandwidth_bps: 100_000_000_000,
        latency_ps: 100 * NS,
    })
    .expect("bench topology builds")
}

/// Every node sends `bytes` to every other at `at`, node `s` to `s + 1`, `s + 2`, ... in turn
/// (the order of a pairwise all-to-all, which spares the packet model's NICs an incast).
fn all_to_all(nodes: u32, bytes: u64, at: Ps) -> Vec<(Ps, NodeId, NodeId, u64)> {
    (0..nodes)
        .flat_map(|s| (1..nodes).map(move |i| (at, s, (s + i) % nodes, bytes)))
        .collect()
}

/// One exchange of a bulk-synchronous halo at `at`: rank `r` (on node `r`) of a periodic grid of
/// `dims` (row-major, as MPI_Dims_create lays it out) sends `bytes` to its neighbour on each side
/// of every dimension.
fn halo(dims: &[u32], bytes: u64, at: Ps) -> Vec<(Ps, NodeId, NodeId, u64)> {
    let n: u32 = dims.iter().product();
    let mut sends = Vec::new();
    for r in 0..n {
        let mut stride = n;
        for &d in dims {
            stride /= d;
            let c = r / stride % d;
            for step in [1, d - 1] {
                let to = r - c * stride + (c + step) % d * stride;
                sends.push((at, r, to, bytes));
            }
        }
    }
    sends
}

/// One step of a random permutation at `at`: node `s` sends `bytes` to its image, a random
/// shuffle of the nodes (fixed points dropped).
fn permutation(nodes: u32, bytes: u64, at: Ps, seed: u64) -> Vec<(Ps, NodeId, NodeId, u64)> {
    let mut image: Vec<u32> = (0..nodes).collect();
    let mut r = Rng::new(seed);
    for i in (1..nodes as usize).rev() {
        image.swap(i, r.below(i as u64 + 1) as usize);
    }
    (0..nodes)
        .filter(|&s| image[s as usize] != s)
        .map(|s| (at, s, image[s as usize], bytes))
        .collect()
}

/// Part of a throttled all-to-all: node `s` sends `bytes` to `s + offset` for each offset, in
/// windows of `per_window` one `gap` apart (as MPICH's alltoall throttle keeps a fixed number of
/// sends in flight).
fn throttled_all_to_all(
    nodes: u32,
    bytes: u64,
    offsets: &[u32],
    per_window: usize,
    gap: Ps,
) -> Vec<(Ps, NodeId, NodeId, u64)> {
    (0..nodes)
        .flat_map(|s| {
            offsets.iter().enumerate().map(move |(i, &o)| {
                let at = (i / per_window) as Ps * gap;
                (at, s, (s + o) % nodes, bytes)
            })
        })
        .collect()
}

/// 8,192 nodes as TraceRP's three machines would have them at one rank per node.
fn fat_tree_8192() -> TopologySpec {
    TopologySpec::FatTree {
        levels: 3,
        radix: 32,
        nodes_per_leaf: None,
        taper: 1.0,
        leaves: None,
        pods: None,
        leaves_per_pod: None,
        spines: None,
    }
}

fn torus_8192() -> TopologySpec {
    TopologySpec::Torus {
        dims: vec![16, 16, 32],
        nodes_per_switch: 1,
    }
}

/// 65 groups, so that each pair of groups has one global link: 8,320 nodes, the first 8,192 used.
fn dragonfly_8320() -> TopologySpec {
    TopologySpec::Dragonfly {
        groups: 65,
        routers_per_group: 16,
        nodes_per_router: 8,
        global_links_per_router: 4,
        arrangement: DragonflyArrangement::Absolute,
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// Runs the scenario through the network model `N`: the model at the end, the events it
/// handled and the time of the last delivery.
fn drive<N: Network>(sc: &Scenario) -> (N, u64, Ps) {
    let t = topo(&sc.spec);
    let router = make_router(
        &RoutingSpec {
            algorithm: sc.routing,
            ugal_threshold_bytes: 0,
        },
        &t,
    )
    .expect("router");
    let mut f = N::build(t, router, params());
    let mut q = EventQueue::new();
    for (i, s) in sc.sends.iter().enumerate() {
        q.push(s.0, Ev::Send(i as u32));
    }
    let (mut rng, mut obs, mut events, mut end) = (Rng::new(1), Busy::default(), 0u64, 0);
    while let Some((now, ev)) = q.pop() {
        match ev {
            Ev::Send(i) => {
                let (_, s, d, b) = sc.sends[i as usize];
                f.send(now, i, (s, d), b, false, false, &mut Q(&mut q), &mut obs);
            }
            Ev::Net(e) => {
                events += 1;
                f.handle(now, e, &mut Q(&mut q), &mut obs, &mut rng);
            }
        }
        if f.drain_notices()
            .any(|n| matches!(n, Notice::Delivered { .. }))
        {
            end = now;
        }
    }
    (f, events, end)
}

/// Runs the scenario through the flow model: (events handled, end time, mean flows per update).
fn run_flow(sc: &Scenario) -> (u64, Ps, f64) {
    let (f, events, end) = drive::<FlowFabric>(sc);
    let (updates, covered) = f.reshare_counts();
    (events, end, covered as f64 / updates.max(1) as f64)
}

/// The same through the packet model: (events handled, end time).
fn run_packet(sc: &Scenario) -> (u64, Ps) {
    let (_, events, end) = drive::<Fabric>(sc);
    (events, end)
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            // 128 nodes on 16 leaves: 16,256 flows of 1 MiB posted at once (an MPI_Alltoall
            // without throttling), which each NIC sends one after another and which share the
            // links they cross.
            name: "fat_tree128_all_to_all_1MiB",
            spec: TopologySpec::FatTree {
                levels: 2,
                radix: 16,
                nodes_per_leaf: None,
                taper: 1.0,
                leaves: None,
                pods: None,
                leaves_per_pod: None,
                spines: None,
            },
            routing: RoutingAlgorithm::Dmodk,
            sends: all_to_all(128, MIB, 0),
            packet_cut: 16,
        },
        Scenario {
            // The 1,056-node benchmark dragonfly, UGAL: 1,056 x 15 flows of 1 MiB to random
            // partners posted within 50 us, so that flows start one by one at scattered instants
            // into links they saturate, and UGAL routes each by the load it meets.
            name: "dragonfly1056_ugal_random_1MiB",
            spec: TopologySpec::Dragonfly {
                groups: 33,
                routers_per_group: 8,
                nodes_per_router: 4,
                global_links_per_router: 4,
                arrangement: DragonflyArrangement::Absolute,
            },
            routing: RoutingAlgorithm::Ugal,
            sends: {
                let mut r = Rng::new(2);
                (0..1056u32)
                    .flat_map(|s| (0..15).map(move |_| s))
                    .map(|s| {
                        let d = (s + 1 + r.below(1055) as u32) % 1056;
                        (r.below(50_000 * NS), s, d, MIB)
                    })
                    .collect()
            },
            packet_cut: 16,
        },
        // TraceRP's benchmarks at 8,192 ranks on 8,192-node machines, one rank per node, one
        // iteration each (every iteration of these is the same exchange again).
        Scenario {
            // TraceR's permutation: 10 MiB from every node to a random partner.
            name: "fat_tree8192_permutation_10MiB",
            spec: fat_tree_8192(),
            routing: RoutingAlgorithm::Default,
            sends: permutation(8192, 10 * MIB, 0, 3),
            packet_cut: 16,
        },
        Scenario {
            // stencil4d: 10 MiB to each of 8 neighbours in a 16 x 8 x 8 x 8 process grid.
            name: "torus8192_stencil4d_10MiB",
            spec: torus_8192(),
            routing: RoutingAlgorithm::Default,
            sends: halo(&[16, 8, 8, 8], 10 * MIB, 0),
            packet_cut: 64,
        },
        Scenario {
            // near_neighbor: 1 MiB to each of 6 neighbours in a 32 x 16 x 16 process grid.
            name: "dragonfly8320_near_neighbor_1MiB",
            spec: dragonfly_8320(),
            routing: RoutingAlgorithm::Default,
            sends: halo(&[32, 16, 16], MIB, 0),
            packet_cut: 8,
        },
        Scenario {
            // a2a of 1 KiB per pair, 32 sends in flight per node: 64 of the 8,191 steps of a
            // pairwise exchange, spread over the whole range of partners, as two windows of 32
            // (each window's 32 KiB per node take about 3 us at the injection link). Every
            // message is short: this is the bench of the short messages' path, with no rate
            // update.
            name: "dragonfly8320_a2a_1KiB_64_partners",
            spec: dragonfly_8320(),
            routing: RoutingAlgorithm::Default,
            sends: {
                let offsets: Vec<u32> = (0..64).map(|k| 1 + 127 * k).collect();
                throttled_all_to_all(8192, KIB, &offsets, 32, 4_000 * NS)
            },
            packet_cut: 1,
        },
        Scenario {
            // stencil4d as above on the dragonfly, UGAL: routing by the load of the flows.
            name: "dragonfly8320_ugal_stencil4d_10MiB",
            spec: dragonfly_8320(),
            routing: RoutingAlgorithm::Ugal,
            sends: halo(&[16, 8, 8, 8], 10 * MIB, 0),
            packet_cut: 160,
        },
    ]
}

fn flow(c: &mut Criterion) {
    for sc in scenarios() {
        let clock = Instant::now();
        let (events, end, locality) = run_flow(&sc);
        let flow_s = clock.elapsed().as_secs_f64();
        let cut = sc.packet_cut();
        let clock = Instant::now();
        let (pevents, pend) = run_packet(&cut);
        let packet_s = clock.elapsed().as_secs_f64();
        // The packet model's exchange time is compared with the flow model's on the same messages.
        let cut_end = if sc.packet_cut == 1 {
            end
        } else {
            run_flow(&cut).1
        };
        println!(
            "{}: {} messages; flow model {events} events in {flow_s:.2} s, done at {:.1} us, \
             {locality:.1} flows per rate update; packet model (messages / {}) {pevents} events \
             in {packet_s:.2} s, done at {:.1} us (flow model on them: {:.1} us)",
            sc.name,
            sc.sends.len(),
            end as f64 / 1e6,
            sc.packet_cut,
            pend as f64 / 1e6,
            cut_end as f64 / 1e6,
        );
        let mut g = c.benchmark_group("flow");
        g.sample_size(10);
        g.throughput(Throughput::Elements(events));
        g.bench_function(format!("{}_flow_events", sc.name), |b| {
            b.iter(|| run_flow(black_box(&sc)))
        });
        g.throughput(Throughput::Elements(pevents));
        g.bench_function(format!("{}_packet_events", sc.name), |b| {
            b.iter(|| run_packet(black_box(&cut)))
        });
        g.finish();
    }
}

criterion_group!(benches, flow);
criterion_main!(benches);
