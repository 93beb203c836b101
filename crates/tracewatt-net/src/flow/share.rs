//! Max-min fair rates, recomputed only where a flow's start or end can change them.
//!
//! **The allocation.** Rates are whole bits per second. Progressive filling: raise the rate of
//! every flow together; when a channel's capacity is used up, the flows on it stop at the rate
//! they reached (that channel is their *bottleneck*); the others go on. The level at which a
//! channel fills is its residual capacity divided by the flows still rising on it, rounded down,
//! so no channel is ever over capacity and a saturated channel keeps less than one bit per second
//! per flow. The result is characterised by one condition: every flow has a saturated channel on
//! its path on which no flow is faster (its bottleneck). A channel with at least one flow
//! bottlenecked on it is exactly a saturated one.
//!
//! **The update.** When flows start or end, only the rates in their neighbourhood are recomputed,
//! once for all the starts and ends of one instant (a collective's flows start together), with
//! every other flow's rate held fixed (its share taken off the channels' capacities):
//!
//! 1. The set starts with the flows that start, and, for those that end, the flows bottlenecked
//!    on the channels they leave (only these can rise; the others are held elsewhere).
//! 2. Progressive filling runs on the set alone. On a channel where flows outside the set are
//!    bottlenecked, the set may use what it had there and no more: the spare capacity is theirs.
//! 3. On every channel the set crosses, a flow outside the set joins it when the allocation
//!    would be wrong for it: it is faster than the level at which the set filled that channel
//!    (it must come down to share), or it is bottlenecked there and a flow of the set is now
//!    faster, or the set left more than the slack unused there (it may rise). Then 2-3 again.
//!
//! When an update reaches more than half of the flows sharing bandwidth (a bulk-synchronous
//! exchange starting), step 2 runs on all of them at once, and no flow is left outside to join.
//!
//! When no flow joins, every flow has a saturated channel on which no flow is faster — the
//! max-min condition — within a tolerance: an update may leave up to `1 / SLACK_DIVISOR` of a
//! channel's capacity unused, and rates closer than that fraction shared among a channel's flows
//! count as equal. Without it, the exact allocation of a busy network moves everywhere at every
//! start and end (each flow that slows frees a little capacity for others, which speed up and
//! slow others): the tolerance stops such ripples after a hop or two, when they carry less than
//! a sixty-fourth of a link.
//!
//! Its effect is measured against the exact filling (no tolerance) on the scenarios of the flow
//! bench (`crates/tracewatt-bench`, `benches/flow.rs`) that share bandwidth (messages of 1 MiB and
//! 10 MiB), a message's delivery time taken from its send. Where routes do not depend on the load
//! (the 128-node fat-tree's all-to-all; at 8,192 nodes, the fat-tree's permutation, the torus's
//! stencil4d and the dragonfly's near-neighbour exchange), the whole exchange ends at the same
//! picosecond, and every message is delivered at the same picosecond except 214 of the
//! near-neighbour exchange's 49,152, which are at most 0.002% off; the updates reach the same flows
//! within 1.3%, so cost the same. Under UGAL, which routes each message by the load it meets, a
//! rate slightly off sends some message another way, and the run takes its own course from there,
//! as with another random seed: on the 1,056-node dragonfly's random traffic and the 8,192-node
//! dragonfly's stencil4d, a message is delivered 10% and 32% off on average (up to 1.5 and 6 times
//! its time), less than between two seeds of the exact filling (14% and 59%), and the time of the
//! whole exchange, averaged over 12 seeds, is 0.4% and 1.4% off the exact filling's, within its
//! spread over seeds (standard deviation 1.5% and 3.6%). There the exact filling's updates reach
//! 1.2 and 1.4 times as many flows (5.9 and 5.3 on average, against 4.9 and 3.7) and take 1.2 and
//! 1.45 times as long (median over 6 seeds). A tolerance of `1/1024` gives the exact filling's
//! times where routes do not depend on the load, and costs what `1/64` does on the UGAL scenarios
//! (its updates reach 1% and 6% more flows).
//!
//! An update costs progressive filling over the flows it reaches, `O(F log C)` for `F` flows on
//! `C` channels, plus a look at the flows bottlenecked on the channels they cross (each channel
//! keeps a list of them), and at all flows of a channel only where the set's level there fell
//! below the fastest of them (each channel keeps an upper bound of its flows' rates, brought down
//! to the fastest by such a scan). A flow on idle links is a set of one, and communications that
//! share no saturated link never touch each other.

use super::{FlowEvent, FlowFabric, NEVER, NIL, SLACK_DIVISOR};
use crate::topology::ChannelId;
use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use tracewatt_core::{Ps, Schedule};

