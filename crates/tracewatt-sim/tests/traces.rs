//! Traces as job workloads (`[jobs.trace]`), end to end, on the traces kept in the repository
//! (`tests/data`, provenance in its README): every one replays exactly the compute and the
//! point-to-point bytes it recorded; NPB CG's replay against the trace's own timings and NPB's;
//! native conversion keeps the makespan; configuration errors (both/neither of workload and
//! trace, rank mismatch, relative paths, missing files, corrupt traces) and a trace that cannot
//! finish. The NPB class B traces of the optional data (README) are ignored
//! by default, run with `cargo test -p tracewatt-sim -- --ignored`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use tracewatt_sim::{simulate, Column, Config, Format, Results, SimError};
use tracewatt_trace::{open_trace, ReadOptions, TraceFormat};
use tracewatt_workload::generators::Workload;
use tracewatt_workload::Op;

/// A trace kept in the repository: `tests/data/<rel>` (provenance and licences in its README).
fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// The optional data (README, "Optional data"): the folder in `TRACEWATT_OPTIONAL_DATA`, else
/// `shared/data` beside the clone; only the optional (ignored) tests read it, and they fail
/// clearly if it is missing when they are asked for.
fn shared_data(rel: &str) -> PathBuf {
    let root = std::env::var_os("TRACEWATT_OPTIONAL_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        PathBuf::from,
    );
    let p = root.join(rel);
    assert!(
        p.exists(),
        "{}: missing; this optional test needs the optional data (set TRACEWATT_OPTIONAL_DATA)",
        p.display()
    );
    p
}

fn scratch(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "tracewatt-sim-traces-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    d
}

/// A single switch with one node per rank, one job replaying `path` (written as given).
fn config_text(path: &str, ranks: u32, extra_trace: &str) -> String {
    format!(
        r#"
seed = 1
[machine]
ranks_per_node = 1
[machine.topology]
kind = "single_switch"
nodes = {ranks}
[machine.links]
bandwidth_gbps = 10.0
latency_ns = 2500.0
[[jobs]]
name = "trace"
ranks = {ranks}
[jobs.trace]
path = {path:?}
{extra_trace}
"#
    )
}

fn run(path: &Path, ranks: u32) -> Result<Results, SimError> {
    let text = config_text(&path.display().to_string(), ranks, "");
    let config = Config::parse(&text, Format::Toml, "<test>")?;
    simulate(&config, "<test>", &mut |_| true)
}

fn makespan(r: &Results) -> f64 {
    r.summary["makespan_s"].as_f64().expect("makespan_s")
}

/// Seconds to whole picoseconds (the simulator's time unit).
fn ps(seconds: f64) -> u64 {
    (seconds * 1e12).round() as u64
}

/// One numeric column of the `ranks` table, in rank order.
fn per_rank(r: &Results, name: &str) -> Vec<f64> {
    let table = r.table("ranks").expect("ranks table");
    match table.columns.iter().find(|(n, _)| *n == name) {
        Some((_, Column::F64(v))) => v.clone(),
        Some((_, Column::U64(v))) => v.iter().map(|&x| x as f64).collect(),
        other => panic!("ranks.{name}: no numeric column ({other:?})"),
    }
}

/// What a trace's ops hand the engine, per rank.
#[derive(Debug)]
struct Recorded {
    compute_ps: u64,
    p2p_bytes: u64,
    /// Collectives are decomposed into more point-to-point messages.
    collectives: bool,
}

