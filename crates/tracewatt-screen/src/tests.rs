//! Hand-worked cases: every expected figure follows from the idle intervals and settings given.
// Wake and hop counts are whole numbers, exact in floating point: compared exactly.
#![allow(clippy::float_cmp)]

use super::*;
use crate::chain::Counted;

const US: f64 = 1e-6;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-9)
}

/// Columns of the run's tables, owned.
#[derive(Default)]
struct Tables {
    trailing_idle_s: Vec<f64>,
    active_w: Vec<f64>,
    lpi_w: Vec<f64>,
    refresh_period_s: Vec<f64>,
    refresh_time_s: Vec<f64>,
    class: Vec<Option<usize>>,
    paired: Vec<bool>,
    selected: Vec<bool>,
    /// (link, threshold_s, count, total_s)
    counts: Vec<(usize, f64, f64, f64)>,
    /// (link, lo_s, hi_s, count, total_s)
    hist: Vec<(usize, f64, f64, f64, f64)>,
}

impl Tables {
    /// `n` independent, selected node-link directions of 2 W active, 0.5 W in LPI.
    fn new(n: usize) -> Self {
        Tables {
            trailing_idle_s: vec![0.0; n],
            active_w: vec![2.0; n],
            lpi_w: vec![0.5; n],
            refresh_period_s: vec![0.0; n],
            refresh_time_s: vec![0.0; n],
            class: vec![None; n],
            paired: vec![false; n],
            selected: vec![true; n],
            ..Tables::default()
        }
    }

    fn screen(
        &self,
        pairs: Option<PairCounts<'_>>,
        messages: Option<Messages<'_>>,
        settings: (&[f64], &[f64], &[f64]),
    ) -> Vec<Row> {
        let (timeouts_us, wakes_us, sleeps_us) = settings;
        let settings = Settings {
            timeouts_us,
            wakes_us,
            sleeps_us,
        };
        self.with_run(pairs, messages, |run| screen(run, &settings).unwrap())
    }

    /// The oracle's rows at every (sleep, wake) of `settings`, us.
    fn oracle(&self, pairs: Option<PairCounts<'_>>, settings: (&[f64], &[f64])) -> Vec<Row> {
        let (wakes_us, sleeps_us) = settings;
        let settings = Settings {
            timeouts_us: &[],
            wakes_us,
            sleeps_us,
        };
        self.with_run(pairs, None, |run| screen_oracle(run, &settings).unwrap())
    }

