//! Statistics gathered while the simulation runs: per-link traffic and idle intervals (an
//! observer of the fabric), and a compact latency histogram.

use tracewatt_core::{time::PS_PER_US, Ps};
use tracewatt_net::fabric::LinkObserver;
use tracewatt_net::ChannelId;

/// Per link direction: traffic, busy time and idle intervals. An idle interval is a maximal gap
/// in [0, end of run] during which the link direction transmits nothing; the one before the first
/// packet and the one after the last count too, so a never-used link has one interval as long as
/// the run.
///
/// The per-channel public vectors (`bytes` to `idle_ps`, `hist_count`, `hist_ps`) are filled by
/// [`LinkStats::finish`]; during the run the counters live in compact per-channel records, so
/// recording one transmission touches two or three cache lines instead of a dozen.
#[derive(Debug)]
pub struct LinkStats {
    pub bytes: Vec<u64>,
    pub packets: Vec<u64>,
    pub busy_ps: Vec<Ps>,
    pub idle_count: Vec<u64>,
    pub idle_ps: Vec<Ps>,
    /// Length of the idle interval that ends the run (no packet follows it, so it never causes
    /// a wake-up).
    pub trailing_idle_ps: Vec<Ps>,
    /// Sorted, distinct thresholds.
    pub thresholds_ps: Vec<Ps>,
    /// Log-spaced histogram of idle interval lengths: `[ch * B + b]` (count, total).
    pub hist_count: Vec<u32>,
    pub hist_ps: Vec<Ps>,
    pub bins_per_decade: u32,
    chans: Vec<Chan>,
    /// Count and total of idle intervals by how many thresholds they exceed:
    /// `[ch * (T + 1) + k]` holds those longer than exactly the first k thresholds.
    buckets: Vec<Cell>,
    /// The histogram while the run goes on, `[ch * B + b]`.
    hist: Vec<Cell>,
    /// `edges[b]`: the shortest gap that falls in bin `b` or later (`edges[0] = 0`).
    edges: Vec<Ps>,
    /// `first_bin[l]`: the bin of the shortest gap with bit length `l`.
    first_bin: [u16; 65],
}

/// One channel's running counters.
#[derive(Debug, Clone, Copy, Default)]
struct Chan {
    last_end: Ps,
    bytes: u64,
    packets: u64,
    busy_ps: Ps,
    idle_count: u64,
    idle_ps: Ps,
}

/// A count and a total, side by side so one update is one cache line.
#[derive(Debug, Clone, Copy, Default)]
struct Cell {
    count: u64,
    ps: Ps,
}

/// Histogram bins start at 1 ns (bin 0 also takes anything shorter) and end at 10^4 s (the last
/// bin takes anything longer): 13 decades.
pub const HIST_MIN_PS: Ps = 1_000;
pub const HIST_DECADES: u32 = 13;

/// The defining bin formula: floor(log10(gap / 1 ns) * bins_per_decade), clamped.
fn bin_by_log(gap: Ps, bins_per_decade: u32, bins: usize) -> usize {
    if gap <= HIST_MIN_PS {
        return 0;
    }
    let x = ((gap as f64 / HIST_MIN_PS as f64).log10() * bins_per_decade as f64).floor();
    (x as usize).min(bins - 1)
}

