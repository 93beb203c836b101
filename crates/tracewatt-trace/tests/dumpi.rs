//! The DUMPI reader against the real traces in tests/data/dumpi, and (optional, ignored by
//! default) the NPB class B traces of the optional data (README, "Optional data").
mod common;

use std::collections::BTreeMap;

use common::{all_ops, data, shared_data};
use tracewatt_trace::call::CallKind;
use tracewatt_trace::funcs::func_name;
use tracewatt_trace::{open_trace, ComputeClock, ReadOptions};
use tracewatt_workload::generators::Workload;
use tracewatt_workload::{CollKind, Op};

/// One call of sst-dumpi's own text dump.
#[derive(Debug, Default)]
struct Golden {
    name: String,
    start_ns: u64,
    end_ns: u64,
    args: BTreeMap<String, i64>,
}

fn walltime_ns(line: &str) -> u64 {
    let t = line
        .split("walltime ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .expect("walltime");
    let (s, ns) = t.split_once('.').expect("s.ns");
    s.parse::<u64>().expect("s") * 1_000_000_000 + ns.parse::<u64>().expect("ns")
}

fn golden() -> Vec<Golden> {
    let text = std::fs::read_to_string(data("dumpi/sst-dumpi-testtrace/testtrace-0000.txt"))
        .expect("golden");
    let mut out = Vec::new();
    let mut cur: Option<Golden> = None;
    for line in text.lines() {
        if line.contains(" entering at walltime ") {
            let name = line.split_whitespace().next().unwrap_or_default();
            cur = Some(Golden {
                name: name.trim_start_matches("MPI_").to_ascii_lowercase(),
                start_ns: walltime_ns(line),
                ..Default::default()
            });
        } else if line.contains(" returning at walltime ") {
            let mut g = cur.take().expect("returning without entering");
            g.end_ns = walltime_ns(line);
            out.push(g);
        } else if let Some(g) = cur.as_mut() {
            // e.g. "int count=1", "MPI_Datatype datatype=9 (MPI_INT)", "MPI_Comm comm=2 (...)"
            let Some((lhs, rhs)) = line.split_once('=') else {
                continue;
            };
            let key = lhs
                .split_whitespace()
                .last()
                .unwrap_or_default()
                .to_string();
            let val = rhs.split_whitespace().next().unwrap_or_default();
            if let Ok(v) = val.parse::<i64>() {
                g.args.insert(key, v);
            }
        }
    }
    out
}

#[test]
fn testtrace_rank0_matches_sst_dumpi_text_dump() {
    let g = golden();
    assert_eq!(g.len(), 9, "golden calls: {g:?}");
    let t = open_trace(&data("dumpi/sst-dumpi-testtrace"), &ReadOptions::default()).unwrap();
    let calls: Vec<_> = t.calls(0).unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(calls.len(), g.len());
    for (c, g) in calls.iter().zip(&g) {
        assert_eq!(func_name(c.func), g.name);
        assert_eq!((c.start_ns, c.end_ns), (g.start_ns, g.end_ns), "{}", g.name);
        let int_bytes = |count: i64| count as u64 * 4; // datatype 9 = MPI_INT
        match &c.kind {
            CallKind::Isend {
                comm,
                peer,
                tag,
                bytes,
                req,
            } => {
                assert_eq!(
                    (*comm, *peer as i64, *tag as i64),
                    (0, g.args["dest"], g.args["tag"])
                );
                assert_eq!(*bytes, int_bytes(g.args["count"]));
                assert_eq!(*req, 2); // "MPI_Request request=[2]"
            }
            CallKind::Recv {
                comm,
                peer,
                tag,
                bytes,
            } => {
                assert_eq!(
                    (*comm, *peer as i64, *tag as i64),
                    (0, g.args["source"], g.args["tag"])
                );
                assert_eq!(*bytes, int_bytes(g.args["count"]));
            }
            CallKind::Wait { req } => assert_eq!(*req, 2),
            CallKind::Coll {
                kind: CollKind::Allreduce,
                bytes,
                ..
            } => {
                assert_eq!(*bytes, int_bytes(g.args["count"]))
            }
            CallKind::Coll {
                kind: CollKind::Barrier,
                comm,
                ..
            } => assert_eq!(*comm, 0),
            CallKind::Init | CallKind::Finalize | CallKind::Local => {}
            other => panic!("unexpected {other:?} for {}", g.name),
        }
    }
    // And as ops: compute gaps from the wall clock, then the calls.
    let ops: Vec<Op> = t.program(0).collect::<Result<_, _>>().unwrap();
    let kinds: Vec<&str> = ops
        .iter()
        .map(|o| match o {
            Op::Compute { .. } => "compute",
            Op::Isend { .. } => "isend",
            Op::Recv { .. } => "recv",
            Op::Wait { .. } => "wait",
            Op::Collective {
                kind: CollKind::Barrier,
                ..
            } => "barrier",
            Op::Collective {
                kind: CollKind::Allreduce,
                ..
            } => "allreduce",
            _ => "other",
        })
        .filter(|k| *k != "compute")
        .collect();
    assert_eq!(kinds, ["barrier", "isend", "recv", "wait", "allreduce"]);
    // Barrier entered at .737712, Comm_size returned at .737705: 7 us of compute before it.
    assert!(ops.contains(&Op::Compute { ps: 7_000_000 }), "{ops:?}");
}

fn per_rank_counts(path: &std::path::Path) -> Vec<BTreeMap<String, u64>> {
    let t = open_trace(path, &ReadOptions::default()).unwrap();
    (0..t.info().ranks)
        .map(|r| {
            let mut m = BTreeMap::new();
            for c in t.calls(r).unwrap() {
                *m.entry(func_name(c.unwrap().func).to_string()).or_insert(0) += 1;
            }
            m
        })
        .collect()
}

#[test]
fn testbgp_counts_match_readme() {
    let counts = per_rank_counts(&data("dumpi/sst-macro-testbgp"));
    assert_eq!(counts.len(), 7);
    for m in &counts {
        assert_eq!(
            (m["isend"], m["irecv"], m["waitall"], m["alltoall"]),
            (84, 84, 14, 7),
            "{m:?}"
        );
    }
    // The traffic runs on a communicator built with Comm_group + Group_incl + Comm_create.
    let t = open_trace(&data("dumpi/sst-macro-testbgp"), &ReadOptions::default()).unwrap();
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    assert_eq!(t.comms().len(), 1);
    assert_eq!(t.comms()[0].len(), 7);
    let ops = all_ops(&t);
    for rank_ops in &ops {
        let isends = rank_ops
            .iter()
            .filter(|o| matches!(o, Op::Isend { comm: 1, .. }))
            .count();
        assert_eq!(isends, 84);
    }
}

#[test]
fn testtrace_counts() {
    for m in per_rank_counts(&data("dumpi/sst-dumpi-testtrace")) {
        for f in [
            "init",
            "barrier",
            "isend",
            "recv",
            "wait",
            "allreduce",
            "finalize",
        ] {
            assert_eq!(m[f], 1, "{f}: {m:?}");
        }
    }
}

#[test]
fn npb_traces_read_fully() {
    let cg = per_rank_counts(&data("dumpi/npb-cg.S-4ranks"));
    let total = |c: &[BTreeMap<String, u64>], f: &str| {
        c.iter()
            .map(|m| m.get(f).copied().unwrap_or(0))
            .sum::<u64>()
    };
    assert_eq!(total(&cg, "send"), 6720);
    assert_eq!(total(&cg, "irecv"), 6720);
    assert_eq!(total(&cg, "wait"), 6720);
    let ft = per_rank_counts(&data("dumpi/npb-ft.S-4ranks"));
    assert_eq!(total(&ft, "alltoall"), 32);
    assert_eq!(total(&ft, "comm_split"), 8);
    for rel in ["dumpi/npb-cg.S-4ranks", "dumpi/npb-ft.S-4ranks"] {
        let t = open_trace(&data(rel), &ReadOptions::default()).unwrap();
        assert!(t.warnings().is_empty(), "{rel}: {:?}", t.warnings());
        let ops = all_ops(&t);
        // Every rank ends drained: no request left without a wait.
        for (r, o) in ops.iter().enumerate() {
            let mut live = std::collections::BTreeSet::new();
            for op in o {
                match op {
                    Op::Isend { req, .. } | Op::Irecv { req, .. } => {
                        assert!(live.insert(*req), "rank {r}: req {req} reused")
                    }
                    Op::Wait { req } => assert!(live.remove(req)),
                    Op::Waitall { reqs } => reqs.iter().for_each(|q| assert!(live.remove(q))),
                    _ => {}
                }
            }
            assert!(live.is_empty(), "{rel} rank {r}: {live:?}");
        }
    }
    // FT splits world into row/column communicators: every member list is a permutation of a
    // subset of the world, and every rank is in each split's result once.
    let t = open_trace(&data("dumpi/npb-ft.S-4ranks"), &ReadOptions::default()).unwrap();
    let comms = t.comms();
    assert!(!comms.is_empty());
    let covered: usize = comms.iter().map(Vec::len).sum();
    assert_eq!(covered, 8, "{comms:?}");
}

#[test]
fn compute_scale_scales_gaps() {
    let p = data("dumpi/sst-dumpi-testtrace");
    let sum = |scale: f64| -> u64 {
        let t = open_trace(
            &p,
            &ReadOptions {
                compute_scale: scale,
                ..Default::default()
            },
        )
        .unwrap();
        t.program(0)
            .map(|o| match o.unwrap() {
                Op::Compute { ps } => ps,
                _ => 0,
            })
            .sum()
    };
    let (a, b) = (sum(1.0), sum(2.0));
    assert!(a > 0 && b.abs_diff(2 * a) < 16, "{a} {b}");
}

/// What sst-dumpi's own `dumpi2ascii` reports for an NPB class B trace (the optional data's README).
struct ClassB {
    rel: &'static str,
    calls_per_rank: [u64; 4],
    rank0_calls: &'static [(&'static str, u64)],
    rank0_p2p_bytes: u64,
}

