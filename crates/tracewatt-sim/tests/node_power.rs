//! Node-side power through whole simulations: the NIC's interrupt coalescing (delays and
//! energy worked out by hand), and the rank-activity signals a power model observes.

use std::sync::{Arc, Mutex};
use tracewatt_core::time::PS_PER_US as US;
use tracewatt_core::Ps;
use tracewatt_power::{Account, Activity, PowerModel, Signals};
use tracewatt_sim::{simulate_observed, Config, Format, Results};
use tracewatt_workload::generators::Workload;
use tracewatt_workload::{Op, WORLD};

mod script;
use script::{recv, send, Script};

/// Two nodes on one switch, links always on, no MPI overheads; `power` is appended.
fn config(power: &str) -> Config {
    parse(&config_text(power))
}

fn parse(text: &str) -> Config {
    Config::parse(text, Format::Toml, "t.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn config_text(power: &str) -> String {
    format!(
        r#"
[machine]
packet_bytes = 1500
[machine.topology]
kind = "single_switch"
nodes = 2
[machine.links]
bandwidth_gbps = 1.0
latency_ns = 0
[mpi]
send_overhead_ns = 0
recv_overhead_ns = 0
[[jobs]]
ranks = 2
[jobs.workload]
kind = "pingpong"
[power.links]
policy = "always_on"
{power}
"#
    )
}

fn run(config: &Config, programs: Vec<Vec<Op>>, extra: Vec<Box<dyn PowerModel>>) -> Results {
    simulate_observed(
        config,
        "t.toml",
        vec![Box::new(Script(programs))],
        extra,
        &mut |_| true,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn makespan_ps(r: &Results) -> u64 {
    (r.summary["makespan_s"].as_f64().unwrap() * 1e12).round() as u64
}

fn pingpong(n: usize, bytes: u64) -> Vec<Vec<Op>> {
    let a = (0..n)
        .flat_map(|_| [send(1, bytes), recv(1, bytes)])
        .collect();
    let b = (0..n)
        .flat_map(|_| [recv(0, bytes), send(0, bytes)])
        .collect();
    vec![a, b]
}

fn column<'a>(r: &'a Results, table: &str, name: &str) -> &'a tracewatt_sim::Column {
    let t = r.table(table).unwrap_or_else(|| panic!("no {table} table"));
    &t.columns.iter().find(|c| c.0 == name).unwrap().1
}

#[test]
fn coalescing_holds_each_lone_frame_rx_usecs_and_prices_bits_and_interrupts() {
    const N: usize = 10;
    let off = run(&config(""), pingpong(N, 1000), Vec::new());
    // tx_usecs beyond the run: transmit completions never fire alone, so every message waits
    // exactly rx_usecs after its only frame.
    let nic = "[power.nic]\ncoalescing = true\nrx_usecs = 18.0\ntx_usecs = 10000.0";
    let on = run(&config(nic), pingpong(N, 1000), Vec::new());
    assert_eq!(makespan_ps(&on) - makespan_ps(&off), 2 * N as u64 * 18 * US);
    let tracewatt_sim::Column::U64(irq) = column(&on, "nics", "interrupts") else {
        panic!()
    };
    // One receive interrupt per message; the last pong's transmit completion at node 1 is
    // still pending when the run ends.
    assert_eq!(irq, &[N as u64, N as u64]);
    let tracewatt_sim::Column::F64(delay) = column(&on, "nics", "coalescing_delay_s") else {
        panic!()
    };
    assert!((delay[0] - N as f64 * 18e-6).abs() < 1e-15, "{delay:?}");
    // Each node sends and receives N frames of 1,000 bytes.
    let per_node_j = 1.25e-2 * (2 * N * 1000 * 8) as f64 / 1e6 + 1.56e-4 * N as f64;
    let nics_j = on.summary["energy_j"]["nics"].as_f64().unwrap();
    assert!((nics_j - 2.0 * per_node_j).abs() < 1e-12, "{nics_j}");
    // Off, no NIC model, no NIC rows.
    assert!(off.summary["energy_j"].get("nics").is_none());
    assert!(off.table("nics").is_none());
}

#[test]
fn a_message_of_many_frames_waits_for_the_interrupt_after_its_last() {
    // 9,000 bytes = 6 frames of 1,500 back to back (12 us each at 1 Gb/s): the 6th fills the
    // interrupt at once; the message is delivered without waiting.
    let nic = "[power.nic]\ncoalescing = true\ntx_usecs = 10000.0";
    let one_way = |bytes: u64| {
        let programs = vec![vec![send(1, bytes)], vec![recv(0, bytes)]];
        let off = run(&config(""), programs.clone(), Vec::new());
        let on = run(&config(nic), programs, Vec::new());
        makespan_ps(&on) - makespan_ps(&off)
    };
    assert_eq!(one_way(9000), 0);
    // 7 frames: the 7th is alone in its batch and waits rx_usecs (18 us default).
    assert_eq!(one_way(10_500), 18 * US);
}

/// Records every rank-activity signal.
#[derive(Debug)]
struct Recorder(Arc<Mutex<Vec<(u32, Activity, Ps)>>>);

impl PowerModel for Recorder {
    fn signals(&self) -> Signals {
        Signals {
            ranks: true,
            ..Signals::default()
        }
    }
    fn on_rank(&mut self, rank: u32, _node: u32, activity: Activity, at: Ps) {
        self.0.lock().unwrap().push((rank, activity, at));
    }
    fn finish(self: Box<Self>, _end: Ps, _account: &mut Account) {}
}

#[test]
fn ranks_signal_compute_mpi_wait_and_done_at_the_times_they_happen() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut c = config("");
    c.mpi.send_overhead_ns = 1000.0;
    // Rank 0 computes 5 us, sends 1,000 bytes (1 us of overhead; eager, so the send is done
    // once issued), computes 3 us, ends. Rank 1 waits from the start until the message is in.
    let programs = vec![
        vec![
            Op::Compute { ps: 5 * US },
            send(1, 1000),
            Op::Compute { ps: 3 * US },
        ],
        vec![recv(0, 1000)],
    ];
    let r = run(&c, programs, vec![Box::new(Recorder(seen.clone()))]);
    let got = seen.lock().unwrap().clone();
    let rank0: Vec<(Activity, Ps)> = got
        .iter()
        .filter(|e| e.0 == 0)
        .map(|e| (e.1, e.2))
        .collect();
    assert_eq!(
        rank0,
        [
            (Activity::Compute, 0),
            (Activity::Mpi, 5 * US),
            (Activity::Compute, 6 * US),
            (Activity::Done, 9 * US),
        ]
    );
    let rank1: Vec<(Activity, Ps)> = got
        .iter()
        .filter(|e| e.0 == 1)
        .map(|e| (e.1, e.2))
        .collect();
    let end = makespan_ps(&r);
    assert_eq!(
        rank1,
        [
            (
                Activity::Wait {
                    sends_pending: false
                },
                0
            ),
            (Activity::Done, end)
        ]
    );
}

