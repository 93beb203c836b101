//! Statistics gathered while the simulation runs: per-link traffic and idle intervals (an
//! observer of the fabric), and a compact latency histogram.

use tracewatt_core::Ps;
use tracewatt_net::fabric::LinkObserver;
use tracewatt_net::{ChannelId, LinkClass, NodeId};

/// Per link direction: traffic, busy time and idle intervals. An idle interval is a maximal gap
/// in [0, end of run] during which the link direction transmits nothing; the one before the first
/// packet and the one after the last count too, so a never-used link has one interval as long as
/// the run.
///
/// Idle intervals are counted in *fine bins*: the log-spaced histogram bins, further split at
/// every threshold, so both the histogram and the exact per-threshold counts come from one
/// update. The (channel, fine bin) cells live in a sparse table sized by the cells actually hit,
/// not channels x bins: a channel's idle gaps cover a few decades, and a dense table would be
/// megabytes of mostly zeros touched at random (the cost that dominated recording).
///
/// The public per-channel vectors and `hist`/`over` are filled by [`LinkStats::finish`].
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
    /// Non-empty cells of the log-spaced histogram of idle interval lengths, by channel then bin.
    pub hist: Vec<HistCell>,
    /// `[ch * T + k]`: count and total length of channel `ch`'s idle intervals longer than
    /// `thresholds_ps[k]`, exact.
    pub over: Vec<(u64, Ps)>,
    pub bins_per_decade: u32,
    /// With several jobs: the job of each node, and `[ch * jobs + job]` the bytes each job sent
    /// over each channel (empty with one job: its bytes are `bytes`).
    node_job: Vec<u32>,
    jobs: usize,
    pub job_bytes: Vec<u64>,
    /// Link directions; with pair tracking, `chans` holds after them one entry per link (both
    /// directions together: idle only when both are).
    channels: usize,
    /// With pair tracking: each direction's link, as an index after the directions.
    pair_of: Vec<u32>,
    chans: Vec<Chan>,
    cells: CellTable,
    /// Idle gaps not yet counted into `cells`, as (channel, fine bin, gap). Counting them a batch
    /// at a time lets the processor overlap the table's cache misses, which one at a time, on
    /// every packet-hop, were the simulator's largest single stall.
    pending: Vec<(u32, u32, Ps)>,
    /// `edges[f]`: the shortest gap in fine bin `f` (`edges[0] = 0`); the log-spaced bin edges
    /// and every threshold + 1 ps (a gap is longer than `t` exactly when it is >= `t + 1`).
    edges: Vec<Ps>,
    /// `first_fine[l]`: the fine bin of the shortest gap with bit length `l`.
    first_fine: [u16; 65],
    /// Log-spaced bin of each fine bin.
    log_bin: Vec<u16>,
    /// Number of thresholds every gap of each fine bin exceeds.
    exceeds: Vec<u16>,
    /// With message tracking: the wakes each message's packets can meet and the links they
    /// cross (see [`MessageHops`]).
    wake_hops: Option<MessageHops>,
}

/// Per message: the hops on which its packets could meet a wake, per threshold, and the hops
/// of its route, per link class.
///
/// Wakes: a packet that starts on a link direction after an idle gap longer than the threshold
/// would find it asleep, and every packet that follows it within `horizon` of the one before
/// (back to back, or so soon that the wake's delay, at most sleep + wake time, reaches it) waits
/// for that wake too. Each packet counts such hops along its path; a message's count is the
/// largest of its packets' (they pipeline, so the last waits for what delayed the first), plus
/// what its earlier rendezvous phases met.
///
/// Route: per link class, the most links of that class one packet of the message crossed; for a
/// rendezvous message, one packet of its request, its clear-to-send or its data (so each of the
/// three phases crossed no more). Packets of one message can take different routes (adaptive,
/// Valiant or UGAL routing): the largest count per class bounds every one of them.
///
/// A row holds the `k` threshold counts, then the `classes` route counts.
#[derive(Debug)]
pub struct MessageHops {
    k: usize,
    horizon_ps: Ps,
    /// Link class of each channel, as a column after the thresholds' (`k + class`).
    column: Vec<u16>,
    /// The link classes of the route counts, in column order.
    classes: Vec<LinkClass>,
    /// Per channel: thresholds exceeded by the gap that began its current busy period.
    level: Vec<u16>,
    /// `[pkt * width + i]`: hops of packet `pkt` past threshold `i`, or on class `i - k`, so far.
    pkt: Vec<u16>,
    /// `[token * width + i]`: the largest packet count of the message's current phase (of all
    /// its phases, for the route counts), and what its earlier phases met.
    max: Vec<u16>,
    base: Vec<u16>,
}

