//! Power over time. Energy is added exactly (each interval split over the bins it overlaps); the
//! bin width is fixed, or starts at 1 us and doubles (merging neighbours) whenever the run
//! outgrows `max_bins`, so memory stays constant however long the run. A fixed width doubles too
//! once the run outgrows [`FIXED_MAX_BINS`], so no width can exhaust memory. An interval costs the
//! same whatever its length: the bins it covers whole get its power as a step in a difference
//! array, summed into energy only when bins merge or are read.

use tracewatt_core::time::PS_PER_US;
use tracewatt_core::Ps;

/// The most bins a timeline of fixed width keeps (16 MiB per component).
pub const FIXED_MAX_BINS: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct Timeline {
    width_ps: Ps,
    auto: bool,
    max_bins: usize,
    components: usize,
    /// Joules per (bin, component): `[bin * components + k]`.
    energy_j: Vec<f64>,
    /// Power steps per (bin, component): a bin covered whole by an interval of `w` watts gets
    /// `w x width` joules once the steps up to it are summed.
    step_w: Vec<f64>,
}

impl Timeline {
    /// `width_ps == 0` chooses the width automatically (at most `max_bins` bins).
    pub fn new(components: usize, width_ps: Ps, max_bins: usize) -> Self {
        Self {
            width_ps: if width_ps == 0 { PS_PER_US } else { width_ps },
            auto: width_ps == 0,
            max_bins: max_bins.max(2),
            components,
            energy_j: Vec::new(),
            step_w: Vec::new(),
        }
    }

    /// Turns the power steps into energy.
    fn settle(&mut self) {
        let c = self.components;
        let width_s = self.width_ps as f64 * 1e-12;
        for k in 0..c {
            let mut w = 0.0;
            for b in 0..self.energy_j.len() / c.max(1) {
                w += self.step_w[b * c + k];
                self.step_w[b * c + k] = 0.0;
                self.energy_j[b * c + k] += w * width_s;
            }
        }
    }

    pub fn width_ps(&self) -> Ps {
        self.width_ps
    }

    pub fn components(&self) -> usize {
        self.components
    }

    fn ensure(&mut self, end: Ps) {
        let mut need = end.div_ceil(self.width_ps) as usize;
        let most = if self.auto {
            self.max_bins
        } else {
            FIXED_MAX_BINS
        };
        while need > most {
            self.settle();
            let bins = self.energy_j.len() / self.components;
            let half = bins.div_ceil(2);
            let mut merged = vec![0.0; half * self.components];
            for b in 0..bins {
                for k in 0..self.components {
                    merged[(b / 2) * self.components + k] += self.energy_j[b * self.components + k];
                }
            }
            self.energy_j = merged;
            self.step_w = vec![0.0; self.energy_j.len()];
            self.width_ps *= 2;
            need = end.div_ceil(self.width_ps) as usize;
        }
        if need * self.components > self.energy_j.len() {
            self.energy_j.resize(need * self.components, 0.0);
            // One more bin of steps: an interval ending on a bin edge steps down there.
            self.step_w.resize((need + 1) * self.components, 0.0);
        }
    }

    /// Adds a constant power `watts` of component `k` over [start, end).
    pub fn add(&mut self, k: usize, start: Ps, end: Ps, watts: f64) {
        if end <= start || watts == 0.0 {
            return;
        }
        self.ensure(end);
        let (w, c) = (self.width_ps, self.components);
        let (first, last) = ((start / w) as usize, ((end - 1) / w) as usize);
        if first == last {
            self.energy_j[first * c + k] += watts * (end - start) as f64 * 1e-12;
            return;
        }
        let first_end = (first as Ps + 1) * w;
        self.energy_j[first * c + k] += watts * (first_end - start) as f64 * 1e-12;
        self.energy_j[last * c + k] += watts * (end - last as Ps * w) as f64 * 1e-12;
        self.step_w[(first + 1) * c + k] += watts;
        self.step_w[last * c + k] -= watts;
    }

    /// Adds `joules` spent at the instant `at` (an interrupt, a transition) to component `k`.
    pub fn add_energy(&mut self, k: usize, at: Ps, joules: f64) {
        if joules == 0.0 {
            return;
        }
        self.ensure(at + 1);
        let b = (at / self.width_ps) as usize;
        self.energy_j[b * self.components + k] += joules;
    }

