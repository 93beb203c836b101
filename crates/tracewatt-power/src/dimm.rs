//! DIMMs under memory-hotplug policies (docs/references.md section 5, Ishihara et al.): each node has
//! `channels x dimms_per_channel` DIMMs drawing `standby_w` each while on. The memory a node
//! uses over time comes from its job's profile (idle nodes use `idle_gib`).
//!
//! - `always_on`: every DIMM on (the baseline).
//! - `bandwidth_preserving` (the paper's): the first DIMM of every channel is always on; the
//!   others start off, all come on together when free memory in the first DIMMs falls to
//!   `online_threshold` (and the node's ranks each stall `transition` once), and stay on until the
//!   job exits; they go off again then if the free memory of the whole node is at least
//!   `offline_threshold`. No channel is ever lost.
//! - `ideal`: exactly the DIMMs the memory in use needs are on (at least one), whatever the
//!   channels: the lower bound, losing channel bandwidth when fewer than `channels` are on.
//!
//! With `bandwidth_slowdown`, `ideal`'s compute slows while channels are off. Transitions of
//! `ideal` and the exit transition cost no time (the paper's policy pays only its
//! online transition inside the job).

use crate::model::{Account, Activity, EnergyRow, PowerModel, Signals};
use crate::timeline::Timeline;
use tracewatt_core::time::to_seconds;
use tracewatt_core::{Column, Ps, Table};

/// The DIMM policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimmPolicy {
    AlwaysOn,
    BandwidthPreserving,
    Ideal,
}

/// The most memory channels per node: the limit of `[power.dimms] channels` and of the job-log
/// analysis's alike (far beyond any machine).
pub const MAX_CHANNELS: u32 = 256;
/// The most DIMMs per channel (as `MAX_CHANNELS`).
pub const MAX_DIMMS_PER_CHANNEL: u32 = 256;
/// The smallest and largest capacity of one DIMM, GiB: 1 KiB and 1 PiB (as `MAX_CHANNELS`; with
/// them a node's capacity and the DIMMs a memory needs stay finite and exact).
pub const MIN_DIMM_GIB: f64 = 1.0 / 1_048_576.0;
pub const MAX_DIMM_GIB: f64 = 1_048_576.0;
/// `MIN_DIMM_GIB` to `MAX_DIMM_GIB` as error messages state it.
pub const DIMM_GIB_RANGE: &str = "2^-20 (1 KiB) to 2^20 (1 PiB)";

/// A node's memory: `channels x dimms_per_channel` DIMMs of `dimm_gib` GiB each. Its *first
/// DIMMs* are DIMM 0 of every channel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DimmLayout {
    pub channels: u32,
    pub dimms_per_channel: u32,
    pub dimm_gib: f64,
}

/// The DIMMs a node keeps on for a memory in use that lasts (as a job log gives a job's memory:
/// one figure, its peak, for its whole run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DimmsOn {
    /// The first DIMMs hold the memory.
    pub fits_first: bool,
    /// Under `bandwidth_preserving`: the first DIMMs if they hold the memory, else all.
    pub bandwidth_preserving: u32,
    /// Under `ideal`: the DIMMs the memory fills, at least one, at most all.
    pub ideal: u32,
    /// The memory is more than all the node's DIMMs hold.
    pub over: bool,
}

impl DimmLayout {
    /// Whether every field is within its limit (`MAX_CHANNELS`, `MAX_DIMMS_PER_CHANNEL`,
    /// `MIN_DIMM_GIB` to `MAX_DIMM_GIB`).
    pub fn within_limits(&self) -> bool {
        (1..=MAX_CHANNELS).contains(&self.channels)
            && (1..=MAX_DIMMS_PER_CHANNEL).contains(&self.dimms_per_channel)
            && (MIN_DIMM_GIB..=MAX_DIMM_GIB).contains(&self.dimm_gib)
    }

    pub fn total(&self) -> u32 {
        self.channels * self.dimms_per_channel
    }

    /// What the first DIMMs hold, GiB.
    pub fn first_gib(&self) -> f64 {
        f64::from(self.channels) * self.dimm_gib
    }

    /// What all the DIMMs hold, GiB.
    pub fn capacity_gib(&self) -> f64 {
        f64::from(self.total()) * self.dimm_gib
    }

    /// The DIMMs `gib` in use fills, at least one; more than `total()` when the node cannot
    /// hold it.
    fn filled(&self, gib: f64) -> u32 {
        ((gib / self.dimm_gib).ceil() as u32).max(1)
    }

