//! The ranks: each executes its program's operations until it blocks, computes or ends, and
//! tells the power models what its core is doing (and, where a link follows them, its MPI calls).

use super::mpi::{BLOCKING_REQ, RANK_OWNED};
use super::{Engine, Ev, RankProgram, RankSummary};
use crate::error::SimError;
use std::collections::VecDeque;
use tracewatt_core::{FlatMap, Ps};
use tracewatt_net::Network;
use tracewatt_net::NodeId;
use tracewatt_power::{Activity, MpiCall};
use tracewatt_workload::collectives::Expansion;
use tracewatt_workload::matching::Matcher;
use tracewatt_workload::op::RESERVED_REQ_BASE;
use tracewatt_workload::{Op, Program, Rank, ReqId, SrcSel};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RankState {
    NotStarted,
    Running,
    Busy,
    /// In a timer sleep (`WaitUntil`): neither computing nor waiting in MPI.
    Sleeping,
    Blocked,
    /// About to continue, held by a power model (a core leaving a low-power wait, DIMMs coming
    /// online); `blocked`: it was waiting in MPI.
    Waking {
        blocked: bool,
    },
    Done,
}

/// A rank's outstanding requests: its program's request id -> request slot.
///
/// A collective's expansion numbers its requests from [`RESERVED_REQ_BASE`] up, restarting in
/// each piece, so those ids index an array: a piece's requests take consecutive entries, a few
/// cache lines filled and emptied in order, where a hash map would scatter them over its
/// buckets (and shift its runs back at each removal). Other ids go to a hash map.
#[derive(Debug, Default)]
pub(super) struct ReqIds {
    /// By `id - RESERVED_REQ_BASE`: the slot, or [`Self::NONE`].
    reserved: Vec<u32>,
    other: FlatMap<ReqId, u32>,
}

impl ReqIds {
    const NONE: u32 = u32::MAX;
    /// Reserved ids this far from the base go to the array; an expansion's piece numbers fewer.
    const SPAN: u32 = 1 << 16;

    fn reserved_index(id: ReqId) -> Option<usize> {
        id.checked_sub(RESERVED_REQ_BASE)
            .filter(|&i| i < Self::SPAN)
            .map(|i| i as usize)
    }

    /// Records request `id` in `slot`; false (and nothing changes) if `id` is outstanding.
    pub fn insert(&mut self, id: ReqId, slot: u32) -> bool {
        debug_assert_ne!(slot, Self::NONE);
        let Some(i) = Self::reserved_index(id) else {
            return self.other.insert(id, slot);
        };
        if i >= self.reserved.len() {
            self.reserved.resize(i + 1, Self::NONE);
        }
        let s = &mut self.reserved[i];
        if *s != Self::NONE {
            return false;
        }
        *s = slot;
        true
    }

    /// Forgets request `id`; its slot, if it was outstanding.
    pub fn remove(&mut self, id: ReqId) -> Option<u32> {
        let Some(i) = Self::reserved_index(id) else {
            return self.other.remove(&id);
        };
        let s = std::mem::replace(self.reserved.get_mut(i)?, Self::NONE);
        (s != Self::NONE).then_some(s)
    }
}

pub(super) struct RankRt {
    pub job: u32,
    pub job_rank: Rank,
    pub node: NodeId,
    program: Program,
    /// Operations queued ahead of the program (the current piece of a collective, implicit
    /// waits).
    pub pending: VecDeque<Op>,
    /// The collective in progress, generated piece by piece into `pending`.
    pub coll: Option<Box<Expansion>>,
    pub state: RankState,
    /// What the rank's core is doing, as power models see it.
    activity: Activity,
    /// Sends not yet complete (a low-power wait would stall them).
    pub open_sends: u32,
    /// Outstanding requests: program id -> request slot.
    pub reqs: ReqIds,
    pub matcher: Matcher<u32, u32>,
    /// Requests being waited for, how many of them have no completion time yet, and the latest
    /// completion time of the others: the wait ends at that time once none remains.
    pub waiting: Vec<u32>,
    pub wait_remaining: u32,
    pub resume_ps: Ps,
    /// When the wait's last request came (a receive's message arrived, a send completed), or
    /// the wait's start if earlier: a receive completes `recv_ps` of processing after that.
    pub ready_ps: Ps,
    pub blocked_since: Ps,
    pub finish_ps: Ps,
    compute_ps: Ps,
    wait_ps: Ps,
    /// Held by a power model outside a wait (a DIMM onlining stall after a compute phase).
    held_ps: Ps,
    pub sends: u64,
    pub bytes_sent: u64,
    /// The operation the rank is blocked in, for deadlock reports.
    pub blocked_in: &'static str,
}

impl std::fmt::Debug for RankRt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankRt")
            .field("job", &self.job)
            .field("job_rank", &self.job_rank)
            .finish()
    }
}

