//! The C tracer end to end: build it with mpicc, run the C and Fortran test programs under
//! mpirun with LD_PRELOAD, read the traces back and compare with what the programs did
//! (tracer/tests/ring.c and ring.f90). Those two tests need Open MPI, so they are ignored by
//! default (reported as such, never as passed); `scripts/test-all.sh` installs Open MPI and runs
//! them with `cargo test -p tracewatt-trace --test tracer -- --ignored`.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{all_ops, scratch};
use tracewatt_trace::funcs::FUNC_NAMES;
use tracewatt_trace::{open_trace, ComputeClock, ReadOptions, TraceFormat, Window, WindowEdge};
use tracewatt_workload::generators::Workload;

fn tracer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tracer")
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// Runs `program` with `args` on 4 ranks under the tracer; `cpu_time`: `TRACEWATT_CPU_TIME`
/// (default on).
fn run_traced(build: &Path, program: &str, args: &[&str], out: &Path, cpu_time: bool) {
    let status = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "4",
            "-x",
            "LD_PRELOAD",
            "-x",
            "TRACEWATT_TRACE_DIR",
            "-x",
            "TRACEWATT_CPU_TIME",
        ])
        .arg(build.join(program))
        .args(args)
        .env("LD_PRELOAD", build.join("libtwtrace.so"))
        .env("TRACEWATT_TRACE_DIR", out)
        .env("TRACEWATT_CPU_TIME", if cpu_time { "1" } else { "0" })
        .status()
        .expect("run mpirun");
    assert!(
        status.success(),
        "{program} under the tracer failed: {status}"
    );
}

#[test]
fn funcs_header_matches_func_names() {
    let h = std::fs::read_to_string(tracer_dir().join("funcs.h")).unwrap();
    let defs: Vec<(String, usize)> = h
        .lines()
        .filter_map(|l| l.strip_prefix("#define TW_F_"))
        .map(|l| {
            let (n, v) = l.split_once(' ').unwrap();
            (n.to_ascii_lowercase(), v.trim().parse().unwrap())
        })
        .collect();
    assert_eq!(defs.len(), FUNC_NAMES.len(), "regenerate tracer/funcs.h");
    for (i, (n, v)) in defs.iter().enumerate() {
        assert_eq!((n.as_str(), *v), (FUNC_NAMES[i], i));
    }
}

/// The tracer and the test programs, built once for both tests by tracer/build.sh.
fn build() -> &'static Path {
    static BUILD: OnceLock<PathBuf> = OnceLock::new();
    BUILD.get_or_init(|| {
        for tool in ["mpicc", "mpirun"] {
            assert!(
                on_path(tool),
                "{tool} not found: this test needs Open MPI (apt-get install openmpi-bin \
                 libopenmpi-dev gfortran)"
            );
        }
        let build = scratch("tracer-build");
        let st = Command::new("sh")
            .arg(tracer_dir().join("build.sh"))
            .arg(&build)
            .arg("--tests")
            .status()
            .expect("run tracer/build.sh");
        assert!(st.success(), "tracer/build.sh failed");
        build
    })
}

/// A trace larger than the tracer's 1 MiB buffer: the buffer is written in 64 KiB blocks as it
/// fills, keeping the rest for the next, and every call reads back (each block's CRC checked).
#[test]
#[ignore = "needs Open MPI (mpicc, mpirun): run with cargo test -p tracewatt-trace --test tracer -- --ignored"]
fn tracer_writes_traces_larger_than_its_buffer() {
    let build = build();
    // tracer/tests/pingpong.c: ranks 0 and 1 each send and receive 50,000 times.
    let out = build.join("trace-pingpong");
    run_traced(build, "pingpong", &["50000"], &out, true);
    let file_bytes = std::fs::metadata(out.join("rank-0.twr")).unwrap().len();
    assert!(file_bytes > 1 << 20, "{file_bytes} bytes");
    let t = open_trace(&out, &ReadOptions::default()).unwrap();
    let i = t.info();
    assert_eq!(i.calls.get("send").copied(), Some(100_000), "{:?}", i.calls);
    assert_eq!(i.calls.get("recv").copied(), Some(100_000), "{:?}", i.calls);
    assert_eq!(i.calls.get("barrier").copied(), Some(4), "{:?}", i.calls);
    assert_eq!(i.p2p_bytes, 100_000 * 8);
}