    /// Adds every component of `other` (drawn with the same bin parameters up to `end`) into
    /// this timeline's components `first..`.
    pub fn absorb(&mut self, first: usize, mut other: Timeline, end: Ps) {
        let end = end.max(1);
        self.ensure(end);
        other.ensure(end);
        other.settle();
        debug_assert_eq!(self.width_ps, other.width_ps, "timelines drawn alike");
        let n = end.div_ceil(self.width_ps) as usize;
        for b in 0..n.min(other.energy_j.len() / other.components.max(1)) {
            for k in 0..other.components {
                self.energy_j[b * self.components + first + k] +=
                    other.energy_j[b * other.components + k];
            }
        }
    }

    /// Average power per bin and component up to `end`: (bin start, bin end, watts per component).
    pub fn bins(&mut self, end: Ps) -> Vec<(Ps, Ps, Vec<f64>)> {
        self.ensure(end.max(1));
        self.settle();
        let n = end.div_ceil(self.width_ps) as usize;
        (0..n)
            .map(|b| {
                let lo = b as Ps * self.width_ps;
                let hi = (lo + self.width_ps).min(end);
                let secs = (hi - lo).max(1) as f64 * 1e-12;
                let w = (0..self.components)
                    .map(|k| self.energy_j[b * self.components + k] / secs)
                    .collect();
                (lo, hi, w)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_is_conserved_across_bins_and_merges() {
        let mut t = Timeline::new(2, 0, 8);
        t.add(0, 500_000, 3_500_000, 2.0); // 3 us at 2 W = 6 uJ
        t.add(1, 0, 20_000_000, 1.0); // 20 us at 1 W: forces two doublings (1 -> 4 us bins)
        assert_eq!(t.width_ps(), 4 * PS_PER_US);
        let bins = t.bins(20_000_000);
        assert_eq!(bins.len(), 5);
        let e0: f64 = bins
            .iter()
            .map(|(lo, hi, w)| w[0] * (hi - lo) as f64 * 1e-12)
            .sum();
        let e1: f64 = bins
            .iter()
            .map(|(lo, hi, w)| w[1] * (hi - lo) as f64 * 1e-12)
            .sum();
        assert!((e0 - 6e-6).abs() < 1e-15, "{e0}");
        assert!((e1 - 20e-6).abs() < 1e-15, "{e1}");
        assert!((bins[0].2[0] - 1.5).abs() < 1e-9); // all 3 us of the 2 W interval fall in the first 4 us
    }

    #[test]
    fn long_intervals_spread_over_the_bins_they_cover_as_a_bin_by_bin_split_does() {
        // Against the definition: each interval's power times its overlap with each bin.
        let intervals = [
            (0, 10_500, 2.0),
            (2_500, 2_700, 5.0),
            (999, 7_001, 1.5),
            (4_000, 4_000, 9.0),
        ];
        for auto in [false, true] {
            let mut t = Timeline::new(1, if auto { 0 } else { 1_000 }, 4);
            for (a, b, w) in intervals {
                t.add(0, a * 1_000, b * 1_000, w);
            }
            let bins = t.bins(10_500_000);
            for (lo, hi, got) in &bins {
                let want_j: f64 = intervals
                    .iter()
                    .map(|(a, b, w)| {
                        let overlap = (b * 1_000).min(*hi).saturating_sub((a * 1_000).max(*lo));
                        w * overlap as f64 * 1e-12
                    })
                    .sum();
                let got_j = got[0] * (hi - lo) as f64 * 1e-12;
                assert!(
                    (got_j - want_j).abs() < 1e-18,
                    "{lo}..{hi}: {got_j} vs {want_j}"
                );
            }
        }
    }

    #[test]
    fn fixed_width_grows_instead_of_merging() {
        let mut t = Timeline::new(1, 1_000, 2);
        t.add(0, 0, 10_000, 1.0);
        assert_eq!(t.width_ps(), 1_000);
        assert_eq!(t.bins(10_000).len(), 10);
    }
}