fn recorded(path: &Path) -> Vec<Recorded> {
    let t = open_trace(path, &ReadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (0..t.num_ranks())
        .map(|r| {
            let mut rec = Recorded {
                compute_ps: 0,
                p2p_bytes: 0,
                collectives: false,
            };
            for op in t.program(r) {
                match op.unwrap_or_else(|e| panic!("{e}")) {
                    Op::Compute { ps } => rec.compute_ps += ps,
                    Op::Send { bytes, .. } | Op::Isend { bytes, .. } => rec.p2p_bytes += bytes,
                    Op::Collective { .. } | Op::Icollective { .. } | Op::Alltoallv { .. } => {
                        rec.collectives = true
                    }
                    _ => {}
                }
            }
            rec
        })
        .collect()
}

/// Per rank, the time between its consecutive MPI calls (ns), from the trace's timestamps.
fn between_calls_ns(path: &Path) -> Vec<u64> {
    let t = open_trace(path, &ReadOptions::default()).unwrap();
    (0..t.num_ranks())
        .map(|r| {
            let calls: Vec<_> = t.calls(r).unwrap().map(Result::unwrap).collect();
            calls
                .windows(2)
                .map(|w| w[1].start_ns.saturating_sub(w[0].end_ns))
                .sum()
        })
        .collect()
}

/// actions0.txt + actions1.txt are one 2-rank trace (SimGrid's `split_traces` list).
fn split_list() -> PathBuf {
    let d = scratch("split");
    let list = d.join("split_traces");
    let a = |n: &str| {
        data(&format!("simgrid-ti/actions/{n}"))
            .display()
            .to_string()
    };
    std::fs::write(
        &list,
        format!("{}\n{}\n", a("actions0.txt"), a("actions1.txt")),
    )
    .unwrap();
    list
}

/// Every trace in tests/data: 4 DUMPI, 3 OTF2, 10 SimGrid action files, the 32-rank SimGrid
/// trace and the split pair.
fn readable_traces() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for kind in ["dumpi", "otf2", "simgrid-ti/actions"] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(data(kind))
            .unwrap_or_else(|e| panic!("{}: {e}", data(kind).display()))
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy().to_string();
                n != "actions0.txt" && n != "actions1.txt"
            })
            .collect();
        entries.sort();
        v.extend(entries);
    }
    v.push(data("simgrid-ti/ti-32ranks"));
    v.push(split_list());
    v
}

/// Checks a replay against what the trace recorded: every rank computes exactly its recorded
/// compute and sends exactly its point-to-point bytes (more where collectives add messages), and
/// the run ends when its last rank does.
fn assert_replays(what: &str, res: &Results, rec: &[Recorded]) {
    assert_eq!(
        res.summary["jobs"][0]["ranks"].as_u64(),
        Some(rec.len() as u64),
        "{what}"
    );
    let compute = per_rank(res, "compute_s");
    let sent = per_rank(res, "bytes_sent");
    let finish = per_rank(res, "finish_s");
    for (r, want) in rec.iter().enumerate() {
        assert_eq!(ps(compute[r]), want.compute_ps, "{what} rank {r}: compute");
        let sent = sent[r] as u64;
        if want.collectives {
            assert!(sent >= want.p2p_bytes, "{what} rank {r}: sent {sent}");
        } else {
            assert_eq!(sent, want.p2p_bytes, "{what} rank {r}: bytes sent");
        }
        assert!(ps(finish[r]) >= want.compute_ps, "{what} rank {r}: finish");
    }
    let last = finish.iter().map(|&f| ps(f)).max().unwrap();
    assert_eq!(ps(makespan(res)), last, "{what}: makespan");
}

#[test]
fn every_readable_trace_replays_what_it_recorded() {
    let traces = readable_traces();
    assert_eq!(traces.len(), 19, "{traces:?}");
    for p in traces {
        let rec = recorded(&p);
        let res = run(&p, rec.len() as u32).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_replays(&p.display().to_string(), &res, &rec);
    }
}

/// OTF2 archives run through `[jobs.trace]` (directory or anchor file): ping-pong's 16
/// messages (16 KiB .. 2 MiB, 8 each way); a rank count that does not match is an error.
#[test]
fn otf2_archives_simulate() {
    let p = data("otf2/pipit-ping-pong");
    assert_eq!(tracewatt_trace::detect(&p).unwrap(), TraceFormat::Otf2);
    // 2^14 .. 2^21 bytes, each size once in each direction.
    let bytes: u64 = 2 * ((1 << 22) - (1 << 14));
    for path in [p.clone(), p.join("traces.otf2")] {
        let res = run(&path, 2).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let msgs = &res.summary["messages"];
        assert_eq!(msgs["count"].as_u64(), Some(16), "{msgs}");
        assert_eq!(msgs["bytes"].as_u64(), Some(bytes), "{msgs}");
        // Each message answers the previous one, so their transfers cannot overlap: the run
        // lasts at least their serialisation at 10 Gb/s, one after another.
        let serial_s = bytes as f64 * 8.0 / 10e9;
        assert!(makespan(&res) > serial_s, "{} s", makespan(&res));
    }
    let err = run(&data("otf2/tracer-stencil4d-32ranks"), 16).unwrap_err();
    assert!(err.to_string().contains("32"), "{err}");
}

