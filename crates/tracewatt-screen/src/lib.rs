//! Screening of link low-power settings from one run's idle intervals.
//!
//! A link direction that sees an idle interval of length `g` under the `timeout` policy
//! (idle_timeout `T_o`, sleep_time `T_s`, wake_time `T_w`) wakes once if `g > T_o` (unless no
//! packet follows the interval: the run's last) and spends `g - T_o - T_s` in LPI if that is
//! positive. Summed over a run's idle intervals this gives, for any setting at once, the wakes,
//! the LPI time and the link-port energy ([`tracewatt_power::lpi_time`], the state machine's own
//! arithmetic); with the run's messages it also bounds the slowdown along each rank's critical
//! path ([`screen`]). The `oracle` policy, which knows every gap, is screened from the same
//! tables ([`screen_oracle`]): the most link energy any policy with these PHY times can save
//! without delaying a packet. Where these figures and a full simulation differ, and why, is
//! documented with the Python API (`tracewatt.analysis`).

mod chain;

pub use chain::{Counted, Messages};

use tracewatt_power::{lpi_time, refreshes, PortPower};

/// How close (relative) a time must be to a threshold the run kept to count as that threshold.
const REL: f64 = 1e-9;
/// The same, absolute, for a threshold of 0, s.
const ABS_S: f64 = 1e-15;

/// Every link direction of the run, indexed by link id (`links.parquet`).
#[derive(Debug, Clone, Copy)]
pub struct Links<'a> {
    /// The idle interval that ends the run: no packet follows it, so it never wakes the link.
    pub trailing_idle_s: &'a [f64],
    /// Power of the port driving the direction, active and in LPI.
    pub active_w: &'a [f64],
    pub lpi_w: &'a [f64],
    /// LPI refreshes: `refresh_time_s` at active power every `refresh_period_s` (0: none).
    pub refresh_period_s: &'a [f64],
    pub refresh_time_s: &'a [f64],
    /// Switch-to-switch link class (the column of [`Messages::hops`]); `None` for a node link.
    pub class: &'a [Option<usize>],
    /// Screened as a `paired` link (both directions idle together, one wake per link).
    pub paired: &'a [bool],
    /// Among the screened link kinds; the others keep their power and their wakes.
    pub selected: &'a [bool],
}

/// Per link direction and idle threshold the run kept: the count and total length of its idle
/// intervals longer than the threshold, exact (`idle_thresholds.parquet`).
#[derive(Debug, Clone, Copy)]
pub struct IdleCounts<'a> {
    pub link: &'a [usize],
    pub threshold_s: &'a [f64],
    pub count: &'a [f64],
    pub total_s: &'a [f64],
}

/// The log-spaced histogram of each link direction's idle intervals (`idle_hist.parquet`).
#[derive(Debug, Clone, Copy)]
pub struct IdleHist<'a> {
    pub link: &'a [usize],
    pub lo_s: &'a [f64],
    pub hi_s: &'a [f64],
    pub count: &'a [f64],
    pub total_s: &'a [f64],
}

/// Per link (both directions together: what a `paired` state machine sees) and kept threshold
/// (`pair_idle_thresholds.parquet`).
#[derive(Debug, Clone, Copy)]
pub struct PairCounts<'a> {
    /// Links in the table.
    pub pairs: usize,
    /// The link's two directions.
    pub a: &'a [usize],
    pub b: &'a [usize],
    pub threshold_s: &'a [f64],
    pub count: &'a [f64],
    pub total_s: &'a [f64],
    pub trailing_idle_s: &'a [f64],
}

/// The run's tables the screening reads.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    pub links: Links<'a>,
    pub idle_counts: IdleCounts<'a>,
    pub hist: IdleHist<'a>,
    pub pairs: Option<PairCounts<'a>>,
    pub messages: Option<Messages<'a>>,
    /// The time the tables cover, from 0, s.
    pub span_s: f64,
}