const CLASS_B: &[ClassB] = &[
    ClassB {
        rel: "dumpi/npb-ft.B-4ranks",
        calls_per_rank: [55, 54, 54, 54],
        rank0_calls: &[("alltoall", 22), ("reduce", 20), ("comm_split", 2)],
        rank0_p2p_bytes: 0,
    },
    ClassB {
        rel: "dumpi/npb-cg.B-4ranks",
        calls_per_rank: [23_947; 4],
        rank0_calls: &[("irecv", 7_980), ("send", 7_980), ("wait", 7_980)],
        rank0_p2p_bytes: 1_185_632_832,
    },
    ClassB {
        rel: "dumpi/npb-mg.B-4ranks",
        calls_per_rank: [8_873; 4],
        rank0_calls: &[
            ("irecv", 2_922),
            ("send", 2_922),
            ("wait", 2_922),
            ("allreduce", 88),
        ],
        rank0_p2p_bytes: 117_490_336,
    },
    ClassB {
        rel: "dumpi/npb-sp.B-4ranks",
        calls_per_rank: [12_461; 4],
        rank0_calls: &[("isend", 4_818), ("irecv", 4_818), ("waitall", 2_808)],
        rank0_p2p_bytes: 1_271_808_960,
    },
    ClassB {
        rel: "dumpi/npb-bt.B-4ranks",
        calls_per_rank: [7_469; 4],
        rank0_calls: &[
            ("isend", 2_418),
            ("irecv", 2_418),
            ("wait", 2_412),
            ("waitall", 202),
        ],
        rank0_p2p_bytes: 708_736_320,
    },
];

