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

/// `adaptive`: a timeout per port that tunes itself to its own recent idle gaps (after SPPS's
/// self-tuning threshold). Once it has seen `window` gaps, its timeout is the longest it could
/// have had and still slept in a share `sleep_share` of them: of the last `window` gaps sorted
/// by length, the one with `floor(sleep_share * window)` longer than it. Before that it uses its
/// starting timeout. On a stationary gap distribution it settles on the distribution's
/// `1 - sleep_share` quantile, so the port wakes in about that share of its gaps; when the gaps
/// change, the timeout follows within `window` gaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Adaptive {
    timeout: Timeout,
    sleep_share: f64,
    /// The last gaps, a ring of at most `window`.
    gaps: Vec<Ps>,
    window: usize,
    next: usize,
    /// The stretch last asked about, recorded once the next one begins (it may be asked about
    /// again, with a later end, until then).
    pending: Option<(Ps, Ps)>,
}

impl Adaptive {
    pub fn new(start_timeout_ps: Ps, depth: Depth, sleep_share: f64, window: usize) -> Self {
        Self {
            timeout: Timeout {
                idle_timeout_ps: start_timeout_ps,
                depth,
            },
            sleep_share,
            gaps: Vec::with_capacity(window),
            window: window.max(1),
            next: 0,
            pending: None,
        }
    }

    /// The timeout it sleeps after.
    pub fn timeout_ps(&self) -> Ps {
        self.timeout.idle_timeout_ps
    }

    fn record(&mut self, gap: Ps) {
        if self.gaps.len() < self.window {
            self.gaps.push(gap);
        } else {
            self.gaps[self.next] = gap;
        }
        self.next = (self.next + 1) % self.window;
        if self.gaps.len() == self.window {
            let mut sorted = self.gaps.clone();
            sorted.sort_unstable();
            let longer = (self.sleep_share * self.window as f64).floor() as usize;
            self.timeout.idle_timeout_ps = if longer >= self.window {
                0
            } else {
                sorted[self.window - 1 - longer]
            };
        }
    }
}

impl SleepPolicy for Adaptive {
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        if let Some((since, end)) = self.pending {
            if since != idle_since {
                self.record(end - since);
            }
        }
        self.pending = Some((idle_since, until));
        self.timeout.idle(idle_since, until)
    }
}

/// `perfbound`: sleeps after its timeout (0: at once) only while the delay its own wakes have
/// added stays within `slowdown_bound` of the elapsed time, as PerfBound bounds each link's
/// slowdown from local information (Saravanan et al., IEEE Trans. Computers 2018). Before a
/// sleep it checks that the worst delay the sleep can add (a packet as the sleep begins waits
/// for the sleep and the wake) still fits; when it does not, the port stays active until the
/// elapsed time has grown enough. The delay it counts is what each wake added, reckoned from
/// the PHY's timing with the longer of the two ends' wake times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerfBound {
    pub timeout: Timeout,
    pub slowdown_bound: f64,
    pub sleep_time_ps: Ps,
    pub wake_time_ps: Ps,
    /// Delay its wakes have added so far.
    pub delay_ps: Ps,
}

impl SleepPolicy for PerfBound {
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        let sleep = self.timeout.idle(idle_since, until)?;
        let worst = self.delay_ps + self.sleep_time_ps + self.wake_time_ps;
        if worst as f64 > self.slowdown_bound * sleep.at as f64 {
            return None;
        }
        // The traffic waits for the sleep to complete, then for the wake.
        self.delay_ps += (sleep.at + self.sleep_time_ps).max(until) + self.wake_time_ps - until;
        Some(sleep)
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
    /// `adaptive`: the share of its gaps it tunes its timeout to sleep in ...
    pub sleep_share: f64,
    /// ... over its last this many gaps.
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
            sleep_share: DEFAULT_SLEEP_SHARE,
            window: DEFAULT_WINDOW,
        }
    }

    /// A fresh instance of the policy, for one state machine on `phy` (whose wake times are the
    /// longer of its ends').
    pub fn build(&self, phy: &PhyTiming) -> LinkSleep {
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
            LinkPolicy::Oracle => LinkSleep::Oracle(Box::new(Oracle { phy: *phy })),
            LinkPolicy::Adaptive => LinkSleep::Adaptive(Box::new(Adaptive::new(
                self.idle_timeout_ps,
                depth,
                self.sleep_share,
                self.window as usize,
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
/// `adaptive`'s defaults, assumptions (docs/config.md): wake in a tenth of the gaps, judged over
/// the last 32.
pub const DEFAULT_SLEEP_SHARE: f64 = 0.1;
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
    fn adaptive_settles_on_its_quantile_and_follows_a_change() {
        // Window 4, share 0.25: one gap in four longer than the timeout.
        let mut a = Adaptive::new(50 * US, Depth::DeepSleep, 0.25, 4);
        let mut t = 0;
        let mut gap = |a: &mut Adaptive, us: Ps| {
            // Each gap follows 1 us of traffic.
            a.idle(t, t + us * US);
            t += (us + 1) * US;
        };
        // Gaps 10, 20, 30, 40 us repeating: the first four are recorded as the fifth begins;
        // sorted 10, 20, 30, 40, floor(0.25 x 4) = 1 longer: 30 us.
        for us in [10, 20, 30, 40] {
            gap(&mut a, us);
        }
        assert_eq!(
            a.timeout_ps(),
            50 * US,
            "the start until the window is full"
        );
        for us in [10, 20, 30, 40, 10, 20, 30, 40] {
            gap(&mut a, us);
            assert_eq!(a.timeout_ps(), 30 * US);
        }
        // Gaps ten times as long: once four are in the window, 300 us.
        for us in [100, 200, 300, 400, 100] {
            gap(&mut a, us);
        }
        assert_eq!(a.timeout_ps(), 300 * US);
        // It sleeps in the 400 us gap only: 300 us after the gap's start.
        assert_eq!(a.idle(t, t + 300 * US), None);
        let s = a.idle(t, t + 400 * US).unwrap();
        assert_eq!(s.at, t + 300 * US);
    }

    #[test]
    fn perfbound_stops_at_its_bound_and_resumes_with_slack() {
        // Sleeps at once (timeout 0); Ts 2 us, Tw 3 us; bound 1 %: the worst next delay is
        // delay + 5 us, which must be at most 1 % of the time the sleep begins.
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
        // At 400 us, 5 us > 4 us: stays active.
        assert_eq!(p.idle(400 * US, 600 * US), None);
        // At 510 us, 5 us < 5.1 us: sleeps; the packet at 600 us waits the 3 us wake.
        assert!(p.idle(510 * US, 600 * US).is_some());
        assert_eq!(p.delay_ps, 3 * US);
        // At 700 us: 3 + 5 = 8 us > 7 us: the bound is reached, no sleep.
        assert_eq!(p.idle(700 * US, 900 * US), None);
        // At 810 us: 8 us < 8.1 us, slack again; a packet at 811 us comes during the sleep
        // (until 812 us) and waits 1 + 3 us.
        assert!(p.idle(810 * US, 811 * US).is_some());
        assert_eq!(p.delay_ps, 7 * US);
        // At 1,100 us: 12 us > 11 us: stops; at 1,210 us: 12 us < 12.1 us: resumes.
        assert_eq!(p.idle(1_100 * US, 1_150 * US), None);
        assert!(p.idle(1_210 * US, 1_300 * US).is_some());
        assert_eq!(p.delay_ps, 10 * US);
    }
}
