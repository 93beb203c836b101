//! `cargo bench -p tracewatt-bench`: engine events per second (the bare event queue) and whole
//! simulations in packet-hops per second.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;
use tracewatt_core::{EventQueue, Rng};
use tracewatt_sim::{simulate, Config, Format};

/// The allocator the Python extension ships with, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn queue(c: &mut Criterion) {
    // A steady-state queue of 10,000 pending events, each pop scheduling one new event: the
    // engine's inner loop without any model work.
    let n = 1_000_000u64;
    let mut g = c.benchmark_group("event_queue");
    g.throughput(Throughput::Elements(n));
    g.bench_function("pop_push_1M_depth_10k", |b| {
        b.iter_batched(
            || {
                let mut q = EventQueue::new();
                let mut r = Rng::new(1);
                for i in 0..10_000u64 {
                    q.push(r.below(1_000_000), i);
                }
                (q, r)
            },
            |(mut q, mut r)| {
                for _ in 0..n {
                    let (t, e) = q.pop().expect("queue is never empty");
                    q.push(t + 1 + r.below(1_000_000), black_box(e));
                }
                q
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn network(c: &mut Criterion) {
    // Scenario (a) of the README's performance section, whole: setup and result tables are
    // about 6 % of it.
    let text = tracewatt_bench::dragonfly_uniform(20);
    let config = Config::parse(&text, Format::Toml, "bench").expect("bench config parses");
    let probe = simulate(&config, "bench", &mut |_| true).expect("bench run succeeds");
    let hops = probe.summary["network"]["packet_hops"]
        .as_u64()
        .unwrap_or(1);
    let mut g = c.benchmark_group("network");
    g.sample_size(10);
    g.throughput(Throughput::Elements(hops));
    g.bench_function("dragonfly1056_uniform_20msgs_packet_hops", |b| {
        b.iter(|| simulate(black_box(&config), "bench", &mut |_| true).expect("bench run succeeds"))
    });
    g.finish();
}

criterion_group!(benches, queue, network);
criterion_main!(benches);