/// sst-macro's OTF2 archive: its 1080 non-blocking collectives run beside the compute (648 on
/// the world and the pair communicators; the 432 on single-rank ones move nothing), and the run
/// delivers exactly the bytes `trace info` counts by expanding every call, blocking or not, so
/// none of their messages is lost, taken by another collective or delivered twice.
#[test]
fn nonblocking_collectives_deliver_every_message() {
    let p = data("otf2/sst-macro-10ranks");
    let info = tracewatt_trace::info(&p, &ReadOptions::default()).unwrap();
    let res = run(&p, 10).unwrap();
    let msgs = &res.summary["messages"];
    assert_eq!(msgs["bytes"].as_u64(), info.wire_bytes, "{msgs}");
}

/// Four ranks per node: the whole CG job on one node, so its messages go through memory and
/// no link carries a packet; the ranks compute and send what the trace recorded all the same.
#[test]
fn four_ranks_per_node() {
    let p = data("dumpi/npb-cg.S-4ranks");
    let text = config_text(&p.display().to_string(), 4, "")
        .replace("ranks_per_node = 1", "ranks_per_node = 4")
        .replace("nodes = 4", "nodes = 2");
    let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
    let res = simulate(&config, "<test>", &mut |_| true).unwrap();
    assert_eq!(res.summary["jobs"][0]["nodes"].as_u64(), Some(1));
    assert_eq!(res.summary["network"]["packets"].as_u64(), Some(0));
    assert_replays("CG on one node", &res, &recorded(&p));
}

/// A line `<key> <sep> <number>` of an NPB output file, e.g. `Time in seconds = 0.06` or
/// `[MO833] Total time,0.367460`.
fn npb_figure(path: &Path, key: &str) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .and_then(|rest| rest.trim_start_matches([' ', '=', ',']).trim().parse().ok())
        .unwrap_or_else(|| panic!("{}: no `{key}`", path.display()))
}

/// NPB CG class S on 4 ranks. The replay computes, rank by rank, exactly the time the trace
/// recorded between MPI calls, and scales it with `compute_scale`. The traced run had 4 ranks
/// on 2 cores: each rank spent ~0.1 s inside MPI calls, mostly waiting for a rank that shared
/// its core; the replay gives each rank a node of its own and moves its 4.7 MB at 10 Gb/s (under
/// 4 ms), so it must end after the longest rank's compute and before the traced span. That span
/// in turn holds NPB's timed loop (`Time in seconds`, two decimals) and lies within the
/// program's lifetime (`Total time`, from the benchmark's own timer).
#[test]
fn npb_cg_replays_the_recorded_compute() {
    let dir = data("dumpi/npb-cg.S-4ranks");
    let out = dir.join("npb-output.txt");
    let gaps_ns = between_calls_ns(&dir);
    let res = run(&dir, 4).unwrap();
    let compute = per_rank(&res, "compute_s");
    for (r, &g) in gaps_ns.iter().enumerate() {
        assert_eq!(ps(compute[r]), g * 1000, "rank {r}");
    }
    let text = config_text(&dir.display().to_string(), 4, "compute_scale = 0.5");
    let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
    let half = per_rank(
        &simulate(&config, "<test>", &mut |_| true).unwrap(),
        "compute_s",
    );
    for (r, &g) in gaps_ns.iter().enumerate() {
        // Each gap rounds to a whole picosecond.
        assert!(ps(half[r]).abs_diff(g * 500) <= 5_000, "rank {r}");
    }

    let span = tracewatt_trace::info(&dir, &ReadOptions::default())
        .unwrap()
        .duration_s
        .unwrap();
    let longest = compute.iter().fold(0.0, |a: f64, &b| a.max(b));
    let sim = makespan(&res);
    assert!(longest < sim && sim < span, "{longest} < {sim} < {span}");
    let timed = npb_figure(&out, "Time in seconds");
    let lifetime = npb_figure(&out, "[MO833] Total time");
    assert!(
        timed - 0.005 <= span && span <= lifetime,
        "{timed} <= {span} <= {lifetime}"
    );
}