/// The settings to screen, microseconds.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    pub timeouts_us: &'a [f64],
    pub wakes_us: &'a [f64],
    pub sleeps_us: &'a [f64],
}

/// What the penalty bound follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The wakes along the longest chain of dependent messages (the run kept its messages).
    CriticalPath,
    /// Every wake end to end.
    WakeSum,
    /// None needed: the policy wakes every link just before its packet (the oracle).
    NoDelay,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::CriticalPath => "critical_path",
            Bound::WakeSum => "wake_sum",
            Bound::NoDelay => "no_delay",
        }
    }
}

/// One screened setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub idle_timeout_us: f64,
    pub wake_time_us: f64,
    pub sleep_time_us: f64,
    /// Wakes of the screened link directions.
    pub wakes: f64,
    pub max_link_wakes: f64,
    pub lpi_s: f64,
    /// LPI time over (span x screened directions).
    pub lpi_fraction: f64,
    pub link_energy_j: f64,
    /// Against the screened ports always on.
    pub link_saving_pct: f64,
    /// The most wakes one rank's critical path can meet (NaN without the run's messages).
    pub chain_wakes: f64,
    /// The idle threshold the bound is priced at.
    pub bound_threshold_us: f64,
    pub penalty_bound_s: f64,
    pub penalty_bound_pct: f64,
    pub bound: Bound,
    /// Counts from a threshold the run kept (not interpolated) and no refreshes to price.
    pub exact: bool,
    /// Screened directions that are paired.
    pub paired: usize,
    /// The paired directions were screened from their links' own idle intervals.
    pub pairs_exact: bool,
    /// Pareto-optimal in link energy and penalty bound: worth a full simulation.
    pub confirm: bool,
}

/// A table whose columns do not fit together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenError(pub String);

impl std::fmt::Display for ScreenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScreenError {}

/// Checks that every index of `column` of `table` is below `bound` (what it indexes).
pub(crate) fn check_index(
    table: &str,
    column: &str,
    values: &[usize],
    bound: usize,
    of: &str,
) -> Result<(), ScreenError> {
    match values.iter().find(|&&v| v >= bound) {
        Some(v) => Err(ScreenError(format!(
            "{table}: {column} {v} is out of range: the run has {bound} {of}"
        ))),
        None => Ok(()),
    }
}

/// Checks that the columns of `table` have one length.
pub(crate) fn check_lengths(table: &str, lengths: &[usize]) -> Result<(), ScreenError> {
    if lengths.windows(2).any(|w| w[0] != w[1]) {
        return Err(ScreenError(format!(
            "{table}: columns of different lengths ({lengths:?})"
        )));
    }
    Ok(())
}

impl Run<'_> {
    fn check(&self) -> Result<(), ScreenError> {
        let l = &self.links;
        let n = l.trailing_idle_s.len();
        check_lengths(
            "links",
            &[
                n,
                l.active_w.len(),
                l.lpi_w.len(),
                l.refresh_period_s.len(),
                l.refresh_time_s.len(),
                l.class.len(),
                l.paired.len(),
                l.selected.len(),
            ],
        )?;
        let c = &self.idle_counts;
        check_lengths(
            "idle_thresholds",
            &[
                c.link.len(),
                c.threshold_s.len(),
                c.count.len(),
                c.total_s.len(),
            ],
        )?;
        check_index("idle_thresholds", "link_id", c.link, n, "links")?;
        let h = &self.hist;
        check_lengths(
            "idle_hist",
            &[
                h.link.len(),
                h.lo_s.len(),
                h.hi_s.len(),
                h.count.len(),
                h.total_s.len(),
            ],
        )?;
        check_index("idle_hist", "link_id", h.link, n, "links")?;
        if let Some(p) = &self.pairs {
            check_lengths(
                "pair_idle_thresholds",
                &[
                    p.a.len(),
                    p.b.len(),
                    p.threshold_s.len(),
                    p.count.len(),
                    p.total_s.len(),
                    p.trailing_idle_s.len(),
                ],
            )?;
            check_index("pair_idle_thresholds", "link_id_a", p.a, n, "links")?;
            check_index("pair_idle_thresholds", "link_id_b", p.b, n, "links")?;
        }
        if let Some(m) = &self.messages {
            let classes = l.class.iter().flatten().max().map_or(0, |c| c + 1);
            m.check(classes)?;
        }
        Ok(())
    }
}