    /// DIMMs `ideal` keeps on for `gib` in use.
    pub fn ideal(&self, gib: f64) -> u32 {
        self.filled(gib).min(self.total())
    }

    /// The DIMMs on for `gib` in use throughout a job, as the job-log analysis prices it:
    /// `ideal` as simulated; `bandwidth_preserving` by whether the first DIMMs hold it, where
    /// the simulated policy (`DimmPower`) brings the other DIMMs on once the first DIMMs' free
    /// memory falls to `online_threshold_gib`.
    pub fn on(&self, gib: f64) -> DimmsOn {
        let fits_first = gib <= self.first_gib();
        DimmsOn {
            fits_first,
            bandwidth_preserving: if fits_first {
                self.channels
            } else {
                self.total()
            },
            ideal: self.ideal(gib),
            over: self.filled(gib) > self.total(),
        }
    }
}

/// The memory layout, power and policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DimmParams {
    pub policy: DimmPolicy,
    pub layout: DimmLayout,
    pub standby_w: f64,
    pub online_threshold_gib: f64,
    pub offline_threshold_gib: f64,
    pub transition_ps: Ps,
    /// Memory in use on a node that runs no job.
    pub idle_gib: f64,
    /// `ideal`: compute takes `1 + bandwidth_slowdown x (channels off / channels)` times as long
    /// while fewer DIMMs than channels are on (0: no effect).
    pub bandwidth_slowdown: f64,
}

/// A node's job: when it starts, its memory profile (time after the start, GiB in use from
/// then), and its ranks there.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeJob {
    pub start_ps: Ps,
    pub profile: Vec<(Ps, f64)>,
    pub ranks: u32,
}

#[derive(Debug, Clone, Default)]
struct NodeDimms {
    job: Option<NodeJob>,
    /// Ranks of the job not finished yet.
    running: u32,
    /// When the job exited, once it has.
    exit_ps: Option<Ps>,
    /// When `bandwidth_preserving` brought the other DIMMs on during the job.
    online_ps: Option<Ps>,
    /// Ranks that have paid the online stall.
    stalled: Vec<bool>,
}

/// The DIMMs of every node.
#[derive(Debug)]
pub struct DimmPower {
    params: DimmParams,
    nodes: Vec<NodeDimms>,
    /// Each global rank's node and its index among the node's ranks.
    rank_at: Vec<(u32, u32)>,
    timeline: Timeline,
    first_series: usize,
}

/// Per node results, filled at the end.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    /// DIMM-seconds on (as picosecond counts summed over DIMMs).
    on_ps: u128,
    transitions: u64,
    /// Time with fewer channels than the node has.
    fewer_channels_ps: Ps,
    /// Channel-seconds lost.
    channels_lost_ps: u128,
}

impl DimmPower {
    /// `jobs[n]`: node `n`'s job, if any; `rank_node[r]`: global rank `r`'s node. The timeline
    /// has one series.
    pub fn new(
        params: DimmParams,
        jobs: Vec<Option<NodeJob>>,
        rank_node: &[u32],
        timeline: Timeline,
    ) -> Self {
        let mut nodes: Vec<NodeDimms> = jobs
            .into_iter()
            .map(|job| NodeDimms {
                running: job.as_ref().map_or(0, |j| j.ranks),
                stalled: vec![false; job.as_ref().map_or(0, |j| j.ranks as usize)],
                job,
                ..NodeDimms::default()
            })
            .collect();
        let mut seen = vec![0u32; nodes.len()];
        let rank_at = rank_node
            .iter()
            .map(|n| {
                let k = seen[*n as usize];
                seen[*n as usize] += 1;
                (*n, k)
            })
            .collect();
        for n in &mut nodes {
            if let Some(j) = &mut n.job {
                j.profile.sort_by_key(|p| p.0);
            }
        }
        let mut model = Self {
            params,
            nodes,
            rank_at,
            timeline,
            first_series: 0,
        };
        for i in 0..model.nodes.len() {
            model.nodes[i].online_ps = model.online_time(i);
        }
        model
    }

    /// When `bandwidth_preserving` brings node `i`'s other DIMMs on: the first profile point at
    /// which the first DIMMs' free memory is at most the online threshold.
    fn online_time(&self, i: usize) -> Option<Ps> {
        let p = &self.params;
        if p.policy != DimmPolicy::BandwidthPreserving || p.layout.dimms_per_channel < 2 {
            return None;
        }
        let first = p.layout.first_gib();
        let j = self.nodes[i].job.as_ref()?;
        j.profile
            .iter()
            .find(|(_, gib)| first - gib <= p.online_threshold_gib)
            .map(|(at, _)| j.start_ps + at)
    }

