//! `cargo bench -p tracewatt-bench --bench trace_read`: reading a SimGrid time-independent trace
//! held in one file for all ranks (the pre-pass over every rank), in lines per second. With the
//! file indexed by rank, the rate stays flat as the rank count grows (each rank reads its own
//! lines); scanning the whole file per rank made it fall in proportion to the ranks.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::io::Write;
use tracewatt_trace::{info, ReadOptions};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Lines per rank: a ring exchange and an allreduce per step, with compute between.
const STEPS: u32 = 10;

/// A shared TI file of `ranks` ranks, written step by step with every rank's lines of a step
/// together (as SimGrid writes one), so each rank has one run of lines per step.
fn shared_file(ranks: u32) -> (std::path::PathBuf, u64) {
    let path = std::env::temp_dir().join(format!(
        "tracewatt-bench-ti-{}-{ranks}.txt",
        std::process::id()
    ));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let mut lines = 0u64;
    for r in 0..ranks {
        writeln!(f, "{r} init").expect("write");
        lines += 1;
    }
    for _ in 0..STEPS {
        for r in 0..ranks {
            let (next, prev) = ((r + 1) % ranks, (r + ranks - 1) % ranks);
            writeln!(f, "{r} compute 1000000").expect("write");
            writeln!(f, "{r} isend {next} 0 1024").expect("write");
            writeln!(f, "{r} recv {prev} 0 1024").expect("write");
            writeln!(f, "{r} wait {r} {next} 0").expect("write");
            writeln!(f, "{r} allreduce 8 1000").expect("write");
            lines += 5;
        }
    }
    for r in 0..ranks {
        writeln!(f, "{r} finalize").expect("write");
        lines += 1;
    }
    (path, lines)
}

fn shared(c: &mut Criterion) {
    let mut g = c.benchmark_group("simgrid_shared_file");
    g.sample_size(10);
    for ranks in [64u32, 256, 1024] {
        let (path, lines) = shared_file(ranks);
        g.throughput(Throughput::Elements(lines));
        g.bench_function(format!("info_{ranks}_ranks"), |b| {
            b.iter(|| black_box(info(&path, &ReadOptions::default()).expect("reads")))
        });
        let _ = std::fs::remove_file(&path);
    }
    g.finish();
}

criterion_group!(benches, shared);
criterion_main!(benches);
