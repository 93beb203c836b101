//! MPI message matching for one rank: the posted-receive queue and the unexpected-message queue,
//! with MPI's rules (non-overtaking order, `ANY_SOURCE`, `ANY_TAG` matching only tags >= 0).
//!
//! Why indexed: at 8,192 ranks a rank can hold thousands of outstanding receives, and the usual
//! linear scan of MPI implementations would make matching quadratic. Every entry gets a sequence
//! number (its posting/arrival order); entries are indexed by `(comm, src, tag)` with `None`
//! standing for a wildcard, and a match takes the smallest sequence number among the few
//! candidate index entries. Both operations are a few hash look-ups, usually one.

use std::collections::VecDeque;

use tracewatt_core::flat::FIB;
use tracewatt_core::{FlatKey, FlatMap, Probe, Slab};

use crate::op::{CommId, Rank, SrcSel, Tag, TagSel};

/// What a message carries for matching: communicator, comm-local source rank and tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Envelope {
    pub comm: CommId,
    /// Comm-local rank of the sender.
    pub src: Rank,
    pub tag: Tag,
}

/// Index key: communicator, source (`None` = any) and tag (`None` = any tag >= 0).
type Key = (CommId, Option<Rank>, Option<Tag>);

fn sel_key(comm: CommId, src: SrcSel, tag: TagSel) -> Key {
    let s = match src {
        SrcSel::Rank(r) => Some(r),
        SrcSel::Any => None,
    };
    let t = match tag {
        TagSel::Tag(t) => Some(t),
        TagSel::Any => None,
    };
    (comm, s, t)
}

/// The (up to four) receive keys an envelope can match; `ANY_TAG` keys only for tags >= 0.
fn candidate_keys(env: &Envelope) -> impl Iterator<Item = Key> {
    let (c, s, t) = (env.comm, env.src, env.tag);
    let wild_tag = t >= 0;
    [
        Some((c, Some(s), Some(t))),
        Some((c, None, Some(t))),
        wild_tag.then_some((c, Some(s), None)),
        wild_tag.then_some((c, None, None)),
    ]
    .into_iter()
    .flatten()
}

#[derive(Debug)]
struct PostedRecv<P> {
    seq: u64,
    comm: CommId,
    src: SrcSel,
    tag: TagSel,
    payload: P,
}

#[derive(Debug)]
struct Unexpected<U> {
    seq: u64,
    env: Envelope,
    payload: U,
}

/// An index entry: `(sequence number, slot)`.
type Entry = (u64, u32);

/// Which queue an index entry belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Posted,
    Unexpected,
}

impl Side {
    fn other(self) -> Self {
        match self {
            Side::Posted => Side::Unexpected,
            Side::Unexpected => Side::Posted,
        }
    }
}

/// A [`Key`] packed for the flat map: a wildcard field is 0 and flagged in `wild`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packed {
    comm: CommId,
    src: Rank,
    tag: Tag,
    /// Bit 0: any source; bit 1: any tag.
    wild: u8,
}

impl FlatKey for Packed {
    #[inline]
    fn hash(&self) -> u64 {
        let a = ((self.comm as u64) << 32) | self.src as u64;
        let b = ((self.tag as u32 as u64) << 8) | self.wild as u64;
        (a.wrapping_mul(FIB) ^ b).wrapping_mul(FIB)
    }
}

#[inline]
fn pack(key: &Key) -> Packed {
    let (comm, src, tag) = *key;
    Packed {
        comm,
        src: src.unwrap_or(0),
        tag: tag.unwrap_or(0),
        wild: u8::from(src.is_none()) | (u8::from(tag.is_none()) << 1),
    }
}

/// A key's entries: one, inline, or (`many`) a queue in `KeyIndex::queues`, numbered `slot`.
/// 16 bytes, so a bucket with its key is 32: half a cache line.
#[derive(Debug, Clone, Copy)]
struct Entries {
    seq: u64,
    slot: u32,
    side: Side,
    many: bool,
}

/// Posted receives and unexpected messages by key, in one map: a key never holds both (a receive
/// would have matched the message), and the miss-then-insert of every post and arrival then
/// probes the same, already cached, bucket. The map is flat (key and entries in one bucket)
/// because at thousands of ranks a message's look-up in its receiver's index is a cache miss,
/// and this way usually one. Queues of keys that held several entries are kept for reuse when
/// they empty, so short-lived keys (an all-to-all uses one per peer) allocate nothing.
#[derive(Debug, Default)]
struct KeyIndex {
    map: FlatMap<Packed, Entries>,
    queues: Vec<VecDeque<Entry>>,
    /// Empty queues, free for reuse.
    free_queues: Vec<u32>,
}

