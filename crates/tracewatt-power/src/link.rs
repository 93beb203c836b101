//! The low-power link state machine (Energy Efficient Ethernet / On-Off links), one per link
//! direction (`independent`) or one per link (`paired`):
//!
//! ```text
//! ACTIVE --(idle: its policy decides when)--> SLEEPING (sleep_time, active power)
//!   --> LPI (low power; a refresh of refresh_time at active power every refresh_period)
//!   --(a packet is ready)--> WAKING (wake_time, active power; the packet and all behind it wait)
//!   --> ACTIVE
//! ```
//!
//! A packet that arrives while the link is still SLEEPING waits for the sleep to complete and
//! then for the wake, as real PHYs do (the transition into LPI cannot be aborted). In `paired`
//! mode a link is idle only when both directions are, and a wake wakes both (what 1000BASE-T and
//! 10GBASE-T's symmetric LPI does); `independent` lets each direction sleep alone (TraceRP). A
//! wake lasts the wake time of the transmitter whose packet starts it (its Tw_sys_tx: a switch
//! port and a NIC set theirs apart).
//!
//! When an idle link goes to sleep, in which depth (a PHY with 802.3bj's fast wake has two), and
//! whether it wakes ahead of the traffic rather than on demand is its policy's decision
//! ([`crate::sleep`], one instance per state machine); what the PHY takes to sleep, refresh and
//! wake is its [`PhyTiming`]. A wake ahead that ends before the traffic comes leaves the link
//! active (at active power) until it does, and delays nothing.
//!
//! The machine is evaluated lazily: the fabric reports every transmission and asks, before one,
//! when it may start. Everything between two transmissions follows from the policy's decision
//! and the timing alone, so no timer events exist and the state durations are exact.

use crate::model::{Account, EnergyRow, PowerModel, Scalar, Signals};
use crate::predict::{Forecast, MpiCall, Predictor};
use crate::sleep::{Depth, LinkSleep, PolicySettings, Sleep, SleepPolicy};
use crate::timeline::Timeline;
use serde::{Deserialize, Serialize};
use tracewatt_core::time::to_seconds;
use tracewatt_core::{Column, Ps};
use tracewatt_net::ChannelId;

/// Whether the two directions of a link sleep alone or together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkControl {
    Independent,
    Paired,
}

/// A PHY's low-power timing, whatever decides when to sleep: going into LPI (at active power,
/// not to be aborted), refreshing in it, and waking (at active power, the traffic waiting). The
/// times are its deep sleep's; a PHY with 802.3bj's fast wake has that depth too.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhyTiming {
    pub sleep_time_ps: Ps,
    pub wake_time_ps: Ps,
    /// 0 disables refresh.
    pub refresh_period_ps: Ps,
    pub refresh_time_ps: Ps,
    pub fast_wake: Option<FastWake>,
}

/// A PHY's fast-wake depth: it keeps signalling (no quiet periods, no refresh), so it wakes
/// sooner and saves only a share of the port's LPI saving.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FastWake {
    pub sleep_time_ps: Ps,
    pub wake_time_ps: Ps,
    /// The share of the port's saving in LPI (active less LPI power) it keeps.
    pub saving: f64,
}

/// The timing and saving of one depth of a PHY.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DepthTiming {
    pub sleep_time_ps: Ps,
    pub wake_time_ps: Ps,
    pub refresh_period_ps: Ps,
    pub refresh_time_ps: Ps,
    /// The share of the port's LPI saving this depth keeps (deep sleep: all of it).
    pub saving: f64,
}

impl PhyTiming {
    /// The timing of `depth`; a PHY without fast wake has only its deep sleep.
    pub fn depth(&self, depth: Depth) -> DepthTiming {
        match (depth, self.fast_wake) {
            (Depth::FastWake, Some(f)) => DepthTiming {
                sleep_time_ps: f.sleep_time_ps,
                wake_time_ps: f.wake_time_ps,
                refresh_period_ps: 0,
                refresh_time_ps: 0,
                saving: f.saving,
            },
            _ => DepthTiming {
                sleep_time_ps: self.sleep_time_ps,
                wake_time_ps: self.wake_time_ps,
                refresh_period_ps: self.refresh_period_ps,
                refresh_time_ps: self.refresh_time_ps,
                saving: 1.0,
            },
        }
    }

    /// The share of the port's LPI saving fast wake keeps (0 without it).
    fn fast_saving(&self) -> f64 {
        self.fast_wake.map_or(0.0, |f| f.saving)
    }
}

