//! Results of a run as column tables plus a JSON summary. Column names carry their units.

use crate::config::Config;
use crate::engine::RunOutput;
use crate::stats::LinkStats;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Mutex;
use tracewatt_core::time::{to_seconds, PS_PER_S};
use tracewatt_net::fabric::FabricStats;
use tracewatt_net::{Device, LinkClass, Topology};
use tracewatt_power::{Account, EnergyRow, Scalar};

pub use tracewatt_core::{Column, Table};

/// Everything a run produces.
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// `summary.json`.
    pub summary: serde_json::Value,
    /// `links`, `idle_hist`, `idle_thresholds`, `ranks`, `jobs`.
    pub tables: Vec<Table>,
}

impl Results {
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }
}

/// The Arrow schema of `table` in the result files: each column's name and Arrow type, from
/// the kind of column it is built as, so a table without rows has its types too. Counts and ids
/// are `int64` (missing ones null), measures `float64`, names `string`.
pub fn arrow_schema(table: &Table) -> Vec<(&'static str, &'static str)> {
    table
        .columns
        .iter()
        .map(|(name, column)| {
            let arrow = match column {
                Column::U64(_) | Column::OptU64(_) => "int64",
                Column::F64(_) => "float64",
                Column::Str(_) => "string",
            };
            (*name, arrow)
        })
        .collect()
}

fn secs(ps: u64) -> f64 {
    to_seconds(ps)
}

/// Per-job facts for the summary and the `jobs` table.
#[derive(Debug, Clone)]
pub(crate) struct JobFacts {
    pub name: String,
    pub ranks: u32,
    pub nodes: u32,
    pub start_ps: u64,
}

/// Makes `to_end` (a run stopped when every rank had left its trace's window) the window's:
/// `to_start` is the same run stopped when the first rank entered it. Makespan becomes the
/// window's length, energies (by kind, unattributed, per job) the energy spent in it, average
/// powers follow; `window` says where it lies. Everything else covers the run up to the
/// window's end.
pub(crate) fn cut_window(to_end: &mut serde_json::Value, to_start: &serde_json::Value) {
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let (start_s, end_s) = (f(&to_start["makespan_s"]), f(&to_end["makespan_s"]));
    let length_s = end_s - start_s;
    let minus = |a: &mut serde_json::Value, b: &serde_json::Value| *a = (f(a) - f(b)).into();
    let mut power = serde_json::Map::new();
    if let Some(e) = to_end["energy_j"].as_object_mut() {
        for (k, v) in e.iter_mut() {
            minus(v, &to_start["energy_j"][k]);
            let w = if length_s > 0.0 { f(v) / length_s } else { 0.0 };
            power.insert(k.clone(), w.into());
        }
    }
    to_end["avg_power_w"] = power.into();
    minus(
        &mut to_end["energy_unattributed_j"],
        &to_start["energy_unattributed_j"],
    );
    if let Some(jobs) = to_end["jobs"].as_array_mut() {
        for (i, j) in jobs.iter_mut().enumerate() {
            minus(&mut j["energy_j"], &to_start["jobs"][i]["energy_j"]);
        }
    }
    to_end["makespan_s"] = length_s.into();
    to_end["window"] = json!({"start_s": start_s, "end_s": end_s});
}

