//! Cores and how MPI waits on them (docs/references.md section 4, low-power MPI waiting): each rank
//! runs on a core whose power follows what the rank does — computing, working inside MPI,
//! waiting for a message, idle — and a wait follows the wait policy:
//!
//! - `spin`: poll for the whole wait (active power; the baseline);
//! - `block` / `mwait`: two-phase — poll for `threshold`, then, if the rank has no send pending
//!   (pending sends would stall), enter a low-power wait: `enter` at active power (the system
//!   call path for `block`, next to nothing for `mwait`), then low power until the message
//!   comes; leaving takes `wake` plus the C-state's exit latency at active power and delays the
//!   rank's continuation. A message that comes during the entry ends the wait when the entry
//!   ends: the core never slept.
//!
//! The C-state of a low-power wait is fixed (MWAIT's hint; `block` for comparison) or chosen by
//! a model of Linux's `menu` idle governor ([`Governor::Menu`]).
//!
//! - `oracle`: the bound for the wait policies. It knows each wait's length when the wait ends
//!   and spends it in the state that costs least: spinning, or from the wait's start in the
//!   C-state whose low power over the wait, less `enter` + `wake` + its exit latency at active
//!   power, is lowest; the wake starts ahead, so the rank goes on when its messages come, with
//!   no delay. It keeps the rule that a rank with a send pending does not sleep.
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
    Oracle,
}

/// A core's idle states, shallowest first: C1, C1E, C3, C6.
pub const C_STATES: usize = 4;
/// The `cores` table's columns of time in, and low-power waits in, each C-state.
const STATE_S: [&str; C_STATES] = ["c1_s", "c1e_s", "c3_s", "c6_s"];
const STATE_WAITS: [&str; C_STATES] = ["c1_waits", "c1e_waits", "c3_waits", "c6_waits"];

/// One idle state of a core.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CState {
    /// Leaving it, on top of the wait's own wake cost (at active power, delaying the rank).
    pub exit_ps: Ps,
    /// The menu governor picks it only for an idle period predicted at least this long.
    pub target_residency_ps: Ps,
    pub power_w: f64,
}

/// Which C-state a low-power wait sleeps in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Governor {
    /// Always this one (an index into the states).
    Fixed(usize),
    /// Linux's `menu` governor with no timer pending: the deepest state whose target residency
    /// is at most the "typical interval" of the core's last 8 idle periods, C6 when they have
    /// none (see [`IdleHistory::typical_ns`]), C1 when even C1's is too long.
    Menu,
}

/// The wait policy's timing and the per-core powers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreParams {
    pub policy: WaitPolicy,
    /// Spin this long before a low-power wait.
    pub threshold_ps: Ps,
    /// Entering the low-power wait, at active power.
    pub enter_ps: Ps,
    /// Leaving it, at active power, besides the C-state's exit latency; delays the rank.
    pub wake_ps: Ps,
    pub governor: Governor,
    pub states: [CState; C_STATES],
    /// Core power computing (and working inside MPI), spinning, idle.
    pub compute_w: f64,
    pub spin_w: f64,
    pub idle_w: f64,
}

/// Idle periods the menu governor remembers.
const HISTORY: usize = 8;
/// Below this variance (20 us standard deviation) the idle periods are regular, ns^2.
const REGULAR_VARIANCE_NS2: u128 = 400 * 1_000_000;

/// A core's last [`HISTORY`] idle periods (ns), as the menu governor keeps them.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdleHistory {
    ns: [u64; HISTORY],
    len: usize,
    next: usize,
}

impl IdleHistory {
    pub fn push(&mut self, idle_ps: Ps) {
        self.ns[self.next] = idle_ps / 1000;
        self.next = (self.next + 1) % HISTORY;
        self.len = (self.len + 1).min(HISTORY);
    }

    /// The menu governor's "typical interval" (Linux, Documentation/admin-guide/pm/cpuidle.rst):
    /// the mean of the remembered periods when their variance is under 400 us^2 or, with at
    /// least 6 of the 8 counted, the mean exceeds 6 standard deviations; otherwise the longest
    /// are dropped and the test repeated, until too few are left (`None`). Until 8 periods are
    /// seen the test runs on those there are (the kernel counts zeros for the missing ones).
    ///
    /// ```
    /// use tracewatt_power::core::IdleHistory;
    /// let mut h = IdleHistory::default();
    /// assert_eq!(h.typical_ns(), None);
    /// // Seven periods of 100 us and one of 5 ms: the long one is dropped.
    /// for us in [100, 100, 100, 5000, 100, 100, 100, 100] {
    ///     h.push(us * 1_000_000);
    /// }
    /// assert_eq!(h.typical_ns(), Some(100_000));
    /// ```
    pub fn typical_ns(&self) -> Option<u64> {
        let seen = &self.ns[..self.len];
        let mut limit = u64::MAX;
        loop {
            let kept = || seen.iter().copied().filter(|&v| v <= limit);
            let n = kept().count() as u64;
            if n == 0 {
                return None;
            }
            let avg = kept().sum::<u64>() / n;
            let variance = kept()
                .map(|v| u128::from(v.abs_diff(avg)).pow(2))
                .sum::<u128>()
                / u128::from(n);
            let enough = n as usize * 4 >= HISTORY * 3;
            if variance <= REGULAR_VARIANCE_NS2
                || (enough && u128::from(avg).pow(2) > 36 * variance)
            {
                return Some(avg);
            }
            if n as usize * 4 <= HISTORY * 3 {
                return None;
            }
            limit = kept().max().unwrap_or(0).saturating_sub(1);
        }
    }
}