#[test]
fn energy_is_split_by_job_owned_parts_whole_and_shared_parts_by_bytes() {
    // Jobs a (nodes 0, 1) and b (nodes 2, 3) on one switch, links always on (3.44 W per port,
    // 96 W backplane): a sends 1,000 bytes, b 3,000 (two packets of 1,500).
    let text = r#"
[machine]
packet_bytes = 1500
[machine.topology]
kind = "single_switch"
nodes = 4
[machine.links]
bandwidth_gbps = 1.0
latency_ns = 0
[mpi]
send_overhead_ns = 0
recv_overhead_ns = 0
[power.links]
policy = "always_on"
[[jobs]]
name = "a"
ranks = 2
allocation = "list"
node_list = [0, 1]
[jobs.workload]
kind = "pingpong"
[[jobs]]
name = "b"
ranks = 2
allocation = "list"
node_list = [2, 3]
[jobs.workload]
kind = "pingpong"
"#;
    let c = Config::parse(text, Format::Toml, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let one = |bytes| -> Box<dyn Workload> {
        Box::new(Script(vec![vec![send(1, bytes)], vec![recv(0, bytes)]]))
    };
    let r = tracewatt_sim::simulate_with(&c, "t.toml", vec![one(1000), one(3000)], &mut |_| true)
        .unwrap_or_else(|e| panic!("{e}"));
    let t = r.summary["makespan_s"].as_f64().unwrap();
    let tracewatt_sim::Column::Str(owner) = column(&r, "energy", "job") else {
        panic!()
    };
    let tracewatt_sim::Column::Str(kind) = column(&r, "energy", "component") else {
        panic!()
    };
    let tracewatt_sim::Column::F64(energy) = column(&r, "energy", "energy_j") else {
        panic!()
    };
    let owned = |job: &str, component: &str| -> f64 {
        (0..owner.len())
            .filter(|i| owner[*i] == job && (component.is_empty() || kind[*i] == component))
            .map(|i| energy[i])
            .sum()
    };
    // Each job owns the four ports of its two node links (always on: 3.44 W), its nodes and
    // their cores. The backplane is shared: the share matching its four ports' busy time
    // (8 + 24 us of 4 x t) is split 1:3 by bytes.
    for job in ["a", "b"] {
        assert!((owned(job, "link_port") - 4.0 * 3.44 * t).abs() < 1e-12);
    }
    let busy_share_j = 96.0 * t * (32e-6 / (4.0 * t));
    let job_j = |i: usize| r.summary["jobs"][i]["energy_j"].as_f64().unwrap();
    let want_a = owned("a", "") + 0.25 * busy_share_j;
    let want_b = owned("b", "") + 0.75 * busy_share_j;
    assert!(
        (job_j(0) - want_a).abs() < 1e-12,
        "{} vs {want_a}",
        job_j(0)
    );
    assert!(
        (job_j(1) - want_b).abs() < 1e-12,
        "{} vs {want_b}",
        job_j(1)
    );
    let unattributed = r.summary["energy_unattributed_j"].as_f64().unwrap();
    assert!((unattributed - (96.0 * t - busy_share_j)).abs() < 1e-12);
    let total = r.summary["energy_j"]["total"].as_f64().unwrap();
    assert!((job_j(0) + job_j(1) + unattributed - total).abs() < 1e-12);
    // Per job 4 link ports (both ends of two node links), 2 cores, 2 node bases and 2 nodes'
    // DIMMs; the backplane is shared.
    assert_eq!(owner.iter().filter(|j| *j == "a").count(), 10);
    assert_eq!(owner.iter().filter(|j| j.is_empty()).count(), 1);
}

/// Rank 0 computes 100 us and sends 1,000 bytes; rank 1 waits for them.
fn late_message() -> Vec<Vec<Op>> {
    vec![
        vec![Op::Compute { ps: 100 * US }, send(1, 1000)],
        vec![recv(0, 1000)],
    ]
}

fn core_j(r: &Results, rank: usize) -> f64 {
    let tracewatt_sim::Column::F64(e) = column(r, "cores", "energy_j") else {
        panic!()
    };
    e[rank]
}

#[test]
fn a_blocking_wait_past_its_threshold_sleeps_and_pays_its_wake_latency() {
    let spin = run(&config(""), late_message(), Vec::new());
    let wait = "[mpi.wait]\npolicy = \"block\"\nspin_threshold_us = 10.0\n\
                enter_overhead_us = 5.0\nwake_overhead_us = 10.0\ngovernor = \"fixed\"";
    let block = run(&config(wait), late_message(), Vec::new());
    // The message arrives at some time a (the spinning run's end); rank 1 goes on 30 us later
    // (10 us of its own, 20 us to leave C3).
    let a = makespan_ps(&spin);
    assert_eq!(makespan_ps(&block), a + 30 * US);
    let a_s = a as f64 * 1e-12;
    // Spinning, rank 1's core draws 20 W until a, then 1 W (done) until the end (a).
    assert!((core_j(&spin, 1) - 20.0 * a_s).abs() < 1e-12);
    // Blocking: 10 us spinning and 5 us entering at 20 W, 2 W until a, 30 us waking at 20 W.
    let want = 20.0 * 15e-6 + 2.0 * (a_s - 15e-6) + 20.0 * 30e-6;
    assert!(
        (core_j(&block, 1) - want).abs() < 1e-12,
        "{}",
        core_j(&block, 1)
    );
    // Rank 0 computes 100 us (20 W), then is done (1 W) until the end.
    let end_s = makespan_ps(&block) as f64 * 1e-12;
    let want0 = 20.0 * 100e-6 + 1.0 * (end_s - 100e-6);
    assert!(
        (core_j(&block, 0) - want0).abs() < 1e-12,
        "{}",
        core_j(&block, 0)
    );
    // The node base: 90 W per node for the run.
    let base = block.summary["energy_j"]["node_base"].as_f64().unwrap();
    assert!((base - 2.0 * 90.0 * end_s).abs() < 1e-12);
}

#[test]
fn a_wait_shorter_than_the_threshold_or_with_a_send_pending_spins() {
    let spin = run(&config(""), late_message(), Vec::new());
    // 200 us of threshold: the 116 us wait never leaves the spin phase.
    let long = "[mpi.wait]\npolicy = \"mwait\"\nspin_threshold_us = 200.0";
    let r = run(&config(long), late_message(), Vec::new());
    assert_eq!(makespan_ps(&r), makespan_ps(&spin));
    // Rank 1 first starts a rendezvous send (above the eager limit) that rank 0 only receives
    // after its message: the send is pending while rank 1 waits, so it must not sleep.
    let big = 200_000;
    let programs = |with_send: bool| {
        let mut r1 = Vec::new();
        if with_send {
            r1.push(Op::Isend {
                comm: WORLD,
                dst: 0,
                tag: 0,
                bytes: big,
                req: 7,
            });
        }
        r1.push(recv(0, 1000));
        if with_send {
            r1.push(Op::Wait { req: 7 });
        }
        let mut r0 = vec![Op::Compute { ps: 100 * US }, send(1, 1000)];
        if with_send {
            r0.push(recv(1, big));
        }
        vec![r0, r1]
    };
    let short = "[mpi.wait]\npolicy = \"mwait\"\nspin_threshold_us = 1.0";
    let base = run(&config(""), programs(true), Vec::new());
    let r = run(&config(short), programs(true), Vec::new());
    let tracewatt_sim::Column::U64(low) = column(&r, "cores", "low_power_waits") else {
        panic!()
    };
    // Rank 1's waits spin: its send is pending in both. Rank 0, with nothing to send, sleeps
    // through its 1.6 ms wait for the 200 kB and costs the run one 3 us wake (C1's exit).
    assert_eq!(low.as_slice(), [1, 0]);
    assert_eq!(makespan_ps(&r), makespan_ps(&base) + 3 * US);
    let r = run(&config(short), programs(false), Vec::new());
    let spin = run(&config(""), programs(false), Vec::new());
    assert_eq!(makespan_ps(&r), makespan_ps(&spin) + 3 * US);
}

/// [`config`] with 50 us of receive processing per message and `wait` as `[mpi.wait]`.
fn slow_receive_config(wait: &str) -> Config {
    parse(&config_text("").replace(
        "recv_overhead_ns = 0",
        &format!("recv_overhead_ns = 50000\n[mpi.wait]\n{wait}"),
    ))
}

#[test]
fn a_wait_ends_when_its_message_comes_and_the_receive_is_worked_after_any_wake() {
    // Rank 1's message arrives at some a in (100, 120) us (100 us of compute, then 1,000 B
    // over two 1 Gb/s hops); its receive takes 50 us of processing after that.
    let spin = run(&slow_receive_config(""), late_message(), Vec::new());
    let end = makespan_ps(&spin);
    let a = end - 50 * US;
    assert!((100 * US..120 * US).contains(&a), "{a}");
    let f = |r: &Results, name: &str| match column(r, "cores", name) {
        tracewatt_sim::Column::F64(v) => v[1],
        other => panic!("{other:?}"),
    };
    let secs = |ps: Ps| ps as f64 * 1e-12;
    assert!((f(&spin, "spin_s") - secs(a)).abs() < 1e-15);
    assert!((f(&spin, "recv_s") - 50e-6).abs() < 1e-15);
    // A 130 us threshold: the message comes while the core still polls (a < 130 us), so it
    // never sleeps, though the receive completes after the threshold (a + 50 us > 130 us).
    let fixed = "policy = \"block\"\ngovernor = \"fixed\"\nenter_overhead_us = 5.0\n\
                 wake_overhead_us = 10.0";
    let polled = run(
        &slow_receive_config(&format!("{fixed}\nspin_threshold_us = 130.0")),
        late_message(),
        Vec::new(),
    );
    assert_eq!(makespan_ps(&polled), end);
    assert_eq!(u64s(&polled, "cores", "low_power_waits"), [0, 0]);
    assert!((f(&polled, "spin_s") - secs(a)).abs() < 1e-15);
    // A 50 us threshold: 50 us polling, 5 us entering, C3 until a, 10 us + C3's 20 us exit
    // waking, then the 50 us of processing, at 20 W but in C3 (2 W).
    let slept = run(
        &slow_receive_config(&format!("{fixed}\nspin_threshold_us = 50.0")),
        late_message(),
        Vec::new(),
    );
    assert_eq!(makespan_ps(&slept), end + 30 * US);
    assert_eq!(u64s(&slept, "cores", "c3_waits"), [0, 1]);
    assert!((f(&slept, "spin_s") - 50e-6).abs() < 1e-15);
    assert!((f(&slept, "block_s") - secs(a - 55 * US)).abs() < 1e-15);
    assert!((f(&slept, "transition_s") - 35e-6).abs() < 1e-15);
    assert!((f(&slept, "recv_s") - 50e-6).abs() < 1e-15);
    let want = 20.0 * (50e-6 + 35e-6 + 50e-6) + 2.0 * secs(a - 55 * US);
    assert!(
        (core_j(&slept, 1) - want).abs() < 1e-12,
        "{}",
        core_j(&slept, 1)
    );
}

/// Two ranks on one node (their messages go through memory: 1 us latency, 1,000 B in 1 us at
/// 8 Gb/s), no MPI overheads; `wait` is the `[mpi.wait]` table's body.
fn local_config(wait: &str) -> Config {
    let text = format!(
        r#"
[machine]
ranks_per_node = 2
intra_node_latency_ns = 1000
intra_node_bandwidth_gbps = 8.0
[machine.topology]
kind = "single_switch"
nodes = 2
[machine.links]
bandwidth_gbps = 1.0
latency_ns = 0
[mpi]
send_overhead_ns = 0
recv_overhead_ns = 0
[mpi.wait]
{wait}
[[jobs]]
ranks = 2
[jobs.workload]
kind = "pingpong"
"#
    );
    Config::parse(&text, Format::Toml, "t.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn f64s<'a>(r: &'a Results, table: &str, name: &str) -> &'a [f64] {
    let tracewatt_sim::Column::F64(v) = column(r, table, name) else {
        panic!("{table}.{name} is not float")
    };
    v
}

#[test]
fn a_blocking_ping_pong_on_one_node_pays_each_message_its_notice_and_wake() {
    const N: u64 = 10;
    let spin = run(&local_config(""), pingpong(N as usize, 1000), Vec::new());
    // Each message takes m = 2 us; N round trips while spinning take 2 N m.
    assert_eq!(makespan_ps(&spin), 2 * N * 2 * US);
    let wait = "policy = \"block\"\nspin_threshold_us = 0.0\nenter_overhead_us = 2.0\n\
                wake_overhead_us = 10.0\nnotify_overhead_us = 1.0\ngovernor = \"fixed\"";
    let block = run(&local_config(wait), pingpong(N as usize, 1000), Vec::new());
    // Every message: the sender writes the pipe's byte (n = 1 us) before it goes on, the
    // receiver has long been asleep (its 2 us entry ended before the message came at 3 us)
    // and wakes w = 10 + 20 us (C3) after it: a round trip takes 2 (n + m + w) = 66 us.
    assert_eq!(makespan_ps(&block), 2 * N * (1 + 2 + 30) * US);
    let tracewatt_sim::Column::U64(low) = column(&block, "cores", "low_power_waits") else {
        panic!()
    };
    assert_eq!(low.as_slice(), [N, N]);
    let delay = f64s(&block, "cores", "wake_delay_s");
    assert!(
        delay.iter().all(|d| (d - N as f64 * 30e-6).abs() < 1e-15),
        "{delay:?}"
    );
    // Low power: from the end of the entry to the message's arrival, less the 2 us the core
    // spends copying it in (rank 0's waits: 33 us; rank 1's first wait starts at 0, its
    // entry ends at 2 us and the copy fills the 1 us left before the arrival at 3 us).
    let block_s = f64s(&block, "cores", "block_s");
    let (low0_us, low1_us) = (31.0 * N as f64, 31.0 * (N - 1) as f64);
    assert!((block_s[0] - low0_us * 1e-6).abs() < 1e-15, "{block_s:?}");
    assert!((block_s[1] - low1_us * 1e-6).abs() < 1e-15, "{block_s:?}");
    // Energy: 2 W in low power, 20 W otherwise; rank 1 ends 32 us early (its last send) and
    // idles at 1 W.
    let end_us = 66.0 * N as f64;
    let want0 = (20.0 * (end_us - low0_us) + 2.0 * low0_us) * 1e-6;
    let want1 = (20.0 * (end_us - 32.0 - low1_us) + 2.0 * low1_us + 32.0) * 1e-6;
    assert!(
        (core_j(&block, 0) - want0).abs() < 1e-12,
        "{}",
        core_j(&block, 0)
    );
    assert!(
        (core_j(&block, 1) - want1).abs() < 1e-12,
        "{}",
        core_j(&block, 1)
    );
}

#[test]
fn a_message_that_comes_while_the_core_enters_ends_the_wait_with_the_entry() {
    // Rank 0 computes 100 us, then sends (its notice takes 1 us): the message reaches rank 1
    // at 103 us, while its core, after 10 us of spinning, is still in its 100 us entry.
    let programs = || {
        vec![
            vec![Op::Compute { ps: 100 * US }, send(1, 1000)],
            vec![recv(0, 1000)],
        ]
    };
    let wait = "policy = \"block\"\nspin_threshold_us = 10.0\nenter_overhead_us = 100.0\n\
                wake_overhead_us = 10.0\nnotify_overhead_us = 1.0\ngovernor = \"fixed\"";
    let r = run(&local_config(wait), programs(), Vec::new());
    // select() finds the byte and returns when the entry ends, at 110 us; no C-state to leave.
    assert_eq!(makespan_ps(&r), 110 * US);
    let tracewatt_sim::Column::U64(low) = column(&r, "cores", "low_power_waits") else {
        panic!()
    };
    assert_eq!(low.as_slice(), [0, 0]);
    assert!(f64s(&r, "cores", "block_s")[1].abs() < 1e-18);
    // Rank 1's core is active the whole 110 us (10 spinning, 100 entering).
    assert!(
        (core_j(&r, 1) - 20.0 * 110e-6).abs() < 1e-12,
        "{}",
        core_j(&r, 1)
    );
}

fn u64s<'a>(r: &'a Results, table: &str, name: &str) -> &'a [u64] {
    let tracewatt_sim::Column::U64(v) = column(r, table, name) else {
        panic!("{table}.{name} is not an integer")
    };
    v
}