impl RankRt {
    /// A rank that has not started its program.
    pub fn new(p: RankProgram) -> Self {
        Self {
            job: p.job,
            job_rank: p.rank,
            node: p.node,
            program: p.program,
            pending: VecDeque::new(),
            coll: None,
            state: RankState::NotStarted,
            activity: Activity::Idle,
            open_sends: 0,
            reqs: ReqIds::default(),
            matcher: Matcher::new(),
            waiting: Vec::new(),
            wait_remaining: 0,
            resume_ps: 0,
            ready_ps: 0,
            blocked_since: 0,
            finish_ps: 0,
            compute_ps: 0,
            wait_ps: 0,
            held_ps: 0,
            sends: 0,
            bytes_sent: 0,
            blocked_in: "",
        }
    }

    /// What the results report of the rank.
    pub fn summary(&self) -> RankSummary {
        RankSummary {
            job: self.job,
            rank: self.job_rank,
            node: self.node,
            finish_ps: self.finish_ps,
            compute_ps: self.compute_ps,
            wait_ps: self.wait_ps,
            held_ps: self.held_ps,
            sends: self.sends,
            bytes_sent: self.bytes_sent,
        }
    }
}

impl<N: Network> Engine<'_, N> {
    /// The rank continues at `now`: it has started, finished computing or issuing a send, or
    /// its wait is over (accounted, and its requests freed).
    pub(super) fn resume(&mut self, rank: u32, now: Ps) -> Result<(), SimError> {
        let state = self.ranks[rank as usize].state;
        if !matches!(state, RankState::Waking { .. }) && self.observers.power.delays_wakes() {
            let ready = self.ranks[rank as usize].ready_ps.min(now);
            let go_on = self.observers.power.wake_at(rank, ready, now);
            if go_on > now {
                let blocked = state == RankState::Blocked;
                let rr = &mut self.ranks[rank as usize];
                rr.state = RankState::Waking { blocked };
                // A wait's hold is part of the wait (`wait_ps`, counted at its end).
                if !blocked {
                    rr.held_ps += go_on - now;
                }
                self.q.push(go_on, Ev::Wake { rank });
                return Ok(());
            }
        }
        let rr = &mut self.ranks[rank as usize];
        if matches!(
            rr.state,
            RankState::Blocked | RankState::Waking { blocked: true }
        ) {
            rr.wait_ps += now - rr.blocked_since;
            for slot in rr.waiting.drain(..) {
                self.reqs.remove(slot);
            }
        }
        rr.state = RankState::Running;
        self.advance(rank, now)
    }

    /// Executes the rank's operations until it blocks, computes or ends.
    fn advance(&mut self, rank: u32, now: Ps) -> Result<(), SimError> {
        loop {
            let ri = rank as usize;
            let op = match self.ranks[ri].pending.pop_front() {
                Some(op) => op,
                None if self.ranks[ri].coll.is_some() => {
                    self.next_piece(rank);
                    continue;
                }
                None => match self.ranks[ri].program.next() {
                    Some(Ok(op)) => {
                        if self.observers.power.observes_calls() {
                            self.note_call(rank, &op, now);
                        }
                        op
                    }
                    Some(Err(e)) => return Err(SimError::Program(e)),
                    None => {
                        self.finished(rank, now);
                        return Ok(());
                    }
                },
            };
            match op {
                Op::Window { start: true } => self.window.enter(now),
                Op::Window { start: false } => self.window.leave(rank),
                Op::Compute { ps } => {
                    if ps > 0 {
                        let ps = if self.observers.power.stretches_compute() {
                            self.observers.power.compute_ps(rank, now, ps)
                        } else {
                            ps
                        };
                        self.ranks[ri].compute_ps += ps;
                        self.ranks[ri].state = RankState::Busy;
                        self.set_activity(rank, Activity::Compute, now);
                        self.q.push(now + ps, Ev::Wake { rank });
                        return Ok(());
                    }
                }
                Op::WaitUntil { ps } => {
                    let job = self.ranks[ri].job as usize;
                    let at = self.jobs[job].start_ps.saturating_add(ps);
                    if at > now {
                        self.ranks[ri].state = RankState::Sleeping;
                        self.set_activity(rank, Activity::Idle, now);
                        self.q.push(at, Ev::Wake { rank });
                        return Ok(());
                    }
                }
                Op::Send {
                    comm,
                    dst,
                    tag,
                    bytes,
                } => {
                    self.ranks[ri]
                        .pending
                        .push_front(Op::Wait { req: BLOCKING_REQ });
                    if self.isend(rank, comm, dst, tag, bytes, BLOCKING_REQ, now)? {
                        return Ok(());
                    }
                }
                Op::Isend {
                    comm,
                    dst,
                    tag,
                    bytes,
                    req,
                } => {
                    if self.isend(rank, comm, dst, tag, bytes, req, now)? {
                        return Ok(());
                    }
                }
                Op::Recv {
                    comm,
                    src,
                    tag,
                    bytes,
                } => {
                    self.irecv(rank, comm, src, tag, bytes, BLOCKING_REQ, RANK_OWNED, now)?;
                    self.ranks[ri]
                        .pending
                        .push_front(Op::Wait { req: BLOCKING_REQ });
                }
                Op::Irecv {
                    comm,
                    src,
                    tag,
                    bytes,
                    req,
                } => {
                    self.irecv(rank, comm, src, tag, bytes, req, RANK_OWNED, now)?;
                }
                Op::Wait { req } => {
                    if self.wait(rank, std::slice::from_ref(&req), now, "wait") {
                        return Ok(());
                    }
                }
                Op::Waitall { reqs } => {
                    if self.wait(rank, &reqs, now, "waitall") {
                        return Ok(());
                    }
                }
                Op::Collective {
                    comm,
                    kind,
                    root,
                    bytes,
                    algo,
                } => self.start_collective(rank, comm, kind, root, bytes, algo)?,
                Op::Icollective {
                    comm,
                    kind,
                    root,
                    bytes,
                    algo,
                    req,
                } => self.start_icollective(rank, (comm, kind, root, bytes, algo), req, now)?,
                Op::Alltoallv {
                    comm,
                    send_bytes,
                    recv_bytes,
                    algo,
                } => self.start_alltoallv(rank, comm, send_bytes, recv_bytes, algo)?,
            }
        }
    }

    /// The rank's program has ended at `now`.
    fn finished(&mut self, rank: u32, now: Ps) {
        let r = &mut self.ranks[rank as usize];
        r.state = RankState::Done;
        r.finish_ps = now;
        self.done += 1;
        self.window.leave(rank);
        self.set_activity(rank, Activity::Done, now);
        if self.observers.power.observes_calls() {
            self.observers.power.on_done(rank, now);
        }
    }

    /// Tells the links that follow MPI calls what the rank's program does next at `now`: an
    /// MPI call (its kind, peer and size), or leaving MPI to compute or sleep on a timer.
    #[inline(never)]
    fn note_call(&mut self, rank: u32, op: &Op, now: Ps) {
        const NO_PEER: u32 = u32::MAX;
        let peer = |src: &SrcSel| match src {
            SrcSel::Rank(r) => *r,
            SrcSel::Any => NO_PEER,
        };
        // Kinds 0-6 are point-to-point, waits and alltoallv; a collective's is 16 + its
        // kind, a non-blocking one's 32 + its kind.
        let (kind, peer, bytes) = match op {
            Op::Compute { ps: 0 } | Op::Window { .. } => return,
            Op::Compute { .. } | Op::WaitUntil { .. } => {
                self.observers.power.on_leave(rank, now);
                return;
            }
            Op::Send { dst, bytes, .. } => (0, *dst, *bytes),
            Op::Isend { dst, bytes, .. } => (1, *dst, *bytes),
            Op::Recv { src, bytes, .. } => (2, peer(src), *bytes),
            Op::Irecv { src, bytes, .. } => (3, peer(src), *bytes),
            Op::Wait { .. } => (4, NO_PEER, 0),
            Op::Waitall { reqs } => (5, NO_PEER, reqs.len() as u64),
            Op::Collective {
                kind, root, bytes, ..
            } => (16 + *kind as u32, *root, *bytes),
            Op::Icollective {
                kind, root, bytes, ..
            } => (32 + *kind as u32, *root, *bytes),
            Op::Alltoallv { send_bytes, .. } => (6, NO_PEER, send_bytes.iter().sum()),
        };
        self.observers
            .power
            .on_call(rank, MpiCall { kind, peer, bytes }, now);
    }

    /// The rank's core starts `activity` (signalled to the power models that watch ranks).
    #[inline]
    pub(super) fn set_activity(&mut self, rank: u32, activity: Activity, now: Ps) {
        if !self.observers.power.observes_ranks() {
            return;
        }
        let r = &mut self.ranks[rank as usize];
        // Every wait is its own (its spin threshold starts afresh), even right after another.
        if r.activity != activity || matches!(activity, Activity::Wait { .. }) {
            r.activity = activity;
            let node = r.node;
            self.observers.power.on_rank(rank, node, activity, now);
        }
    }

    /// An error in the program of `rank`, naming its job and its rank there.
    pub(super) fn program_error(&self, rank: u32, message: String) -> SimError {
        let r = &self.ranks[rank as usize];
        SimError::Program(tracewatt_workload::ProgramError {
            source_name: format!("{}: job `{}`", self.source, self.jobs[r.job as usize].name),
            rank: r.job_rank,
            offset: None,
            message,
        })
    }
}