/// The run's tables and summary, from what the engine, the statistics, the power models
/// (`power`) and the network model (its name and totals) report.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    config: &Config,
    topo: &Topology,
    jobs: &[JobFacts],
    out: &RunOutput,
    links: &LinkStats,
    node_job: &[u32],
    mut power: Account,
    network: (&str, FabricStats),
    machine: serde_json::Value,
) -> Results {
    let makespan_s = secs(out.makespan_ps);
    let avg = |j: f64| {
        if makespan_s > 0.0 {
            j / makespan_s
        } else {
            0.0
        }
    };
    let shares = JobShares::new(
        &power.rows,
        topo,
        node_job,
        links,
        out.makespan_ps,
        jobs.len(),
    );
    let completion = completions(out, jobs.len());
    let (energy_j, avg_power_w) = energy_by_group(&power.rows, &avg);
    let mut summary = json!({
        "tracewatt_version": env!("CARGO_PKG_VERSION"),
        "seed": config.seed,
        "makespan_s": makespan_s,
        "energy_j": energy_j,
        "energy_unattributed_j": shares.unattributed_j,
        "avg_power_w": avg_power_w,
        "machine": machine,
        "jobs": jobs_summary(jobs, &completion, &shares),
        "messages": messages_summary(out),
        "network": network_summary(network.0, &network.1),
        "events": out.events,
        "config": config.resolved_json(),
    });
    if let Some(o) = summary.as_object_mut() {
        o.extend(model_sections(&power.summary));
    }
    let mut tables = vec![
        links_table(topo, links, std::mem::take(&mut power.link_columns)),
        idle_hist_table(links, topo.channels.len()),
        idle_thresholds_table(links, topo.channels.len()),
        ranks_table(out, jobs),
        jobs_table(jobs, &completion),
        switches_table(&power.rows, topo.num_switches, &avg),
        timeline_table(&mut power, out.makespan_ps),
        energy_table(&power.rows, &shares, jobs, out.makespan_ps),
    ];
    tables.append(&mut power.tables);
    if !links.pair_of().is_empty() {
        tables.push(pair_table(links));
    }
    if config.output.messages {
        tables.push(messages_table(out, jobs, links));
        tables.push(message_wakes_table(out, links));
    }
    Results { summary, tables }
}

/// Energy by summary group, in the order the models report them, and the total; and the
/// average power of each over the run (`avg`).
fn energy_by_group(
    rows: &[EnergyRow],
    avg: &dyn Fn(f64) -> f64,
) -> (
    serde_json::Map<String, serde_json::Value>,
    serde_json::Map<String, serde_json::Value>,
) {
    let mut groups: Vec<(&str, f64)> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|g| g.0 == r.group) {
            Some(g) => g.1 += r.energy_j,
            None => groups.push((r.group, r.energy_j)),
        }
    }
    let total_j: f64 = groups.iter().map(|g| g.1).sum();
    let mut energy_j = serde_json::Map::new();
    let mut avg_power_w = serde_json::Map::new();
    for (g, j) in groups.iter().copied().chain([("total", total_j)]) {
        energy_j.insert(g.to_string(), j.into());
        avg_power_w.insert(g.to_string(), avg(j).into());
    }
    (energy_j, avg_power_w)
}

/// The power models' own summary entries, as sections of the summary (`links`, `nics`, ...).
fn model_sections(
    entries: &[(&'static str, &'static str, Scalar)],
) -> serde_json::Map<String, serde_json::Value> {
    let mut sections = serde_json::Map::new();
    for (section, key, value) in entries {
        let v: serde_json::Value = match value {
            Scalar::U64(v) => (*v).into(),
            Scalar::F64(v) => (*v).into(),
        };
        sections
            .entry(section.to_string())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|o| o.insert(key.to_string(), v));
    }
    sections
}

/// The summary's `messages`: how many, their bytes and their latencies.
fn messages_summary(out: &RunOutput) -> serde_json::Value {
    let lat = &out.latency;
    json!({
        "count": lat.count,
        "bytes": out.messages_bytes,
        "latency_mean_s": lat.mean_ps() / PS_PER_S as f64,
        "latency_p50_s": secs(lat.quantile_ps(0.5)),
        "latency_p99_s": secs(lat.quantile_ps(0.99)),
        "latency_max_s": secs(lat.max_ps),
    })
}

