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

#[test]
fn collective_loops_send_what_their_algorithm_sends() {
    // Per rank and iteration, by hand for p ranks:
    // - ring allreduce: 2 (p - 1) messages of bytes / p, i.e. 2 (p - 1) / p x bytes;
    // - recursive-doubling allreduce (p a power of two): log2 p messages of the whole buffer;
    // - ring allgather: p - 1 messages of one rank's block;
    // - binomial reduce: every rank but the root sends its buffer once;
    // - binomial bcast: the root sends ceil(log2 p) messages, p - 1 in the whole tree.
    let r = run(
        8,
        8,
        "kind = \"allreduce\"\nalgo = \"ring\"\nbytes = 800\niterations = 2",
    );
    assert_eq!(u64s(&r, "sends"), [2 * 14; 8]);
    assert_eq!(u64s(&r, "bytes_sent"), [2 * 2 * 7 * 800 / 8; 8]);
    let r = run(
        8,
        8,
        "kind = \"allreduce\"\nalgo = \"recursive_doubling\"\nbytes = 800",
    );
    assert_eq!(u64s(&r, "bytes_sent"), [3 * 800; 8]);
    let r = run(8, 6, "kind = \"allgather\"\nalgo = \"ring\"\nbytes = 100");
    assert_eq!(u64s(&r, "bytes_sent"), [5 * 100; 6]);
    let r = run(8, 6, "kind = \"reduce\"\nroot = 2\nbytes = 1000");
    assert_eq!(u64s(&r, "bytes_sent"), [1000, 1000, 0, 1000, 1000, 1000]);
    let r = run(
        8,
        6,
        "kind = \"bcast\"\nalgo = \"binomial_tree\"\nbytes = 1000",
    );
    let sends = u64s(&r, "sends");
    assert_eq!(sends[0], 3);
    assert_eq!(sends.iter().sum::<u64>(), 5);
    assert_eq!(u64s(&r, "bytes_sent")[0], 3 * 1000);
}
