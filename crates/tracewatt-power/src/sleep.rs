//! Sleep policies: what decides when a link's state machine ([`crate::link`]) leaves ACTIVE for
//! low power, in which depth, and when it wakes. The state machine prices whatever a policy
//! decides (sleep, LPI with refresh, wake) from the PHY's timing; a policy only chooses, and keeps
//! whatever state of its own it needs, one instance per state machine (a link direction, or a
//! link in `paired` mode).
//!
//! A policy is a [`SleepPolicy`]; [`LinkSleep`] holds one of each kind, so the state machine
//! dispatches with a `match` the compiler inlines into the packet path. The configuration names
//! a policy with the `policy` key of a link power table ([`LinkPolicy`]) and gives its
//! parameters beside it ([`PolicySettings`]).

use crate::link::{refreshes, DepthTiming, PhyTiming};
use crate::predict::Forecast;
use serde::{Deserialize, Serialize};
use tracewatt_core::Ps;

/// A PHY's low-power depth (IEEE 802.3bj): `deep_sleep` is the PHY's LPI with its quiet
/// periods (the link table's sleep and wake times, the port's LPI power); `fast_wake` keeps the
/// PHY signalling, so it wakes sooner and saves less. A PHY without fast wake has only its deep
/// sleep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Depth {
    #[default]
    DeepSleep,
    FastWake,
}

/// A policy's decision that a state machine sleeps within an idle stretch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sleep {
    /// When it starts going into low power (the depth's sleep time follows, then LPI).
    pub at: Ps,
    pub depth: Depth,
    /// When the wake starts, ahead of the traffic, for a policy that knows or predicts the next
    /// use; `None` wakes on demand, when the traffic comes. A wake ahead never starts before
    /// the sleep has completed, nor after the traffic has come.
    pub wake_at: Option<Ps>,
}

impl Sleep {
    /// Sleeps at `at` in `depth` and wakes when the traffic comes.
    pub fn on_demand(at: Ps, depth: Depth) -> Self {
        Self {
            at,
            depth,
            wake_at: None,
        }
    }
}

/// Decides when an idle state machine goes to sleep.
///
/// The state machine is evaluated lazily: it asks only when the stretch ends, because a packet
/// is ready at `until` or the run ends there. A policy that answers `None` may be asked again
/// about the same stretch with a later `until` (a ready credit that found its link busy sends
/// nothing); one that answers a sleep is not, as the wake ends the stretch. A policy that
/// stands for a real port decides from the past only: `at` must follow from what was known by
/// then. [`Oracle`] alone uses `until` to decide: it is the bound, not a port.
pub trait SleepPolicy {
    /// The state machine has been idle since `idle_since` and has traffic again (or the run
    /// ends) at `until`: when, in between, did it go to sleep, if at all.
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep>;
}

/// `always_on`: never sleeps, the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlwaysOn;

impl SleepPolicy for AlwaysOn {
    #[inline]
    fn idle(&mut self, _idle_since: Ps, _until: Ps) -> Option<Sleep> {
        None
    }
}

/// `timeout`: sleeps after `idle_timeout_ps` without traffic; a timeout of 0 sleeps right after
/// each packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout {
    pub idle_timeout_ps: Ps,
    pub depth: Depth,
}

impl SleepPolicy for Timeout {
    #[inline]
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        // Idle for exactly the timeout is still active.
        (until - idle_since > self.idle_timeout_ps)
            .then(|| Sleep::on_demand(idle_since + self.idle_timeout_ps, self.depth))
    }
}

/// `oracle`: knows each idle gap (the lazy evaluation gives its end) and sleeps, from the gap's
/// start, in the depth that saves the most in it, waking just in time: no delay, so the traffic
/// is that of `always_on`, and the energy the most any policy with these depths can save.
///
/// With transitions at active power, a gap `g` slept in a depth of sleep time `Ts`, wake time
/// `Tw` and power saving `dP` (the port's active less its LPI power in that depth) saves
/// `dP (g - Ts - Tw)` (less the refreshes' share in deep sleep): the break-even gap is
/// `Ts + Tw`, and between two depths the one with the larger saving wins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Oracle {
    /// The state machine's PHY, with the longer of its two ends' wake times, so a wake ahead
    /// ends in time whichever end's traffic comes.
    pub phy: PhyTiming,
}

