//! Assembly: a resolved [`Config`] and its jobs' workloads turned into the engine's parts — the
//! machine (topology, routing, the network model `N`), the ranks placed on nodes with their programs, the power
//! models and the link statistics — then run, and the results built from what it produced.

use crate::config::{Config, MachineSpec};
use crate::engine::{
    Comm, Engine, EngineParams, JobState, MpiCosts, Observers, Progress, RankProgram, Stop,
};
use crate::error::SimError;
use crate::jobs::{self, Placement};
use crate::results::{self, JobFacts, Results};
use crate::stats::{self, LinkStats};
use crate::units::{ns_to_ps, us_to_ps};
use serde_json::json;
use tracewatt_core::{Ps, Rng};
use tracewatt_net::fabric::FabricParams;
use tracewatt_net::{Network, Router, Topology};
use tracewatt_power::config::{self as power, Occupancy};
use tracewatt_power::{CoreOf, NodeJob, PowerModel};
use tracewatt_workload::generators::Workload;

/// Independent random streams, so that e.g. a change in allocation does not shift traffic.
const STREAM_PLACEMENT: u64 = 1;
/// Job `i`'s generator draws from `STREAM_WORKLOAD + i`.
pub(crate) const STREAM_WORKLOAD: u64 = 2;
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
pub(crate) fn build_router(
    config: &Config,
    topo: &Topology,
    source: &str,
) -> Result<Box<dyn Router>, SimError> {
    tracewatt_net::routing::make_router(&config.machine.routing, topo).map_err(|error| {
        SimError::Topology {
            source_name: source.to_string(),
            error,
        }
    })
}

/// The machine as the summary describes it: sizes and links by class.
pub(crate) fn describe(topo: &Topology, vcs: u8, config: &Config) -> serde_json::Value {
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

/// The jobs as the engine runs them, what the results report of them, and every rank's program
/// (job after job).
struct Jobs {
    states: Vec<JobState>,
    facts: Vec<JobFacts>,
    programs: Vec<RankProgram>,
}

/// Everything a run on the network model `N` needs, built from the configuration:
/// [`Assembly::new`] builds it, [`Assembly::run`] runs it.
pub(crate) struct Assembly<'c, N: Network> {
    config: &'c Config,
    source: &'c str,
    /// The summary's description of the machine.
    machine: serde_json::Value,
    jobs: Jobs,
    /// Each node's job (nodes belong to one job at most), for attributing energy to jobs.
    node_job: Vec<u32>,
    net: N,
    observers: Observers,
}

impl<'c, N: Network> Assembly<'c, N> {
    /// The run of `workloads` (one per job of `config`) on the configured machine, watched by
    /// the configured power models and `extra_models` of the caller's.
    pub fn new(
        config: &'c Config,
        source: &'c str,
        workloads: Vec<Box<dyn Workload>>,
        extra_models: Vec<Box<dyn PowerModel>>,
    ) -> Result<Self, SimError> {
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
        let mut placement_rng = Rng::fork(config.seed, STREAM_PLACEMENT);
        let placement = jobs::place(
            &config.jobs,
            &topo,
            config.machine.ranks_per_node,
            &mut placement_rng,
            source,
        )?;
        let jobs = jobs_of(config, source, workloads, &placement)?;
        let occupancy = occupancy(config, &topo, &placement, &jobs);
        let power = power::models(
            &config.power,
            &config.mpi.wait,
            &topo,
            occupancy,
            extra_models,
        )
        .map_err(|e| SimError::power_config(source, e))?;
        let node_job = node_job(&topo, &placement);
        let stats = link_stats(config, &topo, &node_job);
        let net = N::build(topo, router, fabric_params(&config.machine));
        Ok(Self {
            config,
            source,
            machine,
            jobs,
            node_job,
            net,
            observers: Observers { stats, power },
        })
    }

    /// Runs to `stop` and builds the results; also returns when the first rank entered its
    /// trace's window, if any did.
    pub fn run(
        self,
        stop: Stop,
        progress: &mut dyn FnMut(Progress) -> bool,
    ) -> Result<(Results, Option<Ps>), SimError> {
        let config = self.config;
        let params = EngineParams {
            mpi: mpi_costs(config),
            keep_messages: config.output.messages,
            stop,
            source: self.source.to_string(),
        };
        let engine = Engine::new(
            params,
            self.net,
            self.observers,
            Rng::fork(config.seed, STREAM_NETWORK),
            &self.jobs.states,
            self.jobs.programs,
        );
        let (out, net, obs) = engine.run(progress)?;
        let account = obs.power.finish(out.makespan_ps);
        let results = results::build(
            config,
            net.topology(),
            &self.jobs.facts,
            &out,
            &obs.stats,
            &self.node_job,
            account,
            (N::MODEL, net.stats()),
            self.machine,
        );
        Ok((results, out.window_start_ps))
    }
}

/// The network model's parameters from the machine's.
fn fabric_params(m: &MachineSpec) -> FabricParams {
    FabricParams {
        packet_bytes: m.packet_bytes,
        buffer_bytes: m.buffer_bytes,
        switch_latency_ps: ns_to_ps(m.switch_latency_ns),
        switching: m.switching,
        credits: m.credits,
        train_segments: m.flow_train_segments,
        segment_packets: m.flow_segment_packets,
        short_unit_packets: m.flow_short_unit_packets,
    }
}