#[test]
fn the_menu_governor_puts_long_regular_waits_in_c6_and_pays_its_exit_on_every_wake() {
    // Two ranks on one node play ping-pong with T = 1,000 us of compute before each message.
    const N: u64 = 5;
    let t_us = 1000;
    let programs = || {
        let a = (0..N)
            .flat_map(|_| [Op::Compute { ps: t_us * US }, send(1, 1000), recv(1, 1000)])
            .collect();
        let b = (0..N)
            .flat_map(|_| [recv(0, 1000), Op::Compute { ps: t_us * US }, send(0, 1000)])
            .collect();
        vec![a, b]
    };
    // Spinning, a leg is T + m (m = 2 us: 1 us latency, 1 us copy).
    let spin = run(&local_config(""), programs(), Vec::new());
    assert_eq!(makespan_ps(&spin), 2 * N * (t_us + 2) * US);
    let wait = |governor: &str| {
        format!(
            "policy = \"block\"\nspin_threshold_us = 0.0\nenter_overhead_us = 2.0\n\
             wake_overhead_us = 10.0\nnotify_overhead_us = 1.0\ngovernor = \"{governor}\""
        )
    };
    // Blocking, a leg is T + n (1 us notice) + m + w (10 us) + the C-state's exit. Every idle
    // period lasts over 1,000 us: with no history the governor has no typical interval (no
    // timer: C6), then the periods' mean is over C6's 800 us target residency, or they are too
    // few and too spread (1,001 us for rank 1's first, 1,212 us later) to have one: C6 always.
    let menu = run(&local_config(&wait("menu")), programs(), Vec::new());
    assert_eq!(makespan_ps(&menu), 2 * N * (t_us + 1 + 2 + 10 + 200) * US);
    assert_eq!(u64s(&menu, "cores", "c6_waits"), [N, N]);
    for s in ["c1_s", "c1e_s", "c3_s"] {
        assert!(f64s(&menu, "cores", s).iter().all(|&v| v == 0.0), "{s}");
    }
    assert_eq!(
        f64s(&menu, "cores", "c6_s"),
        f64s(&menu, "cores", "block_s")
    );
    let delay = f64s(&menu, "cores", "wake_delay_s");
    assert!(delay.iter().all(|d| (d - N as f64 * 210e-6).abs() < 1e-15));
    // The fixed governor leaves C3 in 20 us: the menu governor costs 2 N x 180 us more.
    let fixed = run(&local_config(&wait("fixed")), programs(), Vec::new());
    assert_eq!(makespan_ps(&fixed), 2 * N * (t_us + 1 + 2 + 10 + 20) * US);
    assert_eq!(u64s(&fixed, "cores", "c3_waits"), [N, N]);
    assert_eq!(makespan_ps(&menu) - makespan_ps(&fixed), 2 * N * 180 * US);
    // Rank 0's waits span a round trip (2 L, L = 1,213 us) less its own compute, notice and
    // wake (T + 1 + 210): 1,215 us, of which 2 us entering and 2 us copying the reply in (its
    // whole m) at active power, 1,211 us in C6 at 1 W. It never idles: 20 W otherwise.
    let c6_us = N as f64 * 1211.0;
    assert!((f64s(&menu, "cores", "c6_s")[0] - c6_us * 1e-6).abs() < 1e-15);
    let end_us = makespan_ps(&menu) as f64 * 1e-6;
    let want = (20.0 * (end_us - c6_us) + 1.0 * c6_us) * 1e-6;
    assert!(
        (core_j(&menu, 0) - want).abs() < 1e-12,
        "{}",
        core_j(&menu, 0)
    );
}

