//! Power over time. Energy is added exactly (each interval split over the bins it overlaps); the
//! bin width is fixed, or starts at 1 us and doubles (merging neighbours) whenever the run
//! outgrows `max_bins`, so memory stays constant however long the run.

use tracewatt_core::time::PS_PER_US;
use tracewatt_core::Ps;

#[derive(Debug, Clone)]
pub struct Timeline {
    width_ps: Ps,
    auto: bool,
    max_bins: usize,
    components: usize,
    /// Joules per (bin, component): `[bin * components + k]`.
    energy_j: Vec<f64>,
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
        while self.auto && need > self.max_bins {
            let bins = self.energy_j.len() / self.components;
            let half = bins.div_ceil(2);
            let mut merged = vec![0.0; half * self.components];
            for b in 0..bins {
                for k in 0..self.components {
                    merged[(b / 2) * self.components + k] += self.energy_j[b * self.components + k];
                }
            }
            self.energy_j = merged;
            self.width_ps *= 2;
            need = end.div_ceil(self.width_ps) as usize;
        }
        if need * self.components > self.energy_j.len() {
            self.energy_j.resize(need * self.components, 0.0);
        }
    }

    /// Adds a constant power `watts` of component `k` over [start, end).
    pub fn add(&mut self, k: usize, start: Ps, end: Ps, watts: f64) {
        if end <= start || watts == 0.0 {
            return;
        }
        self.ensure(end);
        let w = self.width_ps;
        let mut t = start;
        while t < end {
            let b = (t / w) as usize;
            let bin_end = ((b as Ps) + 1) * w;
            let seg_end = end.min(bin_end);
            self.energy_j[b * self.components + k] += watts * (seg_end - t) as f64 * 1e-12;
            t = seg_end;
        }
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
    fn fixed_width_grows_instead_of_merging() {
        let mut t = Timeline::new(1, 1_000, 2);
        t.add(0, 0, 10_000, 1.0);
        assert_eq!(t.width_ps(), 1_000);
        assert_eq!(t.bins(10_000).len(), 10);
    }
}