    /// Memory node `i` uses over [0, end): (from, to, GiB) pieces.
    fn usage(&self, i: usize, end: Ps) -> Vec<(Ps, Ps, f64)> {
        let idle = self.params.idle_gib;
        let n = &self.nodes[i];
        let Some(j) = &n.job else {
            return vec![(0, end, idle)];
        };
        let exit = n.exit_ps.unwrap_or(end).min(end);
        let mut out = vec![(0, j.start_ps.min(exit), idle)];
        let mut t = j.start_ps.min(exit);
        let mut gib = j
            .profile
            .first()
            .map_or(idle, |p| if p.0 == 0 { p.1 } else { idle });
        for (at, g) in &j.profile {
            let at = (j.start_ps + at).min(exit);
            out.push((t, at, gib));
            t = at;
            gib = *g;
        }
        out.push((t, exit, gib));
        out.push((exit, end, idle));
        out.retain(|p| p.1 > p.0);
        out
    }

    fn tally(&mut self, i: usize, end: Ps) -> Tally {
        let p = self.params;
        let layout = p.layout;
        let total = layout.total();
        let mut t = Tally::default();
        let mut add = |timeline: &mut Timeline, from: Ps, to: Ps, on: u32| {
            t.on_ps += (to - from) as u128 * on as u128;
            if on < layout.channels {
                t.fewer_channels_ps += to - from;
                t.channels_lost_ps += (to - from) as u128 * (layout.channels - on) as u128;
            }
            timeline.add(0, from, to, on as f64 * p.standby_w);
        };
        match p.policy {
            DimmPolicy::AlwaysOn => add(&mut self.timeline, 0, end, total),
            DimmPolicy::Ideal => {
                let mut last = None;
                for (from, to, gib) in self.usage(i, end) {
                    let on = layout.ideal(gib);
                    if last.is_some_and(|l| l != on) {
                        t.transitions += 1;
                    }
                    last = Some(on);
                    add(&mut self.timeline, from, to, on);
                }
            }
            DimmPolicy::BandwidthPreserving => {
                let n = &self.nodes[i];
                let first = layout.channels;
                match n.online_ps.filter(|t| *t < end) {
                    None => add(&mut self.timeline, 0, end, first),
                    Some(on_at) => {
                        // On from the online time until the job exits; off again then if the
                        // node's free memory allows (the idle node's use).
                        let exit = n.exit_ps.unwrap_or(end).min(end);
                        let free = layout.capacity_gib() - p.idle_gib;
                        let off = (free >= p.offline_threshold_gib && exit < end).then_some(exit);
                        add(&mut self.timeline, 0, on_at, first);
                        add(&mut self.timeline, on_at, off.unwrap_or(end), total);
                        t.transitions += 1;
                        if let Some(off) = off {
                            add(&mut self.timeline, off, end, first);
                            t.transitions += 1;
                        }
                    }
                }
            }
        }
        t
    }
}

impl PowerModel for DimmPower {
    fn signals(&self) -> Signals {
        Signals {
            // Only the policies that switch DIMMs need the jobs' exits.
            ranks: self.params.policy != DimmPolicy::AlwaysOn,
            wakes: self.params.policy == DimmPolicy::BandwidthPreserving
                && self.params.transition_ps > 0,
            computes: self.params.policy == DimmPolicy::Ideal
                && self.params.bandwidth_slowdown > 0.0,
            ..Signals::default()
        }
    }