/// A link direction's PHY and policy, as configured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSetup {
    pub phy: PhyTiming,
    pub policy: PolicySettings,
}

/// Power of the port that drives a link direction (a switch port or a NIC port).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PortPower {
    pub active_w: f64,
    pub lpi_w: f64,
}

impl PortPower {
    /// Energy over `span_s` seconds of which `low_s` at low power (LPI less its refreshes, which
    /// draw active power), the rest at active power.
    pub fn energy_j(&self, span_s: f64, low_s: f64) -> f64 {
        self.active_w * (span_s - low_s) + self.lpi_w * low_s
    }
}

/// A span of time the LPI arithmetic works in: whole picoseconds in the state machine, seconds
/// (`f64`) in the screening of one run's idle intervals (`tracewatt-screen`).
pub trait Span:
    Copy
    + PartialOrd
    + Default
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
}

impl<T> Span for T where
    T: Copy
        + PartialOrd
        + Default
        + std::ops::Add<Output = T>
        + std::ops::Sub<Output = T>
        + std::ops::Mul<Output = T>
        + std::ops::Div<Output = T>
{
}

/// Time in LPI over `count` idle gaps of `total` length in all, each longer than the idle
/// timeout: a gap spends the timeout active and the sleep going down, the rest in LPI. For one
/// gap this is the state machine's account. Over several it is exact when each is longer than
/// timeout + sleep; a shorter one spends no time in LPI but takes from the sum, so the result is
/// then no more than the exact one.
pub fn lpi_time<T: Span>(count: T, total: T, idle_timeout: T, sleep_time: T) -> T {
    let before = count * (idle_timeout + sleep_time);
    if total > before {
        total - before
    } else {
        T::default()
    }
}

/// The refreshes of `lpi` in low power (`refresh_time` at active power every `refresh_period`;
/// a period of 0: none) and the time they take. In whole picoseconds the count is of whole
/// refreshes, the state machine's account of one stretch of LPI; in seconds it is the mean
/// rate, which is how the screening prices LPI it knows only in total (a stretch holds
/// `floor(length / period)` refreshes: the mean rate is high by under one per stretch).
pub fn refreshes<T: Span>(lpi: T, refresh_period: T, refresh_time: T) -> (T, T) {
    if refresh_period == T::default() {
        return (T::default(), T::default());
    }
    let n = lpi / refresh_period;
    let time = n * refresh_time;
    (n, if time < lpi { time } else { lpi })
}

/// The device whose port drives a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortOwner {
    Switch(u32),
    Node(u32),
}

impl PortOwner {
    /// Timeline series (and summary group) of the port: switch ports 0, NIC ports 1.
    fn series(self) -> usize {
        match self {
            PortOwner::Switch(_) => 0,
            PortOwner::Node(_) => 1,
        }
    }
}

/// What every packet-hop reads and writes of a state machine, apart from the rest (a quarter of
/// a cache line instead of a whole one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Busy {
    /// End of the last transmission (or wake) on any of the unit's channels; may lie ahead of
    /// the current time while a transmission is under way.
    until: Ps,
    /// End of the last wake-up.
    wake_until: Ps,
}

/// Time spent in each state by one state machine: written only when it sleeps or wakes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct UnitState {
    sleep_ps: Ps,
    lpi_ps: Ps,
    /// Of `lpi_ps`, in fast wake.
    fast_lpi_ps: Ps,
    wake_ps: Ps,
    refresh_ps: Ps,
    refreshes: u64,
}

/// Per link direction results.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkReport {
    /// State durations of the state machine this direction belongs to.
    pub sleep_ps: Ps,
    pub lpi_ps: Ps,
    /// Of `lpi_ps`, in fast wake.
    pub fast_lpi_ps: Ps,
    pub wake_ps: Ps,
    pub refreshes: u64,
    /// Wakes this direction's packets triggered: every time one found the link in (or going
    /// into) low power, including wakes of zero wake time.
    pub wakes: u64,
    /// Total delay wakes added to this direction's packets.
    pub wake_delay_ps: Ps,
    /// Energy of the port driving this direction.
    pub energy_j: f64,
}