#[test]
#[ignore = "needs the optional data (TRACEWATT_OPTIONAL_DATA): run with cargo test -- --ignored"]
fn npb_class_b_matches_dumpi2ascii() {
    for b in CLASS_B {
        let path = shared_data(b.rel);
        let counts = per_rank_counts(&path);
        let per_rank: Vec<u64> = counts.iter().map(|m| m.values().sum()).collect();
        assert_eq!(per_rank, b.calls_per_rank, "{}", b.rel);
        for &(f, n) in b.rank0_calls {
            assert_eq!(counts[0].get(f).copied(), Some(n), "{}: {f}", b.rel);
        }
        let t = open_trace(&path, &ReadOptions::default()).unwrap();
        let sent: u64 = t
            .calls(0)
            .unwrap()
            .map(|c| match c.unwrap().kind {
                CallKind::Send { bytes, .. } | CallKind::Isend { bytes, .. } => bytes,
                _ => 0,
            })
            .sum();
        assert_eq!(sent, b.rank0_p2p_bytes, "{}", b.rel);
        // Fortran datatypes live only in each rank's size table: a wrong size would show in the
        // bytes above; every rank must also turn into ops without a warning.
        assert!(t.warnings().is_empty(), "{}: {:?}", b.rel, t.warnings());
        all_ops(&t);
    }
}

