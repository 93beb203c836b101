//! One tracewatt simulation, end to end: a [`Config`] in, [`Results`] out.
//!
//! ```no_run
//! use tracewatt_sim::{simulate, Config, Format};
//! let text = std::fs::read_to_string("examples/pingpong.toml").unwrap();
//! let config = Config::parse(&text, Format::Toml, "examples/pingpong.toml").unwrap();
//! let results = simulate(&config, "examples/pingpong.toml", &mut |_| true).unwrap();
//! println!("{}", results.summary["makespan_s"]);
//! ```

mod assembly;
pub mod config;
mod engine;
pub mod error;
pub mod jobs;
pub mod memory;
pub mod presets;
pub mod results;
mod sizing;
pub mod stats;
mod trace_path;
mod units;
mod workloads;

pub use assembly::build_topology;
use assembly::Assembly;
pub use config::{Config, Format, NetworkModel};
pub use engine::Progress;
use engine::Stop;
pub use error::SimError;
pub use results::{Column, Results, Table};
use serde_json::json;
/// The defaults of `[machine] flow_segment_packets`, `flow_train_segments` and
/// `flow_short_unit_packets`: the flow model's segment of a train, in packets, its longest train,
/// and the unit of a short message, in packets.
pub use tracewatt_net::flow::{
    SEGMENT_PACKETS as FLOW_SEGMENT_PACKETS, SHORT_UNIT_PACKETS as FLOW_SHORT_UNIT_PACKETS,
    TRAIN_SEGMENTS as FLOW_TRAIN_SEGMENTS,
};
use tracewatt_workload::generators::Workload;

/// A description of the machine: sizes, diameter, links by class.
pub fn machine_info(config: &Config, source: &str) -> Result<serde_json::Value, SimError> {
    let topo = build_topology(config, source)?;
    let router = assembly::build_router(config, &topo, source)?;
    let mut info = assembly::describe(&topo, router.num_vcs(), config);
    // A search over the switches: reported by `tracewatt machine`, not in every run's summary.
    info["diameter_hops"] = topo.diameter_hops().into();
    Ok(info)
}

/// Builds every job's workload: from its `[jobs.workload]` table (a generator) or its
/// `[jobs.trace]` table (a trace, read with `tracewatt-trace`; one pre-pass over its files).
pub fn build_workloads(config: &Config, source: &str) -> Result<Vec<Box<dyn Workload>>, SimError> {
    Ok(workloads::build(config, source)?.0)
}

/// Runs one simulation. `progress` is called periodically; returning `false` interrupts the run.
/// A run that would not fit in the memory available is refused before anything is built. What
/// the jobs' traces warn about (e.g. ranks that shared cores while traced) is the summary's
/// `trace_warnings` list, and what the run itself warns about (a timeline bin too fine for the
/// run) its `warnings` list; each present only when there is something to say.
pub fn simulate(
    config: &Config,
    source: &str,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<Results, SimError> {
    memory::check(config, source, &memory::NATIVE, 1)?;
    let (workloads, warnings) = workloads::build(config, source)?;
    let windowed = config
        .jobs
        .iter()
        .any(|j| j.trace.as_ref().is_some_and(|t| t.window.is_some()));
    let mut results = if windowed {
        run_window(config, source, workloads, progress)?
    } else {
        run(
            config,
            source,
            workloads,
            Vec::new(),
            progress,
            Stop::Finished,
        )?
        .0
    };
    if !warnings.is_empty() {
        results.summary["trace_warnings"] = json!(warnings);
    }
    if let Some(w) = timeline_coarsened(config, &results) {
        results.summary["warnings"] = json!([w]);
    }
    Ok(results)
}

/// A fixed timeline bin the run outgrew (the timeline doubles it past
/// [`FIXED_MAX_BINS`](tracewatt_power::timeline::FIXED_MAX_BINS) bins): what was used instead.
fn timeline_coarsened(config: &Config, results: &Results) -> Option<String> {
    let asked_us = config.power.timeline_bin_us;
    let Some(Column::F64(starts)) = results
        .table("timeline")?
        .columns
        .iter()
        .find(|c| c.0 == "t_start_s")
        .map(|c| &c.1)
    else {
        return None;
    };
    let used_us = (starts.get(1)? - starts.first()?) * 1e6;
    (asked_us > 0.0 && (used_us - asked_us).abs() > 1e-9 * asked_us).then(|| {
        format!(
            "power.timeline_bin_us = {asked_us} us would need more than {} bins for this run; \
             the timeline's bins are {used_us} us wide",
            tracewatt_power::timeline::FIXED_MAX_BINS
        )
    })
}

/// A trace's window: the replay up to the last rank's exit from it, and again (the same
/// deterministic run) up to the first rank's entry; makespan and energy are the difference.
fn run_window(
    config: &Config,
    source: &str,
    workloads: Vec<Box<dyn Workload>>,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<Results, SimError> {
    let (mut to_end, start_ps) = run(
        config,
        source,
        workloads,
        Vec::new(),
        progress,
        Stop::WindowEnd,
    )?;
    // The readers refuse a window some rank never enters.
    let start_ps = start_ps.unwrap_or(0);
    let again = build_workloads(config, source)?;
    let (to_start, _) = run(
        config,
        source,
        again,
        Vec::new(),
        progress,
        Stop::At(start_ps),
    )?;
    results::cut_window(&mut to_end.summary, &to_start.summary);
    Ok(to_end)
}

/// Runs one simulation with the given workloads, one per job in `config.jobs` (whose `workload`
/// tables are then not used): the entry point for programmatic and trace workloads. Refuses a
/// run too large for the memory available, as [`simulate`] does.
pub fn simulate_with(
    config: &Config,
    source: &str,
    workloads: Vec<Box<dyn Workload>>,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<Results, SimError> {
    simulate_observed(config, source, workloads, Vec::new(), progress)
}

/// [`simulate_with`], with power models of the caller's own observing the run beside those the
/// configuration asks for; they report into the same energy account and tables.
pub fn simulate_observed(
    config: &Config,
    source: &str,
    workloads: Vec<Box<dyn Workload>>,
    extra_models: Vec<Box<dyn tracewatt_power::PowerModel>>,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<Results, SimError> {
    memory::check(config, source, &memory::NATIVE, 1)?;
    Ok(run(
        config,
        source,
        workloads,
        extra_models,
        progress,
        Stop::Finished,
    )?
    .0)
}

/// Assembles the run of `workloads` and runs it to `stop`.
fn run(
    config: &Config,
    source: &str,
    workloads: Vec<Box<dyn Workload>>,
    extra_models: Vec<Box<dyn tracewatt_power::PowerModel>>,
    progress: &mut dyn FnMut(Progress) -> bool,
    stop: Stop,
) -> Result<(Results, Option<tracewatt_core::Ps>), SimError> {
    use tracewatt_net::{fabric::Fabric, flow::FlowFabric};
    // The one place the network model is chosen: the engine is compiled for each.
    match config.machine.network {
        NetworkModel::Packet => {
            Assembly::<Fabric>::new(config, source, workloads, extra_models)?.run(stop, progress)
        }
        NetworkModel::Flow => Assembly::<FlowFabric>::new(config, source, workloads, extra_models)?
            .run(stop, progress),
    }
}