/// The C-state the menu governor picks for `history` (see [`Governor::Menu`]).
fn menu_state(states: &[CState; C_STATES], history: &IdleHistory) -> usize {
    let predicted_ps = history.typical_ns().map(|ns| ns.saturating_mul(1000));
    states
        .iter()
        .rposition(|s| predicted_ps.is_none_or(|p| s.target_residency_ps <= p))
        .unwrap_or(0)
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
    /// In each C-state, in low-power waits.
    low: [Ps; C_STATES],
    /// Entering and leaving low-power waits (active power).
    transition: Ps,
    /// Copying intra-node messages in while waiting (active power).
    copy: Ps,
    /// Processing the message that ended a wait, after it came (active power).
    recv: Ps,
    idle: Ps,
}

#[derive(Debug, Clone, Copy)]
struct Core {
    activity: Activity,
    since: Ps,
    /// The rank had a send pending when its current wait began.
    sends_pending: bool,
    /// When the current wait's messages came (`wake_at` was asked), if they have, and the work
    /// in MPI that follows (the last receive's processing).
    woken_at: Option<Ps>,
    recv_work: Ps,
    times: Times,
    /// The current wait's C-state, should it reach low power.
    cstate: usize,
    history: IdleHistory,
    /// Low-power waits per C-state.
    low_waits: [u64; C_STATES],
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
            recv_work: 0,
            times: Times::default(),
            cstate: 0,
            history: IdleHistory::default(),
            low_waits: [0; C_STATES],
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
        // The oracle's wake is hidden: the rank goes on when its messages come.
        if matches!(p.policy, WaitPolicy::Spin | WaitPolicy::Oracle) || c.sends_pending {
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
        Some((low_start, woken + p.wake_ps + p.states[c.cstate].exit_ps))
    }