impl KeyIndex {
    fn front(&self, key: &Key, side: Side) -> Option<Entry> {
        let v = self.map.get(&pack(key))?;
        if v.side != side {
            None
        } else if v.many {
            self.queues[v.slot as usize].front().copied()
        } else {
            Some((v.seq, v.slot))
        }
    }

    /// Adds `e` at the back of the entries in bucket `b`.
    fn append(&mut self, b: usize, e: Entry) {
        let v = self.map.value_at_mut(b);
        if !v.many {
            let q = self.free_queues.pop().unwrap_or_else(|| {
                self.queues.push(VecDeque::new());
                (self.queues.len() - 1) as u32
            });
            self.queues[q as usize].push_back((v.seq, v.slot));
            v.many = true;
            v.slot = q;
        }
        self.queues[v.slot as usize].push_back(e);
    }

    /// Removes the front entry of bucket `b`, and the key once it has none left.
    fn pop_front(&mut self, b: usize) -> Entry {
        let v = *self.map.value_at(b);
        if !v.many {
            self.map.remove_at(b);
            return (v.seq, v.slot);
        }
        let q = &mut self.queues[v.slot as usize];
        let e = q.pop_front().expect("an indexed key has entries");
        if q.is_empty() {
            self.free_queues.push(v.slot);
            self.map.remove_at(b);
        }
        e
    }

    fn push(&mut self, key: Key, side: Side, seq: u64, slot: u32) {
        let k = pack(&key);
        match self.map.probe(&k) {
            Probe::Vacant(b) => self.map.insert_at(
                b,
                k,
                Entries {
                    seq,
                    slot,
                    side,
                    many: false,
                },
            ),
            Probe::Found(b) => {
                debug_assert!(
                    self.map.value_at(b).side == side,
                    "a key holds receives and messages"
                );
                self.append(b, (seq, slot));
            }
        }
    }

    /// Takes the front entry of `key` if the key holds entries of side `take`; otherwise adds
    /// `make()` at the back for the other side. The same as `front` then `remove` or `push`,
    /// with one probe instead of two or three: the common exact-key match.
    fn take_or_push(
        &mut self,
        key: Key,
        take: Side,
        make: impl FnOnce() -> Entry,
    ) -> Option<Entry> {
        let k = pack(&key);
        match self.map.probe(&k) {
            Probe::Vacant(b) => {
                let (seq, slot) = make();
                let side = take.other();
                self.map.insert_at(
                    b,
                    k,
                    Entries {
                        seq,
                        slot,
                        side,
                        many: false,
                    },
                );
                None
            }
            Probe::Found(b) if self.map.value_at(b).side != take => {
                self.append(b, make());
                None
            }
            Probe::Found(b) => Some(self.pop_front(b)),
        }
    }

    /// Removes entry `seq` (usually the front) from the entries of `key`.
    fn remove(&mut self, key: &Key, seq: u64) {
        let Some(b) = self.map.find(&pack(key)) else {
            return;
        };
        let v = *self.map.value_at(b);
        if !v.many {
            if v.seq == seq {
                self.map.remove_at(b);
            }
            return;
        }
        let q = &mut self.queues[v.slot as usize];
        if q.front().is_some_and(|e| e.0 == seq) {
            q.pop_front();
        } else if let Ok(i) = q.binary_search_by_key(&seq, |e| e.0) {
            q.remove(i);
        }
        if q.is_empty() {
            self.free_queues.push(v.slot);
            self.map.remove_at(b);
        }
    }
}

/// Posted receives and unexpected messages of one rank. `P` is what a posted receive carries
/// (e.g. its request id and buffer size), `U` what an unexpected message carries.
///
/// Most programs never post a wildcard receive, and then a message needs only its exact key: the
/// wildcard keys are looked up only while receives of that kind are posted, and unexpected
/// messages are indexed under wildcard keys only from the first wildcard receive on.
#[derive(Debug)]
pub struct Matcher<P, U> {
    next_seq: u64,
    /// Posted receives; `None` in freed slots.
    posted: Slab<Option<PostedRecv<P>>>,
    /// Posted receives by their exact selector key, each queue in posting order, and
    /// unexpected messages under every key that could select them (once `wild_indexed`, up to
    /// four per message; before, only the exact key), each queue in arrival order.
    index: KeyIndex,
    /// Posted receives with a wildcard source, tag, or both.
    posted_wild: [usize; 3],
    /// Unexpected messages; `None` in freed slots.
    unexpected: Slab<Option<Unexpected<U>>>,
    wild_indexed: bool,
}