/// Buffers of the update, kept between updates so they allocate nothing once warm.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    pub(super) seeds: Vec<u32>,
    /// Counts the updates run, so that a channel's held flows go into the seeds of the next one
    /// once however many flows leave it (see `Chan::seeded`).
    pub(super) batch: u64,
    set: Vec<u32>,
    chans: Vec<ChannelId>,
    /// The set's flows on each channel of `chans`: those of `chans[i]` are
    /// `members[first[i]..first[i + 1]]`.
    first: Vec<u32>,
    members: Vec<u32>,
    /// Channels by the level at which they would fill, then by id: see [`entry`].
    heap: BinaryHeap<Reverse<u128>>,
    /// Marks of the current update (on flows) and of the current filling (on channels).
    update: u64,
    filling: u64,
}

impl FlowFabric {
    /// Recomputes the rates that the start or end of a flow can change, starting from `seeds`,
    /// and reschedules the completions that moved.
    pub(super) fn reshare<S: Schedule<FlowEvent>>(&mut self, seeds: &[u32], now: Ps, q: &mut S) {
        let mut s = std::mem::take(&mut self.solver);
        s.update += 1;
        let update = s.update;
        s.set.clear();
        for &f in seeds {
            if self.flows[f].mark != update {
                self.flows[f].mark = update;
                s.set.push(f);
            }
        }
        loop {
            // Once the update reaches most of the flows, one filling of them all costs less than
            // the rounds that would draw the rest in, and leaves no flow outside to check.
            let whole = 2 * s.set.len() > self.sharing_flows;
            if whole {
                self.add_all(&mut s);
            }
            self.fill(&mut s);
            if whole {
                break;
            }
            let before = s.set.len();
            for &ch in &s.chans {
                let c = &self.ch[ch as usize];
                // Capacity left unused here beyond the slack allowed lets the flows bottlenecked
                // here rise.
                let used = c.used - c.set_old + c.set_new;
                let freed = c.bits_per_s - used > c.bits_per_s / SLACK_DIVISOR;
                // The flows outside the set keep their rates through the update: a channel
                // whose outcome is the one its last scan in this update saw lets no new one in.
                let outcome = (c.stop_level, c.set_max, freed);
                if c.scanned == update && c.scan_outcome == outcome {
                    continue;
                }
                let c = &mut self.ch[ch as usize];
                c.scanned = update;
                c.scan_outcome = outcome;
                // Rates that differ by less than their share of that slack count as equal, so
                // that the rounding of earlier updates does not ripple either.
                let near = c.bits_per_s / SLACK_DIVISOR / c.flows.len().max(1) as u64;
                let ceiling = c.stop_level.saturating_add(near);
                // A flow outside the set faster than the set's share at a channel the set filled
                // must come down to it; only a scan of them all finds those, and `peak` tells
                // when there can be none.
                if c.peak > ceiling {
                    let mut peak = 0;
                    for &(g, _) in &c.flows {
                        let fl = &mut self.flows[g];
                        if fl.mark != update && fl.rate > ceiling {
                            fl.mark = update;
                            s.set.push(g);
                        }
                        peak = peak.max(fl.rate);
                    }
                    self.ch[ch as usize].peak = peak;
                }
                // A flow bottlenecked here must stay the fastest here, and rises if capacity was
                // freed.
                let c = &self.ch[ch as usize];
                for &g in &c.held {
                    let fl = &mut self.flows[g];
                    if fl.mark != update && (c.set_max > fl.rate + near || freed) {
                        fl.mark = update;
                        s.set.push(g);
                    }
                }
            }
            if s.set.len() == before {
                break;
            }
        }
        self.reshares += 1;
        self.reshared_flows += s.set.len() as u64;
        for &f in &s.set {
            self.apply(f, now, q);
        }
        self.solver = s;
    }