impl Oracle {
    /// What sleeping through a gap of `gap` in depth `d` saves, in picoseconds of the port's
    /// full LPI saving (0 if the gap is too short to reach LPI).
    fn saving(d: &DepthTiming, gap: Ps) -> f64 {
        let Some(lpi) = gap.checked_sub(d.sleep_time_ps + d.wake_time_ps) else {
            return 0.0;
        };
        let (_, refresh) = refreshes(lpi, d.refresh_period_ps, d.refresh_time_ps);
        d.saving * (lpi - refresh) as f64
    }
}

impl SleepPolicy for Oracle {
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        let gap = until - idle_since;
        let mut best: Option<(f64, Sleep)> = None;
        for depth in [Depth::DeepSleep, Depth::FastWake] {
            if depth == Depth::FastWake && self.phy.fast_wake.is_none() {
                continue;
            }
            let d = self.phy.depth(depth);
            let saved = Self::saving(&d, gap);
            if saved > best.map_or(0.0, |b| b.0) {
                let sleep = Sleep {
                    at: idle_since,
                    depth,
                    wake_at: Some(until - d.wake_time_ps),
                };
                best = Some((saved, sleep));
            }
        }
        best.map(|b| b.1)
    }
}

/// What a wake adds to the traffic that ends a gap at `until`, for a sleep begun at `at` with
/// sleep time `ts` and wake time `tw`: the traffic waits for the sleep to complete, then for
/// the wake.
fn wake_delay(at: Ps, until: Ps, ts: Ps, tw: Ps) -> Ps {
    (at + ts).max(until) + tw - until
}

/// `adaptive`: a timeout per port that tunes itself, from the port's own past, so that the
/// delay its own wakes add stays near a share `delay_share` of the elapsed time (after SPPS's
/// self-tuning threshold, which tunes towards a performance target). It works in epochs of
/// `window` gaps: when the gap after an epoch begins, it compares the delay its wakes added in
/// the epoch with the epoch's length (from the epoch's start, the run's for the first, to that
/// instant). Above `delay_share` it doubles its timeout (it wakes in fewer, longer gaps).
/// Otherwise it halves it if the epoch's own gaps, slept after half the timeout, would have
/// left room within `delay_share` for one more wake, and keeps it if not: it lowers only where
/// the past shows room, so on a stationary gap distribution it settles instead of swinging
/// across the target. The timeout
/// never goes below the break-even time, the depth's sleep plus wake time: sleeping in a
/// shorter gap can only lose energy.
#[derive(Debug, Clone, PartialEq)]
pub struct Adaptive {
    timeout: Timeout,
    /// The depth's sleep and wake times; their sum is the lowest timeout.
    sleep_time_ps: Ps,
    wake_time_ps: Ps,
    delay_share: f64,
    window: usize,
    /// The current epoch: when it began, its gaps and the delay its wakes added.
    epoch_start: Ps,
    gaps: Vec<Ps>,
    delay_ps: Ps,
    /// The stretch last asked about, recorded once the next one begins (it may be asked about
    /// again, with a later end, until then).
    pending: Option<(Ps, Ps)>,
}

impl Adaptive {
    /// Starts at `start_timeout_ps` (raised to the break-even time), the run at time 0.
    pub fn new(
        start_timeout_ps: Ps,
        depth: &DepthTiming,
        kind: Depth,
        delay_share: f64,
        window: u32,
    ) -> Self {
        let window = window.max(1) as usize;
        Self {
            timeout: Timeout {
                idle_timeout_ps: start_timeout_ps.max(depth.sleep_time_ps + depth.wake_time_ps),
                depth: kind,
            },
            sleep_time_ps: depth.sleep_time_ps,
            wake_time_ps: depth.wake_time_ps,
            delay_share,
            window,
            epoch_start: 0,
            gaps: Vec::with_capacity(window),
            delay_ps: 0,
            pending: None,
        }
    }