    /// `f` of the run these tables describe (1 ms long).
    fn with_run<R>(
        &self,
        pairs: Option<PairCounts<'_>>,
        messages: Option<Messages<'_>>,
        f: impl FnOnce(&Run<'_>) -> R,
    ) -> R {
        let col = |f: fn(&(usize, f64, f64, f64)) -> f64| -> Vec<f64> {
            self.counts.iter().map(f).collect()
        };
        let (c_thr, c_count, c_total) = (col(|r| r.1), col(|r| r.2), col(|r| r.3));
        let c_link: Vec<usize> = self.counts.iter().map(|r| r.0).collect();
        let h = |f: fn(&(usize, f64, f64, f64, f64)) -> f64| -> Vec<f64> {
            self.hist.iter().map(f).collect()
        };
        let (h_lo, h_hi, h_count, h_total) = (h(|r| r.1), h(|r| r.2), h(|r| r.3), h(|r| r.4));
        let h_link: Vec<usize> = self.hist.iter().map(|r| r.0).collect();
        let run = Run {
            links: Links {
                trailing_idle_s: &self.trailing_idle_s,
                active_w: &self.active_w,
                lpi_w: &self.lpi_w,
                refresh_period_s: &self.refresh_period_s,
                refresh_time_s: &self.refresh_time_s,
                class: &self.class,
                paired: &self.paired,
                selected: &self.selected,
            },
            idle_counts: IdleCounts {
                link: &c_link,
                threshold_s: &c_thr,
                count: &c_count,
                total_s: &c_total,
            },
            hist: IdleHist {
                link: &h_link,
                lo_s: &h_lo,
                hi_s: &h_hi,
                count: &h_count,
                total_s: &h_total,
            },
            pairs,
            messages,
            span_s: 1000.0 * US,
        };
        f(&run)
    }
}

/// One link direction idle for 5, 30 and 26 us between packets and 40 us at the end of a 1 ms
/// run, kept at thresholds 0 and 10 us.
fn one_link() -> Tables {
    let mut t = Tables::new(1);
    t.trailing_idle_s = vec![40.0 * US];
    t.counts = vec![(0, 0.0, 4.0, 101.0 * US), (0, 10.0 * US, 3.0, 96.0 * US)];
    t
}

#[test]
fn a_link_with_known_idle_gaps_wakes_sleeps_and_saves_as_worked_by_hand() {
    // Timeout 10 us, sleep 2 us: the 30, 26 and 40 us gaps sleep, 18 + 14 + 28 = 60 us in LPI;
    // the 40 us one ends the run, so 2 wakes. Energy: 2 W x 940 us + 0.5 W x 60 us.
    let rows = one_link().screen(None, None, (&[10.0], &[5.0], &[2.0]));
    let r = &rows[0];
    assert_eq!((r.wakes, r.max_link_wakes), (2.0, 2.0));
    assert!(close(r.lpi_s, 60.0 * US), "{}", r.lpi_s);
    assert!(close(r.lpi_fraction, 0.06));
    assert!(close(r.link_energy_j, 2.0 * 940.0 * US + 0.5 * 60.0 * US));
    assert!(close(r.link_saving_pct, 100.0 * (1.0 - 1910.0 / 2000.0)));
    assert!(r.exact && r.pairs_exact && r.confirm);
    assert_eq!((r.paired, r.bound), (0, Bound::WakeSum));
    // Without messages every wake counts, each 5 + 2 us: 2 x 7 = 14 us, longer than the
    // timeout, so any gap could become a wake: priced at 0, where the 5 us gap wakes too,
    // 3 x 7 = 21 us.
    assert!(r.chain_wakes.is_nan());
    assert_eq!(r.bound_threshold_us, 0.0);
    assert!(close(r.penalty_bound_s, 21.0 * US));
    assert!(close(r.penalty_bound_pct, 2.1));
}

#[test]
fn refreshes_are_priced_at_their_mean_rate_and_the_row_is_not_exact() {
    // A refresh of 1 us every 10 us: a tenth of the 60 us of LPI at active power.
    let mut t = one_link();
    t.refresh_period_s = vec![10.0 * US];
    t.refresh_time_s = vec![1.0 * US];
    let r = &t.screen(None, None, (&[10.0], &[5.0], &[2.0]))[0];
    assert!(close(r.lpi_s, 60.0 * US));
    assert!(close(r.link_energy_j, 2.0 * 946.0 * US + 0.5 * 54.0 * US));
    assert!(!r.exact);
}

#[test]
fn between_kept_thresholds_the_histogram_is_interpolated() {
    // Bins [1, 10) us: the 5 us gap; [10, 100) us: the other three, 96 us. At 50 us, 5/9 of
    // the upper bin lies above: 3 x 5/9 = 5/3 gaps, taken at the mean of [50, 100) us, 75 us.
    // The trailing 40 us gap is below 50 us: every one of them wakes. No sleep: LPI is
    // 5/3 x 75 - 5/3 x 50 = 125/3 us.
    let mut t = one_link();
    t.hist = vec![
        (0, 1.0 * US, 10.0 * US, 1.0, 5.0 * US),
        (0, 10.0 * US, 100.0 * US, 3.0, 96.0 * US),
    ];
    let r = &t.screen(None, None, (&[50.0], &[5.0], &[0.0]))[0];
    assert!(!r.exact);
    assert!(close(r.wakes, 5.0 / 3.0), "{}", r.wakes);
    assert!(close(r.lpi_s, 125.0 / 3.0 * US), "{}", r.lpi_s);
}

#[test]
fn paired_links_are_screened_from_their_own_idle_intervals() {
    // Directions 0 and 1 of one link. Alone, 0 has gaps of 30, 20 and 40 us (the last ends
    // the run), 1 has one of 60 us between packets; together they are idle 20 and 30 us (the
    // last at the end). Timeout 10 us, no sleep.
    let mut t = Tables::new(2);
    t.paired = vec![true, true];
    t.trailing_idle_s = vec![40.0 * US, 0.0];
    t.counts = vec![
        (0, 10.0 * US, 3.0, 90.0 * US),
        (1, 10.0 * US, 1.0, 60.0 * US),
    ];
    let (a, b) = ([0], [1]);
    let pairs = PairCounts {
        pairs: 1,
        a: &a,
        b: &b,
        threshold_s: &[10.0 * US],
        count: &[2.0],
        total_s: &[50.0 * US],
        trailing_idle_s: &[30.0 * US],
    };
    // One wake per link (the 20 us gap; the 30 us one ends the run), each direction in LPI
    // for 50 - 2 x 10 = 30 us.
    let r = &t.screen(Some(pairs), None, (&[10.0], &[5.0], &[0.0]))[0];
    assert_eq!((r.wakes, r.max_link_wakes, r.paired), (1.0, 1.0, 2));
    assert!(r.pairs_exact && r.exact);
    assert!(close(r.lpi_s, 60.0 * US));
    // Without the link's intervals each direction counts alone: 2 + 1 wakes, and the LPI of
    // 90 - 30 and 60 - 10 us.
    let r = &t.screen(None, None, (&[10.0], &[5.0], &[0.0]))[0];
    assert_eq!(r.wakes, 3.0);
    assert!(!r.pairs_exact);
    assert!(close(r.lpi_s, 110.0 * US));
}

#[test]
fn the_oracle_sleeps_in_every_gap_past_break_even_and_delays_nothing() {
    // Sleep 2 us, wake 8 us: break-even 10 us. The 30 and 26 us gaps sleep at their start and
    // wake 8 us before their end: 30 - 10 + 26 - 10 = 36 us in LPI, 2 wakes; the 40 us gap ends
    // the run, so it needs no wake: 40 - 2 = 38 us. The 5 us gap stays active.
    let rows = one_link().oracle(None, (&[8.0], &[2.0]));
    let r = &rows[0];
    assert_eq!((r.wakes, r.max_link_wakes), (2.0, 2.0));
    assert!(close(r.lpi_s, 74.0 * US), "{}", r.lpi_s);
    // 2 W x 926 us + 0.5 W x 74 us.
    assert!(close(r.link_energy_j, 1889.0 * US));
    assert!(close(r.link_saving_pct, 100.0 * (1.0 - 1889.0 / 2000.0)));
    assert_eq!(
        (r.idle_timeout_us, r.wake_time_us, r.sleep_time_us),
        (10.0, 8.0, 2.0)
    );
    assert_eq!((r.penalty_bound_s, r.penalty_bound_pct), (0.0, 0.0));
    assert_eq!(r.bound, Bound::NoDelay);
    assert!(r.exact);
}

#[test]
fn the_oracle_leaves_a_last_gap_under_break_even_active() {
    // Gaps of 30 and 26 us between packets, then 6 us to the end. Sleep 2 us, wake 8 us: the
    // last gap is under the 10 us break-even, so the oracle keeps the link active there (as
    // the simulated one does, which prices every gap by its sleep and wake): 20 + 16 us.
    let mut t = Tables::new(1);
    t.trailing_idle_s = vec![6.0 * US];
    t.counts = vec![(0, 10.0 * US, 2.0, 56.0 * US)];
    let r = &t.oracle(None, (&[8.0], &[2.0]))[0];
    assert_eq!(r.wakes, 2.0);
    assert!(close(r.lpi_s, 36.0 * US), "{}", r.lpi_s);
}

#[test]
fn the_oracle_bounds_the_policies_that_delay_nothing_not_those_that_do() {
    // Sleep 2 us, wake 8 us. A timeout of 10 us sleeps in the same gaps as the oracle but
    // 10 us later: 30 + 26 + 40 - 3 x 12 = 60 us of LPI against the oracle's 74. A timeout of
    // 0 sleeps in every gap right away and wakes only when a packet comes, which then waits
    // the 8 us wake: 3 + 28 + 24 + 38 = 93 us, 19 more than the oracle (8 us before each of
    // the 2 woken gaps, and 3 in the 5 us gap, under break-even). That LPI is paid for in
    // time: the oracle is the bound of the policies that delay no packet.
    let t = one_link();
    let oracle = &t.oracle(None, (&[8.0], &[2.0]))[0];
    let rows = t.screen(None, None, (&[0.0, 10.0], &[8.0], &[2.0]));
    assert!(close(rows[1].lpi_s, 60.0 * US), "{}", rows[1].lpi_s);
    assert!(oracle.link_energy_j < rows[1].link_energy_j);
    assert!(close(rows[0].lpi_s - oracle.lpi_s, 19.0 * US));
    assert_eq!(oracle.penalty_bound_s, 0.0);
}

#[test]
fn the_oracle_screens_a_paired_link_from_its_own_idle_intervals() {
    // The link of the paired test above, idle together 20 us between packets and 30 us at the
    // end. No sleep, wake 10 us: each direction spends 20 - 10 + 30 = 40 us in LPI, one wake
    // for the link.
    let mut t = Tables::new(2);
    t.paired = vec![true, true];
    t.trailing_idle_s = vec![40.0 * US, 0.0];
    t.counts = vec![
        (0, 10.0 * US, 3.0, 90.0 * US),
        (1, 10.0 * US, 1.0, 60.0 * US),
    ];
    let (a, b) = ([0], [1]);
    let pairs = PairCounts {
        pairs: 1,
        a: &a,
        b: &b,
        threshold_s: &[10.0 * US],
        count: &[2.0],
        total_s: &[50.0 * US],
        trailing_idle_s: &[30.0 * US],
    };
    let r = &t.oracle(Some(pairs), (&[10.0], &[0.0]))[0];
    assert_eq!((r.wakes, r.paired), (1.0, 2));
    assert!(r.pairs_exact && r.exact);
    assert!(close(r.lpi_s, 80.0 * US), "{}", r.lpi_s);
}

/// Three ranks on nodes 0, 1 and 2 of a machine whose node `k` has uplink `2k` and downlink
/// `2k + 1`, and one switch-to-switch link (6, class 0) every message crosses once. Every link
/// has 20 idle gaps at each kept threshold (0, 5 and 10 us), none at the end of the run.
/// Messages: 0 -> 1 eager at [0, 1] us, 1 -> 2 rendezvous at [2, 3] us, 2 -> 0 eager at [4, 5] us.
struct Chain {
    t: Tables,
    class: Vec<f64>,
    uplink: Vec<Option<usize>>,
    downlink: Vec<Option<usize>>,
}

impl Chain {
    fn new() -> Self {
        let mut t = Tables::new(7);
        t.class[6] = Some(0);
        for l in 0..7 {
            for thr in [0.0, 5.0, 10.0] {
                t.counts.push((l, thr * US, 20.0, 500.0 * US));
            }
        }
        Chain {
            t,
            class: vec![1.0; 3],
            uplink: (0..3).map(|k| Some(2 * k)).collect(),
            downlink: (0..3).map(|k| Some(2 * k + 1)).collect(),
        }
    }