    /// The C-state the oracle spends a wait of `wait` in, if any: the one of least energy, its
    /// entry, wake overhead and exit latency at active power and the rest at its power, if that
    /// is below spinning throughout.
    fn oracle_state(&self, c: &Core, wait: Ps) -> Option<usize> {
        let p = &self.params;
        if c.sends_pending {
            return None;
        }
        let mut best = (p.spin_w * wait as f64, None);
        for (s, st) in p.states.iter().enumerate() {
            let transitions = p.enter_ps + p.wake_ps + st.exit_ps;
            let Some(low) = wait.checked_sub(transitions).filter(|&l| l > 0) else {
                continue;
            };
            let e = st.power_w * low as f64 + p.compute_w * transitions as f64;
            if e < best.0 {
                best = (e, Some(s));
            }
        }
        best.1
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
                let recv = c.recv_work.min(at - woken);
                // (spin, low power, entering/leaving) and where the low-power part lies.
                let mut state = c.cstate;
                let course = if p.policy == WaitPolicy::Oracle {
                    self.oracle_state(&c, woken - c.since).map(|s| {
                        state = s;
                        self.cores[r].low_waits[s] += 1;
                        let transitions = p.enter_ps + p.wake_ps + p.states[s].exit_ps;
                        (0, woken - c.since - transitions, c.since + p.enter_ps)
                    })
                } else {
                    self.wait_course(&c, woken).map(|(low_start, _)| {
                        if woken > low_start {
                            self.cores[r].low_waits[c.cstate] += 1;
                            // What the governor observes: the idle period up to the wake.
                            self.cores[r].history.push(woken - low_start);
                        }
                        let spin = p.threshold_ps.min(span);
                        let low = woken.max(low_start).min(at).saturating_sub(low_start);
                        (spin, low, low_start)
                    })
                };
                let (spin, low, transition, low_at) = match course {
                    None => (span - recv, 0, 0, at),
                    Some((spin, low, low_at)) => {
                        (spin, low, span.saturating_sub(spin + low + recv), low_at)
                    }
                };
                // Copying a message in, the core works instead of spinning or sleeping.
                let copy_spin = self.copy_overlap(r, c.since, c.since + spin);
                let copy_low = self.copy_overlap(r, low_at, low_at + low);
                let copying = copy_spin + copy_low;
                let (spin, low) = (spin - copy_spin, low - copy_low);
                t.spin += spin;
                t.low[state] += low;
                t.transition += transition;
                t.copy += copying;
                t.recv += recv;
                p.spin_w * to_seconds(spin)
                    + p.states[state].power_w * to_seconds(low)
                    + p.compute_w * to_seconds(transition + copying + recv)
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
        // Every policy needs `wake_at`: it says when a wait's messages came, which ends the
        // spinning (or low power) and starts the receive's processing.
        Signals {
            ranks: true,
            wakes: true,
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
        let p = &self.params;
        let c = &mut self.cores[r];
        c.activity = activity;
        c.since = at;
        c.woken_at = None;
        c.recv_work = 0;
        c.sends_pending = matches!(
            activity,
            Activity::Wait {
                sends_pending: true
            }
        );
        if matches!(activity, Activity::Wait { .. }) {
            c.cstate = match p.governor {
                Governor::Fixed(s) => s,
                Governor::Menu => menu_state(&p.states, &c.history),
            };
        }
    }

    fn on_copy(&mut self, rank: u32, start: Ps, end: Ps) {
        self.copies[rank as usize].push((start, end));
    }

    fn wake_at(&mut self, rank: u32, ready: Ps, now: Ps) -> Ps {
        let r = rank as usize;
        let c = self.cores[r];
        if !matches!(c.activity, Activity::Wait { .. }) {
            return now;
        }
        // A request done before the wait began is found at its start.
        let ready = ready.clamp(c.since, now);
        self.cores[r].woken_at = Some(ready);
        self.cores[r].recv_work = now - ready;
        match self.wait_course(&c, ready) {
            None => now,
            Some((_, awake)) => {
                // The core wakes, then processes what came.
                let go_on = awake + (now - ready);
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
            p.compute_w * to_seconds(t.compute + t.mpi + t.transition + t.copy + t.recv)
                + p.spin_w * to_seconds(t.spin)
                + (0..C_STATES)
                    .map(|s| p.states[s].power_w * to_seconds(t.low[s]))
                    .sum::<f64>()
                + p.idle_w * to_seconds(t.idle)
        };
        let low = |t: &Times| t.low.iter().sum::<Ps>();
        for (r, c) in self.cores.iter().enumerate() {
            let t = &c.times;
            let mut states = vec![
                ("compute_s", t.compute),
                ("mpi_s", t.mpi),
                ("spin_s", t.spin),
                ("transition_s", t.transition),
                ("copy_s", t.copy),
                ("recv_s", t.recv),
                ("idle_s", t.idle),
            ];
            match p.policy {
                WaitPolicy::Block => states.push(("block_s", low(t))),
                WaitPolicy::Mwait => states.push(("mwait_s", low(t))),
                WaitPolicy::Spin | WaitPolicy::Oracle => {}
            }
            if p.policy != WaitPolicy::Spin {
                states.extend(STATE_S.into_iter().zip(t.low));
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
                            to_seconds(low(&c.times))
                        } else {
                            0.0
                        }
                    })
                    .collect(),
            )
        };
        let mut columns = vec![
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
            ("recv_s", secs(|t| t.recv)),
            ("idle_s", secs(|t| t.idle)),
            (
                "low_power_waits",
                Column::U64(cs.iter().map(|c| c.low_waits.iter().sum()).collect()),
            ),
            (
                "wake_delay_s",
                Column::F64(cs.iter().map(|c| to_seconds(c.wake_delay_ps)).collect()),
            ),
            (
                "energy_j",
                Column::F64(cs.iter().map(|c| energy(&c.times)).collect()),
            ),
        ];
        for s in 0..C_STATES {
            columns.push((
                STATE_S[s],
                Column::F64(cs.iter().map(|c| to_seconds(c.times.low[s])).collect()),
            ));
            columns.push((
                STATE_WAITS[s],
                Column::U64(cs.iter().map(|c| c.low_waits[s]).collect()),
            ));
        }
        account.tables.push(Table {
            name: "cores",
            columns,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Account;
    use tracewatt_core::time::PS_PER_US as US;

    fn history(us: &[u64]) -> IdleHistory {
        let mut h = IdleHistory::default();
        for &v in us {
            h.push(v * US);
        }
        h
    }

    #[test]
    fn spread_periods_are_typical_when_their_mean_exceeds_six_deviations() {
        // Mean 1,050 us, standard deviation 50 us: variance 2,500 us^2 > 400, but 1,050 > 300.
        let h = history(&[1000, 1100, 1000, 1100, 1000, 1100, 1000, 1100]);
        assert_eq!(h.typical_ns(), Some(1_050_000));
        // Five such periods are too few for the deviation test: variance (4 x 20^2 + 80^2) / 5
        // = 1,600 us^2 for 100, 100, 100, 100, 200.
        assert_eq!(history(&[100, 100, 100, 100, 200]).typical_ns(), None);
    }

    #[test]
    fn irregular_periods_have_no_typical_interval_after_two_are_dropped() {
        // Dropping 20,000 and 10,000 us leaves six still spread: no typical interval.
        let h = history(&[10, 100, 1000, 10000, 20, 200, 2000, 20000]);
        assert_eq!(h.typical_ns(), None);
    }

    #[test]
    fn only_the_last_eight_periods_count() {
        let h = history(&[
            5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 7, 7, 7, 7, 7, 7, 7, 7,
        ]);
        assert_eq!(h.typical_ns(), Some(7000));
    }

    #[test]
    fn the_oracle_spends_each_wait_in_its_cheapest_state_without_delay() {
        // Nehalem's exit latencies (3, 10, 20, 200 us) at the default powers: C-states 5, 3.5,
        // 2 and 1 W, computing and spinning 20 W; no entry or wake overhead.
        let exits = [3, 10, 20, 200];
        let powers = [5.0, 3.5, 2.0, 1.0];
        let states = std::array::from_fn(|s| CState {
            exit_ps: exits[s] * US,
            target_residency_ps: 0,
            power_w: powers[s],
        });
        let params = CoreParams {
            policy: WaitPolicy::Oracle,
            threshold_ps: 0,
            enter_ps: 0,
            wake_ps: 0,
            governor: Governor::Fixed(0),
            states,
            compute_w: 20.0,
            spin_w: 20.0,
            idle_w: 1.0,
        };
        let of = vec![CoreOf {
            job: 0,
            rank: 0,
            node: 0,
        }];
        let mut m = Box::new(CorePower::new(
            params,
            of,
            vec!["j".into()],
            Timeline::new(1, 0, 16),
        ));
        let wait = Activity::Wait {
            sends_pending: false,
        };
        // Energy (uJ) of a wait of L us in a state of exit X us and power P: P (L - X) + 20 X.
        // L = 100: C1 5 x 97 + 60 = 545, C1E 3.5 x 90 + 200 = 515, C3 2 x 80 + 400 = 560, C6
        // cannot (200 > 100); spinning 2,000: C1E, 515.
        m.on_rank(0, 0, wait, 0);
        assert_eq!(m.wake_at(0, 100 * US, 100 * US), 100 * US, "no delay");
        m.on_rank(0, 0, Activity::Compute, 100 * US);
        // Computing 50 us: 1,000.
        m.on_rank(0, 0, wait, 150 * US);
        // L = 1,000: C1 5 x 997 + 60 = 5,045, C1E 3.5 x 990 + 200 = 3,665, C3 2 x 980 + 400 =
        // 2,360, C6 800 + 4,000 = 4,800: C3, 2,360.
        assert_eq!(m.wake_at(0, 1_150 * US, 1_150 * US), 1_150 * US);
        m.on_rank(0, 0, Activity::Compute, 1_150 * US);
        // A rank with a send pending spins through its 10 us wait: 200.
        m.on_rank(
            0,
            0,
            Activity::Wait {
                sends_pending: true,
            },
            1_150 * US,
        );
        m.wake_at(0, 1_160 * US, 1_160 * US);
        let mut account = Account::new(Timeline::new(1, 0, 16), vec!["cores_w"]);
        m.finish(1_160 * US, &mut account);
        let e = account.rows[0].energy_j;
        assert!(
            (e - (515.0 + 1_000.0 + 2_360.0 + 200.0) * 1e-6).abs() < 1e-12,
            "{e}"
        );
    }

    #[test]
    fn the_menu_governor_picks_the_deepest_state_the_typical_interval_reaches() {
        // Nehalem's target residencies, us: C1 6, C1E 20, C3 80, C6 800.
        let states = [6, 20, 80, 800].map(|t| CState {
            exit_ps: 0,
            target_residency_ps: t * US,
            power_w: 0.0,
        });
        assert_eq!(menu_state(&states, &history(&[7])), 0);
        assert_eq!(menu_state(&states, &history(&[3])), 0);
        assert_eq!(menu_state(&states, &history(&[20])), 1);
        assert_eq!(menu_state(&states, &history(&[799])), 2);
        assert_eq!(menu_state(&states, &history(&[800])), 3);
        // No typical interval and no timer: nothing bounds the idle period.
        assert_eq!(menu_state(&states, &IdleHistory::default()), 3);
    }
}
