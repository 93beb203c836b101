//! One tracewatt simulation, end to end: a [`Config`] in, [`Results`] out.
//!
//! ```no_run
//! use tracewatt_sim::{simulate, Config, Format};
//! let text = std::fs::read_to_string("examples/pingpong.toml").unwrap();
//! let config = Config::parse(&text, Format::Toml, "examples/pingpong.toml").unwrap();
//! let results = simulate(&config, "examples/pingpong.toml", &mut |_| true).unwrap();
//! println!("{}", results.summary["makespan_s"]);
//! ```

pub mod config;
mod engine;
pub mod error;
pub mod jobs;
pub mod memory;
pub mod power;
pub mod presets;
pub mod results;
mod sizing;
pub mod stats;
mod units;

pub use config::{Config, Format};
pub use engine::Progress;
pub use error::SimError;
pub use results::{Column, Results, Table};

use engine::{Comm, Engine, JobState, Stop};
use serde_json::json;
use tracewatt_core::Rng;
use tracewatt_net::fabric::{Fabric, FabricParams};
use tracewatt_net::Topology;
use tracewatt_workload::generators::{self, Workload};

/// Independent random streams, so that e.g. a change in allocation does not shift traffic.
const STREAM_PLACEMENT: u64 = 1;
const STREAM_WORKLOAD: u64 = 2;
const STREAM_NETWORK: u64 = 3;

/// Builds the machine's topology from the configuration.
pub fn build_topology(config: &Config, source: &str) -> Result<Topology, SimError> {
    tracewatt_net::topology::build(&config.machine.topology, &|c| config.link_params(c)).map_err(
        |error| SimError::Topology {
            source_name: source.to_string(),
            error,
        },
    )
}

/// The configured routing algorithm bound to `topo`.
fn build_router(
    config: &Config,
    topo: &Topology,
    source: &str,
) -> Result<Box<dyn tracewatt_net::Router>, SimError> {
    tracewatt_net::routing::make_router(&config.machine.routing, topo).map_err(|error| {
        SimError::Topology {
            source_name: source.to_string(),
            error,
        }
    })
}

/// A description of the machine: sizes, diameter, links by class.
pub fn machine_info(config: &Config, source: &str) -> Result<serde_json::Value, SimError> {
    let topo = build_topology(config, source)?;
    let router = build_router(config, &topo, source)?;
    let mut info = describe(&topo, router.num_vcs(), config);
    // A search over the switches: reported by `tracewatt machine`, not in every run's summary.
    info["diameter_hops"] = topo.diameter_hops().into();
    Ok(info)
}

fn describe(topo: &Topology, vcs: u8, config: &Config) -> serde_json::Value {
    let mut classes: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    for c in &topo.channels {
        let e = classes
            .entry(c.class.name())
            .or_insert((0, c.bandwidth_bps, c.latency_ps));
        e.0 += 1;
    }
    let link_classes: Vec<serde_json::Value> = classes
        .into_iter()
        .map(|(k, (dirs, bw, lat))| {
            json!({"kind": k, "links": dirs / 2, "bandwidth_gbps": bw as f64 / 1e9, "latency_ns": lat as f64 / 1e3})
        })
        .collect();
    json!({
        "preset": config.machine.preset,
        "nodes": topo.num_nodes,
        "switches": topo.num_switches,
        "links": topo.num_links(),
        "virtual_channels": vcs,
        "ranks_per_node": config.machine.ranks_per_node,
        "link_classes": link_classes,
    })
}

/// Builds every job's workload: from its `[jobs.workload]` table (a generator) or its
/// `[jobs.trace]` table (a trace, read with `tracewatt-trace`; one pre-pass over its files).
pub fn build_workloads(config: &Config, source: &str) -> Result<Vec<Box<dyn Workload>>, SimError> {
    Ok(build_workloads_warned(config, source)?.0)
}

/// Every job's workload, and what the traces' pre-passes warn about (each prefixed by its job).
type WarnedWorkloads = (Vec<Box<dyn Workload>>, Vec<String>);