impl MessageHops {
    fn width(&self) -> usize {
        self.k + self.classes.len()
    }

    fn row(v: &mut Vec<u16>, width: usize, i: u32) -> &mut [u16] {
        let at = i as usize * width;
        if v.len() < at + width {
            v.resize(at + width, 0);
        }
        &mut v[at..at + width]
    }

    /// A message (or a rendezvous control message) starts: nothing met yet.
    fn begin(&mut self, token: u32) {
        let w = self.width();
        Self::row(&mut self.max, w, token).fill(0);
        Self::row(&mut self.base, w, token).fill(0);
    }

    /// A rendezvous message's data follows its request (`token`, which it continues) and the
    /// clear-to-send `cts`: it carries what both met, and the longer of their routes.
    fn carry(&mut self, token: u32, cts: u32) {
        let (k, w) = (self.k, self.width());
        let cts_total = self.total(cts);
        let max = Self::row(&mut self.max, w, token);
        let moved: Vec<u16> = max[..k].to_vec();
        max[..k].fill(0);
        for (m, c) in max[k..].iter_mut().zip(&cts_total[k..]) {
            *m = (*m).max(*c);
        }
        let base = Self::row(&mut self.base, w, token);
        for ((b, m), c) in base.iter_mut().zip(moved).zip(&cts_total[..k]) {
            *b = b.saturating_add(m).saturating_add(*c);
        }
    }

    /// What a message met, per threshold, then its route's hops per link class.
    fn total(&mut self, token: u32) -> Vec<u16> {
        let w = self.width();
        let max = Self::row(&mut self.max, w, token).to_vec();
        let base = Self::row(&mut self.base, w, token);
        base.iter()
            .zip(max)
            .map(|(b, m)| b.saturating_add(m))
            .collect()
    }

    /// Thresholds tracked.
    pub fn thresholds(&self) -> usize {
        self.k
    }

    /// The link classes of the route counts, in order.
    pub fn classes(&self) -> &[LinkClass] {
        &self.classes
    }
}

/// One non-empty histogram bin of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistCell {
    pub ch: u32,
    pub bin: u16,
    pub count: u64,
    pub ps: Ps,
}

/// One channel's running counters, half a cache line.
#[derive(Debug, Clone, Copy, Default)]
struct Chan {
    last_end: Ps,
    bytes: u64,
    packets: u64,
    busy_ps: Ps,
}

/// Idle gaps buffered before they are counted (16 KiB).
const PENDING: usize = 1024;

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

/// Open-addressing table of (channel, fine bin) -> (count, total). A channel's bins sit in
/// consecutive slots from a hashed start, so one channel's cells share cache lines.
#[derive(Debug)]
struct CellTable {
    /// Key `ch * fine_bins + f + 1`; 0 marks an empty slot.
    slots: Vec<Slot>,
    len: usize,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    key: u64,
    count: u64,
    ps: Ps,
}

impl CellTable {
    fn with_capacity(n: usize) -> Self {
        Self {
            slots: vec![Slot::default(); (2 * n).next_power_of_two().max(16)],
            len: 0,
        }
    }

    #[inline]
    fn home(&self, ch: u64, f: u64) -> usize {
        let h = (ch.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) + f;
        h as usize & (self.slots.len() - 1)
    }