/// The figures of every link direction at one idle timeout.
#[derive(Debug, Clone)]
struct Level {
    /// Idle intervals longer than the timeout: how many and their total length, s.
    count: Vec<f64>,
    total_s: Vec<f64>,
    /// The wakes they make (every one but a trailing interval).
    woken: Vec<f64>,
    /// Screened and able to wake.
    can_wake: Vec<bool>,
    /// The idle interval that ends the run (for a paired direction, its link's).
    trailing_s: Vec<f64>,
    /// From a threshold the run kept.
    exact: bool,
    /// The paired directions were screened from their links' own intervals.
    pairs_exact: bool,
}

/// Whether `t` is the kept threshold `kept`.
fn is_threshold(kept: f64, t: f64) -> bool {
    (kept - t).abs() <= ABS_S + REL * t.abs()
}

/// Whether an interval of `len` is longer than `t` (beyond rounding).
fn longer(len: f64, t: f64) -> bool {
    len > t * (1.0 + REL)
}

impl Run<'_> {
    /// Per link direction: count and total length of the idle intervals longer than `t`, and
    /// whether they come from a threshold the run kept (else from the histogram).
    fn over(&self, t: f64) -> (Vec<f64>, Vec<f64>, bool) {
        let n = self.links.trailing_idle_s.len();
        let c = &self.idle_counts;
        let hits: Vec<usize> = (0..c.threshold_s.len())
            .filter(|&i| is_threshold(c.threshold_s[i], t))
            .collect();
        let (mut count, mut total) = (vec![0.0; n], vec![0.0; n]);
        if hits.len() == n {
            for i in hits {
                count[c.link[i]] = c.count[i];
                total[c.link[i]] = c.total_s[i];
            }
            return (count, total, true);
        }
        // Bins wholly above the timeout count in full; the bin containing it in proportion to
        // the part above, with the intervals there taken as spread evenly over the bin.
        let h = &self.hist;
        for i in 0..h.link.len() {
            let (lo, hi) = (h.lo_s[i], h.hi_s[i]);
            let inside = lo < t && t < hi && hi.is_finite();
            let frac = if inside {
                (hi - t) / (hi - lo)
            } else if lo >= t {
                1.0
            } else {
                0.0
            };
            let above = h.count[i] * frac;
            count[h.link[i]] += above;
            total[h.link[i]] += if inside {
                above * ((t + hi) / 2.0)
            } else {
                h.total_s[i] * frac
            };
        }
        (count, total, false)
    }

    /// The figures of every link direction at the timeout `t`.
    fn level(&self, t: f64) -> Level {
        let l = &self.links;
        let (count, total_s, exact) = self.over(t);
        let woken: Vec<f64> = count
            .iter()
            .zip(l.trailing_idle_s)
            .map(|(c, &tr)| (c - if longer(tr, t) { 1.0 } else { 0.0 }).max(0.0))
            .collect();
        let can_wake = woken.iter().map(|w| *w > 0.0).collect();
        let mut f = Level {
            count,
            total_s,
            woken,
            can_wake,
            trailing_s: l.trailing_idle_s.to_vec(),
            exact,
            pairs_exact: true,
        };
        f.pairs_exact = self.pair_up(t, &mut f);
        for (w, s) in f.can_wake.iter_mut().zip(l.selected) {
            *w &= *s;
        }
        f
    }

    /// Replaces the figures of every paired direction by its link's (both directions idle
    /// together: what its state machine sees; one wake per link, charged to its first
    /// direction, and either direction's packets can meet it), from the pairs' counts at a kept
    /// threshold. Returns whether every paired direction was covered (false: the run kept no
    /// such table, or not at this timeout).
    fn pair_up(&self, t: f64, f: &mut Level) -> bool {
        let paired = self.links.paired;
        if !paired.iter().any(|p| *p) {
            return true;
        }
        let Some(p) = &self.pairs else {
            return false;
        };
        let hits: Vec<usize> = (0..p.threshold_s.len())
            .filter(|&i| is_threshold(p.threshold_s[i], t) && paired[p.a[i]])
            .collect();
        let covered = (0..p.threshold_s.len())
            .filter(|&i| is_threshold(p.threshold_s[i], t))
            .count();
        if covered != p.pairs {
            return false;
        }
        for &i in &hits {
            let (a, b) = (p.a[i], p.b[i]);
            for d in [a, b] {
                f.count[d] = p.count[i];
                f.total_s[d] = p.total_s[i];
                f.trailing_s[d] = p.trailing_idle_s[i];
            }
            let trail = if longer(p.trailing_idle_s[i], t) {
                1.0
            } else {
                0.0
            };
            f.woken[a] = (p.count[i] - trail).max(0.0);
            f.woken[b] = 0.0;
            let wakes = f.woken[a] > 0.0;
            f.can_wake[a] = wakes;
            f.can_wake[b] = wakes;
        }
        true
    }
}

