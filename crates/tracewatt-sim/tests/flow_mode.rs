//! `[machine] network = "flow"` through the whole simulator, against hand calculations.
//!
//! The machine of every case: 1000-byte packets, 8 Gb/s links (1 ns a byte), 50 ns links,
//! 100 ns switches, cut-through, no MPI overheads. A message of `B` bytes alone between two
//! nodes of one switch crosses two links: the last of its `n` packets starts on the first link
//! at `B - r` ns (`r` its bytes) and its tail is in at `B` ns + 2 x 50 ns + 100 ns, so one way
//! takes `B + 200` ns in either model.

use tracewatt_sim::{
    simulate, simulate_with, Column, Config, Format, Results, FLOW_SEGMENT_PACKETS,
    FLOW_SHORT_UNIT_PACKETS, FLOW_TRAIN_SEGMENTS,
};
use tracewatt_workload::Op;

mod script;
use script::{recv, send, Script};

const NS: u64 = 1_000;
/// One byte at 8 Gb/s.
const BYTE_PS: u64 = NS;
/// Two links and one switch.
const PATH_PS: u64 = 2 * 50 * NS + 100 * NS;
/// The wake of a sleeping link direction in the EEE cases.
const WAKE_PS: u64 = 500 * NS;
/// What the sender computes before its first message: every link direction idle, so asleep.
const IDLE_PS: u64 = 10_000 * NS;

