//! Cores and how MPI waits on them (research.md section 4, low-power MPI waiting): each rank
//! runs on a core whose power follows what the rank does — computing, working inside MPI,
//! waiting for a message, idle — and a wait follows the wait policy:
//!
//! - `spin`: poll for the whole wait (active power; the baseline);
//! - `block` / `mwait`: two-phase — poll for `threshold`, then, if the rank has no send pending
//!   (pending sends would stall), enter a low-power wait: `enter` at active power (the system
//!   call path for `block`, next to nothing for `mwait`), then low power until the message
//!   comes; leaving takes `wake` at active power and delays the rank's continuation. A message
//!   that comes during the entry ends the wait when the entry ends: the core never slept.
//!
//! The wake delay is real simulated time: the engine asks [`PowerModel::wake_at`] when a waiting
//! rank's wait is over and continues it then.

use crate::model::{Account, Activity, EnergyRow, PowerModel, Signals};
use crate::timeline::Timeline;
use tracewatt_core::time::to_seconds;
use tracewatt_core::{Column, Ps, Table};

/// How a rank waits for MPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitPolicy {
    Spin,
    Block,
    Mwait,
}

/// The wait policy's timing and the per-core powers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreParams {
    pub policy: WaitPolicy,
    /// Spin this long before a low-power wait.
    pub threshold_ps: Ps,
    /// Entering the low-power wait, at active power.
    pub enter_ps: Ps,
    /// Leaving it, at active power; delays the rank.
    pub wake_ps: Ps,
    /// Core power computing (and working inside MPI), spinning, in the low-power wait, idle.
    pub compute_w: f64,
    pub spin_w: f64,
    pub low_w: f64,
    pub idle_w: f64,
}

/// Where a rank runs: its job, its rank in the job, its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreOf {
    pub job: u32,
    pub rank: u32,
    pub node: u32,
}

/// Time per state of one core.
#[derive(Debug, Clone, Copy, Default)]
struct Times {
    compute: Ps,
    mpi: Ps,
    spin: Ps,
    low: Ps,
    /// Entering and leaving low-power waits (active power).
    transition: Ps,
    /// Copying intra-node messages in while waiting (active power).
    copy: Ps,
    idle: Ps,
}

#[derive(Debug, Clone, Copy)]
struct Core {
    activity: Activity,
    since: Ps,
    /// The rank had a send pending when its current wait began.
    sends_pending: bool,
    /// When the current wait's messages came (`wake_at` was asked), if they have.
    woken_at: Option<Ps>,
    times: Times,
    low_waits: u64,
    wake_delay_ps: Ps,
}

/// The cores of every rank.
#[derive(Debug)]
pub struct CorePower {
    params: CoreParams,
    cores: Vec<Core>,
    /// Intra-node copies into each rank not yet accounted: [start, end).
    copies: Vec<Vec<(Ps, Ps)>>,
    of: Vec<CoreOf>,
    job_names: Vec<String>,
    timeline: Timeline,
    first_series: usize,
}

impl CorePower {
    /// One core per rank (`of[r]` says where global rank `r` runs); the timeline has one series.
    pub fn new(
        params: CoreParams,
        of: Vec<CoreOf>,
        job_names: Vec<String>,
        timeline: Timeline,
    ) -> Self {
        let idle = Core {
            activity: Activity::Idle,
            since: 0,
            sends_pending: false,
            woken_at: None,
            times: Times::default(),
            low_waits: 0,
            wake_delay_ps: 0,
        };
        Self {
            params,
            cores: vec![idle; of.len()],
            copies: vec![Vec::new(); of.len()],
            of,
            job_names,
            timeline,
            first_series: 0,
        }
    }

    /// When a wait that began at `start` and whose messages came at `woken` lets the rank go on,
    /// and whether it went into low power: (low-power start, continue at).
    fn wait_course(&self, c: &Core, woken: Ps) -> Option<(Ps, Ps)> {
        let p = &self.params;
        if p.policy == WaitPolicy::Spin || c.sends_pending {
            return None;
        }
        let spin_end = c.since + p.threshold_ps;
        if woken <= spin_end {
            return None;
        }
        let low_start = spin_end + p.enter_ps;
        if woken <= low_start {
            // Its notice came while the core was entering: select() finds the pipe readable
            // (MWAIT's monitor is already triggered) and returns when the entry ends, without
            // sleeping, so there is nothing to wake from.
            return Some((low_start, low_start));
        }
        Some((low_start, woken + p.wake_ps))
    }