/// The state machines of every link direction of a machine.
#[derive(Debug)]
pub struct LinkPower {
    /// The distinct PHY timings (a machine has a few link classes), and each unit's.
    phys: Vec<PhyTiming>,
    phy_of: Vec<u32>,
    /// Each unit's policy, with its own state.
    policies: Vec<LinkSleep>,
    busy: Vec<Busy>,
    units: Vec<UnitState>,
    /// Channels of each unit (one, or a link's two directions).
    members: Vec<[u32; 2]>,
    /// Unit of each channel; empty when every channel is its own unit (`independent`).
    unit_of: Vec<u32>,
    port: Vec<PortPower>,
    /// The device driving each channel.
    owner: Vec<PortOwner>,
    /// Each channel's PHY and policy, for its wake time and the links table.
    channel_setup: Vec<LinkSetup>,
    wakes_by: Vec<u64>,
    wake_delay_ps: Vec<Ps>,
    timeline: Timeline,
    first_series: usize,
    /// With a `predictive` node link: the ranks' MPI layers' learners, and the units that
    /// follow each node's forecasts.
    predictor: Option<Box<Predictor>>,
    node_units: Vec<Vec<u32>>,
}

const NONE: u32 = u32::MAX;

impl LinkPower {
    /// `reverse[c]` is the opposite direction of channel `c`; `control[c]`, `setup[c]`,
    /// `port[c]` and `owner[c]` describe channel `c`. A link is paired when both its
    /// directions are; a paired link's state machine uses its lower channel's policy, sleep and
    /// refresh, and a wake lasts the wake time of the channel whose packet starts it (its policy
    /// knows the longer of the two). The timeline has the model's two series (switch ports, NIC
    /// ports).
    pub fn new(
        control: &[LinkControl],
        reverse: &[ChannelId],
        setup: Vec<LinkSetup>,
        port: Vec<PortPower>,
        owner: Vec<PortOwner>,
        timeline: Timeline,
    ) -> Self {
        let n = reverse.len();
        let mut unit_of = vec![NONE; n];
        let mut members = Vec::new();
        let mut phys: Vec<PhyTiming> = Vec::new();
        let mut phy_of = Vec::new();
        let mut policies = Vec::new();
        for c in 0..n {
            if unit_of[c] != NONE {
                continue;
            }
            let u = members.len() as u32;
            unit_of[c] = u;
            let mut m = [c as u32, NONE];
            let r = reverse[c] as usize;
            let paired = control[c] == LinkControl::Paired && control[r] == LinkControl::Paired;
            if paired && r != c && unit_of[r] == NONE {
                unit_of[r] = u;
                m[1] = r as u32;
            }
            members.push(m);
            let k = match phys.iter().position(|t| *t == setup[c].phy) {
                Some(k) => k,
                None => {
                    phys.push(setup[c].phy);
                    phys.len() - 1
                }
            };
            // Fewer distinct timings than channels, whose ids are u32.
            phy_of.push(k as u32);
            let mut known = setup[c].phy;
            if m[1] != NONE {
                let other = setup[r].phy;
                known.wake_time_ps = known.wake_time_ps.max(other.wake_time_ps);
                if let (Some(f), Some(o)) = (&mut known.fast_wake, other.fast_wake) {
                    f.wake_time_ps = f.wake_time_ps.max(o.wake_time_ps);
                }
            }
            // The link between a node and its switch, either way.
            let node = [owner[c], owner[r]].into_iter().find_map(|o| match o {
                PortOwner::Node(n) => Some(n),
                PortOwner::Switch(_) => None,
            });
            policies.push(setup[c].policy.build(&known, node));
        }
        if members.iter().all(|m| m[1] == NONE) {
            // Every channel is its own unit, numbered as the channel: skip the lookup.
            unit_of = Vec::new();
        }
        Self {
            busy: vec![Busy::default(); members.len()],
            units: vec![UnitState::default(); members.len()],
            phys,
            phy_of,
            policies,
            members,
            unit_of,
            port,
            owner,
            channel_setup: setup,
            wakes_by: vec![0; n],
            wake_delay_ps: vec![0; n],
            timeline,
            first_series: 0,
            predictor: None,
            node_units: Vec::new(),
        }
    }

