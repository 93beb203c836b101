//! The event queue, keyed by (time, sequence). The sequence number is assigned at insertion, so
//! events scheduled for the same picosecond pop in the order they were pushed — the property that
//! makes a run reproducible bit for bit.
//!
//! It is a radix heap: simulated time never runs backwards, so an event only needs to be filed by
//! the highest bit in which its time differs from the last popped time. Pushing is an append to
//! one of 64 buckets; popping refills from the lowest non-empty bucket, and each event moves to a
//! lower bucket at most a few times in its life. That is several times cheaper than a binary
//! heap's O(log n) comparisons and scattered moves per operation. Events due at the current time
//! wait in `front` in sequence order, which keeps ties first-in first-out.

use crate::time::Ps;
use std::collections::VecDeque;

#[derive(Debug)]
struct Entry<E> {
    time: Ps,
    seq: u64,
    event: E,
}

/// Anything events of type `E` can be scheduled on. Lets a component (e.g. the network) schedule
/// its own small event type on the simulation's one queue of a larger event enum, so all events
/// share one clock and one tie-breaking sequence.
pub trait Schedule<E> {
    fn schedule(&mut self, time: Ps, event: E);
}

impl<E> Schedule<E> for EventQueue<E> {
    fn schedule(&mut self, time: Ps, event: E) {
        self.push(time, event);
    }
}

const BUCKETS: usize = 64;

/// Deterministic discrete-event queue.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// Events at exactly `now`, in sequence order.
    front: VecDeque<Entry<E>>,
    /// Bucket `b`: events whose time differs from `now` first in bit `b` (so all are later than
    /// `now`, and every event of bucket `b` is earlier than every event of bucket `b + 1`).
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit `b` set when bucket `b` is non-empty.
    occupied: u64,
    len: usize,
    next_seq: u64,
    now: Ps,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

fn bucket_of(time: Ps, now: Ps) -> usize {
    debug_assert!(time != now);
    (63 - (time ^ now).leading_zeros()) as usize
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self {
            front: VecDeque::with_capacity(64),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: 0,
            len: 0,
            next_seq: 0,
            now: 0,
            popped: 0,
        }
    }

    /// Current simulated time: the time of the last popped event.
    pub fn now(&self) -> Ps {
        self.now
    }

    /// Schedules `event` at absolute time `time`. Scheduling in the past is a logic error in the
    /// caller; it is clamped to `now` so time never runs backwards.
    #[inline]
    pub fn push(&mut self, time: Ps, event: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let time = time.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        let e = Entry { time, seq, event };
        if time == self.now {
            // Every event already in `front` has a smaller sequence number.
            self.front.push_back(e);
        } else {
            let b = bucket_of(time, self.now);
            self.buckets[b].push(e);
            self.occupied |= 1 << b;
        }
    }

    /// Moves the earliest events into `front` (which must be empty) and advances `now` to
    /// their time. Returns false if the queue is empty.
    fn refill(&mut self) -> bool {
        if self.occupied == 0 {
            return false;
        }
        let b = self.occupied.trailing_zeros() as usize;
        self.occupied &= !(1 << b);
        if self.buckets[b].len() == 1 {
            if let Some(e) = self.buckets[b].pop() {
                self.now = e.time;
                self.front.push_back(e);
                return true;
            }
        }
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        let t = bucket
            .iter()
            .map(|e| e.time)
            .min()
            .expect("occupied bucket is not empty");
        self.now = t;
        // Redistribute relative to the new `now`: the rest fall into buckets below `b`.
        for e in bucket.drain(..) {
            if e.time == t {
                self.front.push_back(e);
            } else {
                let nb = bucket_of(e.time, t);
                self.buckets[nb].push(e);
                self.occupied |= 1 << nb;
            }
        }
        self.buckets[b] = bucket;
        // A bucket mixes events in no particular order; ties must pop in sequence order.
        if self.front.len() < 2 {
            return true;
        }
        let f = self.front.make_contiguous();
        if f.windows(2).any(|w| w[0].seq > w[1].seq) {
            f.sort_unstable_by_key(|e| e.seq);
        }
        true
    }

    /// Removes and returns the earliest event, advancing `now`.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ps, E)> {
        if self.front.is_empty() && !self.refill() {
            return None;
        }
        let e = self.front.pop_front()?;
        self.len -= 1;
        self.popped += 1;
        Some((e.time, e.event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Ps> {
        if !self.front.is_empty() {
            return Some(self.now);
        }
        if self.occupied == 0 {
            return None;
        }
        let b = self.occupied.trailing_zeros() as usize;
        self.buckets[b].iter().map(|e| e.time).min()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of events popped so far (the engine's work counter).
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, 'a');
        q.push(3, 'b');
        q.push(5, 'c');
        q.push(3, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
    }

    proptest! {
        #[test]
        fn pops_are_sorted_by_time_then_sequence(times in proptest::collection::vec(0u64..50, 0..200)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(*t, i);
            }
            let mut last: Option<(u64, usize)> = None;
            while let Some((t, i)) = q.pop() {
                if let Some((lt, li)) = last {
                    prop_assert!(t > lt || (t == lt && i > li));
                }
                last = Some((t, i));
            }
            prop_assert_eq!(q.events_processed() as usize, times.len());
        }

        #[test]
        fn interleaved_pushes_and_pops_match_a_sorted_reference(
            ops in proptest::collection::vec((0u64..4, 0u64..3000), 0..400)
        ) {
            // (pops before the push, delay): delays span several radix buckets, and many ties.
            let mut q = EventQueue::new();
            let mut reference = std::collections::BTreeSet::new();
            for (i, (pops, delay)) in ops.iter().enumerate() {
                for _ in 0..*pops {
                    let want = reference.pop_first();
                    prop_assert_eq!(q.peek_time(), want.map(|(t, _)| t));
                    prop_assert_eq!(q.pop(), want);
                }
                let t = q.now() + delay * delay;
                q.push(t, i);
                reference.insert((t, i));
                prop_assert_eq!(q.len(), reference.len());
            }
            while let Some(want) = reference.pop_first() {
                prop_assert_eq!(q.pop(), Some(want));
            }
            prop_assert!(q.is_empty());
            prop_assert_eq!(q.pop(), None);
        }
    }
}