/// The summary's `network`: packets, their hops and their latencies; with a model other than
/// packets, its name (`model`), and the counts in its terms (a flow per message).
fn network_summary(model: &str, fabric: &FabricStats) -> serde_json::Value {
    let delivered = fabric.packets_delivered.max(1) as f64;
    let mut summary = json!({
        "packets": fabric.packets_delivered,
        "packet_hops": fabric.packet_hops,
        "mean_switch_hops": fabric.switch_hops_delivered as f64 / delivered,
        "packet_latency_mean_s": fabric.packet_latency_sum_ps as f64 / delivered / PS_PER_S as f64,
        "packet_latency_max_s": secs(fabric.packet_latency_max_ps),
    });
    if model != "packet" {
        summary["model"] = model.into();
    }
    summary
}

/// When each job's last rank finished.
fn completions(out: &RunOutput, jobs: usize) -> Vec<u64> {
    let mut completion = vec![0u64; jobs];
    for x in &out.ranks {
        completion[x.job as usize] = completion[x.job as usize].max(x.finish_ps);
    }
    completion
}

/// The summary's `jobs`: each job's size, times and energy.
fn jobs_summary(
    jobs: &[JobFacts],
    completion: &[u64],
    shares: &JobShares,
) -> Vec<serde_json::Value> {
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            json!({
                "name": j.name,
                "ranks": j.ranks,
                "nodes": j.nodes,
                "start_s": secs(j.start_ps),
                "completion_s": secs(completion[i]),
                "runtime_s": secs(completion[i] - j.start_ps),
                "energy_j": shares.job_j[i],
            })
        })
        .collect()
}