    #[inline]
    fn add(&mut self, ch: u64, f: u64, fine_bins: u64, gap: Ps) {
        let key = ch * fine_bins + f + 1;
        let mask = self.slots.len() - 1;
        let mut i = self.home(ch, f);
        loop {
            let s = &mut self.slots[i];
            if s.key == key {
                s.count += 1;
                s.ps += gap;
                return;
            }
            if s.key == 0 {
                *s = Slot {
                    key,
                    count: 1,
                    ps: gap,
                };
                self.len += 1;
                if 2 * self.len > self.slots.len() {
                    self.grow(fine_bins);
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self, fine_bins: u64) {
        let bigger = vec![Slot::default(); 2 * self.slots.len()];
        let old = std::mem::replace(&mut self.slots, bigger);
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.key != 0) {
            let (ch, f) = ((s.key - 1) / fine_bins, (s.key - 1) % fine_bins);
            let mut i = self.home(ch, f);
            while self.slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    /// The filled slots in key order (channel, then fine bin): bucketed by channel in one pass,
    /// then each channel's few cells sorted (a fraction of a full sort's work).
    fn sorted(&self, channels: usize, fine_bins: u64) -> Vec<Slot> {
        let channel = |s: &Slot| ((s.key - 1) / fine_bins) as usize;
        let mut start = vec![0usize; channels + 1];
        for s in self.slots.iter().filter(|s| s.key != 0) {
            start[channel(s) + 1] += 1;
        }
        for c in 0..channels {
            start[c + 1] += start[c];
        }
        let mut next = start.clone();
        let mut v = vec![Slot::default(); self.len];
        for s in self.slots.iter().filter(|s| s.key != 0) {
            let c = channel(s);
            v[next[c]] = *s;
            next[c] += 1;
        }
        for c in 0..channels {
            v[start[c]..start[c + 1]].sort_unstable_by_key(|s| s.key);
        }
        v
    }
}

impl LinkStats {
    pub fn new(channels: usize, mut thresholds_ps: Vec<Ps>, bins_per_decade: u32) -> Self {
        thresholds_ps.sort_unstable();
        thresholds_ps.dedup();
        let b = (HIST_DECADES * bins_per_decade) as usize;
        // Log bin edges found by bisecting the log formula itself, so the integer lookup in
        // `fine_of` puts every gap in exactly the bin the formula gives (it is monotonic).
        let mut log_edges = vec![0; b];
        for (k, edge) in log_edges.iter_mut().enumerate().skip(1) {
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
        let mut edges = log_edges.clone();
        edges.extend(thresholds_ps.iter().map(|t| t.saturating_add(1)));
        edges.sort_unstable();
        edges.dedup();
        let log_bin = edges
            .iter()
            .map(|e| (log_edges.partition_point(|l| l <= e) - 1) as u16)
            .collect();
        let exceeds = edges
            .iter()
            .map(|e| thresholds_ps.partition_point(|t| t < e) as u16)
            .collect();
        let mut first_fine = [0u16; 65];
        for (l, ff) in first_fine.iter_mut().enumerate().skip(1) {
            *ff = (edges.partition_point(|e| *e <= 1 << (l - 1)) - 1) as u16;
        }
        Self {
            bytes: Vec::new(),
            packets: Vec::new(),
            busy_ps: Vec::new(),
            idle_count: Vec::new(),
            idle_ps: Vec::new(),
            trailing_idle_ps: Vec::new(),
            thresholds_ps,
            hist: Vec::new(),
            over: Vec::new(),
            bins_per_decade,
            node_job: Vec::new(),
            jobs: 1,
            job_bytes: Vec::new(),
            channels,
            pair_of: Vec::new(),
            chans: vec![Chan::default(); channels],
            // Every channel gets at least its trailing interval; most a few more.
            cells: CellTable::with_capacity(4 * channels),
            pending: Vec::with_capacity(PENDING),
            edges,
            first_fine,
            log_bin,
            exceeds,
            wake_hops: None,
        }
    }

    /// Also counts, per message, the hops on which it could meet a wake at each threshold, for
    /// wakes that delay the link by up to `horizon_ps`, and the hops of its route per link
    /// class (`class[c]`: channel `c`'s); the classes in their order (`LinkClass`'s).
    pub fn track_wake_hops(&mut self, horizon_ps: Ps, class: &[LinkClass]) {
        let mut classes = class.to_vec();
        classes.sort_unstable();
        classes.dedup();
        let k = self.thresholds_ps.len();
        // A machine has a handful of link classes, so the column fits a u16.
        let column = class
            .iter()
            .map(|c| (k + classes.partition_point(|x| x < c)) as u16)
            .collect();
        self.wake_hops = Some(MessageHops {
            k,
            horizon_ps,
            column,
            classes,
            level: vec![0; self.channels],
            pkt: Vec::new(),
            max: Vec::new(),
            base: Vec::new(),
        });
    }

    /// The per-message wake-hop counts, when tracked.
    fn wake_hops(&mut self) -> Option<&mut MessageHops> {
        self.wake_hops.as_mut()
    }

    /// Message `token` (or a rendezvous control message) leaves its sender: with wake-hop
    /// tracking, it has met nothing yet.
    #[inline]
    pub fn message_begins(&mut self, token: u32) {
        if let Some(w) = self.wake_hops() {
            w.begin(token);
        }
    }

    /// A rendezvous message's data continues its request-to-send `token` after the
    /// clear-to-send `cts`: with wake-hop tracking, it carries what both met.
    #[inline]
    pub fn message_continues(&mut self, token: u32, cts: u32) {
        if let Some(w) = self.wake_hops() {
            w.carry(token, cts);
        }
    }

    /// Message `token` has arrived: with wake-hop tracking, appends what it met, per threshold,
    /// then its route's hops per link class, to `out`.
    #[inline]
    pub fn message_wakes(&mut self, token: u32, out: &mut Vec<u16>) {
        if let Some(w) = self.wake_hops() {
            out.extend(w.total(token));
        }
    }

    /// The link classes of the messages' route counts, in order (none without message tracking).
    pub fn route_classes(&self) -> &[LinkClass] {
        self.wake_hops.as_ref().map_or(&[], |h| h.classes())
    }

    /// Counts each job's bytes per channel: `node_job[n]` is node `n`'s job, of `jobs`. Only
    /// worth it with several jobs (with one, its bytes are `bytes`).
    pub fn count_jobs(&mut self, node_job: Vec<u32>, jobs: usize) {
        self.job_bytes = vec![0; self.chans.len() * jobs];
        self.node_job = node_job;
        self.jobs = jobs;
    }

    /// Also keeps each link's idle intervals, both directions together (`reverse[c]` is the
    /// opposite direction of `c`): what a `paired` link's state machine sees.
    pub fn track_pairs(&mut self, reverse: &[u32]) {
        let mut pair_of = vec![u32::MAX; self.channels];
        let mut pairs = 0u32;
        for c in 0..self.channels {
            if pair_of[c] == u32::MAX {
                pair_of[c] = pairs;
                pair_of[reverse[c] as usize] = pairs;
                pairs += 1;
            }
        }
        self.chans
            .resize(self.channels + pairs as usize, Chan::default());
        self.pair_of = pair_of;
    }

    /// Link directions (the first entries of the per-channel vectors).
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// With pair tracking: each direction's link, numbered from 0.
    pub fn pair_of(&self) -> &[u32] {
        &self.pair_of
    }

    pub fn bins(&self) -> usize {
        (HIST_DECADES * self.bins_per_decade) as usize
    }

    /// Lower edge of histogram bin `b`, ps (bin 0 starts at 0 in fact).
    pub fn bin_lo_ps(&self, b: usize) -> f64 {
        HIST_MIN_PS as f64 * 10f64.powf(b as f64 / self.bins_per_decade as f64)
    }

    /// The fine bin of `gap`: start at the first fine bin of its power of two and step over the
    /// few edges within it.
    #[inline]
    fn fine_of(&self, gap: Ps) -> usize {
        let mut f = self.first_fine[(64 - gap.leading_zeros()) as usize] as usize;
        while f + 1 < self.edges.len() && gap >= self.edges[f + 1] {
            f += 1;
        }
        f
    }

    #[inline]
    fn record_idle(&mut self, ch: usize, gap: Ps) {
        if gap == 0 {
            return;
        }
        let f = self.fine_of(gap) as u32;
        self.pending.push((ch as u32, f, gap));
        if self.pending.len() == PENDING {
            self.count_pending();
        }
    }

    #[inline(never)]
    fn count_pending(&mut self) {
        let fine_bins = self.edges.len() as u64;
        for &(ch, f, gap) in &self.pending {
            self.cells.add(ch.into(), f.into(), fine_bins, gap);
        }
        self.pending.clear();
    }

    /// Closes every link's last idle interval at the end of the run and fills the public
    /// per-channel vectors, the histogram and the threshold counts.
    pub fn finish(&mut self, end_ps: Ps) {
        let n = self.chans.len();
        self.trailing_idle_ps = Vec::with_capacity(n);
        for ch in 0..n {
            let gap = end_ps.saturating_sub(self.chans[ch].last_end);
            self.trailing_idle_ps.push(gap);
            self.record_idle(ch, gap);
            self.chans[ch].last_end = end_ps;
        }
        self.count_pending();
        self.bytes = self.chans.iter().map(|c| c.bytes).collect();
        self.packets = self.chans.iter().map(|c| c.packets).collect();
        self.busy_ps = self.chans.iter().map(|c| c.busy_ps).collect();
        let t = self.thresholds_ps.len();
        let fine_bins = self.edges.len() as u64;
        self.idle_count = vec![0; n];
        self.idle_ps = vec![0; n];
        self.over = vec![(0, 0); n * t];
        self.hist = Vec::new();
        for s in self.cells.sorted(n, fine_bins) {
            let (ch, f) = (
                ((s.key - 1) / fine_bins) as usize,
                ((s.key - 1) % fine_bins) as usize,
            );
            self.idle_count[ch] += s.count;
            self.idle_ps[ch] += s.ps;
            for o in &mut self.over[ch * t..ch * t + self.exceeds[f] as usize] {
                o.0 += s.count;
                o.1 += s.ps;
            }
            let bin = self.log_bin[f];
            match self.hist.last_mut() {
                Some(h) if h.ch as usize == ch && h.bin == bin => {
                    h.count += s.count;
                    h.ps += s.ps;
                }
                _ => self.hist.push(HistCell {
                    ch: ch as u32,
                    bin,
                    count: s.count,
                    ps: s.ps,
                }),
            }
        }
    }
}

impl LinkObserver for LinkStats {
    // Always inlined into the network models' hops, as `occupied` below is.
    #[inline(always)]
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32, src: NodeId) {
        let ci = ch as usize;
        if !self.node_job.is_empty() {
            let j = self.node_job[src as usize] as usize;
            self.job_bytes[ci * self.jobs + j] += bytes as u64;
        }
        let c = &mut self.chans[ci];
        c.bytes += bytes as u64;
        c.packets += 1;
        c.busy_ps += end - start;
        self.occupied(ci, start, end);
    }

    /// With message tracking: a packet `pkt` of message `token` has just been sent on `ch`.
    #[inline(always)]
    fn on_packet(&mut self, ch: ChannelId, pkt: u32, token: u32, first_hop: bool) {
        let Some(MessageHops {
            k,
            column,
            classes,
            level,
            pkt: pkts,
            max,
            ..
        }) = &mut self.wake_hops
        else {
            return;
        };
        let w = *k + classes.len();
        let (lv, col) = (level[ch as usize] as usize, column[ch as usize] as usize);
        let row = MessageHops::row(pkts, w, pkt);
        if first_hop {
            row.fill(0);
        }
        for c in &mut row[..lv] {
            *c = c.saturating_add(1);
        }
        row[col] = row[col].saturating_add(1);
        let most = MessageHops::row(max, w, token);
        for (m, c) in most[..lv].iter_mut().zip(&row[..lv]) {
            *m = (*m).max(*c);
        }
        most[col] = most[col].max(row[col]);
    }

    /// A credit frame: it ends the link's idle interval as a packet does (so idle intervals and
    /// the analysis built on them see it), but carries no data.
    fn on_control(&mut self, ch: ChannelId, start: Ps, end: Ps) {
        self.occupied(ch as usize, start, end);
    }
}

impl LinkStats {
    /// Channel `ci` is on the wire from `start` to `end`: closes its idle interval (and its
    /// pair's, for paired statistics). Always inlined: it runs at every packet-hop, and LLVM's
    /// own choice for it turns with unrelated changes of the crate (2 % of case (a)'s
    /// instructions).
    #[inline(always)]
    fn occupied(&mut self, ci: usize, start: Ps, end: Ps) {
        let c = &mut self.chans[ci];
        let gap = start - c.last_end;
        c.last_end = end;
        if gap > 0 && self.wake_hops.is_some() {
            // The gap's own level; a packet close enough behind the one before also waits for
            // whatever delayed that one.
            let lv = self.exceeds[self.fine_of(gap)];
            if let Some(w) = &mut self.wake_hops {
                let keep = if gap <= w.horizon_ps { w.level[ci] } else { 0 };
                w.level[ci] = lv.max(keep);
            }
        }
        self.record_idle(ci, gap);
        if !self.pair_of.is_empty() {
            let p = self.channels + self.pair_of[ci] as usize;
            let pc = &mut self.chans[p];
            let gap = start.saturating_sub(pc.last_end);
            pc.last_end = pc.last_end.max(end);
            self.record_idle(p, gap);
        }
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

/// Microseconds to picoseconds for thresholds (checked by the configuration).
pub fn thresholds_ps(us: &[f64]) -> Vec<Ps> {
    us.iter().map(|&u| crate::units::us_to_ps(u)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_intervals_include_leading_and_trailing_gaps() {
        let mut s = LinkStats::new(1, vec![50, 5, 50], 10);
        s.on_transmit(0, 10, 20, 100, 0);
        s.on_transmit(0, 20, 30, 100, 0); // back to back: no idle interval
        s.on_transmit(0, 90, 100, 100, 0);
        s.finish(200);
        assert_eq!(s.idle_count[0], 3); // [0,10), [30,90), [100,200)
        assert_eq!(s.idle_ps[0], 10 + 60 + 100);
        assert_eq!(s.busy_ps[0], 30);
        assert_eq!(s.over[0], (3, 170)); // all > 5
        assert_eq!(s.over[1], (2, 160)); // 60 and 100 > 50
        assert_eq!(s.hist.iter().map(|c| c.count).sum::<u64>(), 3);
        assert_eq!(s.hist.iter().map(|c| c.ps).sum::<Ps>(), 170);
    }

    #[test]
    fn a_message_counts_the_wakes_its_packets_can_meet() {
        // Thresholds 10 and 100; channel 0 a node link, channel 1 a local one. Message 5's
        // packet 0 starts on channel 0 after 50 idle (past 10 only); message 6's packet 1 goes
        // back to back behind it (the same busy period, the same wake); packet 0 then crosses
        // channel 1 after 200 idle (past both).
        let mut s = LinkStats::new(2, vec![10, 100], 10);
        s.track_wake_hops(4, &[LinkClass::Node, LinkClass::Local]);
        let w = s.wake_hops().unwrap();
        w.begin(5);
        w.begin(6);
        s.on_transmit(0, 50, 60, 100, 0);
        s.on_packet(0, 0, 5, true);
        s.on_transmit(0, 60, 70, 100, 0);
        s.on_packet(0, 1, 6, true);
        s.on_transmit(1, 200, 210, 100, 0);
        s.on_packet(1, 0, 5, false);
        // Message 6's second packet 3 after the first: within the horizon (4), still delayed by
        // the wake; its third 5 after that: past it, and past no threshold.
        s.on_transmit(0, 73, 83, 100, 0);
        s.on_packet(0, 2, 6, true);
        s.on_transmit(0, 88, 98, 100, 0);
        s.on_packet(0, 3, 6, true);
        // Per threshold, then the route per class (node, local): 5 crossed one of each, each of
        // 6's packets one node link.
        let w = s.wake_hops().unwrap();
        assert_eq!(w.thresholds(), 2);
        assert_eq!(w.classes(), &[LinkClass::Node, LinkClass::Local]);
        assert_eq!(w.total(5), vec![2, 1, 1, 1]);
        assert_eq!(w.total(6), vec![1, 0, 1, 0]);
        // A rendezvous: request 5 met [2, 1], its clear-to-send 6 [1, 0]; the data starts
        // from their sum and adds its own packets' largest count; its route is the longest.
        w.carry(5, 6);
        assert_eq!(w.total(5), vec![3, 1, 1, 1]);
        s.on_transmit(1, 400, 410, 100, 0);
        s.on_packet(1, 0, 5, true);
        assert_eq!(s.wake_hops().unwrap().total(5), vec![4, 2, 1, 1]);
    }

    #[test]
    fn a_message_counts_the_links_of_its_longest_route_per_class() {
        // A dragonfly path: node link 0, local links 1 and 3, global link 2, node link 4. No
        // thresholds: the rows hold the route counts alone, by class (node, local, global).
        let class = [
            LinkClass::Node,
            LinkClass::Local,
            LinkClass::Global,
            LinkClass::Local,
            LinkClass::Node,
        ];
        let mut s = LinkStats::new(5, vec![], 10);
        s.track_wake_hops(0, &class);
        s.wake_hops().unwrap().begin(7);
        // Packet 0 goes minimal (node, global, node); packet 1 the long way round (node, local,
        // global, local, node).
        let mut t = 0;
        for (pkt, path) in [(0, &[0, 2, 4][..]), (1, &[0, 1, 2, 3, 4][..])] {
            for (i, &ch) in path.iter().enumerate() {
                s.on_transmit(ch, t, t + 10, 100, 0);
                s.on_packet(ch, pkt, 7, i == 0);
                t += 10;
            }
        }
        assert_eq!(s.wake_hops().unwrap().total(7), vec![2, 2, 1]);
        // Its clear-to-send 8 crossed the global link twice (a Valiant detour): the data
        // carries the larger count of each class.
        s.wake_hops().unwrap().begin(8);
        for (i, ch) in [4, 2, 2, 0].into_iter().enumerate() {
            s.on_transmit(ch, t, t + 10, 100, 0);
            s.on_packet(ch, 2, 8, i == 0);
            t += 10;
        }
        let w = s.wake_hops().unwrap();
        assert_eq!(w.total(8), vec![2, 0, 2]);
        w.carry(7, 8);
        assert_eq!(w.total(7), vec![2, 2, 2]);
    }

    #[test]
    fn a_link_is_idle_only_while_both_directions_are() {
        // Direction 0 sends [10, 20) and [90, 100); direction 1 sends [15, 40). The link (both
        // together) is idle [0, 10), [40, 90) and [100, 200).
        let mut s = LinkStats::new(2, vec![30], 10);
        s.track_pairs(&[1, 0]);
        s.on_transmit(0, 10, 20, 100, 0);
        s.on_transmit(1, 15, 40, 100, 0);
        s.on_transmit(0, 90, 100, 100, 0);
        s.finish(200);
        assert_eq!(s.channels(), 2);
        assert_eq!(s.pair_of(), &[0, 0]);
        // The link is the third entry: 3 intervals of 10 + 50 + 100.
        assert_eq!(s.idle_count[2], 3);
        assert_eq!(s.idle_ps[2], 160);
        assert_eq!(s.over[2], (2, 150)); // 50 and 100 > 30
        assert_eq!(s.trailing_idle_ps[2], 100);
        // Each direction alone: direction 0 idle [0,10), [20,90), [100,200).
        assert_eq!(s.idle_ps[0], 10 + 70 + 100);
    }

    #[test]
    fn fine_bins_match_the_log_formula_and_the_thresholds() {
        for bpd in [1, 3, 10, 16, 50] {
            let thresholds = vec![0, 1, 999, 1_000, 17_000_000, 600_000_000, 12_345_678_901];
            let s = LinkStats::new(0, thresholds.clone(), bpd);
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
            for gap in gaps.into_iter().filter(|g| *g > 0) {
                let f = s.fine_of(gap);
                assert_eq!(
                    s.log_bin[f] as usize,
                    bin_by_log(gap, bpd, bins),
                    "gap {gap} bpd {bpd}"
                );
                let over = thresholds.iter().filter(|t| gap > **t).count();
                assert_eq!(s.exceeds[f] as usize, over, "gap {gap} bpd {bpd}");
            }
        }
    }

    #[test]
    fn sparse_cells_survive_growth_and_match_a_dense_count() {
        // Many channels and gaps force the cell table to grow several times.
        let n = 300;
        let mut s = LinkStats::new(n, vec![5_000, 1_000_000], 10);
        let mut dense = vec![[(0u64, 0 as Ps); 2]; n];
        let mut rng = tracewatt_core::Rng::new(7);
        let mut t = vec![0 as Ps; n];
        for _ in 0..20_000 {
            let ch = rng.below(n as u64) as usize;
            let bits = rng.below(31) + 1;
            let gap = 1 + rng.below(1 << bits);
            let start = t[ch] + gap;
            s.on_transmit(ch as ChannelId, start, start + 10, 1, 0);
            t[ch] = start + 10;
            for (k, thr) in [5_000, 1_000_000].into_iter().enumerate() {
                if gap > thr {
                    dense[ch][k].0 += 1;
                    dense[ch][k].1 += gap;
                }
            }
        }
        let end = t.iter().max().copied().unwrap_or(0) + 1;
        s.finish(end);
        for ch in 0..n {
            let trailing = end - t[ch];
            for (k, thr) in [5_000, 1_000_000].into_iter().enumerate() {
                let extra = if trailing > thr {
                    (1, trailing)
                } else {
                    (0, 0)
                };
                let want = (dense[ch][k].0 + extra.0, dense[ch][k].1 + extra.1);
                assert_eq!(s.over[ch * 2 + k], want, "channel {ch} threshold {thr}");
            }
            let h: Vec<_> = s.hist.iter().filter(|c| c.ch as usize == ch).collect();
            assert_eq!(h.iter().map(|c| c.count).sum::<u64>(), s.idle_count[ch]);
            assert!(h.windows(2).all(|w| w[0].bin < w[1].bin));
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
