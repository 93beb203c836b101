//! MPI message matching for one rank: the posted-receive queue and the unexpected-message queue,
//! with MPI's rules (non-overtaking order, `ANY_SOURCE`, `ANY_TAG` matching only tags >= 0).
//!
//! Why indexed: at 8,192 ranks a rank can hold thousands of outstanding receives, and the usual
//! linear scan of MPI implementations would make matching quadratic. Every entry gets a sequence
//! number (its posting/arrival order); entries are indexed by `(comm, src, tag)` with `None`
//! standing for a wildcard, and a match takes the smallest sequence number among the few
//! candidate index entries. Both operations are a few hash look-ups, usually one.
//!
//! The index holds the receives and messages themselves, payload and all: at thousands of ranks
//! a message's look-up in its receiver's index is a cache miss, and a match then costs that one
//! miss rather than a second one for a record kept elsewhere. Payloads are copied into it (a
//! message indexed under several keys is held by each), so they are meant to be small, an id.

use std::collections::VecDeque;

use tracewatt_core::flat::FIB;
use tracewatt_core::{FlatKey, FlatMap, Probe};

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

/// A posted receive or an unexpected message, as the index holds it.
#[derive(Debug, Clone, Copy)]
enum Item<P, U> {
    Posted(P),
    /// With its envelope, which a wildcard key does not spell out.
    Unexpected(Envelope, U),
}

impl<P, U> Item<P, U> {
    fn side(&self) -> Side {
        match self {
            Item::Posted(_) => Side::Posted,
            Item::Unexpected(..) => Side::Unexpected,
        }
    }

    fn posted(self) -> Option<P> {
        match self {
            Item::Posted(p) => Some(p),
            Item::Unexpected(..) => None,
        }
    }

    fn unexpected(self) -> Option<(Envelope, U)> {
        match self {
            Item::Posted(_) => None,
            Item::Unexpected(env, u) => Some((env, u)),
        }
    }
}

/// An index entry: sequence number and item.
type Entry<P, U> = (u64, Item<P, U>);

/// A [`Key`] packed for the flat map: a wildcard field is 0 and flagged in `wild`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packed {
    comm: CommId,
    src: Rank,
    tag: Tag,
    /// Bit 0: any source; bit 1: any tag.
    wild: u8,
}

impl Packed {
    /// The receive selectors the key stands for.
    fn selectors(&self) -> (SrcSel, TagSel) {
        let src = if self.wild & 1 != 0 {
            SrcSel::Any
        } else {
            SrcSel::Rank(self.src)
        };
        let tag = if self.wild & 2 != 0 {
            TagSel::Any
        } else {
            TagSel::Tag(self.tag)
        };
        (src, tag)
    }
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

/// A key's entries: one, inline, or several, of one side, in queue `slot` of
/// `KeyIndex::queues`.
#[derive(Debug, Clone, Copy)]
enum Entries<P, U> {
    One(u64, Item<P, U>),
    Many(Side, u32),
}

impl<P, U> Entries<P, U> {
    fn side(&self) -> Side {
        match self {
            Entries::One(_, item) => item.side(),
            Entries::Many(side, _) => *side,
        }
    }
}

/// Posted receives and unexpected messages by key, in one map: a key never holds both (a receive
/// would have matched the message), and the miss-then-insert of every post and arrival then
/// probes the same, already cached, bucket. The map is flat (key and entries in one bucket)
/// because at thousands of ranks a message's look-up in its receiver's index is a cache miss,
/// and this way usually one. Queues of keys that held several entries are kept for reuse when
/// they empty, so short-lived keys (an all-to-all uses one per peer) allocate nothing.
#[derive(Debug)]
struct KeyIndex<P, U> {
    map: FlatMap<Packed, Entries<P, U>>,
    queues: Vec<VecDeque<Entry<P, U>>>,
    /// Empty queues, free for reuse.
    free_queues: Vec<u32>,
}

impl<P, U> Default for KeyIndex<P, U> {
    fn default() -> Self {
        Self {
            map: FlatMap::default(),
            queues: Vec::new(),
            free_queues: Vec::new(),
        }
    }
}

impl<P: Copy, U: Copy> KeyIndex<P, U> {
    /// The earliest entry of `key`, of either side.
    fn front(&self, key: &Key) -> Option<Entry<P, U>> {
        match *self.map.get(&pack(key))? {
            Entries::One(seq, item) => Some((seq, item)),
            Entries::Many(_, q) => self.queues[q as usize].front().copied(),
        }
    }