/// `compute_clock`: CPU time where the trace has it (NPB FT class S shared 2 cores between 4
/// ranks, so its wall-clock compute is 2-3x its CPU time and the summary warns about each rank
/// on the wall clock); a format without CPU times is a configuration error on the field.
#[test]
fn compute_clock_cpu_replays_cpu_time_and_wall_warns_about_shared_cores() {
    let ft = data("dumpi/npb-ft.S-4ranks");
    let with = |extra: &str| {
        let text = config_text(&ft.display().to_string(), 4, extra);
        let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
        simulate(&config, "<test>", &mut |_| true).unwrap()
    };
    let (wall, cpu) = (with(""), with("compute_clock = \"cpu\""));
    let warnings = wall.summary["trace_warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    assert!(warnings[0].as_str().unwrap().starts_with("trace: rank 0: "));
    assert!(cpu.summary.get("trace_warnings").is_none());
    // Each rank's replayed compute is its trace's compute on the chosen clock.
    let t = open_trace(&ft, &ReadOptions::default()).unwrap();
    for (results, cpu_clock) in [(&wall, false), (&cpu, true)] {
        let replayed = per_rank(results, "compute_s");
        for (r, times) in t.info().rank_times.iter().enumerate() {
            let want = if cpu_clock {
                times.compute_cpu_s.unwrap()
            } else {
                times.compute_wall_s
            };
            assert!(
                (replayed[r] - want).abs() < 1e-9,
                "rank {r}: {} vs {want}",
                replayed[r]
            );
        }
    }
    let text = config_text(
        &data("otf2/pipit-ping-pong").display().to_string(),
        2,
        "compute_clock = \"cpu\"",
    );
    let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
    let err = simulate(&config, "<test>", &mut |_| true).unwrap_err();
    assert!(
        matches!(err, SimError::Config { .. })
            && err
                .to_string()
                .contains("jobs[0].trace.compute_clock: \"cpu\" needs CPU times, and the trace")
            && err
                .to_string()
                .contains("(otf2) records none: use \"wall\""),
        "{err}"
    );
}

#[test]
fn converted_native_trace_gives_the_same_makespan() {
    for rel in [
        "dumpi/npb-cg.S-4ranks",
        "dumpi/sst-macro-testbgp",
        "simgrid-ti/ti-32ranks",
    ] {
        let src = data(rel);
        let out = scratch("native");
        let info = tracewatt_trace::convert(&src, &out, &ReadOptions::default()).unwrap();
        assert_eq!(info.format, TraceFormat::Native);
        let a = makespan(&run(&src, info.ranks).unwrap());
        let b = makespan(&run(&out, info.ranks).unwrap());
        assert_eq!(a.to_bits(), b.to_bits(), "{rel}: {a} vs {b}");
    }
}

/// 2 ranks, untimed: compute 1 ms, MPI_Pcontrol, compute 2 ms, barrier, compute 3 ms,
/// MPI_Pcontrol, compute 4 ms.
fn pcontrol_trace() -> PathBuf {
    use tracewatt_trace::call::{Call, CallKind, CollKind};
    use tracewatt_trace::{funcs, NativeWriter};
    let d = scratch("pcontrol");
    let w = NativeWriter::create(&d, 2).unwrap();
    let pcontrol = funcs::func_id("pcontrol").unwrap();
    let ms = |n: u64| {
        Call::untimed(
            funcs::F_COMPUTE,
            CallKind::Compute {
                ps: n * 1_000_000_000,
                flops: None,
            },
        )
    };
    for r in 0..2 {
        let mut rw = w.rank(r, false).unwrap();
        for c in [
            Call::untimed(funcs::F_INIT, CallKind::Init),
            ms(1),
            Call::untimed(pcontrol, CallKind::Local),
            ms(2),
            Call::untimed(
                funcs::F_BARRIER,
                CallKind::Coll {
                    comm: 0,
                    kind: CollKind::Barrier,
                    root: 0,
                    bytes: 0,
                },
            ),
            ms(3),
            Call::untimed(pcontrol, CallKind::Local),
            ms(4),
            Call::untimed(funcs::F_FINALIZE, CallKind::Finalize),
        ] {
            rw.write(&c).unwrap();
        }
        rw.finish().unwrap();
    }
    d
}

fn run_text(text: &str) -> Result<Results, SimError> {
    let config = Config::parse(text, Format::Toml, "<test>")?;
    simulate(&config, "<test>", &mut |_| true)
}

#[test]
fn a_window_between_marker_calls_times_only_the_window() {
    let p = pcontrol_trace();
    let always_on = "[power.links]\npolicy = \"always_on\"\n";
    let base = config_text(&p.display().to_string(), 2, "") + always_on;
    let windowed = config_text(
        &p.display().to_string(),
        2,
        "[jobs.trace.window]\nfrom = \"MPI_Pcontrol\"\nto = \"pcontrol\"\nto_occurrence = 2\n",
    ) + always_on;
    let (full, win) = (run_text(&base).unwrap(), run_text(&windowed).unwrap());
    // The window leaves out the first 1 ms and the last 4 ms of compute, nothing else.
    let (f, w) = (makespan(&full), makespan(&win));
    assert!((f - w - 0.005).abs() < 1e-12, "{f} {w}");
    assert_eq!(win.summary["window"]["start_s"], 0.001);
    assert!((win.summary["window"]["end_s"].as_f64().unwrap() - (f - 0.004)).abs() < 1e-12);
    // Links always on draw constant power: their energy scales with the time covered.
    let e = |r: &Results| r.summary["energy_j"]["switch_ports"].as_f64().unwrap();
    assert!(
        (e(&win) / e(&full) - w / f).abs() < 1e-9,
        "{} {}",
        e(&win),
        e(&full)
    );
    let p_w = win.summary["avg_power_w"]["switch_ports"].as_f64().unwrap();
    assert!((p_w - e(&win) / w).abs() < 1e-9);
    // A barrier as the start: the window starts there (1 + 2 ms into the run) and ends with
    // the trace (stop left out).
    let from_barrier = config_text(
        &p.display().to_string(),
        2,
        "[jobs.trace.window]\nfrom = \"barrier\"\n",
    ) + always_on;
    let b = run_text(&from_barrier).unwrap();
    assert_eq!(b.summary["window"]["start_s"], 0.003);
    assert!((makespan(&b) - (f - 0.003)).abs() < 1e-12);
}

#[test]
fn a_window_from_a_time_covering_the_whole_trace_changes_nothing() {
    let p = data("dumpi/npb-ft.S-4ranks");
    let full = run(&p, 4).unwrap();
    let text = config_text(
        &p.display().to_string(),
        4,
        "[jobs.trace.window]\nstart_s = 0.0\n",
    );
    let win = run_text(&text).unwrap();
    assert_eq!(makespan(&full).to_bits(), makespan(&win).to_bits());
    assert_eq!(win.summary["energy_j"], full.summary["energy_j"]);
    // Half a second in: past FT.S's last call on every rank.
    let late = text.replace("start_s = 0.0", "start_s = 0.5");
    let err = run_text(&late).unwrap_err().to_string();
    assert!(
        err.contains("rank 0") && err.contains("the window's start never comes"),
        "{err}"
    );
}

/// A window by times cuts ranks between matched sends and receives (CG.S exchanges all the
/// time): everything is still replayed, so nothing waits for a message left out.
#[test]
fn a_window_through_matched_pairs_does_not_deadlock() {
    let p = data("dumpi/npb-cg.S-4ranks");
    let full = run(&p, 4).unwrap();
    let text = config_text(
        &p.display().to_string(),
        4,
        "[jobs.trace.window]\nstart_s = 0.03\nstop_s = 0.06\n",
    );
    let win = run_text(&text).unwrap();
    let (start, end) = (
        win.summary["window"]["start_s"].as_f64().unwrap(),
        win.summary["window"]["end_s"].as_f64().unwrap(),
    );
    assert!(
        0.0 < start && start < end && end < makespan(&full),
        "{start} {end}"
    );
    assert!((makespan(&win) - (end - start)).abs() < 1e-12);
    let total = |r: &Results| r.summary["energy_j"]["total"].as_f64().unwrap();
    assert!(0.0 < total(&win) && total(&win) < total(&full));
}

#[test]
fn bad_windows_are_refused_naming_the_field() {
    let p = pcontrol_trace();
    let with = |w: &str| {
        let text = config_text(
            &p.display().to_string(),
            2,
            &format!("[jobs.trace.window]\n{w}\n"),
        );
        run_text(&text).unwrap_err().to_string()
    };
    let e = with("from = \"pcontrol\"\nstart_s = 1.0");
    assert!(
        e.contains("jobs[0].trace.window.from: give start_s or from"),
        "{e}"
    );
    let e = with("from = \"MPI_Frobnicate\"");
    assert!(
        e.contains("jobs[0].trace.window.from") && e.contains("\"MPI_Frobnicate\""),
        "{e}"
    );
    let e = with("from_occurrence = 0");
    assert!(e.contains("jobs[0].trace.window.from_occurrence"), "{e}");
    let e = with("start_s = 2.0\nstop_s = 1.0");
    assert!(e.contains("jobs[0].trace.window.stop_s"), "{e}");
    // The trace has no timestamps for times; marker calls that never come or come in the
    // wrong order.
    let e = with("start_s = 0.001");
    assert!(e.contains("rank-0.twr") && e.contains("timestamps"), "{e}");
    let e = with("from = \"pcontrol\"\nfrom_occurrence = 3");
    assert!(
        e.contains("rank 0") && e.contains("call 3 of `pcontrol` (it makes 2)"),
        "{e}"
    );
    let e = with("from = \"barrier\"\nto = \"pcontrol\"");
    assert!(e.contains("comes before its start"), "{e}");
}

/// A DUMPI trace's CPU times survive conversion (native version 3): on the CPU clock the
/// native trace replays exactly as the DUMPI one.
#[test]
fn converted_native_trace_keeps_cpu_times() {
    let src = data("dumpi/npb-ft.S-4ranks");
    let out = scratch("native-cpu");
    tracewatt_trace::convert(&src, &out, &ReadOptions::default()).unwrap();
    let cpu_run = |p: &Path| {
        let text = config_text(&p.display().to_string(), 4, "compute_clock = \"cpu\"");
        let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
        makespan(&simulate(&config, "<test>", &mut |_| true).unwrap())
    };
    let (a, b) = (cpu_run(&src), cpu_run(&out));
    assert_eq!(a.to_bits(), b.to_bits(), "{a} vs {b}");
    // ... and differs from the wall clock's (FT.S shared cores: wall compute 2-3x CPU).
    assert!(makespan(&run(&out, 4).unwrap()) > a);
}

/// NPB class B (4 ranks on 2 cores when traced): each replays its recorded compute; NPB's timed
/// loop (`Time in seconds` of run.log) lies within the traced span.
#[test]
#[ignore = "needs the optional data (TRACEWATT_OPTIONAL_DATA): run with cargo test -- --ignored"]
fn npb_class_b_traces_replay() {
    for bench in ["ft", "cg", "mg", "sp", "bt"] {
        let dir = shared_data(&format!("dumpi/npb-{bench}.B-4ranks"));
        let rec = recorded(&dir);
        let res = run(&dir, 4).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_replays(bench, &res, &rec);
        let span = tracewatt_trace::info(&dir, &ReadOptions::default())
            .unwrap()
            .duration_s
            .unwrap();
        let timed = npb_figure(&dir.join("run.log"), "Time in seconds");
        assert!(timed - 0.005 <= span, "{bench}: {timed} <= {span}");
        eprintln!(
            "{bench}.B: timed loop {timed} s, traced span {span:.3} s, replay {:.3} s",
            makespan(&res)
        );
    }
}

#[test]
fn relative_path_resolves_against_the_config_file() {
    let d = scratch("rel");
    std::fs::create_dir_all(d.join("conf")).unwrap();
    std::fs::write(
        d.join("t.txt"),
        "0 init\n1 init\n0 send 1 0 100\n1 recv 0 0 100\n0 finalize\n1 finalize\n",
    )
    .unwrap();
    let text = config_text("../t.txt", 2, "");
    let source = d.join("conf/run.toml").display().to_string();
    let config = Config::parse(&text, Format::Toml, &source).unwrap();
    let res = simulate(&config, &source, &mut |_| true).unwrap();
    assert_eq!(res.summary["messages"]["count"].as_u64(), Some(1));
    // The same relative path from a non-file source is relative to the current directory
    // (the crate directory here), where it does not exist.
    let err = Config::parse(&text, Format::Toml, "<dict>").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("jobs[0].trace.path") && msg.contains("no such file"),
        "{msg}"
    );
}