    /// The timeout it sleeps after.
    pub fn timeout_ps(&self) -> Ps {
        self.timeout.idle_timeout_ps
    }

    /// The delay its wakes would have added in the epoch's gaps with timeout `t`.
    fn delay_with(&self, t: Ps) -> Ps {
        self.gaps
            .iter()
            .filter(|&&g| g > t)
            .map(|&g| wake_delay(t, g, self.sleep_time_ps, self.wake_time_ps))
            .sum()
    }

    /// Ends the epoch at `now`, retuning the timeout to the delay share the epoch had.
    fn retune(&mut self, now: Ps) {
        let elapsed = (now - self.epoch_start).max(1) as f64;
        let t = self.timeout.idle_timeout_ps;
        let floor = self.sleep_time_ps + self.wake_time_ps;
        let lower = (t / 2).max(floor);
        // Lowering needs room for what the lower timeout would have cost and one more wake.
        let room = |delay: Ps| delay as f64 <= self.delay_share * elapsed;
        self.timeout.idle_timeout_ps = if !room(self.delay_ps) {
            t.saturating_mul(2).max(1)
        } else if lower < t && room(self.delay_with(lower) + floor) {
            lower
        } else {
            t
        };
        self.epoch_start = now;
        self.gaps.clear();
        self.delay_ps = 0;
    }
}

impl SleepPolicy for Adaptive {
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        if let Some((since, end)) = self.pending {
            if since != idle_since {
                self.gaps.push(end - since);
                if self.gaps.len() == self.window {
                    self.retune(idle_since);
                }
            }
        }
        self.pending = Some((idle_since, until));
        let sleep = self.timeout.idle(idle_since, until)?;
        self.delay_ps += wake_delay(sleep.at, until, self.sleep_time_ps, self.wake_time_ps);
        Some(sleep)
    }
}

/// `perfbound`: sleeps only while the delay its own wakes have added stays within
/// `slowdown_bound` of the elapsed time, as PerfBound bounds each link's slowdown from local
/// information (Saravanan et al., IEEE Trans. Computers 2018). In an idle stretch it sleeps at
/// the earliest instant `t`, at least its timeout (0: at once) after the stretch began, at
/// which the delay added so far plus the worst the next wake can add (a packet as the sleep
/// begins waits for the sleep and the wake) is within `slowdown_bound x t`: as the elapsed time
/// grows within a long gap, slack returns and it sleeps. The delay it counts is what each wake
/// added, reckoned from the PHY's timing with the longer of the two ends' wake times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerfBound {
    pub timeout: Timeout,
    pub slowdown_bound: f64,
    pub sleep_time_ps: Ps,
    pub wake_time_ps: Ps,
    /// Delay its wakes have added so far.
    pub delay_ps: Ps,
}

impl PerfBound {
    /// The earliest instant `t` (from the run's start) with `worst <= slowdown_bound x t`;
    /// `None` when no instant is (a bound of 0 with a delay to add).
    fn slack_at(&self, worst: Ps) -> Option<Ps> {
        let fits = |t: Ps| worst as f64 <= self.slowdown_bound * t as f64;
        if worst == 0 {
            return Some(0);
        }
        if self.slowdown_bound <= 0.0 {
            return None;
        }
        // The quotient, then exact against the test itself (the division rounds).
        let mut t = (worst as f64 / self.slowdown_bound).ceil() as Ps;
        while t > 0 && fits(t - 1) {
            t -= 1;
        }
        while !fits(t) {
            t += 1;
        }
        Some(t)
    }
}

impl SleepPolicy for PerfBound {
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        let worst = self.delay_ps + self.sleep_time_ps + self.wake_time_ps;
        let at = (idle_since + self.timeout.idle_timeout_ps).max(self.slack_at(worst)?);
        // Idle for exactly the wait is still active, as with a timeout.
        if at >= until {
            return None;
        }
        self.delay_ps += wake_delay(at, until, self.sleep_time_ps, self.wake_time_ps);
        Some(Sleep::on_demand(at, self.timeout.depth))
    }
}