    fn series(&self) -> &'static [&'static str] {
        &["dimms_w"]
    }

    fn set_series(&mut self, first: usize) {
        self.first_series = first;
    }

    fn on_rank(&mut self, _rank: u32, node: u32, activity: Activity, at: Ps) {
        if activity == Activity::Done {
            let n = &mut self.nodes[node as usize];
            n.running = n.running.saturating_sub(1);
            if n.running == 0 {
                n.exit_ps = Some(at);
            }
        }
    }

    fn compute_ps(&mut self, rank: u32, now: Ps, ps: Ps) -> Ps {
        // The channels on when the compute starts set its pace (profiles change rarely next to
        // compute phases).
        let (node, _) = self.rank_at[rank as usize];
        let p = self.params;
        let gib = self
            .usage(node as usize, Ps::MAX)
            .iter()
            .find(|u| u.0 <= now && now < u.1)
            .map_or(p.idle_gib, |u| u.2);
        let channels = p.layout.channels;
        let on = p.layout.ideal(gib).min(channels);
        let off = f64::from(channels - on) / f64::from(channels);
        (ps as f64 * (1.0 + p.bandwidth_slowdown * off)).round() as Ps
    }

    fn wake_at(&mut self, rank: u32, _ready: Ps, now: Ps) -> Ps {
        let (node, k) = self.rank_at[rank as usize];
        let n = &mut self.nodes[node as usize];
        match n.online_ps {
            Some(t) if t <= now && !n.stalled[k as usize] => {
                n.stalled[k as usize] = true;
                now + self.params.transition_ps
            }
            _ => now,
        }
    }

    fn finish(mut self: Box<Self>, end: Ps, account: &mut Account) {
        let p = self.params;
        let tallies: Vec<Tally> = (0..self.nodes.len()).map(|i| self.tally(i, end)).collect();
        let energy = |t: &Tally| p.standby_w * t.on_ps as f64 * 1e-12;
        let total = p.layout.total() as u128;
        for (i, t) in tallies.iter().enumerate() {
            let on = (t.on_ps / total.max(1)) as Ps;
            account.rows.push(EnergyRow::of_node(
                "dimms",
                "dimms",
                i as u32,
                energy(t),
                vec![("dimm_on_s", on), ("dimm_off_s", end.saturating_sub(on))],
            ));
        }
        let ts = &tallies;
        let end_s = to_seconds(end);
        account.tables.push(Table {
            name: "dimms",
            columns: vec![
                ("node", Column::U64((0..ts.len() as u64).collect())),
                ("dimms", Column::U64(vec![total as u64; ts.len()])),
                (
                    "dimm_on_s",
                    Column::F64(ts.iter().map(|t| t.on_ps as f64 * 1e-12).collect()),
                ),
                (
                    "dimm_off_s",
                    Column::F64(
                        ts.iter()
                            .map(|t| total as f64 * end_s - t.on_ps as f64 * 1e-12)
                            .collect(),
                    ),
                ),
                (
                    "transitions",
                    Column::U64(ts.iter().map(|t| t.transitions).collect()),
                ),
                (
                    "fewer_channels_s",
                    Column::F64(ts.iter().map(|t| to_seconds(t.fewer_channels_ps)).collect()),
                ),
                (
                    "channels_lost_s",
                    Column::F64(
                        ts.iter()
                            .map(|t| t.channels_lost_ps as f64 * 1e-12)
                            .collect(),
                    ),
                ),
                ("energy_j", Column::F64(ts.iter().map(energy).collect())),
            ],
        });
        account
            .timeline
            .absorb(self.first_series, self.timeline, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 channels x 2 DIMMs of 4 GiB: the first DIMMs hold 8 GiB, all four 16 GiB.
    const NODE: DimmLayout = DimmLayout {
        channels: 2,
        dimms_per_channel: 2,
        dimm_gib: 4.0,
    };

    #[test]
    fn each_policy_keeps_on_the_dimms_its_rule_gives_for_the_memory_in_use() {
        let on = |gib, fits_first, bandwidth_preserving, ideal, over| {
            let want = DimmsOn {
                fits_first,
                bandwidth_preserving,
                ideal,
                over,
            };
            assert_eq!(NODE.on(gib), want, "{gib} GiB");
        };
        // Nothing in use still keeps one DIMM on under ideal.
        on(0.0, true, 2, 1, false);
        on(5.0, true, 2, 2, false);
        // Exactly the first DIMMs' 8 GiB fits them.
        on(8.0, true, 2, 2, false);
        on(8.5, false, 4, 3, false);
        // Exactly the node's 16 GiB is not over it; 20 GiB is, with every DIMM on.
        on(16.0, false, 4, 4, false);
        on(20.0, false, 4, 4, true);
        assert_eq!((NODE.first_gib(), NODE.capacity_gib()), (8.0, 16.0));
    }

    #[test]
    fn the_limits_hold_at_their_ends_and_not_beyond() {
        let with = |channels, dimms_per_channel, dimm_gib| DimmLayout {
            channels,
            dimms_per_channel,
            dimm_gib,
        };
        assert!(with(1, 1, 1.0 / 1_048_576.0).within_limits());
        assert!(with(256, 256, 1_048_576.0).within_limits());
        for outside in [
            with(0, 2, 4.0),
            with(257, 2, 4.0),
            with(4, 0, 4.0),
            with(4, 257, 4.0),
            with(4, 2, 1.0 / 2_097_152.0),
            with(4, 2, 2_097_152.0),
            with(4, 2, f64::NAN),
        ] {
            assert!(!outside.within_limits(), "{outside:?}");
        }
    }
}