#[test]
fn the_menu_governor_puts_short_regular_waits_in_c1() {
    // Rank 0 sends rank 1 a message every 25 us (24 us of compute, 1 us notice); each arrives
    // 2 us after it leaves: at a_k = 25 k + 2 us. Rank 1 enters (2 us) at once and leaves in
    // 10 us plus the C-state's exit.
    const N: u64 = 20;
    let programs = vec![
        (0..N)
            .flat_map(|_| [Op::Compute { ps: 24 * US }, send(1, 1000)])
            .collect(),
        (0..N).map(|_| recv(0, 1000)).collect(),
    ];
    let wait = "policy = \"block\"\nspin_threshold_us = 0.0\nenter_overhead_us = 2.0\n\
                wake_overhead_us = 10.0\nnotify_overhead_us = 1.0";
    let r = run(&local_config(wait), programs, Vec::new());
    // Wait 1: [0, 27), idle 25 us, no history: C6; rank 1 goes on at 27 + 210 = 237, when
    // messages 2-9 are already there. Wait 10: idle [239, 252) = 13 us; history {25}: typical
    // 25 us, C1E (target 20 us); goes on at 272. Wait 11: idle [274, 277) = 3 us; {25, 13}:
    // typical 19 us, C1; goes on at 290. From wait 12 on, idle [25 k - 8, 25 k + 2) = 10 us and
    // the history's variance stays under 400 us^2 with a mean under 20 us: C1, going on at
    // a_k + 13. The last message comes at 502 us.
    assert_eq!(u64s(&r, "cores", "c6_waits")[1], 1);
    assert_eq!(u64s(&r, "cores", "c1e_waits")[1], 1);
    assert_eq!(u64s(&r, "cores", "c1_waits")[1], N - 10);
    assert_eq!(u64s(&r, "cores", "c3_waits")[1], 0);
    assert_eq!(makespan_ps(&r), (25 * N + 2 + 13) * US);
    let delay = f64s(&r, "cores", "wake_delay_s")[1];
    let want = (210.0 + 20.0 + 13.0 * (N - 10) as f64) * 1e-6;
    assert!((delay - want).abs() < 1e-15, "{delay}");
}

