//! `cargo bench -p tracewatt-bench --bench flow`: the flow-level network alone, in flow events
//! per second, on all-to-all traffic where many flows share saturated links, with the packet
//! model on the same messages beside it (packet events per second, and the time of the whole
//! exchange in each). Before the timed runs, each scenario prints how many flows one start or
//! end of a flow recomputes on average (the locality of the max-min updates) and the wall time of
//! one run of each model.

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
}

fn params() -> FabricParams {
    FabricParams {
        packet_bytes: 4096,
        buffer_bytes: 65536,
        switch_latency_ps: 100 * NS,
        switching: Switching::CutThrough,
        credits: Credits::OutOfBand,
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
            // 128 nodes on 16 leaves: 16,256 flows of 64 KiB started at once (an MPI_Alltoall
            // without throttling), so that thousands share the saturated node links.
            name: "fat_tree128_all_to_all_64KiB",
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
            sends: all_to_all(128, 65536, 0),
        },
        Scenario {
            // The 1,056-node benchmark dragonfly, UGAL: 1,056 x 15 flows of 64 KiB to random
            // partners within 50 us.
            name: "dragonfly1056_ugal_random_64KiB",
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
                        (r.below(50_000 * NS), s, d, 65536)
                    })
                    .collect()
            },
        },
    ]
}

fn flow(c: &mut Criterion) {
    for sc in scenarios() {
        let clock = Instant::now();
        let (events, end, locality) = run_flow(&sc);
        let flow_s = clock.elapsed().as_secs_f64();
        let clock = Instant::now();
        let (pevents, pend) = run_packet(&sc);
        let packet_s = clock.elapsed().as_secs_f64();
        println!(
            "{}: {} flows; flow model {events} events in {flow_s:.2} s, done at {:.1} us, \
             {locality:.1} flows per rate update; packet model {pevents} events in \
             {packet_s:.2} s, done at {:.1} us",
            sc.name,
            sc.sends.len(),
            end as f64 / 1e6,
            pend as f64 / 1e6,
        );
        let mut g = c.benchmark_group("flow");
        g.sample_size(10);
        g.throughput(Throughput::Elements(events));
        g.bench_function(format!("{}_flow_events", sc.name), |b| {
            b.iter(|| run_flow(black_box(&sc)))
        });
        g.throughput(Throughput::Elements(pevents));
        g.bench_function(format!("{}_packet_events", sc.name), |b| {
            b.iter(|| run_packet(black_box(&sc)))
        });
        g.finish();
    }
}

criterion_group!(benches, flow);
criterion_main!(benches);