impl<P, U> Default for Matcher<P, U> {
    fn default() -> Self {
        Self::new()
    }
}

/// Which `posted_wild` counter a key belongs to, if it has a wildcard.
fn wild_kind(key: &Key) -> Option<usize> {
    match (key.1, key.2) {
        (Some(_), Some(_)) => None,
        (None, Some(_)) => Some(0),
        (Some(_), None) => Some(1),
        (None, None) => Some(2),
    }
}

/// The live entries of a slab, in sequence order (for diagnostics and re-indexing only).
fn in_order<T>(slab: &Slab<Option<T>>, seq: impl Fn(&T) -> u64) -> Vec<(u32, &T)> {
    let mut v: Vec<(u32, &T)> = (0..slab.capacity() as u32)
        .filter_map(|i| slab[i].as_ref().map(|t| (i, t)))
        .collect();
    v.sort_by_key(|(_, t)| seq(t));
    v
}

/// Stores `make(seq)` under the next sequence number; returns the index entry for it.
fn store<T>(slab: &mut Slab<Option<T>>, next_seq: &mut u64, make: impl FnOnce(u64) -> T) -> Entry {
    let seq = *next_seq;
    *next_seq += 1;
    (seq, slab.insert(Some(make(seq))))
}

/// Removes and returns the item an index entry refers to.
fn take<T>(slab: &mut Slab<Option<T>>, slot: u32) -> T {
    let item = slab[slot]
        .take()
        .expect("index entries refer to stored items");
    slab.remove(slot);
    item
}

impl<P, U> Matcher<P, U> {
    pub fn new() -> Self {
        Self {
            next_seq: 0,
            posted: Slab::new(),
            index: KeyIndex::default(),
            posted_wild: [0; 3],
            unexpected: Slab::new(),
            wild_indexed: false,
        }
    }

    /// Indexes every unexpected message under its wildcard keys too, from now on.
    fn index_wildcards(&mut self) {
        self.wild_indexed = true;
        for (slot, u) in in_order(&self.unexpected, |u| u.seq) {
            for k in candidate_keys(&u.env).skip(1) {
                self.index.push(k, Side::Unexpected, u.seq, slot);
            }
        }
    }

    /// Post a receive. If an unexpected message matches, the earliest-arrived matching one is
    /// removed and returned (and the receive is not queued).
    pub fn post(
        &mut self,
        comm: CommId,
        src: SrcSel,
        tag: TagSel,
        payload: P,
    ) -> Option<(Envelope, U)> {
        let key = sel_key(comm, src, tag);
        let wild = wild_kind(&key);
        let recv = |seq| PostedRecv {
            seq,
            comm,
            src,
            tag,
            payload,
        };
        if wild.is_none() && !self.wild_indexed {
            // Only exact keys in use: the receive's own key is the only candidate.
            let (posted, next_seq) = (&mut self.posted, &mut self.next_seq);
            let taken = self
                .index
                .take_or_push(key, Side::Unexpected, || store(posted, next_seq, recv));
            return taken.map(|(_, slot)| {
                let u = take(&mut self.unexpected, slot);
                (u.env, u.payload)
            });
        }
        if !self.wild_indexed {
            self.index_wildcards();
        }
        if let Some((seq, slot)) = self.index.front(&key, Side::Unexpected) {
            let u = take(&mut self.unexpected, slot);
            for k in candidate_keys(&u.env) {
                self.index.remove(&k, seq);
            }
            return Some((u.env, u.payload));
        }
        let (seq, slot) = store(&mut self.posted, &mut self.next_seq, recv);
        if let Some(w) = wild {
            self.posted_wild[w] += 1;
        }
        self.index.push(key, Side::Posted, seq, slot);
        None
    }

