//! Communicator resolution. Traces record `MPI_Comm_split` per rank (parent handle, color, key,
//! new handle); the simulator wants global communicators with their members. The k-th split on
//! a given parent communicator is the same collective call on every member, so a pre-pass over
//! all ranks groups the contributions by (parent, k, color) and orders each group by (key, rank
//! in parent) as MPI does. Communicators a trace defines up front (OTF2) are grouped by the
//! trace's own id. Per rank, the pre-pass remembers which global id each of its splits
//! produced, so the streaming pass only replays that list (memory: one entry per split).

use std::collections::BTreeMap;

use tracewatt_workload::{CommId, Rank, WORLD};

#[derive(Debug, Clone, Default)]
pub(crate) struct CommTable {
    /// Members (world ranks, comm-rank order) per global id; index 0 is world.
    pub members: Vec<Vec<Rank>>,
    /// Per world rank, the global id produced by each of its splits, in call order.
    pub assign: Vec<Vec<Option<CommId>>>,
}

impl CommTable {
    pub fn size(&self, comm: CommId) -> Option<u32> {
        self.members.get(comm as usize).map(|m| m.len() as u32)
    }
    /// `world`'s rank in `comm`.
    pub fn rank_in(&self, comm: CommId, world: Rank) -> Option<Rank> {
        if comm == WORLD {
            return Some(world);
        }
        self.members
            .get(comm as usize)?
            .iter()
            .position(|&m| m == world)
            .map(|p| p as Rank)
    }
}

/// How the op builder learns what a split produced: recorded during the pre-pass, replayed
/// afterwards.
pub(crate) trait CommHook {
    /// The `k`-th split of world rank `rank` (on resolved parent `parent`, if resolvable).
    fn split(
        &mut self,
        rank: Rank,
        k: usize,
        parent: Option<CommId>,
        color: i32,
        key: i32,
    ) -> Option<CommId>;
    /// The `k`-th split/create of world rank `rank`: `MPI_Comm_create` with the group's members
    /// (world ranks, in group order).
    fn create(
        &mut self,
        rank: Rank,
        k: usize,
        parent: Option<CommId>,
        members: Option<&[Rank]>,
    ) -> Option<CommId>;
    /// The `k`-th split/create/define of world rank `rank`: a communicator the trace defines
    /// by `key` (the same on every member) and members (world ranks, comm-rank order).
    fn define(&mut self, rank: Rank, k: usize, key: u32, members: &[Rank]) -> Option<CommId>;
    fn table(&self) -> Option<&CommTable>;
}

/// A group passed to an `MPI_Comm_create`: its members, how many ranks passed it, and one of
/// them (world rank, its creation index).
#[derive(Debug)]
struct Passed {
    members: Vec<Rank>,
    count: u32,
    rank: Rank,
    k: usize,
}

/// Pre-pass: collects the contributions.
#[derive(Debug)]
pub(crate) struct Resolver {
    n: u32,
    seq: BTreeMap<(Rank, CommId), u32>,
    groups: BTreeMap<(CommId, u32, i32), CommId>,
    created: BTreeMap<(CommId, u32, Vec<Rank>), CommId>,
    /// Per `MPI_Comm_create` (parent, k-th on it): the distinct groups passed. MPI wants one.
    groups_passed: BTreeMap<(CommId, u32), Vec<Passed>>,
    defined: BTreeMap<u32, CommId>,
    /// Per new comm (gid - 1): parent and (key, world rank) contributions.
    pending: Vec<(CommId, Vec<(i32, Rank)>)>,
    assign: Vec<Vec<Option<CommId>>>,
}

impl Resolver {
    pub fn new(n: u32) -> Self {
        Resolver {
            n,
            seq: BTreeMap::new(),
            groups: BTreeMap::new(),
            created: BTreeMap::new(),
            groups_passed: BTreeMap::new(),
            defined: BTreeMap::new(),
            pending: Vec::new(),
            assign: vec![Vec::new(); n as usize],
        }
    }

    /// A `MPI_Comm_create` whose callers passed different groups: the rank and creation index
    /// of one that passed the least common group, and what was expected.
    pub fn disagreement(&self) -> Option<(Rank, usize, String)> {
        self.groups_passed.values().find_map(|passed| {
            let most = passed.iter().max_by_key(|g| g.count)?;
            let odd = passed
                .iter()
                .min_by_key(|g| g.count)
                .filter(|_| passed.len() > 1)?;
            Some((
                odd.rank,
                odd.k,
                format!(
                    "comm_create: the group the other ranks passed ({:?}, world ranks), got {:?}",
                    most.members, odd.members
                ),
            ))
        })
    }