    /// Adds `e` at the back of the entries in bucket `b`.
    fn append(&mut self, b: usize, e: Entry<P, U>) {
        let v = self.map.value_at_mut(b);
        let q = match *v {
            Entries::Many(_, q) => q,
            Entries::One(seq, item) => {
                let q = self.free_queues.pop().unwrap_or_else(|| {
                    self.queues.push(VecDeque::new());
                    (self.queues.len() - 1) as u32
                });
                self.queues[q as usize].push_back((seq, item));
                *v = Entries::Many(item.side(), q);
                q
            }
        };
        self.queues[q as usize].push_back(e);
    }

    /// Removes the front entry of bucket `b`, and the key once it has none left.
    fn pop_front(&mut self, b: usize) -> Entry<P, U> {
        match *self.map.value_at(b) {
            Entries::One(seq, item) => {
                self.map.remove_at(b);
                (seq, item)
            }
            Entries::Many(_, q) => {
                let queue = &mut self.queues[q as usize];
                let e = queue.pop_front().expect("an indexed key has entries");
                if queue.is_empty() {
                    self.free_queues.push(q);
                    self.map.remove_at(b);
                }
                e
            }
        }
    }

    fn push(&mut self, key: Key, e: Entry<P, U>) {
        let k = pack(&key);
        match self.map.probe(&k) {
            Probe::Vacant(b) => self.map.insert_at(b, k, Entries::One(e.0, e.1)),
            Probe::Found(b) => {
                debug_assert!(
                    self.map.value_at(b).side() == e.1.side(),
                    "a key holds receives and messages"
                );
                self.append(b, e);
            }
        }
    }

    /// Takes the front entry of `key` if the key holds entries of side `take`; otherwise adds
    /// `make()` (of the other side) at the back. The same as `front` then `remove` or `push`,
    /// with one probe instead of two or three: the common exact-key match.
    fn take_or_push(
        &mut self,
        key: Key,
        take: Side,
        make: impl FnOnce() -> Entry<P, U>,
    ) -> Option<Entry<P, U>> {
        let k = pack(&key);
        match self.map.probe(&k) {
            Probe::Vacant(b) => {
                let (seq, item) = make();
                debug_assert!(item.side() == take.other());
                self.map.insert_at(b, k, Entries::One(seq, item));
                None
            }
            Probe::Found(b) if self.map.value_at(b).side() != take => {
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
        let q = match *self.map.value_at(b) {
            Entries::One(s, _) => {
                if s == seq {
                    self.map.remove_at(b);
                }
                return;
            }
            Entries::Many(_, q) => q,
        };
        let queue = &mut self.queues[q as usize];
        if queue.front().is_some_and(|e| e.0 == seq) {
            queue.pop_front();
        } else if let Ok(i) = queue.binary_search_by_key(&seq, |e| e.0) {
            queue.remove(i);
        }
        if queue.is_empty() {
            self.free_queues.push(q);
            self.map.remove_at(b);
        }
    }

    /// What `pick` takes from the entries (with their keys), in sequence order (for diagnostics
    /// and re-indexing only: the map's order is its hashing's, so it never reaches a result).
    fn in_order<'a, T>(
        &'a self,
        pick: impl Fn(&'a Packed, &'a Item<P, U>) -> Option<T>,
    ) -> Vec<(u64, T)> {
        let mut v = Vec::new();
        for (k, entries) in self.map.iter() {
            match entries {
                Entries::One(seq, item) => v.extend(pick(k, item).map(|t| (*seq, t))),
                Entries::Many(_, q) => v.extend(
                    self.queues[*q as usize]
                        .iter()
                        .filter_map(|(seq, item)| pick(k, item).map(|t| (*seq, t))),
                ),
            }
        }
        v.sort_unstable_by_key(|(seq, _)| *seq);
        v
    }
}

/// Posted receives and unexpected messages of one rank. `P` is what a posted receive carries
/// (e.g. its request id), `U` what an unexpected message carries; both are copied into the index
/// (see the module's documentation).
///
/// Most programs never post a wildcard receive, and then a message needs only its exact key: the
/// wildcard keys are looked up only while receives of that kind are posted, and unexpected
/// messages are indexed under wildcard keys only from the first wildcard receive on.
#[derive(Debug)]
pub struct Matcher<P, U> {
    next_seq: u64,
    /// Posted receives under their own selectors' key, each queue in posting order, and
    /// unexpected messages under every key that could select them (once `wild_indexed`, up to
    /// four per message; before, only the exact key), each queue in arrival order.
    index: KeyIndex<P, U>,
    /// Posted receives with a wildcard source, tag, or both.
    posted_wild: [usize; 3],
    posted: usize,
    unexpected: usize,
    wild_indexed: bool,
}

impl<P: Copy, U: Copy> Default for Matcher<P, U> {
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

/// The next sequence number.
fn next(seq: &mut u64) -> u64 {
    let s = *seq;
    *seq += 1;
    s
}

impl<P: Copy, U: Copy> Matcher<P, U> {
    pub fn new() -> Self {
        Self {
            next_seq: 0,
            index: KeyIndex::default(),
            posted_wild: [0; 3],
            posted: 0,
            unexpected: 0,
            wild_indexed: false,
        }
    }