#[test]
fn exactly_one_of_workload_and_trace() {
    let p = data("dumpi/npb-cg.S-4ranks").display().to_string();
    let both = config_text(&p, 4, "") + "[jobs.workload]\nkind = \"pingpong\"\n";
    let err = Config::parse(&both, Format::Toml, "<test>").unwrap_err();
    assert!(err.to_string().contains("jobs[0].trace"), "{err}");
    assert!(err.to_string().contains("not both"), "{err}");
    let neither = config_text(&p, 4, "").replace(&format!("[jobs.trace]\npath = {p:?}\n"), "");
    let err = Config::parse(&neither, Format::Toml, "<test>").unwrap_err();
    assert!(err.to_string().contains("jobs[0].workload"), "{err}");
    let bad = config_text(&p, 4, "flops_per_s = 0");
    let err = Config::parse(&bad, Format::Toml, "<test>").unwrap_err();
    assert!(
        err.to_string().contains("jobs[0].trace.flops_per_s"),
        "{err}"
    );
    let unknown = config_text(&p, 4, "scale = 2");
    let err = Config::parse(&unknown, Format::Toml, "<test>").unwrap_err();
    assert!(err.to_string().contains("scale"), "{err}");
}

#[test]
fn rank_count_must_match_the_trace() {
    let p = data("dumpi/npb-cg.S-4ranks");
    let text = config_text(&p.display().to_string(), 4, "").replacen("ranks = 4", "ranks = 3", 1);
    let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
    let err = simulate(&config, "<test>", &mut |_| true).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SimError::Config { .. }), "{err:?}");
    assert!(
        msg.contains("jobs[0].ranks") && msg.contains("has 4 ranks") && msg.contains("has 3"),
        "{msg}"
    );
}