    /// A message (eager data or rendezvous request) arrives. If a posted receive matches, the
    /// earliest-posted matching one is removed and returned; otherwise the message is queued as
    /// unexpected.
    pub fn arrive(&mut self, env: Envelope, payload: U) -> Option<P> {
        let message = |seq| Unexpected { seq, env, payload };
        if !self.wild_indexed {
            // No wildcard receive was ever posted: only the exact key can match.
            let key = (env.comm, Some(env.src), Some(env.tag));
            let (unexpected, next_seq) = (&mut self.unexpected, &mut self.next_seq);
            let taken = self
                .index
                .take_or_push(key, Side::Posted, || store(unexpected, next_seq, message));
            return taken.map(|(_, slot)| take(&mut self.posted, slot).payload);
        }
        let best = candidate_keys(&env)
            .filter(|k| match wild_kind(k) {
                None => true,
                Some(w) => self.posted_wild[w] > 0,
            })
            .filter_map(|k| self.index.front(&k, Side::Posted).map(|e| (e, k)))
            .min();
        if let Some(((seq, slot), key)) = best {
            self.index.remove(&key, seq);
            if let Some(w) = wild_kind(&key) {
                self.posted_wild[w] -= 1;
            }
            return Some(take(&mut self.posted, slot).payload);
        }
        let (seq, slot) = store(&mut self.unexpected, &mut self.next_seq, message);
        for k in candidate_keys(&env) {
            self.index.push(k, Side::Unexpected, seq, slot);
        }
        None
    }

    pub fn posted_len(&self) -> usize {
        self.posted.live()
    }

    pub fn unexpected_len(&self) -> usize {
        self.unexpected.live()
    }

    /// Outstanding posted receives in posting order, for deadlock diagnostics.
    pub fn posted(&self) -> impl Iterator<Item = (CommId, SrcSel, TagSel, &P)> {
        in_order(&self.posted, |p| p.seq)
            .into_iter()
            .map(|(_, p)| (p.comm, p.src, p.tag, &p.payload))
    }