/// `links`: each link direction's ends, class, bandwidth and traffic, then the link power
/// model's `model_columns` (each direction's port, timing, states and energy).
fn links_table(
    topo: &Topology,
    links: &LinkStats,
    mut model_columns: Vec<(&'static str, Column)>,
) -> Table {
    let n = topo.channels.len();
    let mut link_id = Vec::with_capacity(n);
    let mut src = Vec::with_capacity(n);
    let mut dst = Vec::with_capacity(n);
    let mut kind = Vec::with_capacity(n);
    for (i, c) in topo.channels.iter().enumerate() {
        link_id.push(i as u64);
        src.push(c.src.to_string());
        dst.push(c.dst.to_string());
        kind.push(c.class.name());
    }
    let seconds = |v: &[u64]| Column::F64(v.iter().map(|p| secs(*p)).collect());
    let mut columns = vec![
        ("link_id", Column::U64(link_id)),
        ("src", Column::Str(src)),
        ("dst", Column::Str(dst)),
        ("kind", Column::Str(kind)),
        (
            "bandwidth_bps",
            Column::U64(topo.channels.iter().map(|c| c.bandwidth_bps).collect()),
        ),
        ("bytes", Column::U64(links.bytes[..n].to_vec())),
        ("packets", Column::U64(links.packets[..n].to_vec())),
        ("busy_s", seconds(&links.busy_ps[..n])),
        ("idle_count", Column::U64(links.idle_count[..n].to_vec())),
        ("idle_s", seconds(&links.idle_ps[..n])),
        ("trailing_idle_s", seconds(&links.trailing_idle_ps[..n])),
    ];
    columns.append(&mut model_columns);
    Table {
        name: "links",
        columns,
    }
}

/// `timeline`: power over time, per series of the models and in total.
fn timeline_table(power: &mut Account, end_ps: u64) -> Table {
    let bins = power.timeline.bins(end_ps);
    let mut columns = vec![
        (
            "t_start_s",
            Column::F64(bins.iter().map(|b| secs(b.0)).collect()),
        ),
        (
            "t_end_s",
            Column::F64(bins.iter().map(|b| secs(b.1)).collect()),
        ),
    ];
    for (k, name) in power.series().iter().enumerate() {
        columns.push((name, Column::F64(bins.iter().map(|b| b.2[k]).collect())));
    }
    columns.push((
        "total_w",
        Column::F64(bins.iter().map(|b| b.2.iter().sum()).collect()),
    ));
    Table {
        name: "timeline",
        columns,
    }
}

/// `idle_hist`: the idle histogram of the `n` link directions in long form, non-empty bins
/// only (links as a whole, with pair tracking, go to `pair_idle_thresholds`).
fn idle_hist_table(links: &LinkStats, n: usize) -> Table {
    // Bin edges in seconds; bin 0 starts at 0 and the last bin is open-ended.
    let bins = links.bins();
    let edge_s: Vec<f64> = (0..=bins)
        .map(|b| match b {
            0 => 0.0,
            b if b == bins => f64::INFINITY,
            b => links.bin_lo_ps(b) / PS_PER_S as f64,
        })
        .collect();
    let h: Vec<_> = links.hist.iter().filter(|c| (c.ch as usize) < n).collect();
    Table {
        name: "idle_hist",
        columns: vec![
            (
                "link_id",
                Column::U64(h.iter().map(|c| c.ch as u64).collect()),
            ),
            (
                "bin_lo_s",
                Column::F64(h.iter().map(|c| edge_s[c.bin as usize]).collect()),
            ),
            (
                "bin_hi_s",
                Column::F64(h.iter().map(|c| edge_s[c.bin as usize + 1]).collect()),
            ),
            ("count", Column::U64(h.iter().map(|c| c.count).collect())),
            (
                "total_s",
                Column::F64(h.iter().map(|c| secs(c.ps)).collect()),
            ),
        ],
    }
}

/// `idle_thresholds`: per link direction (of `n`) and threshold, the count and total of its
/// idle intervals longer than the threshold.
fn idle_thresholds_table(links: &LinkStats, n: usize) -> Table {
    let (mut t_link, mut t_thr, mut t_count, mut t_total) = (vec![], vec![], vec![], vec![]);
    let t = links.thresholds_ps.len();
    for (i, (count, total)) in links.over[..n * t].iter().enumerate() {
        t_link.push((i / t) as u64);
        t_thr.push(secs(links.thresholds_ps[i % t]));
        t_count.push(*count);
        t_total.push(secs(*total));
    }
    Table {
        name: "idle_thresholds",
        columns: vec![
            ("link_id", Column::U64(t_link)),
            ("threshold_s", Column::F64(t_thr)),
            ("count", Column::U64(t_count)),
            ("total_s", Column::F64(t_total)),
        ],
    }
}

/// `ranks`: each rank's job, node, times and sends.
fn ranks_table(out: &RunOutput, jobs: &[JobFacts]) -> Table {
    let r = &out.ranks;
    Table {
        name: "ranks",
        columns: vec![
            (
                "job",
                Column::Str(
                    r.iter()
                        .map(|x| jobs[x.job as usize].name.clone())
                        .collect(),
                ),
            ),
            (
                "rank",
                Column::U64(r.iter().map(|x| x.rank as u64).collect()),
            ),
            (
                "node",
                Column::U64(r.iter().map(|x| x.node as u64).collect()),
            ),
            (
                "finish_s",
                Column::F64(r.iter().map(|x| secs(x.finish_ps)).collect()),
            ),
            (
                "compute_s",
                Column::F64(r.iter().map(|x| secs(x.compute_ps)).collect()),
            ),
            (
                "wait_s",
                Column::F64(r.iter().map(|x| secs(x.wait_ps)).collect()),
            ),
            (
                "held_s",
                Column::F64(r.iter().map(|x| secs(x.held_ps)).collect()),
            ),
            ("sends", Column::U64(r.iter().map(|x| x.sends).collect())),
            (
                "bytes_sent",
                Column::U64(r.iter().map(|x| x.bytes_sent).collect()),
            ),
        ],
    }
}

/// `jobs`: each job's size and times (`completion`: when its last rank finished).
fn jobs_table(jobs: &[JobFacts], completion: &[u64]) -> Table {
    Table {
        name: "jobs",
        columns: vec![
            (
                "job",
                Column::Str(jobs.iter().map(|j| j.name.clone()).collect()),
            ),
            (
                "ranks",
                Column::U64(jobs.iter().map(|j| j.ranks as u64).collect()),
            ),
            (
                "nodes",
                Column::U64(jobs.iter().map(|j| j.nodes as u64).collect()),
            ),
            (
                "start_s",
                Column::F64(jobs.iter().map(|j| secs(j.start_ps)).collect()),
            ),
            (
                "completion_s",
                Column::F64(completion.iter().map(|c| secs(*c)).collect()),
            ),
            (
                "runtime_s",
                Column::F64(
                    jobs.iter()
                        .zip(completion)
                        .map(|(j, c)| secs(c - j.start_ps))
                        .collect(),
                ),
            ),
        ],
    }
}

/// `message_wake_hops`: per message (its row in `messages`) and idle threshold, the hops on
/// which its packets could meet a wake (`stats::MessageHops`); rows with none are left out.
fn message_wakes_table(out: &RunOutput, links: &LinkStats) -> Table {
    let t = links.thresholds_ps.len();
    let (mut message, mut thr, mut hops) = (Vec::new(), Vec::new(), Vec::new());
    for (i, row) in message_rows(out, links).enumerate() {
        for (k, &h) in row[..t].iter().enumerate().filter(|(_, h)| **h > 0) {
            message.push(i as u64);
            thr.push(secs(links.thresholds_ps[k]));
            hops.push(h as u64);
        }
    }
    Table {
        name: "message_wake_hops",
        columns: vec![
            ("message", Column::U64(message)),
            ("threshold_s", Column::F64(thr)),
            ("hops", Column::U64(hops)),
        ],
    }
}

/// Each recorded message's hop counts: per idle threshold, then per link class of its route.
fn message_rows<'a>(out: &'a RunOutput, links: &LinkStats) -> std::slice::ChunksExact<'a, u16> {
    let width = links.thresholds_ps.len() + links.route_classes().len();
    out.message_wake_hops.chunks_exact(width.max(1))
}