/// One switch with `nodes` nodes, the job's ranks on nodes 0, 1, ... in order; `extra` goes at
/// the end of `[machine]` (tables after it are allowed).
fn config(network: &str, nodes: u32, extra: &str) -> Config {
    let text = format!(
        r#"
seed = 7
[machine]
packet_bytes = 1000
buffer_bytes = 8000
switch_latency_ns = 100
network = "{network}"
[machine.topology]
kind = "single_switch"
nodes = {nodes}
[machine.links]
bandwidth_gbps = 8.0
latency_ns = 50
[mpi]
send_overhead_ns = 0
recv_overhead_ns = 0
eager_limit_bytes = 100000
[[jobs]]
ranks = {nodes}
[jobs.workload]
kind = "pingpong"
{extra}
"#
    );
    Config::parse(&text, Format::Toml, "flow.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// Every link direction asleep as soon as it is idle, each direction on its own, waking in
/// [`WAKE_PS`] with no sleep transition.
const EEE: &str = "[power]\ncontrol = \"independent\"\n[power.links]\nidle_timeout_us = 0.0\n\
                   sleep_time_us = 0.0\nwake_time_us = 0.5";

fn run(config: &Config, programs: Vec<Vec<Op>>) -> Results {
    simulate_with(
        config,
        "flow.toml",
        vec![Box::new(Script(programs))],
        &mut |_| true,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn makespan_ps(r: &Results) -> u64 {
    (r.summary["makespan_s"].as_f64().unwrap() * 1e12).round() as u64
}

/// After [`IDLE_PS`], rank 0 sends `bytes` to rank 1, which sends them back, `rounds` times:
/// one message at a time.
fn ping_pong(rounds: usize, bytes: u64) -> Vec<Vec<Op>> {
    let ping = (0..rounds).flat_map(|_| [send(1, bytes), recv(1, bytes)]);
    let pong = (0..rounds).flat_map(|_| [recv(0, bytes), send(0, bytes)]);
    vec![
        std::iter::once(Op::Compute { ps: IDLE_PS })
            .chain(ping)
            .collect(),
        pong.collect(),
    ]
}

#[test]
fn a_ping_pong_takes_the_packet_models_time_always_on_and_with_eee() {
    let (rounds, bytes) = (3u64, 3500u64);
    let one_way = bytes * BYTE_PS + PATH_PS;
    // With EEE every direction sleeps between messages: each message's path (the sender's link
    // up, the receiver's link down) wakes twice, one wake after the other as the head goes.
    for (power, want) in [
        ("", IDLE_PS + 2 * rounds * one_way),
        (EEE, IDLE_PS + 2 * rounds * (one_way + 2 * WAKE_PS)),
    ] {
        for network in ["packet", "flow"] {
            let r = run(
                &config(network, 2, power),
                ping_pong(rounds as usize, bytes),
            );
            assert_eq!(makespan_ps(&r), want, "{network} {power:?}");
        }
    }
}

#[test]
fn a_message_across_two_sleeping_links_pays_two_wakes() {
    let bytes = 2000;
    let one = || {
        vec![
            vec![Op::Compute { ps: IDLE_PS }, send(1, bytes)],
            vec![recv(0, bytes)],
        ]
    };
    let awake = run(&config("flow", 2, ""), one());
    let asleep = run(&config("flow", 2, EEE), one());
    let alone = IDLE_PS + bytes * BYTE_PS + PATH_PS;
    assert_eq!(makespan_ps(&awake), alone);
    assert_eq!(makespan_ps(&asleep), alone + 2 * WAKE_PS);
    // Each of the two link directions woke once.
    let wakes = |r: &Results| r.summary["links"]["wakes"].as_u64().unwrap();
    assert_eq!((wakes(&awake), wakes(&asleep)), (0, 2));
}

#[test]
fn two_messages_into_one_node_share_its_link_at_half_the_bandwidth_each() {
    // Nodes 0 and 1 send B bytes each (eagerly: below the eager limit) to node 2 at t = 0. Both
    // heads reach the switch at 150 ns and hold the link to node 2 together: 4 Gb/s each, 2 ns a
    // byte, both done at 150 ns + 2 B ns and delivered the last link's 50 ns later.
    let bytes = 90_000u64;
    let r = run(
        &config("flow", 3, ""),
        vec![
            vec![send(2, bytes)],
            vec![send(2, bytes)],
            vec![recv(0, bytes), recv(1, bytes)],
        ],
    );
    assert_eq!(makespan_ps(&r), PATH_PS + 2 * bytes * BYTE_PS);
}

#[test]
fn a_flow_run_says_so_and_counts_its_hops_from_the_path() {
    let one = || {
        vec![
            vec![Op::Compute { ps: IDLE_PS }, send(1, 1000)],
            vec![recv(0, 1000)],
        ]
    };
    let run_on = |network: &str| {
        let mut c = config(network, 2, EEE);
        c.output.messages = true;
        run(&c, one())
    };
    let r = run_on("flow");
    assert_eq!(r.summary["network"]["model"], "flow");
    assert_eq!(r.summary["config"]["machine"]["network"], "flow");
    let column = |table: &str, name: &str| {
        let t = r.table(table).expect(table);
        t.columns.iter().find(|c| c.0 == name).unwrap().1.clone()
    };
    // Node 0's link up, node 1's link down.
    assert_eq!(column("messages", "hops_node"), Column::U64(vec![2]));
    // Both directions were idle since the start, for 10.5 us (node 0's, until its wake ends)
    // and 11.15 us (node 1's): the message could meet a wake on both at the thresholds up to
    // 10 us, none at 17 us (the default thresholds are 1, 5, 10, 17, ... us).
    assert_eq!(
        column("message_wake_hops", "threshold_s"),
        Column::F64(vec![1e-6, 5e-6, 1e-5])
    );
    assert_eq!(
        column("message_wake_hops", "hops"),
        Column::U64(vec![2, 2, 2])
    );
    // The packet model finds the same.
    let packet = run_on("packet");
    assert_eq!(
        packet.table("message_wake_hops"),
        r.table("message_wake_hops")
    );
    assert_eq!(packet.table("messages"), r.table("messages"));
}

#[test]
fn the_same_flow_config_and_seed_give_identical_results() {
    let text = r#"
seed = 11
[machine]
preset = "bench-dragonfly-1056"
network = "flow"
[[jobs]]
ranks = 64
allocation = "random"
[jobs.workload]
kind = "uniform_random"
messages = 5
"#;
    let c = Config::parse(text, Format::Toml, "t.toml").unwrap();
    let a = simulate(&c, "t.toml", &mut |_| true).unwrap();
    let b = simulate(&c, "t.toml", &mut |_| true).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.summary["network"]["packets"], 64 * 5);
}

#[test]
fn flow_mode_refuses_nic_coalescing() {
    let text = r#"
[machine]
preset = "miwa2014-16node"
network = "flow"
[[jobs]]
ranks = 2
[jobs.workload]
kind = "pingpong"
[power.nic]
coalescing = true
"#;
    let e = Config::parse(text, Format::Toml, "c.toml").unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("c.toml: power.nic.coalescing: "), "{msg}");
    assert!(msg.contains("[power.nic] coalescing"), "{msg}");
    let packet = text.replace("network = \"flow\"", "network = \"packet\"");
    assert!(Config::parse(&packet, Format::Toml, "c.toml").is_ok());
}

/// A ping-pong on the 16-node machine with `machine` (lines of `[machine]`), as parsed.
fn with_machine(machine: &str) -> Result<Config, String> {
    let text = format!(
        "[machine]\npreset = \"miwa2014-16node\"\n{machine}\n[[jobs]]\nranks = 2\n\
         [jobs.workload]\nkind = \"pingpong\"\n"
    );
    Config::parse(&text, Format::Toml, "c.toml").map_err(|e| e.to_string())
}

#[test]
fn an_unknown_network_model_is_an_error_naming_the_field() {
    let msg = with_machine("network = \"fluid\"").unwrap_err();
    assert!(msg.starts_with("c.toml: machine.network: "), "{msg}");
    assert!(msg.contains("packet") && msg.contains("flow"), "{msg}");
}

/// The messages' latencies of `programs` on `c`, in ns, sorted, and the machine as the summary
/// writes it out.
fn latencies_and_machine(mut c: Config, programs: Vec<Vec<Op>>) -> (Vec<u64>, serde_json::Value) {
    c.output.messages = true;
    let r = run(&c, programs);
    let t = r.table("messages").expect("messages");
    let Column::F64(v) = &t.columns.iter().find(|c| c.0 == "latency_s").unwrap().1 else {
        panic!("latency_s is not a float column");
    };
    let mut ns: Vec<u64> = v.iter().map(|s| (s * 1e9).round() as u64).collect();
    ns.sort_unstable();
    (ns, r.summary["config"]["machine"].clone())
}

#[test]
fn the_longest_train_is_a_machine_field_written_out_only_when_set() {
    // Buffers of 8,000 B: messages of up to 4,000 B are short, 8,000 B ones two segments.
    // Ranks 0 and 1 each send 8,000 B to rank 2 at t = 0, and node 2's link takes them:
    // - as trains (of up to 2 segments or more), segment by segment, rank 0's first, from
    //   150 ns, 4,000 ns each: rank 0's message is in at 150 + 3 x 4,000 + 50 = 12,200 ns,
    //   rank 1's at 16,200 ns;
    // - as flows (trains of up to 1 segment, or none), sharing the link at 0.5 B/ns: both in
    //   at 150 + 16,000 + 50 = 16,200 ns;
    // - the packet model alternates the two inputs packet by packet: rank 0's eighth packet
    //   ends at 150 + 15 x 1,000 ns, in at 15,200 ns; so do segments of one packet.
    let programs = || {
        vec![
            vec![send(2, 8000)],
            vec![send(2, 8000)],
            vec![recv(0, 8000), recv(1, 8000)],
        ]
    };
    let latencies_ns = |network: &str, train_segments: u32, segment_packets: u32| {
        let mut c = config(network, 3, "");
        c.machine.flow_train_segments = train_segments;
        c.machine.flow_segment_packets = segment_packets;
        latencies_and_machine(c, programs())
    };
    let defaults = (FLOW_TRAIN_SEGMENTS, FLOW_SEGMENT_PACKETS);
    let (trains, machine) = latencies_ns("flow", defaults.0, defaults.1);
    assert_eq!(trains, [12_200, 16_200]);
    assert!(machine.get("flow_train_segments").is_none(), "{machine}");
    assert!(machine.get("flow_segment_packets").is_none(), "{machine}");
    assert_eq!(latencies_ns("flow", 2, defaults.1).0, trains);
    for k in [0, 1] {
        let (flows, machine) = latencies_ns("flow", k, defaults.1);
        assert_eq!(flows, [16_200, 16_200], "trains of up to {k}");
        assert_eq!(machine["flow_train_segments"], k);
    }
    let (packets, machine) = latencies_ns("flow", defaults.0, 1);
    assert_eq!(packets, [15_200, 16_200]);
    assert_eq!(machine["flow_segment_packets"], 1);
    assert_eq!(latencies_ns("packet", 16, 1).0, [15_200, 16_200]);
}

#[test]
fn a_negative_train_length_is_an_error_naming_the_field() {
    let msg = with_machine("network = \"flow\"\nflow_train_segments = -1").unwrap_err();
    assert_eq!(
        msg,
        "c.toml: machine.flow_train_segments: expected a non-negative integer, got -1"
    );
    let c = with_machine("network = \"flow\"\nflow_train_segments = 4").unwrap();
    assert_eq!(c.machine.flow_train_segments, 4);
}

#[test]
fn a_segment_of_no_packets_is_an_error_naming_the_field() {
    let msg = with_machine("network = \"flow\"\nflow_segment_packets = 0").unwrap_err();
    assert_eq!(
        msg,
        "c.toml: machine.flow_segment_packets: must be at least 1"
    );
    let c = with_machine("network = \"flow\"\nflow_segment_packets = 8").unwrap();
    assert_eq!(c.machine.flow_segment_packets, 8);
}

#[test]
fn the_short_unit_is_a_machine_field_written_out_only_when_set() {
    // The machine of the test above (1,000 B packets, 8,000 B buffers: messages of up to
    // 4,000 B are short). Ranks 0 and 1 each send 4,000 B to rank 2 at t = 0, and node 2's link
    // takes them:
    // - in units of one packet (the default), as the packet model does, alternately: rank 0's
    //   fourth packet ends at 150 + 7 x 1,000 ns, in at 7,200 ns; rank 1's at 8,200 ns;
    // - in units of two packets, two by two: rank 0's second unit ends at 150 + 6,000 ns;
    // - whole (`flow_short_unit_packets = 0`), one after the other, rank 0's first, from
    //   150 ns, 4,000 ns each: in at 150 + 4,000 + 50 = 4,200 ns and 8,200 ns.
    let programs = || {
        vec![
            vec![send(2, 4000)],
            vec![send(2, 4000)],
            vec![recv(0, 4000), recv(1, 4000)],
        ]
    };
    let latencies_ns = |network: &str, units: u32| {
        let mut c = config(network, 3, "");
        c.machine.flow_short_unit_packets = units;
        latencies_and_machine(c, programs())
    };
    let (packets, machine) = latencies_ns("flow", FLOW_SHORT_UNIT_PACKETS);
    assert_eq!(packets, [7_200, 8_200]);
    assert!(
        machine.get("flow_short_unit_packets").is_none(),
        "{machine}"
    );
    assert_eq!(latencies_ns("packet", 0).0, packets);
    assert_eq!(latencies_ns("flow", 2).0, [6_200, 8_200]);
    let (whole, machine) = latencies_ns("flow", 0);
    assert_eq!(whole, [4_200, 8_200]);
    assert_eq!(machine["flow_short_unit_packets"], 0);
    // Units of a whole short message or more are the whole message.
    assert_eq!(latencies_ns("flow", 4).0, whole);
    assert_eq!(latencies_ns("flow", 9).0, whole);
    let c = with_machine("network = \"flow\"\nflow_short_unit_packets = 2").unwrap();
    assert_eq!(c.machine.flow_short_unit_packets, 2);
    let msg = with_machine("network = \"flow\"\nflow_short_unit_packets = -1").unwrap_err();
    assert_eq!(
        msg,
        "c.toml: machine.flow_short_unit_packets: expected a non-negative integer, got -1"
    );
}