/// Screens every (idle_timeout, sleep_time, wake_time) of `settings`, in that nesting order,
/// against the run's tables.
pub fn screen(run: &Run<'_>, settings: &Settings<'_>) -> Result<Vec<Row>, ScreenError> {
    run.check()?;
    let l = &run.links;
    let sel: Vec<usize> = (0..l.selected.len()).filter(|&i| l.selected[i]).collect();
    // The bound is priced at the screened timeouts, and at the kept thresholds below them (and
    // 0, every idle interval): where a delayed schedule moves the threshold a gap must pass.
    let kept = kept_thresholds(run.idle_counts.threshold_s);
    let longest_timeout_s = settings.timeouts_us.iter().copied().fold(0.0, f64::max) * 1e-6;
    let mut floors: Vec<f64> = std::iter::once(0.0)
        .chain(kept.iter().copied().filter(|t| *t <= longest_timeout_s))
        .collect();
    floors.sort_by(f64::total_cmp);
    floors.dedup();
    let levels_s: Vec<f64> = settings
        .timeouts_us
        .iter()
        .map(|to| to * 1e-6)
        .chain(floors.iter().copied())
        .collect();
    let figures: Vec<Level> = levels_s.iter().map(|&t| run.level(t)).collect();
    let wakes_at: Vec<f64> = figures
        .iter()
        .map(|f| sel.iter().map(|&i| f.woken[i]).sum())
        .collect();
    let chains = run.messages.map(|m| {
        let can_wake: Vec<&[bool]> = figures.iter().map(|f| f.can_wake.as_slice()).collect();
        let longest_us = settings.wakes_us.iter().copied().fold(0.0, f64::max)
            + settings.sleeps_us.iter().copied().fold(0.0, f64::max);
        m.chains(l.class, &can_wake, &levels_s, &kept, longest_us * 1e-6)
    });
    let pricing = Pricing {
        levels_s: &levels_s,
        floors_from: settings.timeouts_us.len(),
        floors: &floors,
        wakes_at: &wakes_at,
    };
    let port = |i: usize| PortPower {
        active_w: l.active_w[i],
        lpi_w: l.lpi_w[i],
    };
    // Summed as the rows' energy is, so a setting that never reaches LPI saves exactly 0.
    let always_on_j: f64 = sel.iter().map(|&i| port(i).energy_j(run.span_s, 0.0)).sum();
    let refreshed = sel
        .iter()
        .any(|&i| l.refresh_period_s[i] > 0.0 && l.refresh_time_s[i] > 0.0);
    let paired = sel.iter().filter(|&&i| l.paired[i]).count();
    let pct = |x: f64| {
        if run.span_s > 0.0 {
            100.0 * x / run.span_s
        } else {
            0.0
        }
    };
    let mut rows = Vec::new();
    for (col, &to) in settings.timeouts_us.iter().enumerate() {
        let f = &figures[col];
        let max_link_wakes = sel.iter().map(|&i| f.woken[i]).fold(0.0, f64::max);
        for &ts in settings.sleeps_us {
            let (mut lpi_s, mut energy_j) = (0.0, 0.0);
            for &i in &sel {
                let lpi = lpi_time(f.count[i], f.total_s[i], to * 1e-6, ts * 1e-6);
                let (_, refresh) = refreshes(lpi, l.refresh_period_s[i], l.refresh_time_s[i]);
                lpi_s += lpi;
                energy_j += port(i).energy_j(run.span_s, lpi - refresh);
            }
            for &tw in settings.wakes_us {
                let d_s = (tw + ts) * 1e-6;
                let chain = chains.as_ref().map(|c| c.for_delay(d_s));
                let (bound_s, at) = pricing.price(col, chain, d_s);
                rows.push(Row {
                    idle_timeout_us: to,
                    wake_time_us: tw,
                    sleep_time_us: ts,
                    wakes: wakes_at[col],
                    max_link_wakes,
                    lpi_s,
                    lpi_fraction: if run.span_s > 0.0 {
                        lpi_s / (run.span_s * sel.len() as f64)
                    } else {
                        0.0
                    },
                    link_energy_j: energy_j,
                    link_saving_pct: if always_on_j != 0.0 {
                        100.0 * (1.0 - energy_j / always_on_j)
                    } else {
                        0.0
                    },
                    chain_wakes: chain.map_or(f64::NAN, |c| c[at]),
                    bound_threshold_us: levels_s[at] * 1e6,
                    penalty_bound_s: bound_s,
                    penalty_bound_pct: pct(bound_s),
                    bound: if chains.is_some() {
                        Bound::CriticalPath
                    } else {
                        Bound::WakeSum
                    },
                    exact: f.exact && !refreshed,
                    paired,
                    pairs_exact: f.pairs_exact,
                    confirm: false,
                });
            }
        }
    }
    mark_pareto(&mut rows);
    Ok(rows)
}