/// `hops_<class>`, the messages table's column of a link class. Column names are `&'static str`:
/// each distinct one is allocated once for the life of the process (there are a handful).
fn hops_column(class: LinkClass) -> &'static str {
    static NAMES: Mutex<BTreeMap<LinkClass, &'static str>> = Mutex::new(BTreeMap::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    names
        .entry(class)
        .or_insert_with(|| Box::leak(format!("hops_{}", class.name()).into_boxed_str()))
}

/// `pair_idle_thresholds`: per link (both directions together, as a `paired` state machine sees
/// it) and threshold, its two directions, the count and total of idle intervals longer than the
/// threshold, and its trailing idle interval.
fn pair_table(links: &LinkStats) -> Table {
    let n = links.channels();
    let pairs = links.trailing_idle_ps.len() - n;
    let mut dirs = vec![[u64::MAX; 2]; pairs];
    for (c, p) in links.pair_of().iter().enumerate() {
        let d = &mut dirs[*p as usize];
        if d[0] == u64::MAX {
            d[0] = c as u64;
        } else {
            d[1] = c as u64;
        }
    }
    let t = links.thresholds_ps.len();
    let (mut pid, mut a, mut b, mut thr, mut count, mut total, mut trailing) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for (p, d) in dirs.iter().enumerate() {
        for k in 0..t {
            let (c, s) = links.over[(n + p) * t + k];
            pid.push(p as u64);
            a.push(d[0]);
            b.push(d[1]);
            thr.push(secs(links.thresholds_ps[k]));
            count.push(c);
            total.push(secs(s));
            trailing.push(secs(links.trailing_idle_ps[n + p]));
        }
    }
    Table {
        name: "pair_idle_thresholds",
        columns: vec![
            ("pair_id", Column::U64(pid)),
            ("link_id_a", Column::U64(a)),
            ("link_id_b", Column::U64(b)),
            ("threshold_s", Column::F64(thr)),
            ("count", Column::U64(count)),
            ("total_s", Column::F64(total)),
            ("trailing_idle_s", Column::F64(trailing)),
        ],
    }
}

