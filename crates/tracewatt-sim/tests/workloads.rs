//! Built-in workloads run end to end, checked against hand calculations through the rank table.

use tracewatt_sim::{simulate, Column, Config, Format, Results};

/// One job of `ranks` ranks, one per node, on a single switch of `nodes` nodes: 10 Gb/s links
/// of 50 ns, 100 ns switch latency, 1,500-byte packets, 1 us MPI overheads, links always on.
fn run(nodes: u32, ranks: u32, workload: &str) -> Results {
    let text = format!(
        r#"
[machine]
ranks_per_node = 1
packet_bytes = 1500
switch_latency_ns = 100
[machine.topology]
kind = "single_switch"
nodes = {nodes}
[machine.links]
bandwidth_gbps = 10.0
latency_ns = 50
[mpi]
send_overhead_ns = 1000
recv_overhead_ns = 1000
[power.links]
policy = "always_on"
[[jobs]]
ranks = {ranks}
[jobs.workload]
{workload}
"#
    );
    let config = Config::parse(&text, Format::Toml, "test.toml").unwrap_or_else(|e| panic!("{e}"));
    simulate(&config, "test.toml", &mut |_| true).unwrap_or_else(|e| panic!("{e}"))
}

fn u64s(r: &Results, column: &str) -> Vec<u64> {
    let ranks = r.table("ranks").expect("ranks table");
    match ranks.columns.iter().find(|(name, _)| *name == column) {
        Some((_, Column::U64(v))) => v.clone(),
        other => panic!("{column}: {other:?}"),
    }
}

fn f64s(r: &Results, column: &str) -> Vec<f64> {
    let ranks = r.table("ranks").expect("ranks table");
    match ranks.columns.iter().find(|(name, _)| *name == column) {
        Some((_, Column::F64(v))) => v.clone(),
        other => panic!("{column}: {other:?}"),
    }
}

#[test]
fn poisson_arrivals_sleep_instead_of_computing() {
    // Fixed arrivals compute for the interval after each send; Poisson arrivals wait until
    // each send time, which is not compute.
    let fixed = run(
        4,
        4,
        "kind = \"uniform_random\"\nmessages = 10\ninterval_us = 5.0",
    );
    assert_eq!(f64s(&fixed, "compute_s"), [50e-6; 4]);
    let poisson = run(
        4,
        4,
        "kind = \"uniform_random\"\nmessages = 10\ninterval_us = 5.0\narrival = \"poisson\"",
    );
    assert_eq!(f64s(&poisson, "compute_s"), [0.0; 4]);
    assert_eq!(u64s(&poisson, "sends"), [10; 4]);
}