    pub fn finish(self) -> CommTable {
        let mut members: Vec<Vec<Rank>> = vec![(0..self.n).collect()];
        for (parent, mut entries) in self.pending {
            // Parents always have a smaller id, so their members are final here.
            let pm = members.get(parent as usize).cloned().unwrap_or_default();
            let prank = |w: Rank| pm.iter().position(|&m| m == w).unwrap_or(usize::MAX);
            entries.sort_by_key(|&(key, w)| (key, prank(w), w));
            members.push(entries.into_iter().map(|(_, w)| w).collect());
        }
        CommTable {
            members,
            assign: self.assign,
        }
    }
}

impl CommHook for Resolver {
    fn split(
        &mut self,
        rank: Rank,
        k: usize,
        parent: Option<CommId>,
        color: i32,
        key: i32,
    ) -> Option<CommId> {
        let result = parent.and_then(|parent| {
            let seq = self.seq.entry((rank, parent)).or_insert(0);
            let s = *seq;
            *seq += 1;
            if color < 0 {
                return None;
            }
            let next = self.pending.len() as CommId + 1;
            let gid = *self.groups.entry((parent, s, color)).or_insert(next);
            if gid == next {
                self.pending.push((parent, Vec::new()));
            }
            if let Some(p) = self.pending.get_mut(gid as usize - 1) {
                p.1.push((key, rank));
            }
            Some(gid)
        });
        if let Some(a) = self.assign.get_mut(rank as usize) {
            debug_assert_eq!(a.len(), k);
            a.push(result);
        }
        result
    }
    fn create(
        &mut self,
        rank: Rank,
        k: usize,
        parent: Option<CommId>,
        members: Option<&[Rank]>,
    ) -> Option<CommId> {
        let result = parent.and_then(|parent| {
            let seq = self.seq.entry((rank, parent)).or_insert(0);
            let s = *seq;
            *seq += 1;
            let members = members?;
            let passed = self.groups_passed.entry((parent, s)).or_default();
            match passed.iter_mut().find(|g| g.members == members) {
                Some(g) => g.count += 1,
                None => passed.push(Passed {
                    members: members.to_vec(),
                    count: 1,
                    rank,
                    k,
                }),
            }
            let pos = members.iter().position(|&m| m == rank)?;
            let next = self.pending.len() as CommId + 1;
            let gid = *self
                .created
                .entry((parent, s, members.to_vec()))
                .or_insert(next);
            if gid == next {
                self.pending.push((parent, Vec::new()));
            }
            if let Some(p) = self.pending.get_mut(gid as usize - 1) {
                p.1.push((pos as i32, rank));
            }
            Some(gid)
        });
        if let Some(a) = self.assign.get_mut(rank as usize) {
            debug_assert_eq!(a.len(), k);
            a.push(result);
        }
        result
    }
    fn define(&mut self, rank: Rank, k: usize, key: u32, members: &[Rank]) -> Option<CommId> {
        let result = members.iter().position(|&m| m == rank).map(|pos| {
            let next = self.pending.len() as CommId + 1;
            let gid = *self.defined.entry(key).or_insert(next);
            if gid == next {
                self.pending.push((WORLD, Vec::new()));
            }
            if let Some(p) = self.pending.get_mut(gid as usize - 1) {
                p.1.push((pos as i32, rank));
            }
            gid
        });
        if let Some(a) = self.assign.get_mut(rank as usize) {
            debug_assert_eq!(a.len(), k);
            a.push(result);
        }
        result
    }
    fn table(&self) -> Option<&CommTable> {
        None
    }
}

/// Streaming pass: replays the pre-pass.
#[derive(Debug)]
pub(crate) struct Replay<'a>(pub &'a CommTable);

impl CommHook for Replay<'_> {
    fn split(&mut self, rank: Rank, k: usize, _: Option<CommId>, _: i32, _: i32) -> Option<CommId> {
        self.0
            .assign
            .get(rank as usize)
            .and_then(|a| a.get(k).copied().flatten())
    }
    fn create(
        &mut self,
        rank: Rank,
        k: usize,
        _: Option<CommId>,
        _: Option<&[Rank]>,
    ) -> Option<CommId> {
        self.split(rank, k, None, 0, 0)
    }
    fn define(&mut self, rank: Rank, k: usize, _: u32, _: &[Rank]) -> Option<CommId> {
        self.split(rank, k, None, 0, 0)
    }
    fn table(&self) -> Option<&CommTable> {
        Some(self.0)
    }
}