impl LinkStats {
    pub fn new(channels: usize, mut thresholds_ps: Vec<Ps>, bins_per_decade: u32) -> Self {
        thresholds_ps.sort_unstable();
        thresholds_ps.dedup();
        let t = thresholds_ps.len() + 1;
        let b = (HIST_DECADES * bins_per_decade) as usize;
        // Bin edges found by bisecting the log formula itself, so the integer lookup in
        // `bin_of` puts every gap in exactly the bin the formula gives (it is monotonic).
        let mut edges = vec![0; b];
        for (k, edge) in edges.iter_mut().enumerate().skip(1) {
            let (mut lo, mut hi) = (HIST_MIN_PS, Ps::MAX); // bin(lo) < k <= bin(hi)
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if bin_by_log(mid, bins_per_decade, b) >= k {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            *edge = hi;
        }
        let mut first_bin = [0u16; 65];
        for (l, fb) in first_bin.iter_mut().enumerate().skip(1) {
            *fb = bin_by_log(1 << (l - 1), bins_per_decade, b) as u16;
        }
        Self {
            bytes: Vec::new(),
            packets: Vec::new(),
            busy_ps: Vec::new(),
            idle_count: Vec::new(),
            idle_ps: Vec::new(),
            trailing_idle_ps: Vec::new(),
            thresholds_ps,
            hist_count: Vec::new(),
            hist_ps: Vec::new(),
            bins_per_decade,
            chans: vec![Chan::default(); channels],
            buckets: vec![Cell::default(); channels * t],
            hist: vec![Cell::default(); channels * b],
            edges,
            first_bin,
        }
    }

    pub fn bins(&self) -> usize {
        (HIST_DECADES * self.bins_per_decade) as usize
    }

    /// Lower edge of histogram bin `b`, ps (bin 0 starts at 0 in fact).
    pub fn bin_lo_ps(&self, b: usize) -> f64 {
        HIST_MIN_PS as f64 * 10f64.powf(b as f64 / self.bins_per_decade as f64)
    }

    /// The bin of `gap`: start at the first bin of its power of two and step over the few edges
    /// within it.
    #[inline]
    fn bin_of(&self, gap: Ps) -> usize {
        let mut b = self.first_bin[(64 - gap.leading_zeros()) as usize] as usize;
        while b + 1 < self.edges.len() && gap >= self.edges[b + 1] {
            b += 1;
        }
        b
    }

    #[inline]
    fn record_idle(&mut self, ch: usize, gap: Ps) {
        if gap == 0 {
            return;
        }
        let c = &mut self.chans[ch];
        c.idle_count += 1;
        c.idle_ps += gap;
        let t = self.thresholds_ps.len() + 1;
        let k = self.thresholds_ps.partition_point(|thr| *thr < gap);
        let cell = &mut self.buckets[ch * t + k];
        cell.count += 1;
        cell.ps += gap;
        let b = self.bin_of(gap);
        let cell = &mut self.hist[ch * self.edges.len() + b];
        cell.count += 1;
        cell.ps += gap;
    }

    /// Exact count and total length of channel `ch`'s idle intervals longer than each threshold
    /// (in `thresholds_ps` order).
    pub fn over(&self, ch: usize) -> Vec<(u64, Ps)> {
        let t = self.thresholds_ps.len() + 1;
        let mut out = vec![(0, 0); self.thresholds_ps.len()];
        let (mut c, mut p) = (0u64, 0 as Ps);
        for k in (1..t).rev() {
            c += self.buckets[ch * t + k].count;
            p += self.buckets[ch * t + k].ps;
            out[k - 1] = (c, p);
        }
        out
    }

    /// Closes every link's last idle interval at the end of the run and fills the public
    /// per-channel vectors.
    pub fn finish(&mut self, end_ps: Ps) {
        self.trailing_idle_ps = Vec::with_capacity(self.chans.len());
        for ch in 0..self.chans.len() {
            let gap = end_ps.saturating_sub(self.chans[ch].last_end);
            self.trailing_idle_ps.push(gap);
            self.record_idle(ch, gap);
            self.chans[ch].last_end = end_ps;
        }
        self.bytes = self.chans.iter().map(|c| c.bytes).collect();
        self.packets = self.chans.iter().map(|c| c.packets).collect();
        self.busy_ps = self.chans.iter().map(|c| c.busy_ps).collect();
        self.idle_count = self.chans.iter().map(|c| c.idle_count).collect();
        self.idle_ps = self.chans.iter().map(|c| c.idle_ps).collect();
        self.hist_count = self.hist.iter().map(|c| c.count as u32).collect();
        self.hist_ps = self.hist.iter().map(|c| c.ps).collect();
    }
}

impl LinkObserver for LinkStats {
    #[inline]
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32) {
        let ci = ch as usize;
        let gap = start - self.chans[ci].last_end;
        self.record_idle(ci, gap);
        let c = &mut self.chans[ci];
        c.last_end = end;
        c.bytes += bytes as u64;
        c.packets += 1;
        c.busy_ps += end - start;
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
    us.iter()
        .map(|u| (u * PS_PER_US as f64).round() as Ps)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_intervals_include_leading_and_trailing_gaps() {
        let mut s = LinkStats::new(1, vec![50, 5, 50], 10);
        s.on_transmit(0, 10, 20, 100);
        s.on_transmit(0, 20, 30, 100); // back to back: no idle interval
        s.on_transmit(0, 90, 100, 100);
        s.finish(200);
        assert_eq!(s.idle_count[0], 3); // [0,10), [30,90), [100,200)
        assert_eq!(s.idle_ps[0], 10 + 60 + 100);
        assert_eq!(s.busy_ps[0], 30);
        let over = s.over(0);
        assert_eq!(over[0], (3, 170)); // all > 5
        assert_eq!(over[1], (2, 160)); // 60 and 100 > 50
        assert_eq!(s.hist_count.iter().map(|c| *c as u64).sum::<u64>(), 3);
    }

    #[test]
    fn bin_lookup_matches_the_log_formula() {
        for bpd in [1, 3, 10, 16, 50] {
            let s = LinkStats::new(0, vec![], bpd);
            let bins = s.bins();
            // Around every edge, and a spread of lengths from 0 to beyond the last bin.
            let mut gaps: Vec<Ps> = s
                .edges
                .iter()
                .flat_map(|e| [e.saturating_sub(1), *e, e + 1])
                .collect();
            let mut g: Ps = 1;
            while g < Ps::MAX / 2 {
                gaps.extend([g - 1, g, g + 1, g + g / 3]);
                g = g + g / 7 + 1;
            }
            for gap in gaps {
                assert_eq!(
                    s.bin_of(gap),
                    bin_by_log(gap, bpd, bins),
                    "gap {gap} bpd {bpd}"
                );
            }
        }
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