/// `predictive`: the link between a node and its switch sleeps at once when its node's MPI
/// layer forecasts ([`crate::predict`]) a gap before the node's next network use longer than
/// the depth's break-even time (sleep plus wake time), and wakes ahead of the forecast use, its
/// wake time before it (after Dickov et al., ICPP 2014). The forecasts come as the ranks call
/// and leave MPI: in an idle stretch, the first forecast (the one in force as the stretch
/// begins, else one made within it) of a use `q` more than the break-even time away puts the
/// link to sleep, waking at `q - Tw`; a later one made before that wake moves it (a forecast of
/// none, a rank calling MPI, wakes the link at once). A misprediction costs what it would on a
/// port: traffic before the wake waits for it; a wake ahead of traffic that comes later leaves
/// the link active until then.
#[derive(Debug, Clone, PartialEq)]
pub struct Predictive {
    /// The node whose forecasts it follows.
    pub node: u32,
    pub depth: Depth,
    pub sleep_time_ps: Ps,
    pub wake_time_ps: Ps,
    /// The node's latest forecast: in force when the next stretch begins, if made before.
    latest: Forecast,
    /// The sleep decided within the stretch that began at `.0`.
    plan: Option<(Ps, Sleep)>,
}

impl Predictive {
    /// Follows `node`'s forecasts, sleeping in `depth` (of `timing`); it has none yet.
    pub fn new(node: u32, depth: Depth, timing: &DepthTiming) -> Self {
        Self {
            node,
            depth,
            sleep_time_ps: timing.sleep_time_ps,
            wake_time_ps: timing.wake_time_ps,
            latest: Forecast {
                made: 0,
                next: None,
            },
            plan: None,
        }
    }

    /// The node forecasts `f` (no earlier than any forecast before); `idle_since`: the link has
    /// been idle since then, or `None` if it is busy at `f.made`.
    pub fn forecast(&mut self, f: Forecast, idle_since: Option<Ps>) {
        let before = std::mem::replace(&mut self.latest, f);
        let Some(s0) = idle_since else {
            self.plan = None;
            return;
        };
        // The first forecast within the stretch: the one before it decides first, if it was
        // in force as the stretch began.
        if !matches!(self.plan, Some((p0, _)) if p0 == s0) {
            let first = (before.made <= s0).then(|| self.sleep_from(before, s0));
            self.plan = first.flatten().map(|s| (s0, s));
        }
        self.plan = match self.plan {
            // Asleep, the wake not begun: the new forecast sets it.
            Some((_, mut sleep)) if f.made > sleep.at => {
                let wake = sleep.wake_at.unwrap_or(Ps::MAX);
                if f.made < wake {
                    let q = f
                        .next
                        .map_or(f.made, |q| q.saturating_sub(self.wake_time_ps));
                    sleep.wake_at = Some(q.max(f.made));
                }
                Some((s0, sleep))
            }
            _ => self.sleep_from(f, s0).map(|s| (s0, s)),
        };
    }

    /// Sleeps on forecast `f` in a stretch idle since `idle_since`, if its gap is past
    /// break-even.
    fn sleep_from(&self, f: Forecast, idle_since: Ps) -> Option<Sleep> {
        let next = f.next?;
        let at = idle_since.max(f.made);
        // Idle for exactly the break-even time reaches no LPI, as with the oracle.
        (next > at + self.sleep_time_ps + self.wake_time_ps).then(|| Sleep {
            at,
            depth: self.depth,
            wake_at: Some(next - self.wake_time_ps),
        })
    }
}

impl SleepPolicy for Predictive {
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        let sleep = match self.plan {
            Some((s0, sleep)) if s0 == idle_since => Some(sleep),
            // No forecast within the stretch put it to sleep: the one in force as it began.
            _ if self.latest.made <= idle_since => self.sleep_from(self.latest, idle_since),
            _ => None,
        };
        sleep.filter(|s| s.at < until)
    }
}