    fn messages<'a>(&'a self, counted: Option<Counted<'a>>) -> Messages<'a> {
        Messages {
            ranks: 3,
            src: &[0, 1, 2],
            dst: &[1, 2, 0],
            src_node: &[0, 1, 2],
            dst_node: &[1, 2, 0],
            uplink: &self.uplink,
            downlink: &self.downlink,
            hops: &self.class,
            classes: 1,
            start_s: &[0.0, 2.0 * US, 4.0 * US],
            end_s: &[1.0 * US, 3.0 * US, 5.0 * US],
            rendezvous: &[false, true, false],
            counted,
            horizon_s: 1.0 * US,
        }
    }
}

#[test]
fn a_chain_of_three_messages_bounds_the_slowdown_as_worked_by_hand() {
    // From the routes every hop can wake: 3 per message each way (uplink, switch link,
    // downlink). Rank 1 gets 0 + 3 = 3; the rendezvous: C = max(3 + 3, 0) + 3 = 9, so rank 1
    // has 9 and rank 2 9 + 3 = 12; rank 0 gets 12 + 3 = 15. At 0.1 us a wake that is 1.5 us:
    // a gap needs over 8.5 us to wake, priced at the 5 us threshold, where the count is the
    // same.
    let c = Chain::new();
    let r =
        &c.t.screen(None, Some(c.messages(None)), (&[10.0], &[0.1], &[0.0]))[0];
    assert_eq!(r.bound, Bound::CriticalPath);
    assert_eq!((r.chain_wakes, r.wakes), (15.0, 140.0));
    assert!(close(r.bound_threshold_us, 5.0));
    assert!(close(r.penalty_bound_s, 1.5 * US));
}

#[test]
fn the_runs_counts_tighten_the_chain_for_wakes_within_its_horizon() {
    // The run counted 2, 4 (the rendezvous's three phases together) and 1 wake hops at 5 and
    // 10 us. Rank 1 gets min(2, 3) = 2; the rendezvous: C = max(2, 0) + min(4, 2 x 3 + 3) = 6
    // for both ranks; rank 0 gets 6 + min(1, 3) = 7.
    let c = Chain::new();
    let message = [0, 1, 2, 0, 1, 2];
    let threshold_s = [
        5.0 * US,
        5.0 * US,
        5.0 * US,
        10.0 * US,
        10.0 * US,
        10.0 * US,
    ];
    let hops = [2.0, 4.0, 1.0, 2.0, 4.0, 1.0];
    let counted = Counted {
        message: &message,
        threshold_s: &threshold_s,
        hops: &hops,
    };
    let rows = c.t.screen(
        None,
        Some(c.messages(Some(counted))),
        (&[10.0], &[0.1, 2.0], &[0.0]),
    );
    assert_eq!(rows[0].chain_wakes, 7.0);
    assert!(close(rows[0].penalty_bound_s, 0.7 * US));
    assert!(close(rows[0].bound_threshold_us, 5.0));
    // A 2 us wake is beyond the run's longest sleep + wake (1 us): its counts do not hold, the
    // routes bound it: 15 x 2 = 30 us, longer than the timeout, so priced at 0.
    assert_eq!(rows[1].chain_wakes, 15.0);
    assert_eq!(rows[1].bound_threshold_us, 0.0);
    assert!(close(rows[1].penalty_bound_s, 30.0 * US));
}

#[test]
fn only_the_screened_class_wakes_on_the_chain() {
    // Screening the switch-to-switch link alone: one hop per message each way. Rank 1 gets 1;
    // C = max(1 + 1, 0) + 1 = 3, rank 2 3 + 1 = 4; rank 0 4 + 1 = 5; the link wakes 20 times.
    let mut c = Chain::new();
    c.t.selected = (0..7).map(|l| l == 6).collect();
    let r =
        &c.t.screen(None, Some(c.messages(None)), (&[10.0], &[0.1], &[0.0]))[0];
    assert_eq!((r.chain_wakes, r.wakes), (5.0, 20.0));
    assert!(close(r.penalty_bound_s, 0.5 * US));
}

#[test]
fn settings_no_other_beats_in_energy_and_bound_are_marked() {
    let row = |e: f64, p: f64| Row {
        idle_timeout_us: 0.0,
        wake_time_us: 0.0,
        sleep_time_us: 0.0,
        wakes: 0.0,
        max_link_wakes: 0.0,
        lpi_s: 0.0,
        lpi_fraction: 0.0,
        link_energy_j: e,
        link_saving_pct: 0.0,
        chain_wakes: 0.0,
        bound_threshold_us: 0.0,
        penalty_bound_s: 0.0,
        penalty_bound_pct: p,
        bound: Bound::WakeSum,
        exact: true,
        paired: 0,
        pairs_exact: true,
        confirm: false,
    };
    // (1, 3) and (2, 1) trade off; (2, 3) is beaten by both; (1, 3) twice: neither beats the
    // other.
    let mut rows = vec![row(1.0, 3.0), row(2.0, 1.0), row(2.0, 3.0), row(1.0, 3.0)];
    mark_pareto(&mut rows);
    let marked: Vec<bool> = rows.iter().map(|r| r.confirm).collect();
    assert_eq!(marked, [true, true, false, true]);
}

#[test]
fn an_index_past_its_table_is_an_error_naming_it() {
    let mut t = one_link();
    t.counts.push((3, 0.0, 1.0, 1.0));
    let (link, thr, count, total) = (vec![0, 3], vec![0.0; 2], vec![1.0; 2], vec![1.0; 2]);
    let run = Run {
        links: Links {
            trailing_idle_s: &t.trailing_idle_s,
            active_w: &t.active_w,
            lpi_w: &t.lpi_w,
            refresh_period_s: &t.refresh_period_s,
            refresh_time_s: &t.refresh_time_s,
            class: &t.class,
            paired: &t.paired,
            selected: &t.selected,
        },
        idle_counts: IdleCounts {
            link: &link,
            threshold_s: &thr,
            count: &count,
            total_s: &total,
        },
        hist: IdleHist {
            link: &[],
            lo_s: &[],
            hi_s: &[],
            count: &[],
            total_s: &[],
        },
        pairs: None,
        messages: None,
        span_s: 1.0,
    };
    let settings = Settings {
        timeouts_us: &[1.0],
        wakes_us: &[1.0],
        sleeps_us: &[1.0],
    };
    assert_eq!(
        screen(&run, &settings).unwrap_err().to_string(),
        "idle_thresholds: link_id 3 is out of range: the run has 1 links"
    );
}
