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
