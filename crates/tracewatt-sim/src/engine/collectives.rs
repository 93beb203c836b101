//! Collective operations: a rank's collective is expanded, piece by piece, into the
//! point-to-point operations it runs ahead of its program. A non-blocking collective runs its
//! expansion on its own beside the program (as an MPI library's progress engine would) and
//! completes the request the program waits for.

use std::collections::{BTreeMap, VecDeque};

use super::mpi::RANK_OWNED;
use super::{Engine, Ev};
use crate::error::SimError;
use tracewatt_core::Ps;
use tracewatt_net::Network;
use tracewatt_workload::collectives::Expansion;
use tracewatt_workload::{CollAlgo, CollKind, CommId, Op, Rank, ReqId};

/// Enough phases per piece to amortise the call, few enough that 8,192 ranks in an all-to-all
/// hold only a few MB of operations.
const PIECE_OPS: usize = 64;

/// A non-blocking collective in flight: the rest of its expansion, the requests its current
/// step posted and waits for, and when it may go on.
#[derive(Debug)]
pub(crate) struct Nbc {
    /// The slot of the request it completes (the program's request), which names it.
    pub(super) done: u32,
    expansion: Box<Expansion>,
    pending: VecDeque<Op>,
    /// Requests posted since its last wait; waited for at the next one.
    posted: Vec<u32>,
    /// Requests of its wait not complete yet, and the latest completion time of the others.
    remaining: u32,
    resume_ps: Ps,
    /// When its latest send's overhead ends: its sends leave one after another, as a
    /// blocking collective's do, while the rank's core goes on with its program.
    issued_ps: Ps,
}

/// Every rank's non-blocking collectives in flight, and how many each has started per
/// communicator (their tag lanes).
#[derive(Debug)]
pub(crate) struct Nbcs {
    by_rank: Vec<Vec<Nbc>>,
    started: BTreeMap<(u32, CommId), u64>,
}

impl Nbcs {
    pub(super) fn new(ranks: usize) -> Self {
        Self {
            by_rank: (0..ranks).map(|_| Vec::new()).collect(),
            started: BTreeMap::new(),
        }
    }

    /// Whether the request slot `done` is the one a collective of `rank` in flight completes.
    pub(super) fn completes(&self, rank: u32, done: u32) -> bool {
        self.by_rank[rank as usize].iter().any(|n| n.done == done)
    }
}

/// A collective's communicator, kind, root, size and algorithm, as [`Op::Collective`] has them.
pub(super) type CollSpec = (CommId, CollKind, Rank, u64, CollAlgo);

