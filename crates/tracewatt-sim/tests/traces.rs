//! Traces as job workloads (`[jobs.trace]`), end to end: every readable trace in
//! `../shared/data` simulates to completion on a machine of matching size; NPB CG's simulated
//! makespan against its measured time; native conversion keeps the makespan; configuration
//! errors (both/neither of workload and trace, rank mismatch, relative paths, missing files,
//! corrupt traces) and a trace that cannot finish.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use tracewatt_sim::{simulate, Config, Format, Results, SimError};
use tracewatt_trace::{ReadOptions, TraceFormat};

/// `../shared/data` relative to the project root (tests run in the crate directory).
fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(rel)
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

/// Every trace in ../shared/data.
fn readable_traces() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for kind in ["dumpi", "otf2", "simgrid-ti/actions"] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(data(kind))
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (the shared test data is missing)",
                    data(kind).display()
                )
            })
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

#[test]
fn every_readable_trace_simulates_to_completion() {
    let traces = readable_traces();
    assert!(traces.len() >= 18, "{traces:?}");
    for p in traces {
        let info = tracewatt_trace::info(&p, &ReadOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let res = run(&p, info.ranks).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let ranks = res.summary["jobs"][0]["ranks"].as_u64().unwrap();
        assert_eq!(ranks, u64::from(info.ranks), "{}", p.display());
        assert!(makespan(&res) > 0.0, "{}", p.display());
        eprintln!(
            "{:<60} {:>3} ranks  makespan {:.6} s  messages {}",
            p.display(),
            info.ranks,
            makespan(&res),
            res.summary["messages"]["count"]
        );
    }
}

/// OTF2 archives run through `[jobs.trace]` (directory or anchor file): ping-pong's 16
/// messages (16 KiB .. 2 MiB, 8 each way); a rank count that does not match is an error.
#[test]
fn otf2_archives_simulate() {
    let p = data("otf2/pipit-ping-pong");
    assert_eq!(tracewatt_trace::detect(&p).unwrap(), TraceFormat::Otf2);
    for path in [p.clone(), p.join("traces.otf2")] {
        let res = run(&path, 2).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let msgs = &res.summary["messages"];
        assert_eq!(msgs["count"].as_u64(), Some(16), "{msgs}");
        // 2^14 .. 2^21 bytes, each size once in each direction.
        assert_eq!(
            msgs["bytes"].as_u64(),
            Some(2 * ((1 << 22) - (1 << 14))),
            "{msgs}"
        );
        assert!(makespan(&res) > 0.0);
    }
    let err = run(&data("otf2/tracer-stencil4d-32ranks"), 16).unwrap_err();
    assert!(err.to_string().contains("32"), "{err}");
}

/// Four ranks per node: the whole CG job on one node (its messages go through memory).
#[test]
fn four_ranks_per_node() {
    let p = data("dumpi/npb-cg.S-4ranks");
    let text = config_text(&p.display().to_string(), 4, "")
        .replace("ranks_per_node = 1", "ranks_per_node = 4")
        .replace("nodes = 4", "nodes = 2");
    let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
    let res = simulate(&config, "<test>", &mut |_| true).unwrap();
    assert_eq!(res.summary["jobs"][0]["nodes"].as_u64(), Some(1));
    assert!(makespan(&res) > 0.0);
}

/// `Time in seconds = X` of an NPB output file.
fn npb_time(path: &Path) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Time in seconds"))
        .and_then(|rest| rest.trim_start_matches([' ', '=']).trim().parse().ok())
        .unwrap_or_else(|| panic!("{}: no `Time in seconds`", path.display()))
}

#[test]
fn npb_cg_makespan_against_measured_time() {
    let dir = data("dumpi/npb-cg.S-4ranks");
    let measured = npb_time(&dir.join("npb-output.txt"));
    let info = tracewatt_trace::info(&dir, &ReadOptions::default()).unwrap();
    let sim = makespan(&run(&dir, 4).unwrap());
    let ratio = sim / measured;
    eprintln!(
        "npb-cg.S 4 ranks: simulated makespan {sim:.6} s, measured (NPB `Time in seconds`) \
         {measured} s, traced span {:.6} s; simulated / measured = {ratio:.3}",
        info.duration_s.unwrap()
    );
    // The NPB timer covers the benchmark loop only and has 2 digits; the trace covers Init to
    // Finalize on an oversubscribed 2-core machine. Sanity, not accuracy.
    assert!(ratio > 0.01 && ratio < 100.0, "ratio {ratio}");
    // Halving the compute gaps shortens the run.
    let text = config_text(&dir.display().to_string(), 4, "compute_scale = 0.5");
    let config = Config::parse(&text, Format::Toml, "<test>").unwrap();
    let half = makespan(&simulate(&config, "<test>", &mut |_| true).unwrap());
    assert!(half < sim, "{half} vs {sim}");
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

#[test]
fn a_stuck_trace_is_a_deadlock_naming_the_waiting_rank() {
    let d = scratch("stuck");
    let t = d.join("stuck.txt");
    std::fs::write(
        &t,
        "0 init\n1 init\n0 recv 1 0 64\n0 finalize\n1 finalize\n",
    )
    .unwrap();
    let err = run(&t, 2).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, SimError::Deadlock { blocked: 1, .. }),
        "{err:?}"
    );
    assert!(
        msg.contains("rank 0") && msg.contains("receive from rank 1"),
        "{msg}"
    );
}