    /// Gives the MPI layers' forecasts to the `predictive` node links, if any: the ranks are
    /// placed on `rank_node`, on `nodes` nodes; their learners use contexts of `ngram` calls
    /// and are confident after `confidence` repetitions ([`crate::predict`]).
    pub fn with_forecasts(
        mut self,
        rank_node: Vec<u32>,
        nodes: usize,
        ngram: u32,
        confidence: u32,
    ) -> Self {
        let mut node_units = vec![Vec::new(); nodes];
        for (u, p) in self.policies.iter().enumerate() {
            if let LinkSleep::Predictive(p) = p {
                node_units[p.node as usize].push(u as u32);
            }
        }
        if node_units.iter().any(|u| !u.is_empty()) {
            let p = Predictor::new(rank_node, nodes, ngram, confidence);
            for (n, units) in node_units.iter().enumerate() {
                for &u in units {
                    if let LinkSleep::Predictive(s) = &mut self.policies[u as usize] {
                        s.forecast(p.initial(n as u32), Some(0));
                    }
                }
            }
            self.predictor = Some(Box::new(p));
            self.node_units = node_units;
        }
        self
    }

    /// Whether a `predictive` link follows the ranks' MPI calls.
    pub fn forecasts(&self) -> bool {
        self.predictor.is_some()
    }

    /// Rank `rank` enters `call` at `now`.
    pub fn on_call(&mut self, rank: u32, call: MpiCall, now: Ps) {
        if let Some(p) = &mut self.predictor {
            let f = p.call(rank, call, now);
            self.tell(f);
        }
    }

    /// Rank `rank` leaves MPI at `now` (computes, or sleeps on a timer).
    pub fn on_leave(&mut self, rank: u32, now: Ps) {
        if let Some(p) = &mut self.predictor {
            let f = p.leave(rank, now);
            self.tell(f);
        }
    }

    /// Rank `rank` has finished at `now`.
    pub fn on_done(&mut self, rank: u32, now: Ps) {
        if let Some(p) = &mut self.predictor {
            let f = p.done(rank, now);
            self.tell(f);
        }
    }

    /// Hands a node's new forecast to its links.
    fn tell(&mut self, f: Option<(u32, Forecast)>) {
        let Some((node, f)) = f else { return };
        for &u in &self.node_units[node as usize] {
            let since = self.busy[u as usize].until;
            if let LinkSleep::Predictive(p) = &mut self.policies[u as usize] {
                p.forecast(f, (since <= f.made).then_some(since));
            }
        }
    }

    /// Accounts an idle stretch that the policy put to sleep at `sleep.at` and that ends with a
    /// wake-up request at `until` (`wake`: the requesting transmitter's wake time in the sleep's
    /// depth) or with the end of the run (`None`); returns when the traffic may go: when the
    /// wake completes, or at `until` if a wake ahead of it completed by then.
    fn slept(&mut self, u: usize, sleep: Sleep, until: Ps, wake: Option<Ps>) -> Ps {
        let d = self.phy(u).depth(sleep.depth);
        let sleep_start = sleep.at;
        let lpi_start = sleep_start + d.sleep_time_ps;
        let Some(wake_time_ps) = wake else {
            // End of run: whatever part of the sleep and LPI fits; no traffic comes to wake for.
            self.units[u].sleep_ps += d.sleep_time_ps.min(until - sleep_start);
            self.lpi(u, sleep.depth, lpi_start, until);
            return until;
        };
        // A sleep in progress completes before the wake can begin: at the end of LPI, or of the
        // sleep if the gap ends before LPI begins. A wake ahead begins when the policy says,
        // and at the latest when the traffic comes.
        let wake_start = sleep.wake_at.map_or(until, |w| w.min(until)).max(lpi_start);
        let st = &mut self.units[u];
        st.sleep_ps += d.sleep_time_ps;
        st.wake_ps += wake_time_ps;
        self.lpi(u, sleep.depth, lpi_start, wake_start);
        (wake_start + wake_time_ps).max(until)
    }

    /// Accounts an LPI stretch [start, end) in `depth` with its refreshes and its timeline
    /// saving.
    fn lpi(&mut self, u: usize, depth: Depth, start: Ps, end: Ps) {
        if end <= start {
            return;
        }
        let t = self.phy(u).depth(depth);
        let len = end - start;
        let (n, refresh) = refreshes(len, t.refresh_period_ps, t.refresh_time_ps);
        let st = &mut self.units[u];
        st.lpi_ps += len;
        if depth == Depth::FastWake {
            st.fast_lpi_ps += len;
        }
        st.refreshes += n;
        st.refresh_ps += refresh;
        // The saving spread evenly over the stretch (refreshes at active power are netted out),
        // the depth's share of it.
        let low_fraction = (len - refresh) as f64 / len as f64 * t.saving;
        for c in self.members[u] {
            if c == NONE {
                continue;
            }
            let p = self.port[c as usize];
            self.timeline.add(
                self.owner[c as usize].series(),
                start,
                end,
                -(p.active_w - p.lpi_w) * low_fraction,
            );
        }
    }

