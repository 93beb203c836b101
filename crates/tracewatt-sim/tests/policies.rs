//! The link policies end to end on `examples/pingpong.toml`: ping-pong rounds every 1,000 us,
//! so the 600 us timeout of the measured switch sleeps and wakes in every gap.

use tracewatt_sim::{simulate, Config, Format, Results};

/// The example with every link under `policy`.
fn run(policy: &str) -> Results {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/pingpong.toml");
    let text = std::fs::read_to_string(path).expect("the example");
    let text = format!("{text}\n[power.links]\npolicy = \"{policy}\"\n");
    let config =
        Config::parse(&text, Format::Toml, "pingpong.toml").unwrap_or_else(|e| panic!("{e}"));
    simulate(&config, "pingpong.toml", &mut |_| true).unwrap_or_else(|e| panic!("{e}"))
}

/// A summary value in seconds, in whole picoseconds (the simulator's unit).
fn ps(r: &Results, section: &str, key: &str) -> u64 {
    let s = if section.is_empty() {
        &r.summary[key]
    } else {
        &r.summary[section][key]
    };
    (s.as_f64().unwrap() * 1e12).round() as u64
}

fn link_energy_j(r: &Results) -> f64 {
    let e = &r.summary["energy_j"];
    e["switch_ports"].as_f64().unwrap() + e["nic_ports"].as_f64().unwrap()
}

#[test]
fn the_oracle_keeps_always_ons_makespan_and_spends_no_more_than_the_timeout() {
    let (on, timeout, oracle) = (run("always_on"), run("timeout"), run("oracle"));
    // The oracle wakes every link in time: the run is always-on's to the picosecond.
    assert_eq!(ps(&oracle, "", "makespan_s"), ps(&on, "", "makespan_s"));
    assert_eq!(ps(&oracle, "links", "wake_delay_s"), 0);
    assert!(link_energy_j(&oracle) <= link_energy_j(&timeout));
    assert!(link_energy_j(&oracle) < link_energy_j(&on));
}

/// Two ranks, one a node on one switch, in a 3-D halo exchange (each exchanges with the other
/// along x, with itself along y and z) followed by 1,000 us of compute, 10 iterations.
fn halo(policy: &str) -> Results {
    let text = format!(
        "seed = 1\n[machine]\nranks_per_node = 1\n[machine.topology]\nkind = \"single_switch\"\n\
         nodes = 2\n[machine.links]\nbandwidth_gbps = 10.0\n[[jobs]]\nname = \"halo\"\n\
         ranks = 2\n[jobs.workload]\nkind = \"near_neighbor\"\niterations = 10\n\
         compute_us = 1000.0\n[power.links]\npolicy = \"{policy}\"\n"
    );
    let config = Config::parse(&text, Format::Toml, "halo.toml").unwrap_or_else(|e| panic!("{e}"));
    simulate(&config, "halo.toml", &mut |_| true).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn predictive_learns_a_halo_loop_and_wakes_each_node_link_just_in_time() {
    let (on, predictive) = (halo("always_on"), halo("predictive"));
    // Each iteration is the same calls, then the compute. The context of an iteration's last
    // 3 calls is first followed by the next iteration's first call (after the 1,000 us gap) at
    // iteration 2's start and again at iteration 3's: from iteration 3's compute on each rank
    // forecasts its next call. Each node's (paired) link sleeps in the gaps after iterations
    // 3 to 9 and wakes in time for the call, whose traffic comes after it: 7 wakes per node,
    // no delay, always-on's makespan; the gap after iteration 10 ends the run asleep.
    assert_eq!(predictive.summary["links"]["wakes"].as_u64(), Some(14));
    assert_eq!(ps(&predictive, "links", "wake_delay_s"), 0);
    assert_eq!(ps(&predictive, "", "makespan_s"), ps(&on, "", "makespan_s"));
    // A slept gap: asleep as the compute starts, 2.88 us of sleep (10GBASE-T), LPI, and the
    // 17 us wake ending as the next call comes: 1,000 - 2.88 - 17 = 980.12 us of LPI; the last
    // gap, to the run's end, 1,000 - 2.88 = 997.12 us. Per link 7 x 980.12 + 997.12 =
    // 7,857.96 us, saving 3.44 - 2.08 W on each of its 2 ports: 2 links, 4 ports.
    let saved = link_energy_j(&on) - link_energy_j(&predictive);
    let hand = 4.0 * (3.44 - 2.08) * 7_857.96e-6;
    assert!(
        (saved - hand).abs() < 1e-9 * hand,
        "{saved} J, by hand {hand} J"
    );
}