/// The configuration of `config_text` with the job's `ranks` and the switch's `nodes` left out
/// and `ranks_per_node` set.
fn sized_by_trace(path: &Path, ranks_per_node: u32) -> Config {
    let text = config_text(&path.display().to_string(), 0, "")
        .replace("nodes = 0\n", "")
        .replace("ranks = 0\n", "")
        .replace(
            "ranks_per_node = 1",
            &format!("ranks_per_node = {ranks_per_node}"),
        );
    Config::parse(&text, Format::Toml, "<test>").unwrap()
}

#[test]
fn ranks_and_a_single_switch_are_sized_by_the_trace() {
    // sst-macro-testbgp's .meta says numprocs=7 (tests/data/README.md: 7 ranks).
    let p = data("dumpi/sst-macro-testbgp");
    for (per_node, nodes) in [(1, 7), (2, 4), (4, 2)] {
        let config = sized_by_trace(&p, per_node);
        let resolved = config.resolved_json();
        assert_eq!(resolved["jobs"][0]["ranks"], 7);
        assert_eq!(
            resolved["machine"]["topology"]["nodes"], nodes,
            "{per_node}"
        );
        let r = simulate(&config, "<test>", &mut |_| true).unwrap();
        assert_eq!(r.summary["jobs"][0]["nodes"], nodes, "{}", r.summary);
    }
    // The same run as with the sizes typed in.
    let typed = run(&p, 7).unwrap();
    let sized = simulate(&sized_by_trace(&p, 1), "<test>", &mut |_| true).unwrap();
    assert_eq!(makespan(&typed).to_bits(), makespan(&sized).to_bits());
}