#[test]
#[ignore = "needs Open MPI (mpicc, mpirun): run with cargo test -p tracewatt-trace --test tracer -- --ignored"]
fn tracer_records_a_c_program() {
    let build = build();
    // See tracer/tests/ring.c (4 ranks, 5 iterations).
    let out = build.join("trace-c");
    run_traced(build, "ring_c", &[], &out, true);
    let t = open_trace(&out, &ReadOptions::default()).unwrap();
    let i = t.info();
    assert_eq!((i.format, i.ranks), (TraceFormat::Native, 4));
    let per_rank = [
        ("send", 5),
        ("recv", 10),
        ("isend", 15),
        ("irecv", 10),
        ("wait", 5),
        ("waitall", 5),
        ("allreduce", 6),
        ("bcast", 5),
        ("alltoall", 5),
        ("barrier", 5),
        ("reduce", 1),
        ("allgather", 1),
        ("gather", 1),
        ("alltoallv", 1),
        ("comm_split", 1),
        ("comm_free", 1),
        ("pcontrol", 2),
        ("init", 1),
        ("finalize", 1),
    ];
    for (f, n) in per_rank {
        assert_eq!(i.calls.get(f).copied(), Some(4 * n), "{f}: {:?}", i.calls);
    }
    // Per rank: 5 x 1000 doubles + 10 x 100 ints + 5 x 8 chars.
    assert_eq!(i.p2p_bytes, 4 * (5 * 8000 + 10 * 400 + 5 * 8));
    // allreduce 5x80 + 40, bcast 5x64, alltoall 5x64, reduce 32, allgather 16, gather 12 per
    // rank, plus alltoallv: rank r sends (r + j + 1) doubles to each j.
    let alltoallv: u64 = (0..4u64)
        .map(|r| (0..4u64).map(|j| (r + j + 1) * 8).sum::<u64>())
        .sum();
    assert_eq!(
        i.collective_bytes,
        4 * (440 + 320 + 320 + 32 + 16 + 12) + alltoallv
    );
    assert!(i.duration_s.unwrap() > 0.0);
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    let mut comms = t.comms();
    comms.sort();
    assert_eq!(comms, [vec![0, 2], vec![1, 3]]);
    let ops = all_ops(&t);
    assert!(ops.iter().all(|o| o
        .iter()
        .any(|op| matches!(op, tracewatt_workload::Op::Compute { .. }))));
    // Every call records CPU times: each rank spins 50 ms of CPU time after sleeping 200 ms
    // (ring.c), so its CPU-clock compute is at least 50 ms and its wall-clock compute exceeds
    // it by at least the 200 ms asleep (a thread's CPU time never runs ahead of the wall clock).
    for rt in &i.rank_times {
        let cpu = rt.compute_cpu_s.expect("CPU times on every call");
        assert!(cpu >= 0.05, "rank {}: {cpu} s", rt.rank);
        assert!(rt.compute_wall_s >= cpu + 0.2, "{rt:?}");
    }
    // compute_clock = "cpu" replays exactly that CPU time.
    let opts = ReadOptions {
        compute_clock: ComputeClock::Cpu,
        ..ReadOptions::default()
    };
    let cpu_t = open_trace(&out, &opts).unwrap();
    for (r, rt) in i.rank_times.iter().enumerate() {
        let ps: u64 = cpu_t
            .program(r as u32)
            .map(|op| match op.unwrap() {
                tracewatt_workload::Op::Compute { ps } => ps,
                _ => 0,
            })
            .sum();
        let want = (rt.compute_cpu_s.unwrap() * 1e12).round() as u64;
        assert!(
            ps.abs_diff(want) < 1_000_000,
            "rank {r}: {ps} ps, {want} ps"
        );
    }
    // MPI_Pcontrol(1) ... MPI_Pcontrol(0) as a window: each rank's ops enter and leave it once.
    let pcontrol = tracewatt_trace::funcs::func_id("pcontrol").unwrap();
    let edge = |occurrence| WindowEdge::Call {
        func: pcontrol,
        occurrence,
    };
    let windowed = ReadOptions {
        window: Some(Window {
            start: edge(1),
            stop: edge(2),
        }),
        ..ReadOptions::default()
    };
    let wt = open_trace(&out, &windowed).unwrap();
    for r in 0..4 {
        let marks: Vec<_> = wt
            .program(r)
            .map(|op| op.unwrap())
            .filter(|op| matches!(op, tracewatt_workload::Op::Window { .. }))
            .collect();
        assert_eq!(
            marks,
            [
                tracewatt_workload::Op::Window { start: true },
                tracewatt_workload::Op::Window { start: false }
            ]
        );
    }
    // TRACEWATT_CPU_TIME=0: wall-clock times only, the same calls.
    let wall = build.join("trace-c-wall");
    run_traced(build, "ring_c", &[], &wall, false);
    let w = open_trace(&wall, &ReadOptions::default()).unwrap();
    assert_eq!(w.info().calls, i.calls);
    assert!(w
        .info()
        .rank_times
        .iter()
        .all(|r| r.compute_cpu_s.is_none()));
    assert!(open_trace(&wall, &opts).is_err());
}

#[test]
#[ignore = "needs Open MPI and gfortran (mpif90): run with cargo test -p tracewatt-trace --test tracer -- --ignored"]
fn tracer_records_a_fortran_program() {
    let build = build();
    // tracer/build.sh builds it only where mpif90 exists.
    assert!(
        build.join("ring_f").is_file(),
        "mpif90 not found: this test needs gfortran (apt-get install gfortran)"
    );
    // See tracer/tests/ring.f90 (4 ranks, 3 iterations).
    let out = build.join("trace-f");
    run_traced(build, "ring_f", &[], &out, true);
    let t = open_trace(&out, &ReadOptions::default()).unwrap();
    let i = t.info();
    for (f, n) in [
        ("send", 3),
        ("recv", 3),
        ("isend", 3),
        ("irecv", 3),
        ("waitall", 3),
        ("allreduce", 4),
        ("barrier", 3),
        ("bcast", 1),
        ("comm_split", 1),
        ("pcontrol", 1),
        ("init", 1),
        ("finalize", 1),
    ] {
        assert_eq!(i.calls.get(f).copied(), Some(4 * n), "{f}: {:?}", i.calls);
    }
    assert_eq!(i.p2p_bytes, 4 * (3 * 4000 + 3 * 200));
    assert_eq!(i.collective_bytes, 4 * (3 * 80 + 32 + 160));
    assert_eq!(t.comms().len(), 2);
    assert!(
        i.rank_times.iter().all(|r| r.compute_cpu_s.is_some()),
        "{i:?}"
    );
    all_ops(&t);
}