    /// Unexpected messages in arrival order, for deadlock diagnostics.
    pub fn unexpected(&self) -> impl Iterator<Item = (&Envelope, &U)> {
        in_order(&self.unexpected, |u| u.seq)
            .into_iter()
            .map(|(_, u)| (&u.env, &u.payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The textbook linear-scan matcher, the reference for the indexed one.
    #[derive(Default)]
    struct Naive {
        posted: Vec<(CommId, SrcSel, TagSel, u32)>,
        unexpected: Vec<(Envelope, u32)>,
    }

    impl Naive {
        fn post(&mut self, c: CommId, s: SrcSel, t: TagSel, p: u32) -> Option<(Envelope, u32)> {
            let i = self
                .unexpected
                .iter()
                .position(|(e, _)| e.comm == c && s.matches(e.src) && t.matches(e.tag));
            match i {
                Some(i) => Some(self.unexpected.remove(i)),
                None => {
                    self.posted.push((c, s, t, p));
                    None
                }
            }
        }
        fn arrive(&mut self, e: Envelope, u: u32) -> Option<u32> {
            let i = self
                .posted
                .iter()
                .position(|(c, s, t, _)| *c == e.comm && s.matches(e.src) && t.matches(e.tag));
            match i {
                Some(i) => Some(self.posted.remove(i).3),
                None => {
                    self.unexpected.push((e, u));
                    None
                }
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Action {
        Post(CommId, SrcSel, TagSel),
        Arrive(Envelope),
    }

    /// Posts and arrivals on 2 communicators, 3 sources and tags -2..3; with `wildcards`, half
    /// the receives use `ANY_SOURCE` or `ANY_TAG`.
    fn action(wildcards: bool) -> impl Strategy<Value = Action> {
        let any = if wildcards { 1u32 } else { 0 };
        let src_sel = prop_oneof![
            any => Just(SrcSel::Any),
            1 => (0u32..3).prop_map(SrcSel::Rank)
        ];
        let tag_sel = prop_oneof![
            any => Just(TagSel::Any),
            1 => (-2i32..3).prop_map(TagSel::Tag)
        ];
        prop_oneof![
            (0u32..2, src_sel, tag_sel).prop_map(|(c, s, t)| Action::Post(c, s, t)),
            (0u32..2, 0u32..3, -2i32..3).prop_map(|(comm, src, tag)| Action::Arrive(Envelope {
                comm,
                src,
                tag
            })),
        ]
    }

    fn check_against_reference(actions: Vec<Action>) -> Result<(), TestCaseError> {
        let mut m: Matcher<u32, u32> = Matcher::new();
        let mut r = Naive::default();
        for (i, a) in actions.into_iter().enumerate() {
            let id = i as u32;
            match a {
                Action::Post(c, s, t) => prop_assert_eq!(m.post(c, s, t, id), r.post(c, s, t, id)),
                Action::Arrive(e) => prop_assert_eq!(m.arrive(e, id), r.arrive(e, id)),
            }
            prop_assert_eq!(m.posted_len(), r.posted.len());
            prop_assert_eq!(m.unexpected_len(), r.unexpected.len());
            let posted: Vec<_> = m.posted().map(|(c, s, t, p)| (c, s, t, *p)).collect();
            prop_assert_eq!(&posted, &r.posted);
            let unexpected: Vec<_> = m.unexpected().map(|(e, u)| (*e, *u)).collect();
            prop_assert_eq!(&unexpected, &r.unexpected);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn matches_the_linear_scan_reference(actions in prop::collection::vec(action(true), 0..200)) {
            check_against_reference(actions)?;
        }

        /// Without wildcard receives the matcher takes its one-probe exact-key path throughout.
        #[test]
        fn exact_receives_match_the_linear_scan_reference(actions in prop::collection::vec(action(false), 0..200)) {
            check_against_reference(actions)?;
        }
    }

    #[test]
    fn any_tag_never_matches_negative_tags() {
        let mut m: Matcher<u32, u32> = Matcher::new();
        let env = Envelope {
            comm: 0,
            src: 1,
            tag: -3,
        };
        assert_eq!(m.arrive(env, 7), None);
        assert_eq!(m.post(0, SrcSel::Any, TagSel::Any, 1), None);
        assert_eq!(
            m.post(0, SrcSel::Rank(1), TagSel::Tag(-3), 2),
            Some((env, 7))
        );
        // The wildcard receive is still posted and takes the next user message.
        let user = Envelope {
            comm: 0,
            src: 2,
            tag: 0,
        };
        assert_eq!(m.arrive(user, 8), Some(1));
        assert_eq!(m.posted_len() + m.unexpected_len(), 0);
    }

    #[test]
    fn non_overtaking_between_specific_and_wildcard_receives() {
        let mut m: Matcher<u32, u32> = Matcher::new();
        assert_eq!(m.post(0, SrcSel::Any, TagSel::Any, 1), None);
        assert_eq!(m.post(0, SrcSel::Rank(4), TagSel::Tag(5), 2), None);
        let env = Envelope {
            comm: 0,
            src: 4,
            tag: 5,
        };
        // The earlier-posted wildcard wins.
        assert_eq!(m.arrive(env, 0), Some(1));
        assert_eq!(m.arrive(env, 0), Some(2));
    }

    #[test]
    fn a_key_keeps_posting_order_across_emptied_and_reused_queues() {
        // Three receives on one key queue up; after they drain, the key's next receives start
        // a fresh queue (the emptied one, reused) and still match in posting order.
        let mut m: Matcher<u32, u32> = Matcher::new();
        let env = |src| Envelope {
            comm: 1,
            src,
            tag: 9,
        };
        for round in 0..3u32 {
            for i in 0..3 {
                assert_eq!(
                    m.post(1, SrcSel::Rank(5), TagSel::Tag(9), round * 10 + i),
                    None
                );
            }
            // A message on another key is unexpected and does not disturb the queue.
            assert_eq!(m.arrive(env(6), 99), None);
            for i in 0..3 {
                assert_eq!(m.arrive(env(5), 0), Some(round * 10 + i));
            }
            assert_eq!(
                m.post(1, SrcSel::Rank(6), TagSel::Tag(9), 0),
                Some((env(6), 99))
            );
            assert_eq!(m.posted_len() + m.unexpected_len(), 0);
        }
    }

    #[test]
    fn many_outstanding_receives_match_quickly() {
        // 30k posted receives from distinct sources: linear scans would take ~5e8 steps.
        let mut m: Matcher<u32, u32> = Matcher::new();
        let n = 30_000u32;
        for s in 0..n {
            assert!(m.post(0, SrcSel::Rank(s), TagSel::Tag(0), s).is_none());
        }
        for s in (0..n).rev() {
            let env = Envelope {
                comm: 0,
                src: s,
                tag: 0,
            };
            assert_eq!(m.arrive(env, 0), Some(s));
        }
        assert_eq!(m.posted_len(), 0);
    }
}