#[test]
fn given_sizes_are_kept_and_a_workload_needs_ranks() {
    let p = data("dumpi/npb-cg.S-4ranks");
    // A machine larger than the job keeps its size.
    let text = config_text(&p.display().to_string(), 4, "").replacen("ranks = 4\n", "", 1);
    let text = text.replace("nodes = 4", "nodes = 6");
    let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
    let resolved = config.resolved_json();
    assert_eq!(resolved["jobs"][0]["ranks"], 4);
    assert_eq!(resolved["machine"]["topology"]["nodes"], 6);
    let gen = "seed = 1\n[machine.topology]\nkind = \"single_switch\"\n[[jobs]]\n\
               [jobs.workload]\nkind = \"pingpong\"\n";
    let err = Config::parse(gen, Format::Toml, "<test>").unwrap_err();
    assert!(
        err.to_string()
            .contains("jobs[0].ranks: missing: a [jobs.workload] job"),
        "{err}"
    );
    let gone = config_text("nowhere", 0, "").replacen("ranks = 0\n", "", 1);
    let err = Config::parse(&gone, Format::Toml, "<test>").unwrap_err();
    assert!(
        err.to_string().contains("jobs[0].trace.path") && err.to_string().contains("nowhere"),
        "{err}"
    );
}

#[test]
fn corrupt_trace_names_file_rank_and_offset() {
    let src = data("dumpi/sst-dumpi-testtrace");
    let d = scratch("corrupt");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
    }
    // Truncate rank 2's file in the middle of its body.
    let bin = d.join("testtrace-0002.bin");
    let bytes = std::fs::read(&bin).unwrap();
    std::fs::write(&bin, &bytes[..bytes.len() / 2]).unwrap();
    let err = run(&d, 4).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SimError::Trace { job: 0, .. }), "{err:?}");
    assert!(
        msg.contains("testtrace-0002.bin") && msg.contains("jobs[0].trace"),
        "{msg}"
    );
    assert!(
        msg.contains("rank 2") || msg.contains("byte offset"),
        "{msg}"
    );
}