/// Screens the `oracle` policy at every (sleep_time, wake_time) of `settings` (its timeouts
/// play no part), in that nesting order. Knowing every idle gap, the oracle sleeps at the start
/// of each gap longer than the break-even time `T_s + T_w` (a shorter one would spend longer
/// in the sleep and the wake, at full power, than it gains in LPI) and starts waking `T_w`
/// before the gap ends: such a gap spends `g - T_s - T_w` in LPI and no packet waits. The gap
/// that ends the run, slept when past break-even too, needs no wake: `g - T_s` in LPI. One
/// depth (the PHY's deep sleep): a fast-wake depth, which the simulated oracle may pick for
/// shorter gaps, is not screened. The rows' `idle_timeout_us` is the break-even time, their
/// penalty bound 0 ([`Bound::NoDelay`]).
pub fn screen_oracle(run: &Run<'_>, settings: &Settings<'_>) -> Result<Vec<Row>, ScreenError> {
    run.check()?;
    let l = &run.links;
    let sel: Vec<usize> = (0..l.selected.len()).filter(|&i| l.selected[i]).collect();
    let port = |i: usize| PortPower {
        active_w: l.active_w[i],
        lpi_w: l.lpi_w[i],
    };
    let always_on_j: f64 = sel.iter().map(|&i| port(i).energy_j(run.span_s, 0.0)).sum();
    let refreshed = sel
        .iter()
        .any(|&i| l.refresh_period_s[i] > 0.0 && l.refresh_time_s[i] > 0.0);
    let paired = sel.iter().filter(|&&i| l.paired[i]).count();
    let mut rows = Vec::new();
    for &ts in settings.sleeps_us {
        for &tw in settings.wakes_us {
            let (sleep_s, wake_s) = (ts * 1e-6, tw * 1e-6);
            let even_s = sleep_s + wake_s;
            let f = run.level(even_s);
            let (mut lpi_s, mut energy_j) = (0.0, 0.0);
            for &i in &sel {
                // Every gap past break-even, the last one as if it had to wake too; then that
                // one's wake given back.
                let mut lpi = lpi_time(f.count[i], f.total_s[i], wake_s, sleep_s);
                if longer(f.trailing_s[i], even_s) {
                    lpi += wake_s;
                }
                let (_, refresh) = refreshes(lpi, l.refresh_period_s[i], l.refresh_time_s[i]);
                lpi_s += lpi;
                energy_j += port(i).energy_j(run.span_s, lpi - refresh);
            }
            rows.push(Row {
                idle_timeout_us: even_s * 1e6,
                wake_time_us: tw,
                sleep_time_us: ts,
                wakes: sel.iter().map(|&i| f.woken[i]).sum(),
                max_link_wakes: sel.iter().map(|&i| f.woken[i]).fold(0.0, f64::max),
                lpi_s,
                lpi_fraction: if run.span_s > 0.0 {
                    lpi_s / (run.span_s * sel.len() as f64)
                } else {
                    0.0
                },
                link_energy_j: energy_j,
                link_saving_pct: if always_on_j != 0.0 {
                    100.0 * (1.0 - energy_j / always_on_j)
                } else {
                    0.0
                },
                chain_wakes: 0.0,
                bound_threshold_us: f64::NAN,
                penalty_bound_s: 0.0,
                penalty_bound_pct: 0.0,
                bound: Bound::NoDelay,
                exact: f.exact && !refreshed,
                paired,
                pairs_exact: f.pairs_exact,
                confirm: false,
            });
        }
    }
    mark_pareto(&mut rows);
    Ok(rows)
}