    /// Closes every state machine at the end of the run and reports per channel, with the
    /// ports' power timeline.
    pub fn close(mut self, end: Ps) -> (Vec<LinkReport>, Timeline) {
        for u in 0..self.units.len() {
            let since = self.busy[u].until;
            if since < end {
                if let Some(sleep) = self.policies[u].idle(since, end) {
                    self.slept(u, sleep, end, None);
                }
            }
        }
        let total_s = end as f64 * 1e-12;
        let reports = (0..self.port.len())
            .map(|c| {
                let u = self.unit(c as ChannelId);
                let st = self.units[u];
                let p = self.port[c];
                // Fast wake's LPI counts at its share of the saving.
                let deep = st.lpi_ps - st.fast_lpi_ps - st.refresh_ps;
                let fast = self.phy(u).fast_saving() * st.fast_lpi_ps as f64;
                let low_s = (deep as f64 + fast) * 1e-12;
                let energy_j = p.energy_j(total_s, low_s);
                LinkReport {
                    sleep_ps: st.sleep_ps,
                    lpi_ps: st.lpi_ps,
                    fast_lpi_ps: st.fast_lpi_ps,
                    wake_ps: st.wake_ps,
                    refreshes: st.refreshes,
                    wakes: self.wakes_by[c],
                    wake_delay_ps: self.wake_delay_ps[c],
                    energy_j,
                }
            })
            .collect();
        // The run added the savings of low power; every port draws active power otherwise.
        let mut active_w = [0.0; 2];
        for (p, o) in self.port.iter().zip(&self.owner) {
            active_w[o.series()] += p.active_w;
        }
        for (k, w) in active_w.into_iter().enumerate() {
            self.timeline.add(k, 0, end, w);
        }
        (reports, self.timeline)
    }

    /// Number of state machines (link directions, or links in `paired` mode).
    pub fn units(&self) -> usize {
        self.units.len()
    }

    #[inline]
    fn phy(&self, u: usize) -> &PhyTiming {
        &self.phys[self.phy_of[u] as usize]
    }

    /// Channel `ch` of state machine `u`, asleep since the policy's `sleep`, has traffic at
    /// `now`: it wakes; returns when the traffic may go.
    #[inline(never)]
    fn wake(&mut self, ch: ChannelId, u: usize, sleep: Sleep, now: Ps) -> Ps {
        // The transmitter that wakes the link waits its own wake time (Tw_sys_tx): a switch
        // port's and a NIC's may differ.
        let wake_time_ps = self.channel_setup[ch as usize]
            .phy
            .depth(sleep.depth)
            .wake_time_ps;
        let start = self.slept(u, sleep, now, Some(wake_time_ps));
        // Every exit from low power counts, a wake of zero time too (TraceRP's Fig. 4 runs
        // at T_w = 0 and still counts transitions).
        self.wakes_by[ch as usize] += 1;
        self.wake_delay_ps[ch as usize] += start - now;
        // The wake ends the stretch, even one that ended ahead of the traffic.
        self.busy[u] = Busy {
            until: start,
            wake_until: start,
        };
        start
    }

    #[inline]
    fn unit(&self, ch: ChannelId) -> usize {
        if self.unit_of.is_empty() {
            ch as usize
        } else {
            self.unit_of[ch as usize] as usize
        }
    }
}

impl PowerModel for LinkPower {
    fn signals(&self) -> Signals {
        Signals {
            links: true,
            ..Signals::default()
        }
    }

