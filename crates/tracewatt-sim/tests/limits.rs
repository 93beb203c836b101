//! Values beyond what a simulation can hold are errors that name the field and the limit, never
//! a panic or a silently different run.

use tracewatt_sim::{simulate, Column, Config, Format, SimError};

/// Two nodes on one switch playing ping-pong: `machine` and `links` are lines of `[machine]` and
/// `[machine.links]`, `workload` extra fields of the workload table, `extra` tables at the end.
fn pingpong(machine: &str, links: &str, workload: &str, extra: &str) -> String {
    format!(
        r#"
[machine]
{machine}
[machine.topology]
kind = "single_switch"
nodes = 2
[machine.links]
bandwidth_gbps = 10.0
{links}
[[jobs]]
ranks = 2
workload = {{ kind = "pingpong", iterations = 2{workload} }}
{extra}
"#
    )
}

fn parse(text: &str) -> Result<Config, SimError> {
    Config::parse(text, Format::Toml, "t.toml")
}

fn config_error(text: &str) -> (String, String) {
    match parse(text).and_then(|c| simulate(&c, "t.toml", &mut |_| true).map(|_| c)) {
        Err(SimError::Config { field, message, .. }) => (field, message),
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

/// Every time field, set to 10^14 of its unit (past the 10^6 s limit in us and in ns): an error
/// naming the field and the limit in the field's unit. Before, 1e14 us turned into 0.
#[test]
fn every_time_field_is_range_checked() {
    let mut cases: Vec<(String, String)> = vec![
        (
            "jobs[0].start_us".into(),
            pingpong("", "", "", "").replace("ranks = 2", "ranks = 2\nstart_us = 1e14"),
        ),
        (
            "jobs[0].workload.interval_us".into(),
            pingpong("", "", ", interval_us = 1e14", ""),
        ),
    ];
    let lines = [
        ("machine.switch_latency_ns", "switch_latency_ns = 1e16", ""),
        (
            "machine.intra_node_latency_ns",
            "intra_node_latency_ns = 1e16",
            "",
        ),
        ("machine.links.latency_ns", "", "latency_ns = 1e16"),
        (
            "machine.links.node.latency_ns",
            "",
            "node = { latency_ns = 1e16 }",
        ),
    ];
    for (field, machine, links) in lines {
        cases.push((field.into(), pingpong(machine, links, "", "")));
    }
    let tables = [
        ("mpi.send_overhead_ns", "[mpi]\nsend_overhead_ns = 1e16"),
        ("mpi.recv_overhead_ns", "[mpi]\nrecv_overhead_ns = 1e16"),
        (
            "output.idle_thresholds_us[1]",
            "[output]\nidle_thresholds_us = [1.0, 1e14]",
        ),
        ("power.timeline_bin_us", "[power]\ntimeline_bin_us = 1e14"),
    ];
    for (field, extra) in tables {
        cases.push((field.into(), pingpong("", "", "", extra)));
    }
    for k in [
        "idle_timeout_us",
        "sleep_time_us",
        "wake_time_us",
        "refresh_period_us",
        "refresh_time_us",
    ] {
        let base = format!("[power.links]\n{k} = 1e14");
        cases.push((format!("power.links.{k}"), pingpong("", "", "", &base)));
        let node = format!("[[power.node_links]]\nnodes = [0]\nlink = {{ {k} = 1e14 }}");
        cases.push((
            format!("power.node_links[0].link.{k}"),
            pingpong("", "", "", &node),
        ));
    }
    for kind in ["near_neighbor", "permutation", "stencil4d", "qbox", "a2a"] {
        let text = pingpong("", "", "", "").replace(
            "kind = \"pingpong\", iterations = 2",
            &format!("kind = \"{kind}\", compute_us = 1e14"),
        );
        cases.push(("jobs[0].workload.compute_us".into(), text));
    }
    for (field, text) in cases {
        let (got, message) = config_error(&text);
        assert_eq!(got, field, "{message}");
        let unit = if field.ends_with("_ns") {
            "1e15 ns"
        } else {
            "1e12 us"
        };
        assert!(
            message.starts_with(&format!("must be at most {unit} (1e6 s")),
            "{field}: {message}"
        );
    }
}

/// The values the issue found wrapping to 0 (a job starting at 0, a free wake, links asleep 98 %
/// of the time) are refused; the largest allowed value still runs as written.
#[test]
fn the_largest_time_is_kept_exactly() {
    let text = pingpong("", "", "", "").replace("ranks = 2", "ranks = 2\nstart_us = 1e12");
    let c = parse(&text).unwrap();
    let r = simulate(&c, "t.toml", &mut |_| true).unwrap();
    assert_eq!(r.summary["jobs"][0]["start_s"], 1e6);
    for text in [
        pingpong("", "", "", "[power.links]\nidle_timeout_us = 1.9e13"),
        pingpong("", "", "", "[power.links]\nwake_time_us = 1e14"),
    ] {
        assert!(matches!(parse(&text), Err(SimError::Config { .. })));
    }
}

/// A link too slow to be represented (1e-12 Gb/s rounds to 0 bit/s and used to panic dividing
/// by it) is a configuration error naming the field and the smallest bandwidth allowed.
#[test]
fn a_bandwidth_below_one_bit_per_second_is_refused() {
    let (field, message) = config_error(
        &pingpong("", "", "", "").replace("bandwidth_gbps = 10.0", "bandwidth_gbps = 1e-12"),
    );
    assert_eq!(field, "machine.links.bandwidth_gbps");
    assert_eq!(
        message,
        "must be at least 1e-9 (1 bit/s), got 0.000000000001"
    );
    let (field, message) = config_error(&pingpong("intra_node_bandwidth_gbps = 0.0", "", "", ""));
    assert_eq!(field, "machine.intra_node_bandwidth_gbps");
    assert!(message.starts_with("must be at least 1e-9"), "{message}");
    // 1 bit/s is allowed.
    assert!(parse(&pingpong("", "node = { bandwidth_gbps = 1e-9 }", "", "")).is_ok());
    // With a 10 MB packet the floor is the rate that sends one packet in 10^6 s:
    // 8e7 bit / 1e6 s = 80 bit/s = 8e-8 Gb/s.
    let big = "packet_bytes = 10000000\nbuffer_bytes = 10000000";
    let slow = "torus = [{ bandwidth_gbps = 7e-8 }]";
    let (field, message) = config_error(&pingpong(big, slow, "", ""));
    assert_eq!(field, "machine.links.torus[0].bandwidth_gbps");
    assert!(
        message.starts_with("must be at least 8e-8 (so that a packet"),
        "{message}"
    );
}

/// More than 256 distinct link timings (one per node link here) used to panic in the link power
/// model. 300 nodes, each link with its own idle timeout, ping-ponging node 0 with 299: the run
/// completes, and the one link between them (timeout 1 us, 5 idle intervals of ~100 us) sleeps.
#[test]
fn three_hundred_distinct_link_timings_run() {
    let mut power = String::new();
    for n in 0..300 {
        power.push_str(&format!(
            "[[power.node_links]]\nnodes = [{n}]\nlink = {{ idle_timeout_us = {} }}\n",
            n + 1
        ));
    }
    let text = pingpong("", "", ", interval_us = 100.0", &power)
        .replace("nodes = 2", "nodes = 300")
        .replace(
            "ranks = 2",
            "ranks = 2\nallocation = \"list\"\nnode_list = [0, 299]",
        );
    let c = parse(&text).unwrap();
    let r = simulate(&c, "t.toml", &mut |_| true).unwrap();
    let links = r.table("links").unwrap();
    let Some((_, Column::F64(timeouts))) = links.columns.iter().find(|c| c.0 == "idle_timeout_s")
    else {
        panic!("no idle_timeout_s column");
    };
    // Channels 2n and 2n + 1 are node n's link: each keeps its own timeout, (n + 1) us.
    assert_eq!(timeouts.len(), 600);
    for (ch, t) in timeouts.iter().enumerate() {
        let want = (ch / 2 + 1) as f64 * 1e-6;
        assert!(
            (t - want).abs() < 1e-15,
            "channel {ch}: {t} s, want {want} s"
        );
    }
    assert_eq!(r.summary["messages"]["count"], 4);
}

/// A run past the longest simulated time (8e6 s) stops with an error saying so: ping-pong
/// rounds 10^6 s apart (the longest interval), 9 of them, end after 8 x 10^6 s.
#[test]
fn a_run_longer_than_the_simulated_time_limit_stops() {
    let text =
        pingpong("", "", ", interval_us = 1e12", "").replace("iterations = 2", "iterations = 9");
    let c = parse(&text).unwrap();
    match simulate(&c, "t.toml", &mut |_| true) {
        Err(e @ SimError::TimeLimit { .. }) => {
            assert!(
                e.to_string()
                    .starts_with("t.toml: the simulation reached t = ")
                    && e.to_string()
                        .contains("past the longest simulated time of 8e6 s"),
                "{e}"
            );
        }
        other => panic!(
            "expected the time limit, got {:?}",
            other.map(|r| r.summary)
        ),
    }
    // 7 rounds end just after 7 x 10^6 s: within the limit.
    let text =
        pingpong("", "", ", interval_us = 1e12", "").replace("iterations = 2", "iterations = 7");
    let r = simulate(&parse(&text).unwrap(), "t.toml", &mut |_| true).unwrap();
    let makespan = r.summary["makespan_s"].as_f64().unwrap();
    assert!((7e6..7e6 + 1.0).contains(&makespan), "{makespan}");
}

/// A trace's compute period times `compute_scale` longer than the longest duration is an error
/// naming the file, the rank, the line and the cause. Before, the product saturated to 2^64 - 1 ps and
/// wrapped the clock. Rank 0 computes 10^9 flops at the default 10^9 flop/s: 1 s, and 2 x 10^6 s
/// once scaled by 2 x 10^6.
#[test]
fn a_trace_compute_period_beyond_the_limit_is_an_error() {
    let dir = std::env::temp_dir().join(format!("tracewatt-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("ti.txt");
    std::fs::write(
        &trace,
        "0 init\n1 init\n0 compute 1e9\n0 finalize\n1 finalize\n",
    )
    .unwrap();
    let text = |scale: &str| {
        format!(
            "[machine]\ntopology = {{ kind = \"single_switch\", nodes = 2 }}\n\
             links = {{ bandwidth_gbps = 10.0 }}\n[[jobs]]\nranks = 2\n\
             trace = {{ path = \"{}\", compute_scale = {scale} }}\n",
            trace.display()
        )
    };
    let run = |scale: &str| simulate(&parse(&text(scale)).unwrap(), "t.toml", &mut |_| true);
    let r = run("1e6").unwrap();
    assert_eq!(r.summary["makespan_s"], 1e6);
    let e = run("2e6").unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        e.contains("ti.txt: rank 0, line 3: a compute period"),
        "{e}"
    );
    assert!(e.contains("must be at most 1e18 ps (1e6 s"), "{e}");
}

/// A 10^7-node torus with 4 x 10^9 ranks would need terabytes: refused at once, before anything
/// is allocated (it used to abort the process with "memory allocation failed"), with the
/// estimate and what it counts. The same machine shape at 4 x 4 runs.
#[test]
fn a_run_larger_than_memory_is_refused_before_allocating() {
    let text = |dims: &str, ranks: u64| {
        format!(
            "[machine]\ntopology = {{ kind = \"torus\", dims = [{dims}] }}\n\
             links = {{ bandwidth_gbps = 10.0 }}\nranks_per_node = 400\n\
             [[jobs]]\nranks = {ranks}\nworkload = {{ kind = \"pingpong\" }}\n"
        )
    };
    let c = parse(&text("4000, 2500", 4_000_000_000)).unwrap();
    let t0 = std::time::Instant::now();
    let e = simulate(&c, "t.toml", &mut |_| true).unwrap_err();
    assert!(t0.elapsed().as_secs_f64() < 5.0, "{:?}", t0.elapsed());
    let SimError::Memory {
        needed_bytes,
        available_bytes,
        ..
    } = &e
    else {
        panic!("expected a memory error, got {e}");
    };
    // 10^7 node links + 2 x 10^7 torus links = 6 x 10^7 channels at 1,000 B + 12 thresholds x
    // 44 B, and 4 x 10^9 ranks at 380 B.
    assert_eq!(*needed_bytes, 60_000_000 * 1_528 + 4_000_000_000 * 380);
    assert!(available_bytes < needed_bytes);
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "t.toml: the run needs an estimated 1611.7 GB of memory (60,000,000 link directions \
             and 4,000,000,000 ranks), more than the "
        ),
        "{msg}"
    );
    let small = parse(&text("4, 4", 2)).unwrap();
    assert!(simulate(&small, "t.toml", &mut |_| true).is_ok());
}

/// Values a simulation could hold but that would make it run without end, overflow an energy
/// or an output column, or be ignored: each an error naming its field and what is allowed.
#[test]
fn values_that_would_not_end_overflow_or_be_ignored_are_refused() {
    let torus = |extra: &str| {
        pingpong("", "", "", extra).replace(
            "kind = \"single_switch\"\nnodes = 2",
            "kind = \"torus\"\ndims = [2]",
        )
    };
    let cases: Vec<(String, &str, &str)> = vec![
        // A message of 2^40 + 1 bytes, and the largest size, in a workload and as MPI control.
        (
            pingpong("", "", ", bytes = 1099511627777", ""),
            "jobs[0].workload.bytes",
            "at most 1099511627776 bytes",
        ),
        (
            pingpong("", "", "", "[mpi]\ncontrol_bytes = 9223372036854775807"),
            "mpi.control_bytes",
            "at most 1099511627776 bytes",
        ),
        (
            pingpong("", "", "", "[mpi.wait]\nspin_iteration_ns = 1e30"),
            "mpi.wait.spin_threshold_iterations",
            "with spin_iteration_ns = 1000000000000000000000000000000, 1000000 iterations",
        ),
        (
            pingpong("", "", "", "[output]\nidle_bins_per_decade = 4294967295"),
            "output.idle_bins_per_decade",
            "from 1 to 1000",
        ),
        (
            pingpong("", "bandwidth_gbps = 1e10", "", "").replace("bandwidth_gbps = 10.0\n", ""),
            "machine.links.bandwidth_gbps",
            "at most 1e6",
        ),
        (
            pingpong("", "", "", "[power.nodes]\nbase_w = 1e308"),
            "power.nodes.base_w",
            "non-negative number of at most 1e6",
        ),
        (
            pingpong("", "", "", "[power.switch]\nbackplane_w = 1e7"),
            "power.switch.backplane_w",
            "non-negative number of at most 1e6",
        ),
        (
            pingpong("", "", "", "[power.switch]\nport_lpi_w = 5.0"),
            "power.switch.port_lpi_w",
            "more than port_active_w = 3.44 W",
        ),
        (
            pingpong("", "", "", "[power.dimms]\nchannels = 4294967295"),
            "power.dimms.channels",
            "at most 256",
        ),
        (
            pingpong("", "", "", "[power.dimms]\ndimm_gib = 2e6"),
            "power.dimms.dimm_gib",
            "from 2^-20 (1 KiB) to 2^20 (1 PiB), got 2000000",
        ),
        (
            pingpong("", "", "", "[power.dimms]\nbandwidth_slowdown = 1e300"),
            "power.dimms.bandwidth_slowdown",
            "at most 1000",
        ),
        // 4 channels x 2 DIMMs x 4 GiB = 32 GiB installed by default.
        (
            pingpong("", "", "", "").replace("ranks = 2", "ranks = 2\nmemory_gib = 33.0"),
            "jobs[0].memory_gib",
            "more than the node's 32 GiB",
        ),
        (
            pingpong(
                "",
                "",
                "",
                "[[jobs]]\nname = \"a\"\nranks = 1\nworkload = { kind = \"pingpong\" }",
            )
            .replace("ranks = 2", "name = \"a\"\nranks = 2"),
            "jobs[1].name",
            "names an earlier job too",
        ),
        (
            pingpong("", "", "", "").replace("ranks = 2", "name = \"\"\nranks = 2"),
            "jobs[0].name",
            "must not be empty",
        ),
        (
            pingpong("", "", "", "").replace(
                "ranks = 2",
                "ranks = 2\nnodes = 2\nallocation = \"list\"\nnode_list = [0, 1, 2]",
            ),
            "jobs[0].nodes",
            "node_list names 3 nodes",
        ),
        (
            pingpong("", "", "", "[machine.links.global]\nbandwidth_gbps = 1.0"),
            "machine.links.global",
            "(a single switch) has no global links",
        ),
        (
            pingpong("", "", "", "[power.local]\nidle_timeout_us = 5.0"),
            "power.local",
            "no local links",
        ),
        (
            torus("[[machine.links.torus]]\n[[machine.links.torus]]"),
            "machine.links.torus",
            "(a 1-dimensional torus) has fewer dimensions",
        ),
        (
            pingpong("", "", "", "[[power.tree]]\nidle_timeout_us = 5.0"),
            "power.tree",
            "fewer link levels",
        ),
    ];
    let trace = format!(
        "{}/../../tests/data/dumpi/npb-ft.S-4ranks",
        env!("CARGO_MANIFEST_DIR")
    );
    let windowed = |window: &str| {
        pingpong("", "", "", "").replace(
            "ranks = 2\nworkload = { kind = \"pingpong\", iterations = 2 }",
            &format!("trace = {{ path = {trace:?}, window = {{ {window} }} }}"),
        )
    };
    let mut cases = cases;
    let (from, to) = (
        windowed("from_occurrence = 2"),
        windowed("start_s = 0.001, to_occurrence = 3"),
    );
    cases.push((
        from,
        "jobs[0].trace.window.from_occurrence",
        "give from too",
    ));
    cases.push((to, "jobs[0].trace.window.to_occurrence", "give to too"));
    for (text, field, says) in cases {
        let (f, m) = config_error(&text);
        assert_eq!(f, field, "{m}");
        assert!(m.contains(says), "{field}: {m}");
    }
}

/// A fixed timeline bin too fine for the run doubles until the run fits in `FIXED_MAX_BINS`
/// bins, and the summary says so: 1 ps bins over a run of E ps become the smallest power of two
/// w with ceil(E / w) <= 2^20.
#[test]
fn a_timeline_bin_too_fine_for_the_run_is_widened_and_said() {
    let text = pingpong(
        "",
        "",
        ", interval_us = 10.0",
        "[power]\ntimeline_bin_us = 1e-6",
    );
    let c = parse(&text).expect("config");
    let r = simulate(&c, "t.toml", &mut |_| true).expect("run");
    let end = (r.summary["makespan_s"].as_f64().unwrap() * 1e12).round() as u64;
    let mut w = 1u64;
    while end.div_ceil(w) > 1 << 20 {
        w *= 2;
    }
    assert!(w > 1, "the run must outgrow 2^20 bins of 1 ps: {end} ps");
    let Some(Column::F64(starts)) = r
        .table("timeline")
        .and_then(|t| t.columns.iter().find(|c| c.0 == "t_start_s"))
        .map(|c| &c.1)
    else {
        panic!("no timeline")
    };
    assert_eq!(starts.len() as u64, end.div_ceil(w));
    assert_eq!(((starts[1] - starts[0]) * 1e12).round() as u64, w);
    let warned = r.summary["warnings"][0].as_str().expect("a warning");
    assert!(
        warned.contains("power.timeline_bin_us = 0.000001 us")
            && warned.contains(&format!("{} us wide", w as f64 * 1e-6)),
        "{warned}"
    );
    // A bin the run fits in is kept, with nothing to say.
    let fits = parse(&text.replace("1e-6", "1.0")).expect("config");
    let r = simulate(&fits, "t.toml", &mut |_| true).expect("run");
    assert!(r.summary.get("warnings").is_none());
}

/// A key given twice in one JSON object is an error with its place, as in TOML (a JSON reader
/// would keep the second and drop the first without a word).
#[test]
fn a_json_key_given_twice_is_refused_with_its_place() {
    let text = "{\"machine\": {\"ranks_per_node\": 1,\n \"ranks_per_node\": 2}}";
    match Config::parse(text, Format::Json, "t.json") {
        Err(e @ SimError::Config { .. }) => assert!(
            e.to_string()
                .contains("the key `ranks_per_node` is given twice in one object at line 2"),
            "{e}"
        ),
        other => panic!("expected a configuration error, got {other:?}"),
    }
}