/// The distinct thresholds the run kept, ascending.
fn kept_thresholds(threshold_s: &[f64]) -> Vec<f64> {
    let mut kept = threshold_s.to_vec();
    kept.sort_by(f64::total_cmp);
    kept.dedup();
    kept
}

/// Where a bound is priced: the screened timeouts, then the kept thresholds below them.
#[derive(Debug)]
struct Pricing<'a> {
    levels_s: &'a [f64],
    /// The floors' first level.
    floors_from: usize,
    floors: &'a [f64],
    /// Wakes of the screened directions at each level.
    wakes_at: &'a [f64],
}

impl Pricing<'_> {
    /// The bound (s) for a wake + sleep of `d_s` at timeout `col`, and the level it is priced
    /// at: every delay is at most the bound, so a gap grows by at most that much and a wake needs
    /// a gap longer than the timeout less the bound; down to the level where that holds. `chain`:
    /// the wakes along the longest chain per level (without messages: every wake).
    fn price(&self, col: usize, chain: Option<&[f64]>, d_s: f64) -> (f64, usize) {
        let (mut at, mut bound) = (col, 0.0f64);
        loop {
            let met = chain.map_or(self.wakes_at[at], |c| c[at].min(self.wakes_at[at]));
            bound = bound.max(met * d_s);
            let need = (self.levels_s[col] - bound).max(0.0) * (1.0 + REL);
            // The floors start at 0, so one always qualifies.
            let lower =
                self.floors_from + self.floors.iter().rposition(|t| *t <= need).unwrap_or(0);
            if bound == 0.0 || self.levels_s[lower] >= self.levels_s[at] {
                return (bound, at);
            }
            at = lower;
        }
    }
}

/// Marks the rows no other beats in both link energy and penalty bound (at least as good in
/// both, better in one).
fn mark_pareto(rows: &mut [Row]) {
    let key: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.link_energy_j, r.penalty_bound_pct))
        .collect();
    for (r, &(e, p)) in rows.iter_mut().zip(&key) {
        r.confirm = !key
            .iter()
            .any(|&(e2, p2)| e2 <= e && p2 <= p && (e2 < e || p2 < p));
    }
}

#[cfg(test)]
mod tests;