/// One state machine's policy, of any kind. The kinds with state of their own are boxed, so the
/// common ones stay small in the packet path, and the kind is a plain byte (no niche in a
/// field), which the dispatch compares at once.
#[derive(Debug, Clone, PartialEq)]
#[repr(u8)]
pub enum LinkSleep {
    AlwaysOn(AlwaysOn),
    Timeout(Timeout),
    Oracle(Box<Oracle>),
    Adaptive(Box<Adaptive>),
    PerfBound(Box<PerfBound>),
    Predictive(Box<Predictive>),
}

impl SleepPolicy for LinkSleep {
    #[inline]
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        match self {
            LinkSleep::AlwaysOn(p) => p.idle(idle_since, until),
            LinkSleep::Timeout(p) => p.idle(idle_since, until),
            LinkSleep::Oracle(p) => p.idle(idle_since, until),
            LinkSleep::Adaptive(p) => p.idle(idle_since, until),
            LinkSleep::PerfBound(p) => p.idle(idle_since, until),
            LinkSleep::Predictive(p) => p.idle(idle_since, until),
        }
    }
}

/// What a link does when idle: the `policy` key of a link power table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkPolicy {
    /// [`AlwaysOn`].
    AlwaysOn,
    /// [`Timeout`].
    Timeout,
    /// [`Adaptive`].
    Adaptive,
    /// [`PerfBound`].
    #[serde(rename = "perfbound")]
    PerfBound,
    /// [`Oracle`].
    Oracle,
    /// [`Predictive`] on a node's link; a `timeout` on the others.
    Predictive,
}

/// A link's policy as configured: its name and the parameters of its link power table (each
/// policy reads its own; the links table reports them all).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolicySettings {
    pub policy: LinkPolicy,
    /// `timeout` and `perfbound`: idle time before the link sleeps; `adaptive`: its start.
    pub idle_timeout_ps: Ps,
    /// The depth of the policies that do not choose one per gap (all but `oracle`).
    pub depth: Depth,
    /// `perfbound`: the most delay its wakes may add, as a share of the elapsed time.
    pub slowdown_bound: f64,
    /// `adaptive`: the share of the elapsed time it tunes its wakes' delay to ...
    pub delay_share: f64,
    /// ... judged over epochs of this many gaps.
    pub window: u32,
}

impl PolicySettings {
    /// The settings of `policy` with every parameter at its default ([`crate::config`]'s).
    pub fn new(policy: LinkPolicy, idle_timeout_ps: Ps) -> Self {
        Self {
            policy,
            idle_timeout_ps,
            depth: Depth::DeepSleep,
            slowdown_bound: DEFAULT_SLOWDOWN_BOUND,
            delay_share: DEFAULT_DELAY_SHARE,
            window: DEFAULT_WINDOW,
        }
    }

    /// A fresh instance of the policy, for one state machine on `phy` (whose wake times are the
    /// longer of its ends'), attached to `node` if it is the link between a node and its switch.
    pub fn build(&self, phy: &PhyTiming, node: Option<u32>) -> LinkSleep {
        // A PHY without fast wake sleeps deep, whatever the depth asked.
        let depth = if phy.fast_wake.is_some() {
            self.depth
        } else {
            Depth::DeepSleep
        };
        let timeout = Timeout {
            idle_timeout_ps: self.idle_timeout_ps,
            depth,
        };
        match self.policy {
            LinkPolicy::AlwaysOn => LinkSleep::AlwaysOn(AlwaysOn),
            LinkPolicy::Timeout => LinkSleep::Timeout(timeout),
            LinkPolicy::Predictive => match node {
                Some(n) => {
                    LinkSleep::Predictive(Box::new(Predictive::new(n, depth, &phy.depth(depth))))
                }
                // No MPI layer forecasts a link between switches.
                None => LinkSleep::Timeout(timeout),
            },
            LinkPolicy::Oracle => LinkSleep::Oracle(Box::new(Oracle { phy: *phy })),
            LinkPolicy::Adaptive => LinkSleep::Adaptive(Box::new(Adaptive::new(
                self.idle_timeout_ps,
                &phy.depth(depth),
                depth,
                self.delay_share,
                self.window,
            ))),
            LinkPolicy::PerfBound => {
                let d = phy.depth(depth);
                LinkSleep::PerfBound(Box::new(PerfBound {
                    timeout,
                    slowdown_bound: self.slowdown_bound,
                    sleep_time_ps: d.sleep_time_ps,
                    wake_time_ps: d.wake_time_ps,
                    delay_ps: 0,
                }))
            }
        }
    }
}