/// sst-dumpi-testtrace with bytes of rank 0's file replaced; the error the reader gives.
/// Offsets below are worked out by hand from the layout (module docs of `dumpi`) and
/// `testtrace-0000.txt`: the body starts at 8 (two u32 biases), records have mask 0x4f
/// (statuses, thread id, CPU and wall times): label u16, mask u8, thread u16, CPU {start,
/// stop} then wall {start, stop}, each {u16 s, u32 ns}; Init (at 16) ends with argc and one
/// 5-byte argument, so Comm_rank starts at 58; Isend starts at 159 and its `dest` is at 194; the
/// footer is at 432 (the section index), its counts from 440, MPI_Recv's (label 1) at 444.
fn corrupt_rank0(at: usize, bytes: &[u8]) -> String {
    let d = common::scratch("corrupt-dumpi");
    for e in std::fs::read_dir(data("dumpi/sst-dumpi-testtrace")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
    }
    let f = d.join("testtrace-0000.bin");
    let mut b = std::fs::read(&f).unwrap();
    b[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(&f, b).unwrap();
    let t = open_trace(&d, &ReadOptions::default());
    let e = match t {
        Err(e) => e.to_string(),
        Ok(t) => t
            .program(0)
            .find_map(|op| op.err())
            .expect("the corrupt trace read cleanly")
            .to_string(),
    };
    assert!(
        e.contains("testtrace-0000.bin") && e.contains("rank 0"),
        "{e}"
    );
    e
}

#[test]
fn nanoseconds_of_a_second_or_more_are_refused() {
    // Init's wall start: seconds at 33, nanoseconds at 35.
    let e = corrupt_rank0(35, &[0xff; 4]);
    assert!(
        e.contains("byte offset 33") && e.contains("below 1e9"),
        "{e}"
    );
}

#[test]
fn time_going_backwards_is_refused() {
    // Comm_rank's wall start (ns at 77) before Init's stop (737,670,000 ns).
    let e = corrupt_rank0(77, &[0; 4]);
    assert!(
        e.contains("byte offset 75") && e.contains("backwards"),
        "{e}"
    );
}

#[test]
fn an_end_of_stream_label_before_the_end_is_refused() {
    let e = corrupt_rank0(58, &293u16.to_be_bytes());
    assert!(e.contains("byte offset 58") && e.contains("got 293"), "{e}");
}

#[test]
fn a_peer_beyond_the_ranks_is_refused() {
    let e = corrupt_rank0(194, &4i32.to_be_bytes());
    assert!(
        e.contains("byte offset 159") && e.contains("`dest`") && e.contains("got 4"),
        "{e}"
    );
}

#[test]
fn call_counts_disagreeing_with_the_footer_are_refused() {
    let e = corrupt_rank0(444, &2u32.to_be_bytes());
    assert!(
        e.contains("byte offset 444") && e.contains("2 MPI_Recv calls") && e.contains("decoded 1"),
        "{e}"
    );
}

#[test]
fn numprocs_must_match_the_rank_files() {
    for (n, what) in [
        (3, "testtrace-0003.bin is present"),
        (5, "testtrace-0004.bin is missing"),
    ] {
        let d = common::scratch("numprocs");
        for e in std::fs::read_dir(data("dumpi/sst-dumpi-testtrace")).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
        }
        let meta = d.join("testtrace.meta");
        let text = std::fs::read_to_string(&meta).unwrap();
        std::fs::write(&meta, text.replace("numprocs=4", &format!("numprocs={n}"))).unwrap();
        let e = open_trace(&d, &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("testtrace.meta")
                && e.contains(&format!("numprocs={n}"))
                && e.contains(what),
            "{e}"
        );
    }
}