/// [`build_workloads`], with the traces' warnings.
fn build_workloads_warned(config: &Config, source: &str) -> Result<WarnedWorkloads, SimError> {
    let mut warnings = Vec::new();
    let workloads = config
        .jobs
        .iter()
        .enumerate()
        .map(|(i, job)| {
            if let Some(t) = &job.trace {
                let path = t.resolve(source);
                let opts = tracewatt_trace::ReadOptions {
                    compute_scale: t.compute_scale,
                    flops_per_s: t.flops_per_s,
                    strict: t.strict,
                    compute_clock: t.compute_clock,
                    // Checked when the configuration was read.
                    window: t.window.as_ref().and_then(|w| w.to_window().ok()),
                };
                let trace_err = |e: tracewatt_trace::TraceError| SimError::Trace {
                    source_name: source.to_string(),
                    job: i,
                    message: e.to_string(),
                };
                let format = tracewatt_trace::detect(&path).map_err(trace_err)?;
                if t.compute_clock == tracewatt_trace::ComputeClock::Cpu
                    && !format.records_cpu_time()
                {
                    return Err(SimError::config(
                        source,
                        &format!("jobs[{i}].trace.compute_clock"),
                        format!(
                            "\"cpu\" needs CPU times, and the trace {} ({}) records none: \
                             use \"wall\"",
                            path.display(),
                            serde_json::to_value(format)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_string))
                                .unwrap_or_default()
                        ),
                        None,
                    ));
                }
                let wl = tracewatt_trace::open_trace(&path, &opts).map_err(trace_err)?;
                let name = job.name.clone().unwrap_or_else(|| format!("jobs[{i}]"));
                warnings.extend(wl.info().warnings.iter().map(|w| format!("{name}: {w}")));
                if wl.num_ranks() != job.ranks {
                    return Err(SimError::config(
                        source,
                        &format!("jobs[{i}].ranks"),
                        format!(
                            "the trace {} has {} ranks but the job has {}; set ranks = {}",
                            path.display(),
                            wl.num_ranks(),
                            job.ranks,
                            wl.num_ranks()
                        ),
                        None,
                    ));
                }
                return Ok(Box::new(wl) as Box<dyn Workload>);
            }
            let Some(spec) = &job.workload else {
                return Err(SimError::config(
                    source,
                    &format!("jobs[{i}].workload"),
                    "missing: give a [jobs.workload] table or a [jobs.trace] table",
                    None,
                ));
            };
            let seed = Rng::fork(config.seed, STREAM_WORKLOAD + i as u64).next_u64();
            generators::build(spec, job.ranks, seed).map_err(|e| {
                if e.field == "ranks" {
                    // The job's rank count does not suit the generator: the run cannot go on.
                    SimError::Workload {
                        source_name: source.to_string(),
                        job: i,
                        message: e.to_string(),
                    }
                } else {
                    SimError::config(
                        source,
                        &format!("jobs[{i}].workload.{}", e.field),
                        e.expected,
                        None,
                    )
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((workloads, warnings))
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
    let (workloads, warnings) = build_workloads_warned(config, source)?;
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

fn run(
    config: &Config,
    source: &str,
    workloads: Vec<Box<dyn Workload>>,
    extra_models: Vec<Box<dyn tracewatt_power::PowerModel>>,
    progress: &mut dyn FnMut(Progress) -> bool,
    stop: Stop,
) -> Result<(Results, Option<tracewatt_core::Ps>), SimError> {
    if workloads.len() != config.jobs.len() {
        return Err(SimError::config(
            source,
            "jobs",
            format!(
                "{} job(s) but {} workload(s)",
                config.jobs.len(),
                workloads.len()
            ),
            None,
        ));
    }
    let topo = build_topology(config, source)?;
    let router = build_router(config, &topo, source)?;
    let machine = describe(&topo, router.num_vcs(), config);
    let m = &config.machine;
    let mut placement_rng = Rng::fork(config.seed, STREAM_PLACEMENT);
    let placement = jobs::place(
        &config.jobs,
        &topo,
        m.ranks_per_node,
        &mut placement_rng,
        source,
    )?;

    let mut job_states = Vec::with_capacity(config.jobs.len());
    let mut facts = Vec::with_capacity(config.jobs.len());
    let mut programs = Vec::new();
    let mut first_rank = 0u32;
    for ((i, job), wl) in config.jobs.iter().enumerate().zip(workloads) {
        let name = job.name.clone().unwrap_or_else(|| format!("job{i}"));
        if wl.num_ranks() != job.ranks {
            return Err(SimError::config(
                source,
                &format!("jobs[{i}].ranks"),
                format!(
                    "the workload runs on {} ranks but the job has {}",
                    wl.num_ranks(),
                    job.ranks
                ),
                None,
            ));
        }
        let mut comms = vec![Comm::new((0..job.ranks).collect())];
        for (k, members) in wl.comms().into_iter().enumerate() {
            if let Some(bad) = members.iter().find(|r| **r >= job.ranks) {
                return Err(SimError::Workload {
                    source_name: source.to_string(),
                    job: i,
                    message: format!(
                        "communicator {} names rank {bad}, outside the job's {} ranks",
                        k + 1,
                        job.ranks
                    ),
                });
            }
            comms.push(Comm::new(members));
        }
        let start_ps = units::us_to_ps(job.start_us);
        for r in 0..job.ranks {
            programs.push((
                i as u32,
                r,
                placement.rank_node[i][r as usize],
                wl.program(r),
            ));
        }
        facts.push(results::JobFacts {
            name: name.clone(),
            ranks: job.ranks,
            nodes: placement.job_nodes[i].len() as u32,
            start_ps,
        });
        job_states.push(JobState {
            name,
            first_rank,
            ranks: job.ranks,
            start_ps,
            comms,
        });
        first_rank += job.ranks;
    }

    let params = FabricParams {
        packet_bytes: m.packet_bytes,
        buffer_bytes: m.buffer_bytes,
        switch_latency_ps: units::ns_to_ps(m.switch_latency_ns),
        switching: m.switching,
        credits: m.credits,
    };
    let channels = topo.channels.len();
    let cores = programs
        .iter()
        .map(|(job, rank, node, _)| tracewatt_power::CoreOf {
            job: *job,
            rank: *rank,
            node: *node,
        })
        .collect();
    let job_names = job_states.iter().map(|j| j.name.clone()).collect();
    // Each node's job, its memory profile and its ranks there, for the DIMM model.
    let mut node_jobs: Vec<Option<tracewatt_power::NodeJob>> = vec![None; topo.num_nodes as usize];
    for (i, job) in config.jobs.iter().enumerate() {
        let profile: Vec<(u64, f64)> = job
            .memory_profile()
            .into_iter()
            .map(|(at_s, gib)| (units::us_to_ps(at_s * 1e6), gib))
            .collect();
        for &node in &placement.rank_node[i] {
            let slot = node_jobs[node as usize].get_or_insert_with(|| tracewatt_power::NodeJob {
                start_ps: job_states[i].start_ps,
                profile: profile.clone(),
                ranks: 0,
            });
            slot.ranks += 1;
        }
    }
    let occupancy = power::Occupancy {
        ranks: cores,
        job_names,
        node_jobs,
    };
    let power = power::models(
        &config.power,
        &config.mpi.wait,
        &topo,
        occupancy,
        extra_models,
        source,
    )?;
    // Each node's job (nodes belong to one job at most), for attributing energy to jobs.
    let mut node_job = vec![results::NO_JOB; topo.num_nodes as usize];
    for (j, nodes) in placement.job_nodes.iter().enumerate() {
        for n in nodes {
            node_job[*n as usize] = j as u32;
        }
    }
    let fabric = Fabric::new(topo, router, params);
    let mut stats = stats::LinkStats::new(
        channels,
        stats::thresholds_ps(&config.output.idle_thresholds_us),
        config.output.idle_bins_per_decade,
    );
    if config.output.messages {
        // A wake delays what follows it on the link by up to its sleep and wake time.
        let horizon_ps = fabric
            .topology()
            .channels
            .iter()
            .map(|c| {
                let t = config.power.channel_timing(c);
                t.sleep_time_ps + t.wake_time_ps
            })
            .max()
            .unwrap_or(0);
        let class: Vec<_> = fabric.topology().channels.iter().map(|c| c.class).collect();
        stats.track_wake_hops(horizon_ps, &class);
    }
    if config.output.pair_idle {
        stats.track_pairs(
            &fabric
                .topology()
                .channels
                .iter()
                .map(|c| c.reverse)
                .collect::<Vec<_>>(),
        );
    }
    if config.jobs.len() > 1 {
        // Only senders' nodes are looked up, and every sender belongs to a job.
        let senders = node_job
            .iter()
            .map(|j| if *j == results::NO_JOB { 0 } else { *j });
        stats.count_jobs(senders.collect(), config.jobs.len());
    }
    let links = engine::Observers { stats, power };
    let engine = Engine::new(
        config,
        fabric,
        links,
        Rng::fork(config.seed, STREAM_NETWORK),
        &job_states,
        programs,
        source,
    )
    .stop(stop);
    let (out, fabric, obs) = engine.run(progress)?;
    let account = obs.power.finish(out.makespan_ps);
    let results = results::build(
        config,
        fabric.topology(),
        &facts,
        &out,
        &obs.stats,
        &node_job,
        account,
        fabric.stats(),
        machine,
    );
    Ok((results, out.window_start_ps))
}
