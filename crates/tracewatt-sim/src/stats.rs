//! Statistics gathered while the simulation runs: per-link traffic and idle intervals (an
//! observer of the fabric), and a compact latency histogram.

use tracewatt_core::{time::PS_PER_US, Ps};
use tracewatt_net::fabric::LinkObserver;
use tracewatt_net::ChannelId;

/// Per link direction: traffic, busy time and idle intervals. An idle interval is a maximal gap
/// in [0, end of run] during which the link direction transmits nothing; the one before the first
/// packet and the one after the last count too, so a never-used link has one interval as long as
/// the run.
#[derive(Debug)]
pub struct LinkStats {
    pub bytes: Vec<u64>,
    pub packets: Vec<u64>,
    pub busy_ps: Vec<Ps>,
    pub idle_count: Vec<u64>,
    pub idle_ps: Vec<Ps>,
    last_end: Vec<Ps>,
    /// Exact count and total of idle intervals longer than each threshold: `[ch * T + t]`.
    pub over_count: Vec<u64>,
    pub over_ps: Vec<Ps>,
    pub thresholds_ps: Vec<Ps>,
    /// Log-spaced histogram of idle interval lengths: `[ch * B + b]` (count, total).
    pub hist_count: Vec<u32>,
    pub hist_ps: Vec<Ps>,
    pub bins_per_decade: u32,
}

/// Histogram bins start at 1 ns (bin 0 also takes anything shorter) and end at 10^4 s (the last
/// bin takes anything longer): 13 decades.
pub const HIST_MIN_PS: Ps = 1_000;
pub const HIST_DECADES: u32 = 13;

impl LinkStats {
    pub fn new(channels: usize, thresholds_ps: Vec<Ps>, bins_per_decade: u32) -> Self {
        let t = thresholds_ps.len();
        let b = (HIST_DECADES * bins_per_decade) as usize;
        Self {
            bytes: vec![0; channels],
            packets: vec![0; channels],
            busy_ps: vec![0; channels],
            idle_count: vec![0; channels],
            idle_ps: vec![0; channels],
            last_end: vec![0; channels],
            over_count: vec![0; channels * t],
            over_ps: vec![0; channels * t],
            thresholds_ps,
            hist_count: vec![0; channels * b],
            hist_ps: vec![0; channels * b],
            bins_per_decade,
        }
    }

    pub fn bins(&self) -> usize {
        (HIST_DECADES * self.bins_per_decade) as usize
    }

    /// Lower edge of histogram bin `b`, ps (bin 0 starts at 0 in fact).
    pub fn bin_lo_ps(&self, b: usize) -> f64 {
        HIST_MIN_PS as f64 * 10f64.powf(b as f64 / self.bins_per_decade as f64)
    }

    fn bin_of(&self, gap: Ps) -> usize {
        if gap <= HIST_MIN_PS {
            return 0;
        }
        let x = ((gap as f64 / HIST_MIN_PS as f64).log10() * self.bins_per_decade as f64).floor();
        (x as usize).min(self.bins() - 1)
    }

    fn record_idle(&mut self, ch: usize, gap: Ps) {
        if gap == 0 {
            return;
        }
        self.idle_count[ch] += 1;
        self.idle_ps[ch] += gap;
        let t = self.thresholds_ps.len();
        for (k, thr) in self.thresholds_ps.iter().enumerate() {
            if gap > *thr {
                self.over_count[ch * t + k] += 1;
                self.over_ps[ch * t + k] += gap;
            }
        }
        let b = self.bin_of(gap);
        let bins = self.bins();
        self.hist_count[ch * bins + b] += 1;
        self.hist_ps[ch * bins + b] += gap;
    }

    /// Closes every link's last idle interval at the end of the run.
    pub fn finish(&mut self, end_ps: Ps) {
        for ch in 0..self.last_end.len() {
            let gap = end_ps.saturating_sub(self.last_end[ch]);
            self.record_idle(ch, gap);
            self.last_end[ch] = end_ps;
        }
    }
}