/// Per call of sst-dumpi's text dump of rank 0: (wall start, wall stop, CPU start, CPU stop), ns.
fn golden_clocks() -> Vec<[u64; 4]> {
    let text = std::fs::read_to_string(data("dumpi/sst-dumpi-testtrace/testtrace-0000.txt"))
        .expect("golden");
    let ns = |s: &str| -> u64 {
        let (a, b) = s.split_once('.').expect("s.ns");
        a.parse::<u64>().expect("s") * 1_000_000_000 + b.parse::<u64>().expect("ns")
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((_, t)) = line.split_once(" at walltime ") else {
            continue;
        };
        let (wall, rest) = t.split_once(", cputime ").expect("cputime");
        let cpu = rest.split_whitespace().next().expect("cpu seconds");
        if line.contains(" entering ") {
            out.push([ns(wall), 0, ns(cpu), 0]);
        } else {
            let last = out.last_mut().expect("entering before returning");
            last[1] = ns(wall);
            last[3] = ns(cpu);
        }
    }
    out
}

#[test]
fn cpu_clock_replays_the_cpu_time_between_calls() {
    let g = golden_clocks();
    assert_eq!(g.len(), 9);
    let gaps = |s: usize, e: usize| -> u64 { g.windows(2).map(|w| w[1][s] - w[0][e]).sum() };
    let (wall_ns, cpu_ns) = (gaps(0, 1), gaps(2, 3));
    let mpi_ns: u64 = g.iter().map(|c| c[1] - c[0]).sum();
    let compute_ps = |clock| -> u64 {
        let opts = ReadOptions {
            compute_clock: clock,
            ..Default::default()
        };
        let t = open_trace(&data("dumpi/sst-dumpi-testtrace"), &opts).unwrap();
        t.program(0)
            .map(|o| match o.unwrap() {
                Op::Compute { ps } => ps,
                _ => 0,
            })
            .sum()
    };
    assert_eq!(compute_ps(ComputeClock::Cpu), cpu_ns * 1000);
    assert_eq!(compute_ps(ComputeClock::Wall), wall_ns * 1000);
    let t = open_trace(&data("dumpi/sst-dumpi-testtrace"), &ReadOptions::default()).unwrap();
    let r0 = &t.info().rank_times[0];
    // Nanoseconds as seconds: exact to well below 1 ns at these magnitudes.
    let ns = |s: f64| (s * 1e9).round() as u64;
    assert_eq!(ns(r0.compute_wall_s), wall_ns);
    assert_eq!(r0.compute_cpu_s.map(ns), Some(cpu_ns));
    assert_eq!(ns(r0.mpi_s), mpi_ns);
}

/// NPB FT class S ran 4 ranks on 2 cores: its ranks' wall-clock compute exceeds their CPU time
/// by more than 1.5; the warning names exactly the ranks where the calls' own clocks say so.
#[test]
fn ranks_that_shared_cores_are_warned_about_on_the_wall_clock() {
    for rel in ["dumpi/npb-ft.S-4ranks", "dumpi/npb-cg.S-4ranks"] {
        let t = open_trace(&data(rel), &ReadOptions::default()).unwrap();
        let shared: Vec<u32> = (0..4)
            .filter(|&r| {
                let calls: Vec<_> = t.calls(r).unwrap().map(Result::unwrap).collect();
                let (mut wall, mut cpu) = (0u64, 0u64);
                for w in calls.windows(2) {
                    let (a, b) = (w[0].cpu_ns.unwrap(), w[1].cpu_ns.unwrap());
                    wall += w[1].start_ns.saturating_sub(w[0].end_ns);
                    cpu += b.0.saturating_sub(a.1);
                }
                wall as f64 > 1.5 * cpu as f64
            })
            .collect();
        let warned: Vec<u32> = (0..4)
            .filter(|r| {
                let p = format!("rank {r}: compute on the wall clock");
                t.info().warnings.iter().any(|w| w.starts_with(&p))
            })
            .collect();
        assert_eq!(warned, shared, "{rel}");
        if rel.contains("ft") {
            assert_eq!(shared, [0, 1, 2, 3]);
        }
        let cpu = ReadOptions {
            compute_clock: ComputeClock::Cpu,
            ..Default::default()
        };
        assert!(open_trace(&data(rel), &cpu)
            .unwrap()
            .info()
            .warnings
            .is_empty());
    }
}

#[test]
fn cpu_clock_on_a_format_without_cpu_times_is_an_error_naming_the_rank() {
    let opts = ReadOptions {
        compute_clock: ComputeClock::Cpu,
        ..Default::default()
    };
    let e = open_trace(&data("otf2/pipit-ping-pong"), &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rank 0") && e.contains("compute_clock"), "{e}");
}