    /// Indexes every unexpected message under its wildcard keys too, from now on.
    fn index_wildcards(&mut self) {
        self.wild_indexed = true;
        // Before this, a message is indexed under its exact key only.
        let messages = self.index.in_order(|_, item| item.unexpected());
        for (seq, (env, u)) in messages {
            for k in candidate_keys(&env).skip(1) {
                self.index.push(k, (seq, Item::Unexpected(env, u)));
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
        let taken = if wild.is_none() && !self.wild_indexed {
            // Only exact keys in use: the receive's own key is the only candidate.
            let next_seq = &mut self.next_seq;
            self.index
                .take_or_push(key, Side::Unexpected, || {
                    (next(next_seq), Item::Posted(payload))
                })
                .and_then(|(_, item)| item.unexpected())
        } else {
            if !self.wild_indexed {
                self.index_wildcards();
            }
            let front = self.index.front(&key);
            match front.and_then(|(seq, item)| Some((seq, item.unexpected()?))) {
                Some((seq, (env, u))) => {
                    for k in candidate_keys(&env) {
                        self.index.remove(&k, seq);
                    }
                    Some((env, u))
                }
                None => {
                    if let Some(w) = wild {
                        self.posted_wild[w] += 1;
                    }
                    let seq = next(&mut self.next_seq);
                    self.index.push(key, (seq, Item::Posted(payload)));
                    None
                }
            }
        };
        if taken.is_some() {
            self.unexpected -= 1;
        } else {
            self.posted += 1;
        }
        taken
    }

    /// A message (eager data or rendezvous request) arrives. If a posted receive matches, the
    /// earliest-posted matching one is removed and returned; otherwise the message is queued as
    /// unexpected.
    pub fn arrive(&mut self, env: Envelope, payload: U) -> Option<P> {
        let taken = if !self.wild_indexed {
            // No wildcard receive was ever posted: only the exact key can match.
            let key = (env.comm, Some(env.src), Some(env.tag));
            let next_seq = &mut self.next_seq;
            self.index
                .take_or_push(key, Side::Posted, || {
                    (next(next_seq), Item::Unexpected(env, payload))
                })
                .and_then(|(_, item)| item.posted())
        } else {
            let best = candidate_keys(&env)
                .filter(|k| match wild_kind(k) {
                    None => true,
                    Some(w) => self.posted_wild[w] > 0,
                })
                .filter_map(|k| {
                    let (seq, item) = self.index.front(&k)?;
                    Some((seq, item.posted()?, k))
                })
                .min_by_key(|(seq, ..)| *seq);
            match best {
                Some((seq, p, key)) => {
                    self.index.remove(&key, seq);
                    if let Some(w) = wild_kind(&key) {
                        self.posted_wild[w] -= 1;
                    }
                    Some(p)
                }
                None => {
                    let seq = next(&mut self.next_seq);
                    for k in candidate_keys(&env) {
                        self.index.push(k, (seq, Item::Unexpected(env, payload)));
                    }
                    None
                }
            }
        };
        if taken.is_some() {
            self.posted -= 1;
        } else {
            self.unexpected += 1;
        }
        taken
    }

    pub fn posted_len(&self) -> usize {
        self.posted
    }

    pub fn unexpected_len(&self) -> usize {
        self.unexpected
    }

    /// Outstanding posted receives in posting order, for deadlock diagnostics.
    pub fn posted(&self) -> impl Iterator<Item = (CommId, SrcSel, TagSel, &P)> {
        // A receive is indexed under its own selectors only.
        let posted = self.index.in_order(|k, item| match item {
            Item::Posted(p) => {
                let (src, tag) = k.selectors();
                Some((k.comm, src, tag, p))
            }
            Item::Unexpected(..) => None,
        });
        posted.into_iter().map(|(_, p)| p)
    }

    /// Unexpected messages in arrival order, for deadlock diagnostics.
    pub fn unexpected(&self) -> impl Iterator<Item = (&Envelope, &U)> {
        // Each message once: under its exact key.
        let messages = self.index.in_order(|k, item| match item {
            Item::Unexpected(env, u) if k.wild == 0 => Some((env, u)),
            _ => None,
        });
        messages.into_iter().map(|(_, m)| m)
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
