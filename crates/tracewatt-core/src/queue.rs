//! The event queue, ordered by time; events scheduled for the same picosecond pop in the order
//! they were pushed — the property that makes a run reproducible bit for bit.
//!
//! It is a radix heap with 64-way digits: simulated time never runs backwards, so an event only
//! needs to be filed by the highest 6-bit digit in which its time differs from the last popped
//! time (its level) and by its own value of that digit. Pushing is an append to one bucket;
//! popping takes the lowest non-empty bucket, and each event moves to a lower level at most a
//! few times in its life (an event 1 us ahead crosses at most three levels). That is several
//! times cheaper than a binary heap's O(log n) comparisons and scattered moves per operation, and
//! than a binary radix heap's one move per bit. All events of a level-0 bucket share one time, so
//! the bucket becomes the batch of current events as it is, with no scan.
//!
//! Ties need no sequence number. Every event always sits in the bucket named by its time and
//! `now` (taking a bucket moves `now` only within that bucket's range, which leaves the events of
//! every other bucket where they belong), so events of equal time always share a bucket. Buckets
//! are only appended to, and a bucket is only ever emptied in order into buckets that are empty,
//! so events of equal time stay in push order from push to pop.

use crate::time::Ps;

#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    time: Ps,
    event: E,
}

/// Anything events of type `E` can be scheduled on. Lets a component (e.g. the network) schedule
/// its own small event type on the simulation's one queue of a larger event enum, so all events
/// share one clock and one tie-breaking order.
pub trait Schedule<E> {
    fn schedule(&mut self, time: Ps, event: E);
}

impl<E: Copy> Schedule<E> for EventQueue<E> {
    fn schedule(&mut self, time: Ps, event: E) {
        self.push(time, event);
    }
}

const DIGIT_BITS: u32 = 6;
const FAN: usize = 1 << DIGIT_BITS;
const LEVELS: usize = (Ps::BITS as usize).div_ceil(DIGIT_BITS as usize);

/// Level and bucket index of an event at `time`, seen from `now` (`time > now`).
#[inline]
fn slot(time: Ps, now: Ps) -> (usize, usize) {
    debug_assert!(time > now);
    let bit = Ps::BITS - 1 - (time ^ now).leading_zeros();
    let level = bit / DIGIT_BITS;
    let digit = (time >> (level * DIGIT_BITS)) as usize & (FAN - 1);
    (level as usize, level as usize * FAN + digit)
}

/// Deterministic discrete-event queue.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// Events at exactly `now`, in push order; those before `cursor` have been popped.
    front: Vec<Entry<E>>,
    cursor: usize,
    /// Bucket `level * FAN + d`: events whose time agrees with `now` above digit `level` and has
    /// digit `d` there (so all are later than `now`; every event of a bucket is earlier than
    /// every event of a higher bucket of the same level, and of every higher level).
    buckets: Vec<Vec<Entry<E>>>,
    /// Per level, bit `d` set when bucket `d` of that level is non-empty.
    occupied: [u64; LEVELS],
    /// Bit `level` set when `occupied[level] != 0`.
    levels: u32,
    len: usize,
    now: Ps,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        Self {
            front: Vec::with_capacity(64),
            cursor: 0,
            buckets: (0..LEVELS * FAN).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
            levels: 0,
            len: 0,
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
        self.len += 1;
        let e = Entry { time, event };
        if time == self.now {
            self.front.push(e);
        } else {
            self.file(e);
        }
    }

    #[inline]
    fn file(&mut self, e: Entry<E>) {
        let (level, b) = slot(e.time, self.now);
        self.buckets[b].push(e);
        self.occupied[level] |= 1 << (b % FAN);
        self.levels |= 1 << level;
    }

    /// The lowest non-empty bucket: its level and index.
    fn lowest(&self) -> Option<(usize, usize)> {
        if self.levels == 0 {
            return None;
        }
        let level = self.levels.trailing_zeros() as usize;
        let digit = self.occupied[level].trailing_zeros() as usize;
        Some((level, level * FAN + digit))
    }

    /// Makes the earliest events the current batch (`front` must be exhausted) and advances
    /// `now` to their time. Returns false if the queue is empty.
    fn refill(&mut self) -> bool {
        let Some((level, b)) = self.lowest() else {
            return false;
        };
        self.occupied[level] &= !(1 << (b % FAN));
        if self.occupied[level] == 0 {
            self.levels &= !(1 << level);
        }
        self.front.clear();
        self.cursor = 0;
        if level == 0 {
            // One time only: the bucket is the batch, already in push order.
            std::mem::swap(&mut self.front, &mut self.buckets[b]);
            self.now = self.front[0].time;
            return true;
        }
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        let t = bucket
            .iter()
            .map(|e| e.time)
            .min()
            .expect("occupied bucket is not empty");
        self.now = t;
        // The rest fall into lower levels, all empty now, so their order is kept.
        for &e in &bucket {
            if e.time == t {
                self.front.push(e);
            } else {
                self.file(e);
            }
        }
        bucket.clear();
        self.buckets[b] = bucket;
        true
    }

    /// Removes and returns the earliest event, advancing `now`.
    #[inline]
    pub fn pop(&mut self) -> Option<(Ps, E)> {
        if self.cursor == self.front.len() && !self.refill() {
            return None;
        }
        let e = self.front[self.cursor];
        self.cursor += 1;
        self.len -= 1;
        self.popped += 1;
        Some((e.time, e.event))
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Ps> {
        if self.cursor < self.front.len() {
            return Some(self.now);
        }
        let (_, b) = self.lowest()?;
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
            // (pops before the push, delay): delays span several levels, and many ties.
            check_against_reference(ops.iter().map(|&(pops, d)| (pops, d * d)))?;
        }

        #[test]
        fn delays_at_every_level_match_a_sorted_reference(
            ops in proptest::collection::vec((0u64..4, 0u64..8, 0u32..58), 0..400)
        ) {
            // Small multipliers at shifts up to 2^57: every level, and ties at every level.
            check_against_reference(ops.iter().map(|&(pops, m, shift)| (pops, m << shift)))?;
        }
    }

    /// Pushes at `now + delay` after `pops` pops, comparing every pop and peek with a
    /// `BTreeSet` of (time, push index).
    fn check_against_reference(
        ops: impl Iterator<Item = (u64, u64)>,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        for (i, (pops, delay)) in ops.enumerate() {
            for _ in 0..pops {
                let want = reference.pop_first();
                prop_assert_eq!(q.peek_time(), want.map(|(t, _)| t));
                prop_assert_eq!(q.pop(), want);
            }
            let t = q.now() + delay;
            q.push(t, i);
            reference.insert((t, i));
            prop_assert_eq!(q.len(), reference.len());
        }
        while let Some(want) = reference.pop_first() {
            prop_assert_eq!(q.pop(), Some(want));
        }
        prop_assert!(q.is_empty());
        prop_assert_eq!(q.pop(), None);
        Ok(())
    }
}