/// `messages`: every message, in the order they reached their receivers, with its route's hops
/// per link class (`hops_node`, `hops_tree1`, ..., `hops_global`).
fn messages_table(out: &RunOutput, jobs: &[JobFacts], links: &LinkStats) -> Table {
    let m = &out.messages;
    let r = &out.ranks;
    let rank = |g: u32| r[g as usize].rank as u64;
    let t = links.thresholds_ps.len();
    let classes = links.route_classes();
    let mut hops = vec![Vec::with_capacity(m.len()); classes.len()];
    for row in message_rows(out, links) {
        for (h, &n) in hops.iter_mut().zip(&row[t..]) {
            h.push(n as u64);
        }
    }
    let hops = classes
        .iter()
        .zip(hops)
        .map(|(c, h)| (hops_column(*c), Column::U64(h)));
    Table {
        name: "messages",
        columns: vec![
            (
                "job",
                Column::Str(
                    m.iter()
                        .map(|x| jobs[r[x.src as usize].job as usize].name.clone())
                        .collect(),
                ),
            ),
            (
                "src_rank",
                Column::U64(m.iter().map(|x| rank(x.src)).collect()),
            ),
            (
                "dst_rank",
                Column::U64(m.iter().map(|x| rank(x.dst)).collect()),
            ),
            ("bytes", Column::U64(m.iter().map(|x| x.bytes).collect())),
            (
                "start_s",
                Column::F64(m.iter().map(|x| secs(x.start_ps)).collect()),
            ),
            (
                "end_s",
                Column::F64(m.iter().map(|x| secs(x.end_ps)).collect()),
            ),
            (
                "latency_s",
                Column::F64(m.iter().map(|x| secs(x.end_ps - x.start_ps)).collect()),
            ),
        ]
        .into_iter()
        .chain(hops)
        .collect(),
    }
}

/// No job: a node no job runs on.
pub(crate) const NO_JOB: u32 = u32::MAX;

/// Energy by job. A component of a job's node (its NIC, the link ports at both ends of its
/// link) is the job's. A shared one (a switch backplane, an inter-switch link port) is split by
/// the bytes each job sent through it, for the share of its energy that matches its ports' busy
/// time; the idle rest is nobody's (`unattributed_j`).
struct JobShares {
    /// Each row's owning job, or `NO_JOB` if shared.
    owner: Vec<u32>,
    job_j: Vec<f64>,
    unattributed_j: f64,
}

impl JobShares {
    fn new(
        rows: &[EnergyRow],
        topo: &Topology,
        node_job: &[u32],
        links: &LinkStats,
        end_ps: u64,
        jobs: usize,
    ) -> Self {
        let job_of_node = |n: u32| node_job.get(n as usize).copied().unwrap_or(NO_JOB);
        // Bytes job `j` sent over channel `ch`.
        let job_bytes = |ch: usize, j: usize| {
            if links.job_bytes.is_empty() {
                if j == 0 {
                    links.bytes[ch]
                } else {
                    0
                }
            } else {
                links.job_bytes[ch * jobs + j]
            }
        };
        let mut driven: Vec<Vec<usize>> = vec![Vec::new(); topo.num_switches as usize];
        for (c, ch) in topo.channels.iter().enumerate() {
            if let Device::Switch(s) = ch.src {
                driven[s as usize].push(c);
            }
        }
        let mut owner = Vec::with_capacity(rows.len());
        let mut job_j = vec![0.0; jobs];
        let mut unattributed_j = 0.0;
        for r in rows {
            let link = (r.component == "link_port").then(|| &topo.channels[r.id as usize]);
            let own = match (r.node, link.map(|c| c.dst)) {
                (Some(n), _) | (_, Some(Device::Node(n))) => job_of_node(n),
                _ => NO_JOB,
            };
            owner.push(own);
            if own != NO_JOB {
                job_j[own as usize] += r.energy_j;
                continue;
            }
            let one = [r.id as usize];
            let chans: &[usize] = match (link, r.switch) {
                (Some(_), _) => &one,
                (None, Some(s)) => &driven[s as usize],
                (None, None) => &[],
            };
            let bytes: Vec<u64> = (0..jobs)
                .map(|j| chans.iter().map(|c| job_bytes(*c, j)).sum())
                .collect();
            let total: u64 = bytes.iter().sum();
            let busy: u64 = chans.iter().map(|c| links.busy_ps[*c]).sum();
            let span = (chans.len() as u64 * end_ps) as f64;
            let busy_share = if total > 0 && span > 0.0 {
                (busy as f64 / span).min(1.0)
            } else {
                0.0
            };
            let shared_j = r.energy_j * busy_share;
            for (j, b) in bytes.iter().enumerate() {
                if total > 0 {
                    job_j[j] += shared_j * *b as f64 / total as f64;
                }
            }
            unattributed_j += r.energy_j - shared_j;
        }
        Self {
            owner,
            job_j,
            unattributed_j,
        }
    }
}