#[test]
fn coalescing_and_mwait_under_contention_deliver_every_message_deterministically() {
    // 32 ranks of uniform random traffic (8 messages of 5 kB each: 4 packets) on a dragonfly,
    // every NIC coalescing, every wait two-phase: nothing may be lost or reordered by chance.
    let text = r#"
seed = 3
[machine]
packet_bytes = 1500
[machine.topology]
kind = "dragonfly"
groups = 5
routers_per_group = 2
nodes_per_router = 4
global_links_per_router = 2
[machine.links]
bandwidth_gbps = 1.0
latency_ns = 100
[mpi.wait]
policy = "mwait"
spin_threshold_us = 2.0
[power.nic]
coalescing = true
[[jobs]]
ranks = 32
[jobs.workload]
kind = "uniform_random"
messages = 8
bytes = 5000
interval_us = 3.0
"#;
    let c = Config::parse(text, Format::Toml, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let a = tracewatt_sim::simulate(&c, "t.toml", &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    let b = tracewatt_sim::simulate(&c, "t.toml", &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a, b);
    assert_eq!(a.summary["messages"]["count"], 32 * 8);
    assert_eq!(a.summary["messages"]["bytes"], 32 * 8 * 5000);
    let tracewatt_sim::Column::U64(delivered) = column(&a, "nics", "messages") else {
        panic!()
    };
    // Every message crossed the network (one rank per node) and was handed over by a NIC.
    assert_eq!(delivered.iter().sum::<u64>(), 32 * 8);
}

/// One rank computing 100 us on node 0 of two (node 1 idle), 4 channels x 2 DIMMs of 4 GiB at
/// 0.9 W; `memory` and `dimms` are appended.
fn dimm_run(memory: &str, dimms: &str) -> Results {
    let text = format!(
        r#"
[machine]
[machine.topology]
kind = "single_switch"
nodes = 2
[machine.links]
bandwidth_gbps = 1.0
latency_ns = 0
[[jobs]]
ranks = 1
allocation = "list"
node_list = [0]
{memory}
[jobs.workload]
kind = "pingpong"
[power.dimms]
{dimms}
"#
    );
    let c = Config::parse(&text, Format::Toml, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    simulate_observed(
        &c,
        "t.toml",
        vec![Box::new(Script(vec![vec![Op::Compute { ps: 100 * US }]]))],
        Vec::new(),
        &mut |_| true,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn dimm_column(r: &Results, name: &str) -> Vec<f64> {
    match column(r, "dimms", name) {
        tracewatt_sim::Column::F64(v) => v.clone(),
        tracewatt_sim::Column::U64(v) => v.iter().map(|x| *x as f64).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bandwidth_preserving_halves_standby_power_while_the_job_fits_the_first_dimms() {
    let on = dimm_run("memory_gib = 6.0", "policy = \"always_on\"");
    let bp = dimm_run("memory_gib = 6.0", "policy = \"bandwidth_preserving\"");
    assert_eq!(makespan_ps(&bp), 100 * US);
    // Always on: 8 DIMMs x 0.9 W x 100 us per node; preserving: the 4 first DIMMs only (6 GiB
    // leaves 10 GiB free in the first 16, above the 4 GiB online threshold).
    let e_on = dimm_column(&on, "energy_j");
    let e_bp = dimm_column(&bp, "energy_j");
    assert!((e_on[0] - 8.0 * 0.9 * 100e-6).abs() < 1e-15);
    assert!((e_bp[0] - 4.0 * 0.9 * 100e-6).abs() < 1e-15);
    assert!(
        (e_bp[1] - 4.0 * 0.9 * 100e-6).abs() < 1e-15,
        "the idle node too"
    );
    assert!(dimm_column(&bp, "channels_lost_s")
        .iter()
        .all(|s| *s == 0.0));
    assert!(
        matches!(column(&bp, "dimms", "transitions"), tracewatt_sim::Column::U64(t) if t == &[0, 0])
    );
}

#[test]
fn the_other_dimms_come_on_at_the_online_threshold_and_cost_their_transition() {
    // 6 GiB, then 13 GiB from 50 us: 3 GiB free in the first DIMMs (<= 4): all 8 come on at
    // 50 us, and the rank, computing then, loses 10 us.
    let memory =
        "[[jobs.memory]]\nat_s = 0.0\ngib = 6.0\n[[jobs.memory]]\nat_s = 50e-6\ngib = 13.0";
    let bp = dimm_run(
        memory,
        "policy = \"bandwidth_preserving\"\ntransition_s = 10e-6",
    );
    assert_eq!(makespan_ps(&bp), 110 * US);
    let e = dimm_column(&bp, "energy_j");
    // 4 DIMMs for 50 us, 8 for the 60 us until the job ends with the run.
    assert!(
        (e[0] - 0.9 * (4.0 * 50e-6 + 8.0 * 60e-6)).abs() < 1e-15,
        "{e:?}"
    );
    let tracewatt_sim::Column::U64(transitions) = column(&bp, "dimms", "transitions") else {
        panic!()
    };
    assert_eq!(transitions[0], 1);
    // The rank computed 100 us and was held 10 us after; its core was busy (computing) for both.
    let f = |table: &str, name: &str| match column(&bp, table, name) {
        tracewatt_sim::Column::F64(v) => v[0],
        other => panic!("{other:?}"),
    };
    assert!((f("ranks", "compute_s") - 100e-6).abs() < 1e-15);
    assert!((f("ranks", "held_s") - 10e-6).abs() < 1e-15);
    assert!((f("cores", "compute_s") - 110e-6).abs() < 1e-15);
    // Ideal: ceil(6 / 4) = 2 DIMMs, then ceil(13 / 4) = 4: two channels lost for 50 us.
    let ideal = dimm_run(memory, "policy = \"ideal\"");
    let e = dimm_column(&ideal, "energy_j");
    assert!(
        (e[0] - 0.9 * (2.0 * 50e-6 + 4.0 * 50e-6)).abs() < 1e-15,
        "{e:?}"
    );
    let lost = dimm_column(&ideal, "channels_lost_s");
    assert!((lost[0] - 2.0 * 50e-6).abs() < 1e-15, "{lost:?}");
    assert!((dimm_column(&ideal, "fewer_channels_s")[0] - 50e-6).abs() < 1e-15);
}

#[test]
fn ideal_dimms_slow_compute_by_the_share_of_channels_they_leave_off() {
    // 6 GiB: 2 DIMMs of 4 GiB on, 2 of 4 channels off; a slowdown of 0.5 per channel share
    // makes the 100 us compute take 100 x (1 + 0.5 x 2 / 4) = 125 us.
    let r = dimm_run(
        "memory_gib = 6.0",
        "policy = \"ideal\"\nbandwidth_slowdown = 0.5",
    );
    assert_eq!(makespan_ps(&r), 125 * US);
    // Without the factor, losing channels costs no time.
    let r = dimm_run("memory_gib = 6.0", "policy = \"ideal\"");
    assert_eq!(makespan_ps(&r), 100 * US);
}

#[test]
fn a_core_copying_a_message_in_works_instead_of_sleeping() {
    // Two ranks on one node; rank 0 computes 10 us and sends 1 MB, copied through memory at
    // 80 Gb/s in 100 us after 300 ns: [10, 110.3) us. Rank 1 waits in mwait after 1 us of spin
    // and wakes in 3 us (C1's exit): spin [0, 1), low power [1, 110.3) less the copy, active
    // while copying, waking [110.3, 113.3).
    let text = r#"
[machine]
ranks_per_node = 2
[machine.topology]
kind = "single_switch"
nodes = 2
[machine.links]
bandwidth_gbps = 1.0
latency_ns = 0
[mpi]
send_overhead_ns = 0
recv_overhead_ns = 0
eager_limit_bytes = 2000000
[mpi.wait]
policy = "mwait"
spin_threshold_us = 1.0
enter_overhead_us = 0.0
wake_overhead_us = 0.0
[[jobs]]
ranks = 2
[jobs.workload]
kind = "pingpong"
"#;
    let c = Config::parse(text, Format::Toml, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let programs = vec![
        vec![Op::Compute { ps: 10 * US }, send(1, 1_000_000)],
        vec![recv(0, 1_000_000)],
    ];
    let r = run(&c, programs, Vec::new());
    assert_eq!(makespan_ps(&r), 113_300_000);
    let col = |name: &str| match column(&r, "cores", name) {
        tracewatt_sim::Column::F64(v) => v[1],
        other => panic!("{other:?}"),
    };
    assert!((col("spin_s") - 1e-6).abs() < 1e-15);
    assert!((col("mwait_s") - 9e-6).abs() < 1e-15, "{}", col("mwait_s"));
    assert!((col("copy_s") - 100.3e-6).abs() < 1e-15);
    assert!((col("transition_s") - 3e-6).abs() < 1e-15);
    // 20 W spinning and working, 5 W in mwait.
    let want = 20.0 * 1e-6 + 5.0 * 9e-6 + 20.0 * (100.3e-6 + 3e-6);
    assert!((core_j(&r, 1) - want).abs() < 1e-12, "{}", core_j(&r, 1));
}
