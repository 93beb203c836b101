//! Built-in workloads run end to end, checked against hand calculations through the rank table.

use tracewatt_core::time::serialization_ps;
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

fn makespan_ps(r: &Results) -> u64 {
    (r.summary["makespan_s"].as_f64().expect("makespan") * 1e12).round() as u64
}

const US: u64 = 1_000_000;

#[test]
fn paced_stream_between_two_nodes_matches_hand_calculation() {
    // 1,500-byte frames at 1,000 Mb/s: one every 12 us; frame k at 12k us while below 1 ms:
    // k = 0..=83, 84 frames. ACK after every 2nd frame: 42 ACKs of 64 bytes.
    let r = run(
        2,
        2,
        "kind = \"paced_stream\"\nrate_mbps = 1000\nduration_s = 0.001",
    );
    assert_eq!(u64s(&r, "sends"), [84, 42]);
    assert_eq!(u64s(&r, "bytes_sent"), [84 * 1500, 42 * 64]);
    // Sleeping until a send time is not compute.
    assert_eq!(f64s(&r, "compute_s"), [0.0, 0.0]);
    // The last frame leaves the sender's MPI layer at 996 us + 1 us of send overhead (the
    // overheads of earlier frames do not push it back: 83 x 13 us would be 1,079 us). One
    // packet crosses two links cut-through: serialisation + 2 x 50 ns + 100 ns. The receiver
    // completes it after 1 us of receive overhead and sends the 42nd ACK (1 us), which reaches
    // the sender the same way; its receive completes 1 us later and the run ends.
    let one_way = |bytes| serialization_ps(bytes, 10_000_000_000) + 2 * 50_000 + 100_000;
    let frame_arrives = 996 * US + US + one_way(1500);
    let ack_arrives = frame_arrives + US + US + one_way(64);
    assert_eq!(makespan_ps(&r), ack_arrives + US);
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