/// `energy`: one row per component instance, the job owning it (empty if shared), and the time
/// it spent in each state of any model (NaN where its kind has no such state).
fn energy_table(rows: &[EnergyRow], shares: &JobShares, jobs: &[JobFacts], end_ps: u64) -> Table {
    let mut states: Vec<&'static str> = Vec::new();
    for r in rows {
        for (s, _) in &r.states {
            if !states.contains(s) {
                states.push(s);
            }
        }
    }
    let end_s = secs(end_ps);
    let mut columns = vec![
        (
            "component",
            Column::Str(rows.iter().map(|r| r.component.to_string()).collect()),
        ),
        ("id", Column::U64(rows.iter().map(|r| r.id).collect())),
        (
            "job",
            Column::Str(
                shares
                    .owner
                    .iter()
                    .map(|j| {
                        jobs.get(*j as usize)
                            .map_or(String::new(), |f| f.name.clone())
                    })
                    .collect(),
            ),
        ),
        (
            "node",
            Column::OptU64(rows.iter().map(|r| r.node.map(u64::from)).collect()),
        ),
        (
            "switch",
            Column::OptU64(rows.iter().map(|r| r.switch.map(u64::from)).collect()),
        ),
        (
            "energy_j",
            Column::F64(rows.iter().map(|r| r.energy_j).collect()),
        ),
        (
            "avg_power_w",
            Column::F64(
                rows.iter()
                    .map(|r| if end_s > 0.0 { r.energy_j / end_s } else { 0.0 })
                    .collect(),
            ),
        ),
    ];
    for s in states {
        columns.push((
            s,
            Column::F64(
                rows.iter()
                    .map(|r| {
                        r.states
                            .iter()
                            .find(|(k, _)| *k == s)
                            .map_or(f64::NAN, |(_, ps)| secs(*ps))
                    })
                    .collect(),
            ),
        ));
    }
    Table {
        name: "energy",
        columns,
    }
}

/// `switches`: each switch's backplane and port energy, from the energy rows.
fn switches_table(rows: &[EnergyRow], switches: u32, avg: &dyn Fn(f64) -> f64) -> Table {
    let n = switches as usize;
    let (mut ports, mut backplane_j, mut ports_j) = (vec![0u64; n], vec![0.0; n], vec![0.0; n]);
    for r in rows {
        let Some(s) = r.switch else { continue };
        match r.component {
            "switch_backplane" => backplane_j[s as usize] += r.energy_j,
            "link_port" => {
                ports[s as usize] += 1;
                ports_j[s as usize] += r.energy_j;
            }
            _ => {}
        }
    }
    let avg_power_w = (0..n).map(|s| avg(backplane_j[s] + ports_j[s])).collect();
    Table {
        name: "switches",
        columns: vec![
            ("switch_id", Column::U64((0..n as u64).collect())),
            ("ports", Column::U64(ports)),
            ("backplane_j", Column::F64(backplane_j)),
            ("ports_j", Column::F64(ports_j)),
            ("avg_power_w", Column::F64(avg_power_w)),
        ],
    }
}