impl<N: Network> Engine<'_, N> {
    /// Rank `rank`'s part of the collective `spec`.
    fn expansion(&self, rank: u32, spec: CollSpec) -> Result<Expansion, SimError> {
        let (comm, kind, root, bytes, algo) = spec;
        let c = self.comm(rank, comm)?;
        let me = self.comm_rank(rank, c)?;
        Expansion::collective(
            comm,
            kind,
            algo,
            c.members.len() as u32,
            me,
            root,
            bytes,
            self.costs.alltoall_throttle,
        )
        .map(|e| e.with_node_ranks(c.node_ranks))
        .map_err(|e| self.program_error(rank, e.to_string()))
    }

    /// The rank starts a collective (all its members of `comm` do, each on its own).
    pub(super) fn start_collective(
        &mut self,
        rank: u32,
        comm: CommId,
        kind: CollKind,
        root: Rank,
        bytes: u64,
        algo: CollAlgo,
    ) -> Result<(), SimError> {
        let e = self.expansion(rank, (comm, kind, root, bytes, algo))?;
        self.ranks[rank as usize].coll = Some(Box::new(e));
        Ok(())
    }

    /// The rank starts a non-blocking collective completing its request `req`, and goes on.
    pub(super) fn start_icollective(
        &mut self,
        rank: u32,
        spec: CollSpec,
        req: ReqId,
        now: Ps,
    ) -> Result<(), SimError> {
        let seq = self.nbcs.started.entry((rank, spec.0)).or_insert(0);
        let lane = *seq;
        *seq += 1;
        let e = self.expansion(rank, spec)?.nonblocking(lane);
        let done = self.new_req(rank, req, false, 0, RANK_OWNED)?;
        self.nbcs.by_rank[rank as usize].push(Nbc {
            done,
            expansion: Box::new(e),
            pending: VecDeque::new(),
            posted: Vec::new(),
            remaining: 0,
            resume_ps: now,
            issued_ps: now,
        });
        self.progress_nbc(done, now)
    }

    /// The rank starts an all-to-all with its own counts: `send_bytes[i]` to the member `i` of
    /// `comm`, `recv_bytes[i]` from it.
    pub(super) fn start_alltoallv(
        &mut self,
        rank: u32,
        comm: CommId,
        send_bytes: Box<[u64]>,
        recv_bytes: Box<[u64]>,
        algo: CollAlgo,
    ) -> Result<(), SimError> {
        let c = self.comm(rank, comm)?;
        let me = self.comm_rank(rank, c)?;
        let e = Expansion::alltoallv(
            comm,
            algo,
            c.members.len() as u32,
            me,
            send_bytes,
            recv_bytes,
            self.costs.alltoall_throttle,
        )
        .map_err(|e| self.program_error(rank, e.to_string()))?;
        self.ranks[rank as usize].coll = Some(Box::new(e));
        Ok(())
    }

    /// Moves the next piece of the rank's collective into `pending`, or ends the collective.
    pub(super) fn next_piece(&mut self, rank: u32) {
        let r = &mut self.ranks[rank as usize];
        let buf = &mut self.expand_buf;
        buf.clear();
        if r.coll.as_mut().is_some_and(|e| e.fill(buf, PIECE_OPS)) {
            r.pending.extend(buf.drain(..));
        } else {
            r.coll = None;
        }
    }

    /// Where the non-blocking collective `done` is among its rank's, and the rank.
    fn find_nbc(&self, done: u32) -> (u32, usize) {
        let rank = self.reqs[done].rank;
        let at = self.nbcs.by_rank[rank as usize]
            .iter()
            .position(|n| n.done == done)
            .expect("a non-blocking collective in flight");
        (rank, at)
    }

    /// Runs the non-blocking collective `done` at `now` until it waits or ends; at its end it
    /// completes its request.
    pub(super) fn progress_nbc(&mut self, done: u32, now: Ps) -> Result<(), SimError> {
        let (rank, at) = self.find_nbc(done);
        let mut n = self.nbcs.by_rank[rank as usize].swap_remove(at);
        loop {
            let op = match n.pending.pop_front() {
                Some(op) => op,
                None => {
                    let buf = &mut self.expand_buf;
                    buf.clear();
                    if !n.expansion.fill(buf, PIECE_OPS) {
                        return self.finish_at(done, now);
                    }
                    n.pending.extend(buf.drain(..));
                    continue;
                }
            };
            match op {
                Op::Isend {
                    comm,
                    dst,
                    tag,
                    bytes,
                    ..
                } => {
                    // Posted once the previous send's overhead is over.
                    let post = n.issued_ps.max(now);
                    let (msg, req, issue_ps) =
                        self.new_send(rank, (comm, dst, tag, bytes), 0, done, post)?;
                    n.issued_ps = post + issue_ps;
                    self.q.push(n.issued_ps, Ev::Issue { msg, wake: false });
                    n.posted.push(req);
                }
                Op::Irecv {
                    comm,
                    src,
                    tag,
                    bytes,
                    ..
                } => {
                    let req = self.irecv(rank, comm, src, tag, bytes, 0, done, now)?;
                    n.posted.push(req);
                }
                // Every step of an expansion waits for all it posted.
                Op::Waitall { .. } => {
                    n.resume_ps = now;
                    for &slot in &n.posted {
                        let r = &mut self.reqs[slot];
                        if r.done {
                            n.resume_ps = n.resume_ps.max(r.done_ps);
                        } else {
                            r.waited = true;
                            n.remaining += 1;
                        }
                    }
                    if n.remaining > 0 {
                        self.nbcs.by_rank[rank as usize].push(n);
                        return Ok(());
                    }
                    for slot in n.posted.drain(..) {
                        self.reqs.remove(slot);
                    }
                    if n.resume_ps > now {
                        self.q.push(n.resume_ps, Ev::NbcWake { done });
                        self.nbcs.by_rank[rank as usize].push(n);
                        return Ok(());
                    }
                }
                other => {
                    return Err(self.program_error(
                        rank,
                        format!("{other:?} inside a non-blocking collective's expansion"),
                    ))
                }
            }
        }
    }

    /// A request the non-blocking collective `done` waits for completed at `t`: once none is
    /// left, the collective goes on at the latest completion.
    #[inline(never)]
    pub(super) fn nbc_req_done(&mut self, done: u32, t: Ps) -> Result<(), SimError> {
        let (rank, at) = self.find_nbc(done);
        let n = &mut self.nbcs.by_rank[rank as usize][at];
        n.remaining -= 1;
        n.resume_ps = n.resume_ps.max(t);
        if n.remaining > 0 {
            return Ok(());
        }
        let resume = n.resume_ps;
        for slot in std::mem::take(&mut n.posted) {
            self.reqs.remove(slot);
        }
        let now = self.q.now();
        if resume > now {
            self.q.push(resume, Ev::NbcWake { done });
            Ok(())
        } else {
            self.progress_nbc(done, now)
        }
    }
}