    /// Time in [from, to) that rank `r`'s core spends copying messages in.
    fn copy_overlap(&self, r: usize, from: Ps, to: Ps) -> Ps {
        if self.copies[r].is_empty() || to <= from {
            return 0;
        }
        // Copies into one rank overlap each other when messages arrive together: count the
        // union, not the sum.
        let mut spans: Vec<(Ps, Ps)> = self.copies[r]
            .iter()
            .map(|cp| (cp.0.max(from), cp.1.min(to)))
            .filter(|cp| cp.1 > cp.0)
            .collect();
        spans.sort_unstable();
        let (mut total, mut reach) = (0, from);
        for (s, e) in spans {
            let s = s.max(reach);
            if e > s {
                total += e - s;
                reach = e;
            }
        }
        total
    }

    /// Accounts core `r`'s current activity from its start to `at`.
    fn close(&mut self, r: usize, at: Ps) {
        let c = self.cores[r];
        let p = self.params;
        let mut t = c.times;
        let span = at.saturating_sub(c.since);
        let w = match c.activity {
            Activity::Compute => {
                t.compute += span;
                p.compute_w * to_seconds(span)
            }
            Activity::Mpi => {
                t.mpi += span;
                p.compute_w * to_seconds(span)
            }
            Activity::Idle | Activity::Done => {
                t.idle += span;
                p.idle_w * to_seconds(span)
            }
            Activity::Wait { .. } => {
                let woken = c.woken_at.unwrap_or(at).min(at);
                // (spin, low power, entering/leaving) and where the low-power part lies.
                let (spin, low, transition, low_at) = match self.wait_course(&c, woken) {
                    None => (span, 0, 0, at),
                    Some((low_start, _)) => {
                        if woken > low_start {
                            self.cores[r].low_waits += 1;
                        }
                        let spin = p.threshold_ps.min(span);
                        let low = woken.max(low_start).min(at).saturating_sub(low_start);
                        (spin, low, span.saturating_sub(spin + low), low_start)
                    }
                };
                // Copying a message in, the core works instead of spinning or sleeping.
                let copy_spin = self.copy_overlap(r, c.since, c.since + spin);
                let copy_low = self.copy_overlap(r, low_at, low_at + low);
                let copying = copy_spin + copy_low;
                let (spin, low) = (spin - copy_spin, low - copy_low);
                t.spin += spin;
                t.low += low;
                t.transition += transition;
                t.copy += copying;
                p.spin_w * to_seconds(spin)
                    + p.low_w * to_seconds(low)
                    + p.compute_w * to_seconds(transition + copying)
            }
        };
        // Copies that ended by now are accounted (or fell outside any wait).
        if !self.copies[r].is_empty() {
            self.copies[r].retain(|cp| cp.1 > at);
        }
        self.cores[r].times = t;
        if span > 0 {
            self.timeline.add(0, c.since, at, w / to_seconds(span));
        }
    }
}

impl PowerModel for CorePower {
    fn signals(&self) -> Signals {
        Signals {
            ranks: true,
            wakes: self.params.policy != WaitPolicy::Spin,
            ..Signals::default()
        }
    }

