//! Results of a run as column tables plus a JSON summary. Column names carry their units.

use crate::config::Config;
use crate::engine::RunOutput;
use crate::power::{NIC_PORTS, SWITCH_PORTS};
use crate::stats::LinkStats;
use serde_json::json;
use tracewatt_core::time::{to_seconds, PS_PER_S};
use tracewatt_net::fabric::FabricStats;
use tracewatt_net::Device;
use tracewatt_net::Topology;
use tracewatt_power::{LinkReport, LinkTiming, Timeline};

/// One column of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    F64(Vec<f64>),
    Str(Vec<String>),
}

/// A named table of equal-length columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<(&'static str, Column)>,
}

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

#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    config: &Config,
    topo: &Topology,
    jobs: &[JobFacts],
    out: &RunOutput,
    links: &LinkStats,
    power: &[LinkReport],
    mut timeline: Timeline,
    fabric: FabricStats,
    machine: serde_json::Value,
) -> Results {
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
    // The timing each direction is configured with (an always-on run keeps it, for screening).
    let timing: Vec<_> = topo
        .channels
        .iter()
        .map(|c| config.power.channel_timing(c))
        .collect();
    let seconds = |v: &[u64]| Column::F64(v.iter().map(|p| secs(*p)).collect());
    let timing_s =
        |f: fn(&LinkTiming) -> u64| Column::F64(timing.iter().map(|t| secs(f(t))).collect());
    let power_s =
        |f: fn(&LinkReport) -> u64| Column::F64(power.iter().map(|p| secs(f(p))).collect());
    let links_table = Table {
        name: "links",
        columns: vec![
            ("link_id", Column::U64(link_id)),
            ("src", Column::Str(src)),
            ("dst", Column::Str(dst)),
            ("kind", Column::Str(kind)),
            (
                "bandwidth_bps",
                Column::U64(topo.channels.iter().map(|c| c.bandwidth_bps).collect()),
            ),
            ("bytes", Column::U64(links.bytes.clone())),
            ("packets", Column::U64(links.packets.clone())),
            ("busy_s", seconds(&links.busy_ps)),
            ("idle_count", Column::U64(links.idle_count.clone())),
            ("idle_s", seconds(&links.idle_ps)),
            ("trailing_idle_s", seconds(&links.trailing_idle_ps)),
            ("idle_timeout_s", timing_s(|t| t.idle_timeout_ps)),
            ("sleep_time_s", timing_s(|t| t.sleep_time_ps)),
            ("wake_time_s", timing_s(|t| t.wake_time_ps)),
            ("sleep_s", power_s(|p| p.sleep_ps)),
            ("lpi_s", power_s(|p| p.lpi_ps)),
            ("wake_s", power_s(|p| p.wake_ps)),
            (
                "wakes",
                Column::U64(power.iter().map(|p| p.wakes).collect()),
            ),
            (
                "refreshes",
                Column::U64(power.iter().map(|p| p.refreshes).collect()),
            ),
            ("wake_delay_s", power_s(|p| p.wake_delay_ps)),
            (
                "energy_j",
                Column::F64(power.iter().map(|p| p.energy_j).collect()),
            ),
        ],
    };

    // Energy by component. A switch's ports are the channels it drives; a node's NIC port
    // likewise.
    let makespan_s = secs(out.makespan_ps);
    let backplane_w = config.power.switch.backplane_w.unwrap_or(0.0);
    let mut switch_ports_j = vec![0.0; topo.num_switches as usize];
    let mut switch_ports = vec![0u64; topo.num_switches as usize];
    let mut nic_j = 0.0;
    for (c, p) in topo.channels.iter().zip(power) {
        match c.src {
            Device::Switch(sw) => {
                switch_ports_j[sw as usize] += p.energy_j;
                switch_ports[sw as usize] += 1;
            }
            Device::Node(_) => nic_j += p.energy_j,
        }
    }
    let backplane_j = backplane_w * makespan_s * topo.num_switches as f64;
    let ports_j: f64 = switch_ports_j.iter().sum();
    let total_j = backplane_j + ports_j + nic_j;
    let avg = |j: f64| {
        if makespan_s > 0.0 {
            j / makespan_s
        } else {
            0.0
        }
    };
    let switches_table = Table {
        name: "switches",
        columns: vec![
            (
                "switch_id",
                Column::U64((0..topo.num_switches as u64).collect()),
            ),
            ("ports", Column::U64(switch_ports)),
            (
                "backplane_j",
                Column::F64(vec![backplane_w * makespan_s; topo.num_switches as usize]),
            ),
            ("ports_j", Column::F64(switch_ports_j.clone())),
            (
                "avg_power_w",
                Column::F64(
                    switch_ports_j
                        .iter()
                        .map(|j| avg(backplane_w * makespan_s + j))
                        .collect(),
                ),
            ),
        ],
    };

    // The timeline holds changes from always-on; add the always-on power of every port.
    let sw_port = config.power.switch_port();
    let nic_port = config.power.nic_port();
    let n_sw_ports = topo
        .channels
        .iter()
        .filter(|c| matches!(c.src, Device::Switch(_)))
        .count() as f64;
    let n_nic_ports = topo.channels.len() as f64 - n_sw_ports;
    let base = [
        n_sw_ports * sw_port.active_w,
        n_nic_ports * nic_port.active_w,
    ];
    let bins = timeline.bins(out.makespan_ps);
    let bp_w = backplane_w * topo.num_switches as f64;
    let sw_w: Vec<f64> = bins
        .iter()
        .map(|(_, _, w)| base[SWITCH_PORTS] + w[SWITCH_PORTS])
        .collect();
    let nic_w: Vec<f64> = bins
        .iter()
        .map(|(_, _, w)| base[NIC_PORTS] + w[NIC_PORTS])
        .collect();
    let timeline_table = Table {
        name: "timeline",
        columns: vec![
            (
                "t_start_s",
                Column::F64(bins.iter().map(|b| secs(b.0)).collect()),
            ),
            (
                "t_end_s",
                Column::F64(bins.iter().map(|b| secs(b.1)).collect()),
            ),
            ("switch_backplane_w", Column::F64(vec![bp_w; bins.len()])),
            ("switch_ports_w", Column::F64(sw_w.clone())),
            ("nic_ports_w", Column::F64(nic_w.clone())),
            (
                "total_w",
                Column::F64(sw_w.iter().zip(&nic_w).map(|(a, b)| bp_w + a + b).collect()),
            ),
        ],
    };

    // Idle histogram in long form, non-empty bins only.
    // Bin edges in seconds; bin 0 starts at 0 and the last bin is open-ended.
    let bins = links.bins();
    let edge_s: Vec<f64> = (0..=bins)
        .map(|b| match b {
            0 => 0.0,
            b if b == bins => f64::INFINITY,
            b => links.bin_lo_ps(b) / PS_PER_S as f64,
        })
        .collect();
    let h = &links.hist;
    let hist_table = Table {
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
    };

    let (mut t_link, mut t_thr, mut t_count, mut t_total) = (vec![], vec![], vec![], vec![]);
    let t = links.thresholds_ps.len();
    for (i, (count, total)) in links.over.iter().enumerate() {
        t_link.push((i / t) as u64);
        t_thr.push(secs(links.thresholds_ps[i % t]));
        t_count.push(*count);
        t_total.push(secs(*total));
    }
    let thr_table = Table {
        name: "idle_thresholds",
        columns: vec![
            ("link_id", Column::U64(t_link)),
            ("threshold_s", Column::F64(t_thr)),
            ("count", Column::U64(t_count)),
            ("total_s", Column::F64(t_total)),
        ],
    };

    let r = &out.ranks;
    let ranks_table = Table {
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
            ("sends", Column::U64(r.iter().map(|x| x.sends).collect())),
            (
                "bytes_sent",
                Column::U64(r.iter().map(|x| x.bytes_sent).collect()),
            ),
        ],
    };

    let mut completion = vec![0u64; jobs.len()];
    for x in r {
        completion[x.job as usize] = completion[x.job as usize].max(x.finish_ps);
    }
    let jobs_json: Vec<serde_json::Value> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            json!({
                "name": j.name,
                "ranks": j.ranks,
                "nodes": j.nodes,
                "start_s": secs(j.start_ps),
                "completion_s": secs(completion[i]),
                "runtime_s": secs(completion[i] - j.start_ps),
            })
        })
        .collect();
    let jobs_table = Table {
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
                        .zip(&completion)
                        .map(|(j, c)| secs(c - j.start_ps))
                        .collect(),
                ),
            ),
        ],
    };

    let lat = &out.latency;
    let delivered = fabric.packets_delivered.max(1) as f64;
    let wakes: u64 = power.iter().map(|p| p.wakes).sum();
    let wake_delay_ps: u64 = power.iter().map(|p| p.wake_delay_ps).sum();
    let summary = json!({
        "tracewatt_version": env!("CARGO_PKG_VERSION"),
        "seed": config.seed,
        "makespan_s": makespan_s,
        "energy_j": {
            "switch_backplanes": backplane_j,
            "switch_ports": ports_j,
            "nic_ports": nic_j,
            "total": total_j,
        },
        "avg_power_w": {
            "switch_backplanes": avg(backplane_j),
            "switch_ports": avg(ports_j),
            "nic_ports": avg(nic_j),
            "total": avg(total_j),
        },
        "links": {
            "wakes": wakes,
            "wake_delay_s": secs(wake_delay_ps),
            "lpi_fraction": if makespan_s > 0.0 {
                power.iter().map(|p| secs(p.lpi_ps)).sum::<f64>() / (makespan_s * power.len().max(1) as f64)
            } else { 0.0 },
        },
        "machine": machine,
        "jobs": jobs_json,
        "messages": {
            "count": lat.count,
            "bytes": out.messages_bytes,
            "latency_mean_s": lat.mean_ps() / PS_PER_S as f64,
            "latency_p50_s": secs(lat.quantile_ps(0.5)),
            "latency_p99_s": secs(lat.quantile_ps(0.99)),
            "latency_max_s": secs(lat.max_ps),
        },
        "network": {
            "packets": fabric.packets_delivered,
            "packet_hops": fabric.packet_hops,
            "mean_switch_hops": fabric.switch_hops_delivered as f64 / delivered,
            "packet_latency_mean_s": fabric.packet_latency_sum_ps as f64 / delivered / PS_PER_S as f64,
            "packet_latency_max_s": secs(fabric.packet_latency_max_ps),
        },
        "events": out.events,
        "config": config.resolved_json(),
    });
    Results {
        summary,
        tables: vec![
            links_table,
            hist_table,
            thr_table,
            ranks_table,
            jobs_table,
            switches_table,
            timeline_table,
        ],
    }
}