    /// Progressive filling over the flows of `s.set`, the others' rates held: sets each one's
    /// `new_rate` and `new_bottleneck`, and on each channel it crosses the set's old and new
    /// totals, its fastest new rate and the level at which it filled the channel.
    fn fill(&mut self, s: &mut Scratch) {
        s.filling += 1;
        let filling = s.filling;
        s.chans.clear();
        s.first.clear();
        s.heap.clear();
        for &f in &s.set {
            let fl = &mut self.flows[f];
            fl.frozen = false;
            for h in &fl.path {
                let c = &mut self.ch[h.ch as usize];
                if c.mark != filling {
                    c.mark = filling;
                    c.local = s.chans.len() as u32;
                    c.residual = c.bits_per_s - c.used;
                    c.unfrozen = 0;
                    c.set_old = 0;
                    c.set_new = 0;
                    c.set_max = 0;
                    c.stop_level = u64::MAX;
                    c.set_bottlenecked = 0;
                    s.chans.push(h.ch);
                }
                c.residual += fl.rate;
                c.set_old += fl.rate;
                c.unfrozen += 1;
                if fl.bottleneck == h.ch {
                    c.set_bottlenecked += 1;
                }
            }
        }
        // Lay the set's flows out channel by channel.
        let mut at = 0;
        for &ch in &s.chans {
            s.first.push(at);
            at += self.ch[ch as usize].unfrozen;
        }
        s.first.push(at);
        s.members.resize(at as usize, NIL);
        for &f in &s.set {
            for h in &self.flows[f].path {
                let i = self.ch[h.ch as usize].local as usize;
                s.members[s.first[i] as usize] = f;
                s.first[i] += 1;
            }
        }
        for (i, &ch) in s.chans.iter().enumerate() {
            let c = &mut self.ch[ch as usize];
            s.first[i] -= c.unfrozen;
            // Where flows outside the set are bottlenecked, the unused slack is theirs to take
            // first: the set may use what it had, not more, so that it cannot outgrow them
            // there and drag them into the update.
            if c.held.len() > c.set_bottlenecked as usize {
                c.residual = c.set_old;
            }
            s.heap.push(entry(c.residual / u64::from(c.unfrozen), ch));
        }
        let mut left = s.set.len();
        while left > 0 {
            let Some(mut top) = s.heap.peek_mut() else {
                unreachable!("a flow of the set is on some channel of the set");
            };
            let Reverse(key) = *top;
            let (level, ch) = ((key >> 32) as u64, key as ChannelId);
            let c = &self.ch[ch as usize];
            // A channel has one entry until it fills; shares only rise as flows freeze, so its
            // key is a lower bound of its share, and it goes back in at its share when that rose.
            if c.unfrozen == 0 {
                PeekMut::pop(top);
                continue;
            }
            let share = c.residual / u64::from(c.unfrozen);
            if share != level {
                *top = entry(share, ch);
                continue;
            }
            PeekMut::pop(top);
            let c = &mut self.ch[ch as usize];
            c.stop_level = level;
            let i = c.local as usize;
            for k in s.first[i]..s.first[i + 1] {
                let g = s.members[k as usize];
                let fl = &mut self.flows[g];
                if fl.frozen {
                    continue;
                }
                fl.frozen = true;
                fl.new_rate = level;
                fl.new_bottleneck = ch;
                left -= 1;
                for h in &fl.path {
                    let c = &mut self.ch[h.ch as usize];
                    c.residual -= level;
                    c.unfrozen -= 1;
                    c.set_new += level;
                    c.set_max = c.set_max.max(level);
                }
            }
        }
    }

    /// Gives flow `f` its new rate and bottleneck: its progress at the old rate is booked up to
    /// `now`, and its completion rescheduled if the rate moved.
    fn apply<S: Schedule<FlowEvent>>(&mut self, f: u32, now: Ps, q: &mut S) {
        let fl = &mut self.flows[f];
        if fl.bottleneck != fl.new_bottleneck {
            if fl.bottleneck != NIL {
                self.release(f);
            }
            let fl = &mut self.flows[f];
            let c = &mut self.ch[fl.new_bottleneck as usize];
            fl.bottleneck = fl.new_bottleneck;
            fl.held_slot = c.held.len() as u32;
            c.held.push(f);
        }
        let fl = &mut self.flows[f];
        let (old, new) = (fl.rate, fl.new_rate);
        if old == new && fl.due != NEVER {
            return;
        }
        fl.rem -= i128::from(old) * i128::from(now - fl.t);
        fl.t = now;
        fl.rate = new;
        let shift = (i128::from(new) - i128::from(old)) * i128::from(now);
        for h in &fl.path {
            let c = &mut self.ch[h.ch as usize];
            c.used = c.used - old + new;
            c.work += shift;
            c.peak = c.peak.max(new);
        }
        fl.due = if new == 0 {
            NEVER
        } else {
            let r = i128::from(new);
            let left = (fl.rem - fl.due_rem).max(0);
            now + ((left + r - 1) / r) as Ps
        };
        if fl.due < fl.alarm {
            fl.alarm = fl.due;
            fl.book_done(f, q);
        }
    }

    /// Adds every flow sharing bandwidth to the set (each is on its source's injection channel,
    /// as the first of its path).
    fn add_all(&mut self, s: &mut Scratch) {
        for &inj in &self.topo.node_injection {
            for &(g, at) in &self.ch[inj as usize].flows {
                let fl = &mut self.flows[g];
                if at == 0 && fl.mark != s.update {
                    fl.mark = s.update;
                    s.set.push(g);
                }
            }
        }
    }

    /// Takes flow `f` off the list of the flows its bottleneck holds back (it keeps the channel
    /// as `bottleneck` until it is given another).
    pub(super) fn release(&mut self, f: u32) {
        let fl = &self.flows[f];
        let (ch, slot) = (fl.bottleneck as usize, fl.held_slot as usize);
        let held = &mut self.ch[ch].held;
        held.swap_remove(slot);
        if let Some(&moved) = held.get(slot) {
            self.flows[moved].held_slot = slot as u32;
        }
    }
}

/// A heap entry for channel `ch` filling at `level`: the two packed into one key that orders as
/// the pair does (a channel id fits in 32 bits), the lowest first.
fn entry(level: u64, ch: ChannelId) -> Reverse<u128> {
    Reverse(u128::from(level) << 32 | u128::from(ch))
}