/// PerfBound's default bound: 1 % slowdown (Saravanan et al., IEEE Trans. Computers 2018).
pub const DEFAULT_SLOWDOWN_BOUND: f64 = 0.01;
/// `adaptive`'s defaults (docs/config.md): its wakes' delay near 1 % of the elapsed time,
/// PerfBound's bound (SPPS reports under 1 % slowdown), retuned every 32 gaps (an assumption).
pub const DEFAULT_DELAY_SHARE: f64 = 0.01;
pub const DEFAULT_WINDOW: u32 = 32;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::FastWake;

    const US: Ps = 1_000_000;

    #[test]
    fn a_timeout_sleeps_only_in_a_gap_longer_than_it() {
        let mut t = Timeout {
            idle_timeout_ps: 10 * US,
            depth: Depth::DeepSleep,
        };
        assert_eq!(t.idle(5 * US, 15 * US), None);
        assert_eq!(
            t.idle(5 * US, 16 * US),
            Some(Sleep::on_demand(15 * US, Depth::DeepSleep))
        );
        let mut eager = Timeout {
            idle_timeout_ps: 0,
            depth: Depth::DeepSleep,
        };
        assert_eq!(
            eager.idle(5 * US, 5 * US + 1),
            Some(Sleep::on_demand(5 * US, Depth::DeepSleep))
        );
        assert_eq!(AlwaysOn.idle(0, 1_000 * US), None);
    }

    /// Deep sleep: Ts 2 us, Tw 3 us (break-even 5 us). Fast wake: Ts 0, Tw 0.5 us, keeping
    /// half the saving (break-even 0.5 us).
    fn two_depths() -> PhyTiming {
        PhyTiming {
            sleep_time_ps: 2 * US,
            wake_time_ps: 3 * US,
            refresh_period_ps: 0,
            refresh_time_ps: 0,
            fast_wake: Some(FastWake {
                sleep_time_ps: 0,
                wake_time_ps: US / 2,
                saving: 0.5,
            }),
        }
    }

    #[test]
    fn the_oracle_picks_fast_wake_for_middle_gaps_and_deep_sleep_for_long_ones() {
        let mut o = Oracle { phy: two_depths() };
        // Gap g: deep saves g - 5 us, fast 0.5 (g - 0.5 us); equal at g = 9.5 us.
        // g = 0.5 us: neither saves (fast reaches LPI for 0 us).
        assert_eq!(o.idle(0, US / 2), None);
        // g = 4 us: deep cannot reach LPI; fast saves 0.5 x 3.5 = 1.75 us.
        let s = o.idle(10 * US, 14 * US).unwrap();
        assert_eq!(
            (s.at, s.depth, s.wake_at),
            (10 * US, Depth::FastWake, Some(14 * US - US / 2))
        );
        // g = 9 us: deep 4 us, fast 0.5 x 8.5 = 4.25 us: fast.
        assert_eq!(o.idle(0, 9 * US).unwrap().depth, Depth::FastWake);
        // g = 10 us: deep 5 us, fast 4.75 us: deep, waking 3 us ahead.
        let s = o.idle(20 * US, 30 * US).unwrap();
        assert_eq!(
            (s.at, s.depth, s.wake_at),
            (20 * US, Depth::DeepSleep, Some(27 * US))
        );
    }

    #[test]
    fn the_oracle_without_fast_wake_sleeps_exactly_in_gaps_past_break_even() {
        let mut phy = two_depths();
        phy.fast_wake = None;
        let mut o = Oracle { phy };
        // Break-even Ts + Tw = 5 us: a 5 us gap has no LPI, a 5.000001 us one has.
        assert_eq!(o.idle(0, 5 * US), None);
        assert_eq!(
            o.idle(0, 5 * US + 1),
            Some(Sleep {
                at: 0,
                depth: Depth::DeepSleep,
                wake_at: Some(2 * US + 1)
            })
        );
    }

    #[test]
    fn predictive_sleeps_on_the_first_forecast_past_break_even_and_moves_its_wake() {
        // Deep sleep only: Ts 2 us, Tw 3 us, break-even 5 us.
        let mut phy = two_depths();
        phy.fast_wake = None;
        let mut p = Predictive::new(0, Depth::DeepSleep, &phy.depth(Depth::DeepSleep));
        let f = |made: Ps, next: Option<Ps>| Forecast { made, next };
        // No forecast yet: awake.
        assert_eq!(p.idle(0, 100 * US), None);
        // Made while the link is busy (to 10 us): in force as the stretch begins at 10 us, so it
        // sleeps then, waking 3 us before the forecast 50 us.
        p.forecast(f(8 * US, Some(50 * US)), None);
        let at_10 = |wake_us: Ps| Sleep {
            at: 10 * US,
            depth: Depth::DeepSleep,
            wake_at: Some(wake_us * US),
        };
        assert_eq!(p.idle(10 * US, 50 * US), Some(at_10(47)));
        // Within a stretch from 60 us: a forecast of none keeps it awake; one of a use 5 us
        // away (exactly break-even) too; one at 70 us of a use at 90 us puts it to sleep then.
        p.forecast(f(61 * US, None), Some(60 * US));
        p.forecast(f(62 * US, Some(67 * US)), Some(60 * US));
        assert_eq!(p.idle(60 * US, 69 * US), None);
        p.forecast(f(70 * US, Some(90 * US)), Some(60 * US));
        let s = p.idle(60 * US, 95 * US).unwrap();
        assert_eq!((s.at, s.wake_at), (70 * US, Some(87 * US)));
        // A later forecast before the wake moves it: to 100 - 3 us, then a rank calls at 80 us
        // (none): it wakes at once.
        p.forecast(f(75 * US, Some(100 * US)), Some(60 * US));
        assert_eq!(p.idle(60 * US, 95 * US).unwrap().wake_at, Some(97 * US));
        p.forecast(f(80 * US, None), Some(60 * US));
        assert_eq!(p.idle(60 * US, 95 * US).unwrap().wake_at, Some(80 * US));
        // Once the wake has begun a forecast changes nothing.
        p.forecast(f(85 * US, Some(200 * US)), Some(60 * US));
        assert_eq!(p.idle(60 * US, 95 * US).unwrap().wake_at, Some(80 * US));
        // A forecast made as the stretch ends (by the call whose traffic ends it) is not one
        // made within it.
        p.forecast(f(300 * US, Some(400 * US)), Some(200 * US));
        assert_eq!(p.idle(200 * US, 300 * US), None);
    }

    #[test]
    fn adaptive_settles_on_its_delay_target_and_follows_a_change() {
        // Deep sleep only: Ts 2 us, Tw 3 us, so the break-even time, its lowest timeout, is
        // 5 us. Epochs of 4 gaps, target 1 %: it doubles above 1 %, halves under 0.5 %.
        let mut phy = two_depths();
        phy.fast_wake = None;
        let deep = phy.depth(Depth::DeepSleep);
        let mut a = Adaptive::new(0, &deep, Depth::DeepSleep, 0.01, 4);
        let mut t = 0;
        // One epoch, each gap followed by 1 us of traffic: the timeout in force (its first
        // gap's start retunes it from the epoch before) and the gaps it slept in.
        let mut epoch = |a: &mut Adaptive, gaps: [Ps; 4]| {
            let (mut timeout, mut slept) = (0, [false; 4]);
            for (i, us) in gaps.into_iter().enumerate() {
                slept[i] = a.idle(t, t + us * US).is_some();
                if i == 0 {
                    timeout = a.timeout_ps();
                }
                t += (us + 1) * US;
            }
            (timeout, slept)
        };
        let (all, long) = ([true; 4], [false, false, false, true]);
        // Gaps 8, 8, 8, 500 us: an epoch lasts 528 us. A start of 0 is raised to 5 us; it
        // sleeps in every gap and each wake delays its packet 3 us (the sleep has completed):
        // 12 / 528 = 2.3 % > 1 %, so 10 us. Then it sleeps in the 500 us gap only:
        // 3 / 528 = 0.57 %, within target; at 5 us it would have been 2.3 % again, so it stays
        // at 10 us.
        let short = [8, 8, 8, 500];
        assert_eq!(epoch(&mut a, short), (5 * US, all));
        assert_eq!(epoch(&mut a, short), (10 * US, long));
        assert_eq!(epoch(&mut a, short), (10 * US, long));
        // The long gap grows to 2,000 us (epochs of 2,028 us): 3 / 2,028 = 0.15 %, and at
        // 5 us it would have been 12 / 2,028 = 0.59 %, within 1 %: 5 us, where it stays.
        let sparse = [8, 8, 8, 2_000];
        assert_eq!(epoch(&mut a, sparse), (10 * US, long));
        assert_eq!(epoch(&mut a, sparse), (5 * US, all));
        assert_eq!(epoch(&mut a, sparse), (5 * US, all));
        // Asked again about a stretch (its end later) counts it once.
        let mut b = Adaptive::new(0, &deep, Depth::DeepSleep, 0.01, 1);
        assert_eq!(b.idle(0, 4 * US), None);
        assert!(b.idle(0, 6 * US).is_some());
        assert_eq!(b.timeout_ps(), 5 * US);
        // Its epoch of one 6 us gap: 3 us of delay in 10 us, 30 %: 10 us.
        b.idle(10 * US, 11 * US);
        assert_eq!(b.timeout_ps(), 10 * US);
    }

    #[test]
    fn perfbound_sleeps_as_soon_as_its_bound_allows_within_a_gap() {
        // Ts 2 us, Tw 3 us, bound 1 %: it sleeps at the earliest t at least its timeout into
        // the stretch with delay + 5 us <= 1 % of t.
        let mut p = PerfBound {
            timeout: Timeout {
                idle_timeout_ps: 0,
                depth: Depth::DeepSleep,
            },
            slowdown_bound: 0.01,
            sleep_time_ps: 2 * US,
            wake_time_ps: 3 * US,
            delay_ps: 0,
        };
        // Idle from the run's start: 5 us <= 0.01 t from t = 500 us, inside a gap to 600 us;
        // the packet at 600 us waits the 3 us wake.
        assert_eq!(
            p.idle(0, 600 * US),
            Some(Sleep::on_demand(500 * US, Depth::DeepSleep))
        );
        assert_eq!(p.delay_ps, 3 * US);
        // 3 + 5 = 8 us: from 800 us. A gap to 790 us ends first; to 900 us it sleeps at
        // 800 us, and a packet at 801 us comes during the sleep (until 802 us): 1 + 3 us.
        assert_eq!(p.idle(601 * US, 790 * US), None);
        assert_eq!(p.idle(791 * US, 801 * US).map(|s| s.at), Some(800 * US));
        assert_eq!(p.delay_ps, 7 * US);
        // With a 50 us timeout: 12 us allows 1,200 us, later than 1,001 + 50; asked again
        // about the same gap with a later end, it sleeps then. In a gap from 1,480 us, 15 us
        // allows 1,500 us, but the timeout comes later: 1,530 us.
        p.timeout.idle_timeout_ps = 50 * US;
        assert_eq!(p.idle(1_001 * US, 1_150 * US), None);
        assert_eq!(
            p.idle(1_001 * US, 1_300 * US).map(|s| s.at),
            Some(1_200 * US)
        );
        assert_eq!(
            p.idle(1_480 * US, 2_000 * US).map(|s| s.at),
            Some(1_530 * US)
        );
        // A bound of 0 never sleeps.
        p.slowdown_bound = 0.0;
        assert_eq!(p.idle(3_000 * US, 9_000 * US), None);
    }
}