/// The MPI layer's costs, from `[mpi]` and the machine's intra-node copies.
fn mpi_costs(config: &Config) -> MpiCosts {
    let (mpi, m) = (&config.mpi, &config.machine);
    MpiCosts {
        eager_limit: mpi.eager_limit_bytes,
        alltoall_throttle: mpi.alltoall_throttle,
        send_ps: ns_to_ps(mpi.send_overhead_ns),
        recv_ps: ns_to_ps(mpi.recv_overhead_ns),
        control_bytes: mpi.control_bytes,
        control_priority: mpi.control_priority,
        intra_bits_per_s: (m.intra_node_bandwidth_gbps * 1e9).round() as u64,
        intra_latency_ps: ns_to_ps(m.intra_node_latency_ns),
        notify_ps: us_to_ps(mpi.wait.notify_overhead_us.unwrap_or(0.0)),
    }
}

/// Every job with its communicators, and every rank's program on its node.
fn jobs_of(
    config: &Config,
    source: &str,
    workloads: Vec<Box<dyn Workload>>,
    placement: &Placement,
) -> Result<Jobs, SimError> {
    let mut states = Vec::with_capacity(config.jobs.len());
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
        let comms = communicators(i, job.ranks, wl.as_ref(), source, &placement.rank_node[i])?;
        let start_ps = us_to_ps(job.start_us);
        for r in 0..job.ranks {
            programs.push(RankProgram {
                job: i as u32,
                rank: r,
                node: placement.rank_node[i][r as usize],
                program: wl.program(r),
            });
        }
        facts.push(JobFacts {
            name: name.clone(),
            ranks: job.ranks,
            nodes: placement.job_nodes[i].len() as u32,
            start_ps,
        });
        states.push(JobState {
            name,
            first_rank,
            ranks: job.ranks,
            start_ps,
            comms,
        });
        first_rank += job.ranks;
    }
    Ok(Jobs {
        states,
        facts,
        programs,
    })
}

/// Job `i`'s communicators: all its `ranks` first, then those its workload declares.
/// `rank_node` gives each job rank's node.
fn communicators(
    i: usize,
    ranks: u32,
    wl: &dyn Workload,
    source: &str,
    rank_node: &[u32],
) -> Result<Vec<Comm>, SimError> {
    let mut comms = vec![Comm::new((0..ranks).collect(), rank_node)];
    for (k, members) in wl.comms().into_iter().enumerate() {
        if let Some(bad) = members.iter().find(|r| **r >= ranks) {
            return Err(SimError::Workload {
                source_name: source.to_string(),
                job: i,
                message: format!(
                    "communicator {} names rank {bad}, outside the job's {ranks} ranks",
                    k + 1
                ),
            });
        }
        comms.push(Comm::new(members, rank_node));
    }
    Ok(comms)
}

/// What runs where, for the power models of cores and nodes.
fn occupancy(config: &Config, topo: &Topology, placement: &Placement, jobs: &Jobs) -> Occupancy {
    let cores = jobs
        .programs
        .iter()
        .map(|p| CoreOf {
            job: p.job,
            rank: p.rank,
            node: p.node,
        })
        .collect();
    Occupancy {
        ranks: cores,
        job_names: jobs.states.iter().map(|j| j.name.clone()).collect(),
        node_jobs: node_jobs(config, topo, placement, &jobs.states),
    }
}

/// Each node's job, its memory profile and its ranks there, for the DIMM model.
fn node_jobs(
    config: &Config,
    topo: &Topology,
    placement: &Placement,
    states: &[JobState],
) -> Vec<Option<NodeJob>> {
    let mut node_jobs: Vec<Option<NodeJob>> = vec![None; topo.num_nodes as usize];
    for (i, job) in config.jobs.iter().enumerate() {
        let profile: Vec<(u64, f64)> = job
            .memory_profile()
            .into_iter()
            .map(|(at_s, gib)| (us_to_ps(at_s * 1e6), gib))
            .collect();
        for &node in &placement.rank_node[i] {
            let slot = node_jobs[node as usize].get_or_insert_with(|| NodeJob {
                start_ps: states[i].start_ps,
                profile: profile.clone(),
                ranks: 0,
            });
            slot.ranks += 1;
        }
    }
    node_jobs
}

/// Each node's job, or [`results::NO_JOB`].
fn node_job(topo: &Topology, placement: &Placement) -> Vec<u32> {
    let mut node_job = vec![results::NO_JOB; topo.num_nodes as usize];
    for (j, nodes) in placement.job_nodes.iter().enumerate() {
        for n in nodes {
            node_job[*n as usize] = j as u32;
        }
    }
    node_job
}

/// The link statistics `[output]` asks for.
fn link_stats(config: &Config, topo: &Topology, node_job: &[u32]) -> LinkStats {
    let mut stats = LinkStats::new(
        topo.channels.len(),
        stats::thresholds_ps(&config.output.idle_thresholds_us),
        config.output.idle_bins_per_decade,
    );
    if config.output.messages {
        // A wake delays what follows it on the link by up to its sleep and wake time.
        let horizon_ps = topo
            .channels
            .iter()
            .map(|c| {
                let t = config.power.channel_setup(c).phy;
                t.sleep_time_ps + t.wake_time_ps
            })
            .max()
            .unwrap_or(0);
        let class: Vec<_> = topo.channels.iter().map(|c| c.class).collect();
        stats.track_wake_hops(horizon_ps, &class);
    }
    if config.output.pair_idle {
        stats.track_pairs(&topo.channels.iter().map(|c| c.reverse).collect::<Vec<_>>());
    }
    if config.jobs.len() > 1 {
        // Only senders' nodes are looked up, and every sender belongs to a job.
        let senders = node_job
            .iter()
            .map(|j| if *j == results::NO_JOB { 0 } else { *j });
        stats.count_jobs(senders.collect(), config.jobs.len());
    }
    stats
}