/// Both ranks receive before they send: every message has its receive (the trace passes the
/// open's cross-rank checks), but in this order nobody sends: the run stops and names both.
#[test]
fn a_stuck_trace_is_a_deadlock_naming_the_waiting_ranks() {
    let d = scratch("stuck");
    let t = d.join("stuck.txt");
    std::fs::write(
        &t,
        "0 init\n1 init\n0 recv 1 0 64\n0 send 1 0 64\n1 recv 0 0 64\n1 send 0 0 64\n\
         0 finalize\n1 finalize\n",
    )
    .unwrap();
    let err = run(&t, 2).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, SimError::Deadlock { blocked: 2, .. }),
        "{err:?}"
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

/// A receive no rank sends to is refused when the trace is opened, naming its line.
#[test]
fn an_unmatched_receive_is_refused_before_the_run() {
    let d = scratch("unmatched");
    let t = d.join("unmatched.txt");
    std::fs::write(
        &t,
        "0 init\n1 init\n0 recv 1 0 64\n0 finalize\n1 finalize\n",
    )
    .unwrap();
    let msg = run(&t, 2).unwrap_err().to_string();
    assert!(
        msg.contains("unmatched.txt: rank 0, line 3: expected recv: a send matching this receive"),
        "{msg}"
    );
}