    fn series(&self) -> &'static [&'static str] {
        &["cores_w"]
    }

    fn set_series(&mut self, first: usize) {
        self.first_series = first;
    }

    fn on_rank(&mut self, rank: u32, _node: u32, activity: Activity, at: Ps) {
        let r = rank as usize;
        self.close(r, at);
        let c = &mut self.cores[r];
        c.activity = activity;
        c.since = at;
        c.woken_at = None;
        c.sends_pending = matches!(
            activity,
            Activity::Wait {
                sends_pending: true
            }
        );
    }

    fn on_copy(&mut self, rank: u32, start: Ps, end: Ps) {
        self.copies[rank as usize].push((start, end));
    }

    fn wake_at(&mut self, rank: u32, now: Ps) -> Ps {
        let r = rank as usize;
        let c = self.cores[r];
        if !matches!(c.activity, Activity::Wait { .. }) {
            return now;
        }
        self.cores[r].woken_at = Some(now);
        match self.wait_course(&c, now) {
            None => now,
            Some((_, go_on)) => {
                self.cores[r].wake_delay_ps += go_on - now;
                go_on
            }
        }
    }

    fn finish(mut self: Box<Self>, end: Ps, account: &mut Account) {
        for r in 0..self.cores.len() {
            self.close(r, end);
        }
        let p = self.params;
        let energy = |t: &Times| {
            p.compute_w * to_seconds(t.compute + t.mpi + t.transition + t.copy)
                + p.spin_w * to_seconds(t.spin)
                + p.low_w * to_seconds(t.low)
                + p.idle_w * to_seconds(t.idle)
        };
        for (r, c) in self.cores.iter().enumerate() {
            let t = &c.times;
            let mut states = vec![
                ("compute_s", t.compute),
                ("mpi_s", t.mpi),
                ("spin_s", t.spin),
                ("transition_s", t.transition),
                ("copy_s", t.copy),
                ("idle_s", t.idle),
            ];
            match p.policy {
                WaitPolicy::Block => states.push(("block_s", t.low)),
                WaitPolicy::Mwait => states.push(("mwait_s", t.low)),
                WaitPolicy::Spin => {}
            }
            account.rows.push(EnergyRow {
                component: "core",
                group: "cores",
                id: r as u64,
                node: Some(self.of[r].node),
                switch: None,
                energy_j: energy(t),
                states,
            });
        }
        let cs = &self.cores;
        let secs =
            |f: fn(&Times) -> Ps| Column::F64(cs.iter().map(|c| to_seconds(f(&c.times))).collect());
        let low_s = |want: WaitPolicy| {
            Column::F64(
                cs.iter()
                    .map(|c| {
                        if p.policy == want {
                            to_seconds(c.times.low)
                        } else {
                            0.0
                        }
                    })
                    .collect(),
            )
        };
        account.tables.push(Table {
            name: "cores",
            columns: vec![
                (
                    "job",
                    Column::Str(
                        self.of
                            .iter()
                            .map(|o| self.job_names[o.job as usize].clone())
                            .collect(),
                    ),
                ),
                (
                    "rank",
                    Column::U64(self.of.iter().map(|o| o.rank as u64).collect()),
                ),
                (
                    "node",
                    Column::U64(self.of.iter().map(|o| o.node as u64).collect()),
                ),
                ("compute_s", secs(|t| t.compute)),
                ("mpi_s", secs(|t| t.mpi)),
                ("spin_s", secs(|t| t.spin)),
                ("block_s", low_s(WaitPolicy::Block)),
                ("mwait_s", low_s(WaitPolicy::Mwait)),
                ("transition_s", secs(|t| t.transition)),
                ("copy_s", secs(|t| t.copy)),
                ("idle_s", secs(|t| t.idle)),
                (
                    "low_power_waits",
                    Column::U64(cs.iter().map(|c| c.low_waits).collect()),
                ),
                (
                    "wake_delay_s",
                    Column::F64(cs.iter().map(|c| to_seconds(c.wake_delay_ps)).collect()),
                ),
                (
                    "energy_j",
                    Column::F64(cs.iter().map(|c| energy(&c.times)).collect()),
                ),
            ],
        });
        account
            .timeline
            .absorb(self.first_series, self.timeline, end);
    }
}

/// Each node's base power: everything of a node but its cores and NIC (board, memory
/// controller, fans, disks, power supply losses), constant while the machine runs.
#[derive(Debug)]
pub struct NodeBase {
    base_w: Vec<f64>,
    timeline: Timeline,
    first_series: usize,
}

impl NodeBase {
    /// `base_w[n]`: node `n`'s base power; the timeline has one series.
    pub fn new(base_w: Vec<f64>, timeline: Timeline) -> Self {
        Self {
            base_w,
            timeline,
            first_series: 0,
        }
    }
}

impl PowerModel for NodeBase {
    fn signals(&self) -> Signals {
        Signals::default()
    }

    fn series(&self) -> &'static [&'static str] {
        &["node_base_w"]
    }

    fn set_series(&mut self, first: usize) {
        self.first_series = first;
    }

    fn finish(mut self: Box<Self>, end: Ps, account: &mut Account) {
        let s = to_seconds(end);
        for (n, w) in self.base_w.iter().enumerate() {
            account.rows.push(EnergyRow::of_node(
                "node_base",
                "node_base",
                n as u32,
                w * s,
                vec![("on_s", end)],
            ));
        }
        let total: f64 = self.base_w.iter().sum();
        self.timeline.add(0, 0, end, total);
        account
            .timeline
            .absorb(self.first_series, self.timeline, end);
    }
}