    fn series(&self) -> &'static [&'static str] {
        &["switch_ports_w", "nic_ports_w"]
    }

    fn set_series(&mut self, first: usize) {
        self.first_series = first;
    }

    // Inlined into the packet model's every hop (see `Power`'s hooks); the wake, rare, is not.
    #[inline(always)]
    fn link_ready(&mut self, ch: ChannelId, now: Ps) -> Ps {
        let u = self.unit(ch);
        let b = self.busy[u];
        if now < b.until {
            // The other direction of a paired link is transmitting or waking the link: it is
            // (or is becoming) active, so only an ongoing wake delays us.
            let start = now.max(b.wake_until);
            if start > now {
                self.wake_delay_ps[ch as usize] += start - now;
            }
            return start;
        }
        match self.policies[u].idle(b.until, now) {
            // The common case, decided without leaving the packet path.
            None => now,
            Some(sleep) => self.wake(ch, u, sleep, now),
        }
    }
    #[inline]
    fn on_transmit(&mut self, ch: ChannelId, _start: Ps, end: Ps, _bytes: u32) {
        let u = self.unit(ch);
        let b = &mut self.busy[u];
        b.until = b.until.max(end);
    }

    fn on_control(&mut self, ch: ChannelId, start: Ps, end: Ps) {
        // A credit keeps the link as busy as a packet does.
        self.on_transmit(ch, start, end, 0);
    }

    fn finish(self: Box<Self>, end: Ps, account: &mut Account) {
        let first = self.first_series;
        let owner = self.owner.clone();
        let setup = self.channel_setup.clone();
        let port = self.port.clone();
        // A channel is paired when its state machine has a second member.
        let control: Vec<String> = (0..owner.len())
            .map(|c| {
                let paired = self.members[self.unit(c as ChannelId)][1] != NONE;
                if paired { "paired" } else { "independent" }.to_string()
            })
            .collect();
        let (reports, timeline) = self.close(end);
        account.timeline.absorb(first, timeline, end);
        for (c, r) in reports.iter().enumerate() {
            let (group, node, switch) = match owner[c] {
                PortOwner::Switch(s) => ("switch_ports", None, Some(s)),
                PortOwner::Node(n) => ("nic_ports", Some(n), None),
            };
            let transitions = r.sleep_ps + r.wake_ps;
            account.rows.push(EnergyRow {
                component: "link_port",
                group,
                id: c as u64,
                node,
                switch,
                energy_j: r.energy_j,
                states: vec![
                    ("active_s", end.saturating_sub(r.lpi_ps + transitions)),
                    ("sleep_s", r.sleep_ps),
                    ("lpi_s", r.lpi_ps),
                    ("wake_s", r.wake_ps),
                ],
            });
        }
        let secs = |f: &dyn Fn(&LinkReport) -> Ps| {
            Column::F64(reports.iter().map(|r| to_seconds(f(r))).collect())
        };
        let setup_s =
            |f: fn(&LinkSetup) -> Ps| Column::F64(setup.iter().map(|t| to_seconds(f(t))).collect());
        account.link_columns = vec![
            ("control", Column::Str(control)),
            (
                "port",
                Column::Str(
                    owner
                        .iter()
                        .map(|o| match o {
                            PortOwner::Switch(_) => "switch".to_string(),
                            PortOwner::Node(_) => "nic".to_string(),
                        })
                        .collect(),
                ),
            ),
            (
                "port_active_w",
                Column::F64(port.iter().map(|p| p.active_w).collect()),
            ),
            (
                "port_lpi_w",
                Column::F64(port.iter().map(|p| p.lpi_w).collect()),
            ),
            ("idle_timeout_s", setup_s(|t| t.policy.idle_timeout_ps)),
            ("sleep_time_s", setup_s(|t| t.phy.sleep_time_ps)),
            ("wake_time_s", setup_s(|t| t.phy.wake_time_ps)),
            ("refresh_period_s", setup_s(|t| t.phy.refresh_period_ps)),
            ("refresh_time_s", setup_s(|t| t.phy.refresh_time_ps)),
            ("sleep_s", secs(&|r| r.sleep_ps)),
            ("lpi_s", secs(&|r| r.lpi_ps)),
            ("wake_s", secs(&|r| r.wake_ps)),
            (
                "wakes",
                Column::U64(reports.iter().map(|r| r.wakes).collect()),
            ),
            (
                "refreshes",
                Column::U64(reports.iter().map(|r| r.refreshes).collect()),
            ),
            ("wake_delay_s", secs(&|r| r.wake_delay_ps)),
            (
                "energy_j",
                Column::F64(reports.iter().map(|r| r.energy_j).collect()),
            ),
        ];
        let n = reports.len().max(1) as f64;
        let end_s = to_seconds(end);
        account.summary.extend([
            (
                "links",
                "wakes",
                Scalar::U64(reports.iter().map(|r| r.wakes).sum()),
            ),
            (
                "links",
                "wake_delay_s",
                Scalar::F64(to_seconds(reports.iter().map(|r| r.wake_delay_ps).sum())),
            ),
            (
                "links",
                "lpi_fraction",
                Scalar::F64(if end_s > 0.0 {
                    reports.iter().map(|r| to_seconds(r.lpi_ps)).sum::<f64>() / (end_s * n)
                } else {
                    0.0
                }),
            ),
        ]);
    }
}