impl LinkObserver for LinkStats {
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32) {
        let c = ch as usize;
        let gap = start - self.last_end[c];
        self.record_idle(c, gap);
        self.last_end[c] = end;
        self.bytes[c] += bytes as u64;
        self.packets[c] += 1;
        self.busy_ps[c] += end - start;
    }
}

/// Log-linear histogram of durations with 1/64 relative resolution (like HdrHistogram with two
/// significant digits): percentiles within 1.6 %, the mean exact, memory constant.
#[derive(Debug, Clone)]
pub struct LatencyHist {
    counts: Vec<u64>,
    pub count: u64,
    pub sum_ps: u128,
    pub max_ps: Ps,
}

const SUB_BITS: u32 = 6;

impl Default for LatencyHist {
    fn default() -> Self {
        Self {
            counts: vec![0; (64 << SUB_BITS) as usize],
            count: 0,
            sum_ps: 0,
            max_ps: 0,
        }
    }
}

impl LatencyHist {
    fn index(v: Ps) -> usize {
        if v < (1 << SUB_BITS) {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros(); // >= SUB_BITS
        let shift = exp - SUB_BITS;
        let mant = (v >> shift) as usize & ((1 << SUB_BITS) - 1);
        (((shift + 1) << SUB_BITS) as usize) + mant
    }

    fn lower(i: usize) -> Ps {
        let block = (i >> SUB_BITS) as u32;
        if block == 0 {
            return i as Ps;
        }
        let shift = block - 1;
        let mant = (i & ((1 << SUB_BITS) - 1)) as Ps;
        ((1 << SUB_BITS) | mant) << shift
    }

    pub fn record(&mut self, v: Ps) {
        self.counts[Self::index(v)] += 1;
        self.count += 1;
        self.sum_ps += v as u128;
        self.max_ps = self.max_ps.max(v);
    }

    pub fn mean_ps(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ps as f64 / self.count as f64
        }
    }

    /// The q-quantile (0..=1), as the lower edge of its bucket (exact below 64 ps).
    pub fn quantile_ps(&self, q: f64) -> Ps {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::lower(i).min(self.max_ps);
            }
        }
        self.max_ps
    }
}

/// Microseconds to picoseconds for thresholds (validated non-negative by the config).
pub fn thresholds_ps(us: &[f64]) -> Vec<Ps> {
    us.iter().map(|u| (u * PS_PER_US as f64).round() as Ps).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_intervals_include_leading_and_trailing_gaps() {
        let mut s = LinkStats::new(1, vec![5, 50], 10);
        s.on_transmit(0, 10, 20, 100);
        s.on_transmit(0, 20, 30, 100); // back to back: no idle interval
        s.on_transmit(0, 90, 100, 100);
        s.finish(200);
        assert_eq!(s.idle_count[0], 3); // [0,10), [30,90), [100,200)
        assert_eq!(s.idle_ps[0], 10 + 60 + 100);
        assert_eq!(s.busy_ps[0], 30);
        assert_eq!(s.over_count[0], 3); // all > 5
        assert_eq!(s.over_count[1], 2); // 60 and 100 > 50
        assert_eq!(s.over_ps[1], 160);
        assert_eq!(s.hist_count.iter().map(|c| *c as u64).sum::<u64>(), 3);
    }

    #[test]
    fn latency_quantiles_are_within_resolution() {
        let mut h = LatencyHist::default();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile_ps(0.5) as f64;
        let p99 = h.quantile_ps(0.99) as f64;
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 0.02, "{p50}");
        assert!((p99 / 9_900_000.0 - 1.0).abs() < 0.02, "{p99}");
        assert_eq!(h.max_ps, 10_000_000);
        assert!((h.mean_ps() - 5_000_500.0).abs() < 1e-6);
    }

    #[test]
    fn histogram_index_is_monotonic_and_lower_bounds_hold() {
        let mut last = 0;
        for v in (0..100_000u64).chain([1 << 40, u64::MAX / 3]) {
            let i = LatencyHist::index(v);
            assert!(i >= last || v >= 100_000);
            assert!(LatencyHist::lower(i) <= v);
            last = i;
        }
    }
}
