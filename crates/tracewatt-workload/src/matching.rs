//! MPI message matching for one rank: the posted-receive queue and the unexpected-message queue,
//! with MPI's rules (non-overtaking order, `ANY_SOURCE`, `ANY_TAG` matching only tags >= 0).
//!
//! Why indexed: at 8,192 ranks a rank can hold thousands of outstanding receives, and the usual
//! linear scan of MPI implementations would make matching quadratic. Every entry gets a global
//! sequence number (its posting/arrival order); entries are indexed by `(comm, src, tag)` with
//! `None` standing for a wildcard, and a match takes the smallest sequence number among the few
//! candidate index entries. Both operations are `O(log n)`.

use std::collections::{BTreeMap, VecDeque};

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
    comm: CommId,
    src: SrcSel,
    tag: TagSel,
    payload: P,
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
    /// Posted receives by sequence number (= posting order).
    posted: BTreeMap<u64, PostedRecv<P>>,
    /// Posted receives by their exact selector key; each queue is in posting order, so its front
    /// is the earliest receive of that key.
    posted_index: BTreeMap<Key, VecDeque<u64>>,
    /// Posted receives with a wildcard source, tag, or both.
    posted_wild: [usize; 3],
    /// Unexpected messages by sequence number (= arrival order).
    unexpected: BTreeMap<u64, (Envelope, U)>,
    /// Unexpected messages under every key that could select them (once `wild_indexed`, up to
    /// four per message; before, only the exact key), each queue in arrival order.
    unexpected_index: BTreeMap<Key, VecDeque<u64>>,
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

/// Removes `seq` from an index queue (sorted by sequence number), dropping the queue when empty.
fn unindex(index: &mut BTreeMap<Key, VecDeque<u64>>, key: Key, seq: u64) {
    if let Some(q) = index.get_mut(&key) {
        if q.front() == Some(&seq) {
            q.pop_front();
        } else if let Ok(i) = q.binary_search(&seq) {
            q.remove(i);
        }
        if q.is_empty() {
            index.remove(&key);
        }
    }
}

impl<P, U> Matcher<P, U> {
    pub fn new() -> Self {
        Self {
            next_seq: 0,
            posted: BTreeMap::new(),
            posted_index: BTreeMap::new(),
            posted_wild: [0; 3],
            unexpected: BTreeMap::new(),
            unexpected_index: BTreeMap::new(),
            wild_indexed: false,
        }
    }

    fn seq(&mut self) -> u64 {
        let s = self.next_seq;
        self.next_seq += 1;
        s
    }

    /// Indexes every unexpected message under its wildcard keys too, from now on.
    fn index_wildcards(&mut self) {
        self.wild_indexed = true;
        for (&seq, (env, _)) in &self.unexpected {
            for k in candidate_keys(env).skip(1) {
                self.unexpected_index.entry(k).or_default().push_back(seq);
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
        if wild.is_some() && !self.wild_indexed {
            self.index_wildcards();
        }
        let found = self
            .unexpected_index
            .get(&key)
            .and_then(|q| q.front().copied());
        if let Some(seq) = found {
            let (env, u) = self
                .unexpected
                .remove(&seq)
                .expect("unexpected index refers to a stored message");
            if self.wild_indexed {
                for k in candidate_keys(&env) {
                    unindex(&mut self.unexpected_index, k, seq);
                }
            } else {
                unindex(&mut self.unexpected_index, key, seq);
            }
            return Some((env, u));
        }
        let seq = self.seq();
        self.posted.insert(
            seq,
            PostedRecv {
                comm,
                src,
                tag,
                payload,
            },
        );
        if let Some(w) = wild {
            self.posted_wild[w] += 1;
        }
        self.posted_index.entry(key).or_default().push_back(seq);
        None
    }

    /// A message (eager data or rendezvous request) arrives. If a posted receive matches, the
    /// earliest-posted matching one is removed and returned; otherwise the message is queued as
    /// unexpected.
    pub fn arrive(&mut self, env: Envelope, payload: U) -> Option<P> {
        let best = candidate_keys(&env)
            .filter(|k| match wild_kind(k) {
                None => true,
                Some(w) => self.posted_wild[w] > 0,
            })
            .filter_map(|k| {
                self.posted_index
                    .get(&k)
                    .and_then(|q| q.front())
                    .map(|&s| (s, k))
            })
            .min();
        if let Some((seq, key)) = best {
            if let Some(q) = self.posted_index.get_mut(&key) {
                q.pop_front();
                if q.is_empty() {
                    self.posted_index.remove(&key);
                }
            }
            if let Some(w) = wild_kind(&key) {
                self.posted_wild[w] -= 1;
            }
            let p = self
                .posted
                .remove(&seq)
                .expect("posted index refers to a stored receive");
            return Some(p.payload);
        }
        let seq = self.seq();
        let keys = if self.wild_indexed { 4 } else { 1 };
        for k in candidate_keys(&env).take(keys) {
            self.unexpected_index.entry(k).or_default().push_back(seq);
        }
        self.unexpected.insert(seq, (env, payload));
        None
    }

    pub fn posted_len(&self) -> usize {
        self.posted.len()
    }

    pub fn unexpected_len(&self) -> usize {
        self.unexpected.len()
    }

    /// Outstanding posted receives in posting order, for deadlock diagnostics.
    pub fn posted(&self) -> impl Iterator<Item = (CommId, SrcSel, TagSel, &P)> {
        self.posted
            .values()
            .map(|p| (p.comm, p.src, p.tag, &p.payload))
    }

    /// Unexpected messages in arrival order, for deadlock diagnostics.
    pub fn unexpected(&self) -> impl Iterator<Item = (&Envelope, &U)> {
        self.unexpected.values().map(|(e, u)| (e, u))
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

    fn action() -> impl Strategy<Value = Action> {
        let src_sel = prop_oneof![Just(SrcSel::Any), (0u32..3).prop_map(SrcSel::Rank)];
        let tag_sel = prop_oneof![Just(TagSel::Any), (-2i32..3).prop_map(TagSel::Tag)];
        prop_oneof![
            (0u32..2, src_sel, tag_sel).prop_map(|(c, s, t)| Action::Post(c, s, t)),
            (0u32..2, 0u32..3, -2i32..3).prop_map(|(comm, src, tag)| Action::Arrive(Envelope {
                comm,
                src,
                tag
            })),
        ]
    }

    proptest! {
        #[test]
        fn matches_the_linear_scan_reference(actions in prop::collection::vec(action(), 0..200)) {
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
            }
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
