//! The C tracer end to end: build it with mpicc, run the C and Fortran test programs under
//! mpirun with LD_PRELOAD, read the traces back and compare with what the programs did
//! (tracer/tests/ring.c and ring.f90); then two real applications, Debian's builds of LAMMPS
//! and HPCC, whose traces must open (every message matched), hold no unsupported call and
//! replay through the simulator. These tests need Open MPI (and the two packages), so they are
//! ignored by default (reported as such, never as passed); `scripts/test-all.sh` installs them
//! and runs them with `cargo test -p tracewatt-trace --test tracer -- --ignored`.
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
    mpirun_traced(build, &build.join(program), args, out, cpu_time, None);
}

/// Runs `program` (a path, or a name on PATH) with `args` on 4 ranks under the tracer, in
/// `cwd` if given.
fn mpirun_traced(
    build: &Path,
    program: &Path,
    args: &[&str],
    out: &Path,
    cpu_time: bool,
    cwd: Option<&Path>,
) {
    let mut cmd = Command::new("mpirun");
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let status = cmd
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
        .arg(program)
        .args(args)
        .env("LD_PRELOAD", build.join("libtwtrace.so"))
        .env("TRACEWATT_TRACE_DIR", out)
        .env("TRACEWATT_CPU_TIME", if cpu_time { "1" } else { "0" })
        .status()
        .expect("run mpirun");
    assert!(
        status.success(),
        "{} under the tracer failed: {status}",
        program.display()
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

/// The outcomes of a rank's cancels (whether each was cancelled), as the tracer recorded them.
fn cancel_outcomes(t: &tracewatt_trace::TraceWorkload, rank: u32) -> Vec<bool> {
    t.calls(rank)
        .unwrap()
        .filter_map(|c| match c.unwrap().kind {
            tracewatt_trace::CallKind::CancelOutcome { cancelled, .. } => Some(cancelled),
            _ => None,
        })
        .collect()
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
        ("recv", 11),
        ("isend", 16),
        ("irecv", 11),
        ("cancel", 1),
        ("wait", 5),
        ("waitall", 6),
        ("exscan", 1),
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
    // Per rank: 5 x 1000 doubles + 10 x 100 ints + 5 x 8 chars + 1 double.
    assert_eq!(i.p2p_bytes, 4 * (5 * 8000 + 10 * 400 + 5 * 8 + 8));
    // allreduce 5x80 + 40, bcast 5x64, alltoall 5x64, reduce 32, allgather 16, gather 12,
    // exscan 24 per rank, plus alltoallv: rank r sends (r + j + 1) doubles to each j.
    let alltoallv: u64 = (0..4u64)
        .map(|r| (0..4u64).map(|j| (r + j + 1) * 8).sum::<u64>())
        .sum();
    assert_eq!(
        i.collective_bytes,
        4 * (440 + 320 + 320 + 32 + 16 + 12 + 24) + alltoallv
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
    // The cancelled wildcard receive (no rank sends to it): recorded as cancelled from the
    // tracer's own statuses, and not replayed: 2 receives per iteration remain.
    for (r, o) in ops.iter().enumerate() {
        assert_eq!(cancel_outcomes(&t, r as u32), [true], "rank {r}");
        let irecvs = o
            .iter()
            .filter(|op| matches!(op, tracewatt_workload::Op::Irecv { .. }))
            .count();
        assert_eq!(irecvs, 2 * 5, "rank {r}");
    }
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
        ("irecv", 4),
        ("cancel", 1),
        ("wait", 1),
        ("scan", 1),
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
    assert_eq!(i.collective_bytes, 4 * (3 * 80 + 32 + 160 + 24));
    assert_eq!(t.comms().len(), 2);
    // The cancelled receive: recorded as cancelled (no rank sends it anything), so the replay
    // posts only the 3 ring receives.
    for r in 0..4 {
        assert_eq!(cancel_outcomes(&t, r), [true], "rank {r}");
    }
    for (r, ops) in all_ops(&t).iter().enumerate() {
        let irecvs = ops
            .iter()
            .filter(|op| matches!(op, tracewatt_workload::Op::Irecv { .. }))
            .count();
        assert_eq!(irecvs, 3, "rank {r}");
    }
    assert!(
        i.rank_times.iter().all(|r| r.compute_cpu_s.is_some()),
        "{i:?}"
    );
}

// ---- real applications (Debian's hpcc and lammps, built on its Open MPI) ----

/// The program `name` on PATH, or a clear failure naming the Debian package that has it.
fn installed(name: &str, package: &str) -> PathBuf {
    assert!(
        on_path(name),
        "{name} not found: this test needs Debian's {package} (apt-get install {package})"
    );
    PathBuf::from(name)
}

/// Every rank's ops without the compute between them: what the program communicated, with
/// the builder's request ids (the trace's handles are addresses, which differ from run to run).
fn comm_ops(t: &tracewatt_trace::TraceWorkload) -> Vec<Vec<tracewatt_workload::Op>> {
    all_ops(t)
        .into_iter()
        .map(|ops| {
            ops.into_iter()
                .filter(|op| !matches!(op, tracewatt_workload::Op::Compute { .. }))
                .collect()
        })
        .collect()
}

/// `a == b`, naming the first op that differs rather than printing thousands.
fn assert_same_ops(a: &[tracewatt_workload::Op], b: &[tracewatt_workload::Op], what: &str) {
    if let Some(k) = (0..a.len().min(b.len())).find(|&k| a[k] != b[k]) {
        panic!("{what}: op {k} differs: {:?} vs {:?}", a[k], b[k]);
    }
    assert_eq!(a.len(), b.len(), "{what}: op counts");
}

/// Opens a real application's trace strictly (an unsupported call is an error; opening runs
/// the cross-rank checks: every message matched, collectives consistent) and replays it
/// through the simulator on a 4-node switch: it must run to completion.
fn open_and_replay(out: &Path) -> tracewatt_trace::TraceWorkload {
    let strict = ReadOptions {
        strict: true,
        ..ReadOptions::default()
    };
    let t = open_trace(out, &strict).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    let text = format!(
        r#"
seed = 1
[machine]
ranks_per_node = 1
[machine.topology]
kind = "single_switch"
nodes = 4
[machine.links]
bandwidth_gbps = 10.0
latency_ns = 2500.0
[[jobs]]
name = "app"
[jobs.trace]
path = {:?}
"#,
        out.display().to_string()
    );
    let config = tracewatt_sim::Config::parse(&text, tracewatt_sim::Format::Toml, "<test>")
        .unwrap_or_else(|e| panic!("{e}"));
    tracewatt_sim::simulate(&config, "<test>", &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    t
}

/// LAMMPS's Lennard-Jones melt on 4,000 atoms (an fcc lattice of 10^3 unit cells, 4 atoms
/// each), 200 steps, reneighbouring every 20 steps unconditionally, temperature printed every
/// `thermo` steps.
fn lammps_input(dir: &Path, thermo: u32) -> PathBuf {
    let p = dir.join(format!("in.lj.{thermo}"));
    let text = format!(
        "units lj\natom_style atomic\nlattice fcc 0.8442\nregion box block 0 10 0 10 0 10\n\
         create_box 1 box\ncreate_atoms 1 box\nmass 1 1.0\nvelocity all create 3.0 87287 loop geom\n\
         pair_style lj/cut 2.5\npair_coeff 1 1 1.0 1.0 2.5\nneighbor 0.3 bin\n\
         neigh_modify delay 0 every 20 check no\nfix 1 all nve\nthermo_style custom step temp\n\
         thermo {thermo}\nrun 200\n"
    );
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
#[ignore = "needs Open MPI and Debian's lammps: run with cargo test -p tracewatt-trace --test tracer -- --ignored"]
fn tracer_records_lammps() {
    let build = build();
    let lmp = installed("lmp", "lammps");
    let dir = scratch("lammps");
    let run = |thermo: u32, tag: &str| {
        let input = lammps_input(&dir, thermo);
        let out = dir.join(tag);
        let input = input.display().to_string();
        let args = [
            "-in",
            input.as_str(),
            "-log",
            "none",
            "-echo",
            "none",
            "-screen",
            "none",
        ];
        mpirun_traced(build, &lmp, &args, &out, true, Some(&dir));
        out
    };
    let a = comm_ops(&open_and_replay(&run(50, "a")));
    // create_atoms numbers the atoms once: each rank's first ID from one MPI_Scan of the
    // ranks' atom counts (LAMMPS's Atom::tag_extend).
    for (r, ops) in a.iter().enumerate() {
        let scans = ops
            .iter()
            .filter(|op| {
                matches!(
                    op,
                    tracewatt_workload::Op::Collective {
                        kind: tracewatt_workload::CollKind::Scan,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(scans, 1, "rank {r}");
    }
    // The same input again: LAMMPS's communication follows from the input and the 2 x 2 x 1
    // decomposition alone (reneighbouring at fixed steps), so every rank communicates the
    // same, message sizes included.
    let again = comm_ops(&open_and_replay(&run(50, "again")));
    for r in 0..4 {
        assert_same_ops(&again[r], &a[r], &format!("rank {r}, the same input twice"));
    }
    // Printing every 25 steps instead of 50 adds the outputs of steps 25, 75, 125 and 175, each
    // two allreduces (the temperature's sum, and the thermo output's count of atoms, which
    // LAMMPS checks for lost ones), and changes nothing else.
    let b = comm_ops(&open_and_replay(&run(25, "b")));
    let allreduce = |op: &tracewatt_workload::Op| {
        matches!(
            op,
            tracewatt_workload::Op::Collective {
                kind: tracewatt_workload::CollKind::Allreduce,
                ..
            }
        )
    };
    for r in 0..4 {
        let (na, nb) = (
            a[r].iter().filter(|op| allreduce(op)).count(),
            b[r].iter().filter(|op| allreduce(op)).count(),
        );
        assert_eq!(
            nb - na,
            4 * 2,
            "rank {r}: {na} allreduces every 50 steps, {nb} every 25"
        );
        let others = |ops: &[tracewatt_workload::Op]| -> Vec<tracewatt_workload::Op> {
            ops.iter().filter(|op| !allreduce(op)).cloned().collect()
        };
        assert_same_ops(
            &others(&b[r]),
            &others(&a[r]),
            &format!("rank {r}, thermo 25 vs 50"),
        );
    }
}

#[test]
#[ignore = "needs Open MPI and Debian's hpcc: run with cargo test -p tracewatt-trace --test tracer -- --ignored"]
fn tracer_records_hpcc() {
    let build = build();
    let hpcc = installed("hpcc", "hpcc");
    let dir = scratch("hpcc");
    // Debian's example input with N = 400 for HPL (2 x 2 grid, NB = 80): about 10 s.
    let example = std::fs::read_to_string("/usr/share/doc/hpcc/examples/_hpccinf.txt")
        .expect("hpcc's example input (package hpcc)");
    let input = example.replacen("1000         Ns", "400          Ns", 1);
    assert_ne!(input, example, "the example's Ns line moved");
    std::fs::write(dir.join("hpccinf.txt"), input).unwrap();
    let out = dir.join("trace");
    mpirun_traced(build, &hpcc, &[], &out, true, Some(&dir));
    let t = open_and_replay(&out);
    let report = std::fs::read_to_string(dir.join("hpccoutf.txt")).unwrap();
    assert!(report.contains("CommWorldProcs=4"), "{report}");
    // RandomAccess (both variants, LCG and the default) ends by cancelling the wildcard receive
    // each rank still has posted, once every rank has said it is done: no message is left to
    // match it, so every cancel succeeds. HPCC passes MPI_STATUS_IGNORE to the wait that
    // completes it; the tracer looks at its own status and records the outcome. Every rank
    // runs the same code, so all cancel as often.
    use tracewatt_trace::CallKind;
    let mut cancels = Vec::new();
    for r in 0..4 {
        let (mut cancel, mut cancelled, mut posted) = (0, 0, 0);
        for c in t.calls(r).unwrap() {
            match c.unwrap().kind {
                CallKind::Cancel { .. } => cancel += 1,
                CallKind::CancelOutcome {
                    cancelled: true, ..
                } => cancelled += 1,
                CallKind::CancelOutcome { .. } => panic!("rank {r}: a cancel that failed"),
                CallKind::Irecv { peer, .. } | CallKind::Sendrecv { src: peer, .. }
                    if peer >= tracewatt_trace::call::ANY =>
                {
                    posted += 1
                }
                _ => {}
            }
        }
        assert_eq!(
            cancelled, cancel,
            "rank {r}: every cancel's outcome recorded"
        );
        // The replay posts every receive but the cancelled ones.
        let irecvs = all_ops(&t)[r as usize]
            .iter()
            .filter(|op| matches!(op, tracewatt_workload::Op::Irecv { .. }))
            .count();
        assert_eq!(irecvs, posted - cancel, "rank {r}");
        cancels.push(cancel);
    }
    assert!(
        cancels.iter().all(|&c| c == cancels[0] && c >= 2),
        "{cancels:?}"
    );
}
