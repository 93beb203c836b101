//! A zero-time symbolic executor for rank programs, shipped as test support: it runs every rank's
//! program together with instant message matching (via [`Matcher`]) and reports deadlocks,
//! unmatched or mismatched messages, and per-pair traffic. Collectives are expanded with
//! [`collectives::expand`](crate::collectives::expand) as the simulator does; a non-blocking
//! collective's expansion runs beside its rank's program, in its own tag lane, and completes
//! its request when done.
//!
//! Sends complete only when matched (rendezvous semantics), the strictest MPI allows: a program
//! that finishes here finishes under any eager limit.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use crate::collectives::{
    expand, expand_alltoallv, CollError, Expansion, DEFAULT_ALLTOALL_THROTTLE,
};
use crate::generators::Workload;
use crate::matching::{Envelope, Matcher};
use crate::op::{CommId, Op, Program, ProgramError, Rank, ReqId, SrcSel, TagSel};

/// Why a set of programs is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    #[error("deadlock: {0}")]
    Deadlock(String),
    #[error("rank {rank}: message of {sent} bytes from world rank {src} matched a receive of {posted} bytes")]
    SizeMismatch {
        rank: Rank,
        src: Rank,
        sent: u64,
        posted: u64,
    },
    #[error("rank {rank}: {what}")]
    BadProgram { rank: Rank, what: String },
    #[error("rank {rank}: {source}")]
    Collective { rank: Rank, source: CollError },
    #[error(transparent)]
    Program(#[from] ProgramError),
    #[error("rank {rank}: data model: {what}")]
    Data { rank: Rank, what: String },
}

/// Observes data movement during a check: the payload a send carries is taken when the send is
/// issued, and applied to the receiver when its wait completes (as MPI buffers behave).
pub trait DataModel {
    type Msg;
    /// World rank `rank` issues its `index`-th send (counting from 0) of `bytes`.
    fn on_send(&mut self, rank: Rank, index: u64, bytes: u64) -> Result<Self::Msg, String>;
    /// The receive of `msg` at world rank `rank` completed in a wait.
    fn on_deliver(&mut self, rank: Rank, msg: Self::Msg) -> Result<(), String>;
}

/// The data model that tracks nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoData;

impl DataModel for NoData {
    type Msg = ();
    fn on_send(&mut self, _: Rank, _: u64, _: u64) -> Result<(), String> {
        Ok(())
    }
    fn on_deliver(&mut self, _: Rank, _: ()) -> Result<(), String> {
        Ok(())
    }
}

/// What a successful check saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Traffic {
    /// (messages, bytes) per (source, destination) world-rank pair.
    pub pairs: BTreeMap<(Rank, Rank), (u64, u64)>,
    /// Bytes received per world rank.
    pub received: Vec<u64>,
    /// Bytes sent per world rank.
    pub sent: Vec<u64>,
    pub messages: u64,
    /// Total compute time over all ranks, in picoseconds.
    pub compute_ps: u128,
}

/// Runs a workload's programs (all ranks) to completion in zero time.
pub fn check_workload(w: &dyn Workload) -> Result<Traffic, CheckError> {
    let n = w.num_ranks();
    let programs = (0..n).map(|r| w.program(r)).collect();
    run(n, &w.comms(), programs, &mut NoData)
}

const INTERNAL: u64 = 1 << 40;

struct Req {
    complete: bool,
    /// For a completed receive: the in-flight message id it took.
    delivered: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Posted {
    req: u64,
    bytes: u64,
}

struct InFlight<M> {
    src_world: usize,
    send_req: u64,
    bytes: u64,
    msg: Option<M>,
}

struct RankState {
    program: Program,
    pending: VecDeque<Op>,
    reqs: BTreeMap<u64, Req>,
    waiting: Option<Vec<u64>>,
    done: bool,
    queued: bool,
    sends: u64,
    next_internal: u64,
    /// The op the rank is blocked in, for diagnostics.
    blocked_in: String,
    /// Non-blocking collectives in flight, in the order started.
    nbcs: Vec<Nbc>,
    /// Non-blocking collectives started so far per communicator (their lanes).
    nbc_seq: BTreeMap<CommId, u64>,
}

/// A non-blocking collective in flight: the rest of its expansion, what it waits for, its
/// requests' keys by the expansion's ids, and the key of the request it completes.
struct Nbc {
    key: u64,
    ops: VecDeque<Op>,
    waiting: Option<Vec<u64>>,
    ids: BTreeMap<ReqId, u64>,
}

struct Engine<'m, D: DataModel> {
    model: &'m mut D,
    members: Vec<Vec<Rank>>,
    local: Vec<BTreeMap<Rank, Rank>>,
    ranks: Vec<RankState>,
    /// Matcher payloads are ids into `flights`.
    matchers: Vec<Matcher<Posted, u64>>,
    flights: BTreeMap<u64, InFlight<D::Msg>>,
    next_flight: u64,
    runnable: VecDeque<usize>,
    traffic: Traffic,
}

fn bad(rank: usize, what: String) -> CheckError {
    CheckError::BadProgram {
        rank: rank as Rank,
        what,
    }
}

/// Runs `programs` (one per world rank) with communicators `comms` (besides world: comm id =
/// index + 1, members as world ranks in comm-rank order).
pub fn run<D: DataModel>(
    num_ranks: u32,
    comms: &[Vec<Rank>],
    programs: Vec<Program>,
    model: &mut D,
) -> Result<Traffic, CheckError> {
    let n = num_ranks as usize;
    if programs.len() != n {
        return Err(bad(
            0,
            format!("{} programs for {} ranks", programs.len(), n),
        ));
    }
    let mut members: Vec<Vec<Rank>> = vec![(0..num_ranks).collect()];
    members.extend(comms.iter().cloned());
    let local = members
        .iter()
        .map(|m| m.iter().enumerate().map(|(i, &w)| (w, i as Rank)).collect())
        .collect();
    let ranks = programs
        .into_iter()
        .map(|program| RankState {
            program,
            pending: VecDeque::new(),
            reqs: BTreeMap::new(),
            waiting: None,
            done: false,
            queued: true,
            sends: 0,
            next_internal: INTERNAL,
            blocked_in: String::new(),
            nbcs: Vec::new(),
            nbc_seq: BTreeMap::new(),
        })
        .collect();
    let mut e = Engine {
        model,
        members,
        local,
        ranks,
        matchers: (0..n).map(|_| Matcher::new()).collect(),
        flights: BTreeMap::new(),
        next_flight: 0,
        runnable: (0..n).collect(),
        traffic: Traffic {
            received: vec![0; n],
            sent: vec![0; n],
            ..Traffic::default()
        },
    };
    while let Some(me) = e.runnable.pop_front() {
        e.ranks[me].queued = false;
        e.step(me)?;
    }
    e.finish()
}

impl<D: DataModel> Engine<'_, D> {
    fn to_world(&self, me: usize, comm: CommId, r: Rank) -> Result<usize, CheckError> {
        self.members
            .get(comm as usize)
            .ok_or_else(|| bad(me, format!("unknown communicator {comm}")))?
            .get(r as usize)
            .map(|&w| w as usize)
            .ok_or_else(|| bad(me, format!("rank {r} outside communicator {comm}")))
    }

    fn my_local(&self, me: usize, comm: CommId) -> Result<Rank, CheckError> {
        self.local
            .get(comm as usize)
            .and_then(|m| m.get(&(me as Rank)).copied())
            .ok_or_else(|| bad(me, format!("not a member of communicator {comm}")))
    }

    fn wake(&mut self, r: usize) {
        if !self.ranks[r].queued && !self.ranks[r].done {
            self.ranks[r].queued = true;
            self.runnable.push_back(r);
        }
    }

    fn new_req(&mut self, me: usize, user: Option<u32>) -> Result<u64, CheckError> {
        let key = match user {
            Some(r) => r as u64,
            None => {
                let k = self.ranks[me].next_internal;
                self.ranks[me].next_internal += 1;
                k
            }
        };
        if self.ranks[me].reqs.contains_key(&key) {
            return Err(bad(me, format!("request {key} reused while outstanding")));
        }
        self.ranks[me].reqs.insert(
            key,
            Req {
                complete: false,
                delivered: None,
            },
        );
        Ok(key)
    }

    /// Completes a matched pair: receive `posted` at `dst` takes in-flight message `fid`.
    fn complete(&mut self, dst: usize, posted: Posted, fid: u64) -> Result<(), CheckError> {
        let f = &self.flights[&fid];
        if f.bytes != posted.bytes {
            return Err(CheckError::SizeMismatch {
                rank: dst as Rank,
                src: f.src_world as Rank,
                sent: f.bytes,
                posted: posted.bytes,
            });
        }
        let (src, send_req, bytes) = (f.src_world, f.send_req, f.bytes);
        if let Some(r) = self.ranks[src].reqs.get_mut(&send_req) {
            r.complete = true;
        }
        if let Some(r) = self.ranks[dst].reqs.get_mut(&posted.req) {
            r.complete = true;
            r.delivered = Some(fid);
        }
        let t = &mut self.traffic;
        let pair = t.pairs.entry((src as Rank, dst as Rank)).or_default();
        pair.0 += 1;
        pair.1 += bytes;
        t.received[dst] += bytes;
        t.sent[src] += bytes;
        t.messages += 1;
        self.wake(src);
        self.wake(dst);
        Ok(())
    }

    /// Whether rank `me`'s requests `keys` are all complete; if so they are retired and what
    /// their receives took delivered.
    fn settled(&mut self, me: usize, keys: &[u64]) -> Result<bool, CheckError> {
        let reqs = &self.ranks[me].reqs;
        if !keys.iter().all(|k| reqs.get(k).is_some_and(|r| r.complete)) {
            return Ok(false);
        }
        for k in keys {
            let Some(req) = self.ranks[me].reqs.remove(k) else {
                continue;
            };
            if let Some(fid) = req.delivered {
                if let Some(msg) = self.flights.remove(&fid).and_then(|f| f.msg) {
                    self.model
                        .on_deliver(me as Rank, msg)
                        .map_err(|what| CheckError::Data {
                            rank: me as Rank,
                            what,
                        })?;
                }
            }
        }
        Ok(true)
    }

    /// Runs rank `me`'s non-blocking collectives until each blocks or ends; an ended one
    /// completes its request.
    fn progress_nbcs(&mut self, me: usize) -> Result<(), CheckError> {
        let mut nbcs = std::mem::take(&mut self.ranks[me].nbcs);
        let mut result = Ok(());
        let mut i = 0;
        while i < nbcs.len() {
            match self.run_nbc(me, &mut nbcs[i]) {
                Ok(true) => {
                    let n = nbcs.remove(i);
                    if let Some(r) = self.ranks[me].reqs.get_mut(&n.key) {
                        r.complete = true;
                    }
                }
                Ok(false) => i += 1,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.ranks[me].nbcs = nbcs;
        result
    }

    /// Runs one non-blocking collective of rank `me` until it blocks (false) or ends (true).
    fn run_nbc(&mut self, me: usize, n: &mut Nbc) -> Result<bool, CheckError> {
        loop {
            if let Some(keys) = n.waiting.take() {
                if !self.settled(me, &keys)? {
                    n.waiting = Some(keys);
                    return Ok(false);
                }
            }
            let Some(op) = n.ops.pop_front() else {
                return Ok(true);
            };
            match op {
                Op::Isend {
                    comm,
                    dst,
                    tag,
                    bytes,
                    req,
                } => {
                    let key = self.isend(me, comm, dst, tag, bytes, None)?;
                    n.ids.insert(req, key);
                }
                Op::Irecv {
                    comm,
                    src,
                    tag,
                    bytes,
                    req,
                } => {
                    let key = self.irecv(me, comm, src, tag, bytes, None)?;
                    n.ids.insert(req, key);
                }
                Op::Waitall { reqs } => {
                    let keys = reqs.iter().filter_map(|r| n.ids.remove(r)).collect();
                    n.waiting = Some(keys);
                }
                other => {
                    return Err(bad(
                        me,
                        format!("{other:?} inside a non-blocking collective's expansion"),
                    ))
                }
            }
        }
    }

    /// Runs rank `me` until it blocks or ends.
    fn step(&mut self, me: usize) -> Result<(), CheckError> {
        self.progress_nbcs(me)?;
        loop {
            if let Some(keys) = self.ranks[me].waiting.take() {
                if !self.settled(me, &keys)? {
                    self.ranks[me].waiting = Some(keys);
                    return Ok(());
                }
            }
            let next = match self.ranks[me].pending.pop_front() {
                Some(op) => Some(op),
                None => self.ranks[me].program.next().transpose()?,
            };
            let Some(op) = next else {
                if !self.ranks[me].reqs.is_empty() {
                    let ids: Vec<_> = self.ranks[me].reqs.keys().take(8).collect();
                    return Err(bad(
                        me,
                        format!("program ended with un-waited requests {ids:?}"),
                    ));
                }
                self.ranks[me].done = true;
                return Ok(());
            };
            self.ranks[me].blocked_in = format!("{op:?}");
            match op {
                Op::Compute { ps } => self.traffic.compute_ps += ps as u128,
                // Zero-time execution: a sleep or a window edge changes no matching.
                Op::WaitUntil { .. } | Op::Window { .. } => {}
                Op::Send {
                    comm,
                    dst,
                    tag,
                    bytes,
                } => {
                    let key = self.isend(me, comm, dst, tag, bytes, None)?;
                    self.ranks[me].waiting = Some(vec![key]);
                }
                Op::Isend {
                    comm,
                    dst,
                    tag,
                    bytes,
                    req,
                } => {
                    self.isend(me, comm, dst, tag, bytes, Some(req))?;
                }
                Op::Recv {
                    comm,
                    src,
                    tag,
                    bytes,
                } => {
                    let key = self.irecv(me, comm, src, tag, bytes, None)?;
                    self.ranks[me].waiting = Some(vec![key]);
                }
                Op::Irecv {
                    comm,
                    src,
                    tag,
                    bytes,
                    req,
                } => {
                    self.irecv(me, comm, src, tag, bytes, Some(req))?;
                }
                Op::Wait { req } => self.wait(me, vec![req as u64])?,
                Op::Waitall { reqs } => self.wait(me, reqs.iter().map(|&r| r as u64).collect())?,
                Op::Collective {
                    comm,
                    kind,
                    root,
                    bytes,
                    algo,
                } => {
                    let size = self.comm_size(me, comm)?;
                    let local = self.my_local(me, comm)?;
                    let mut ops = Vec::new();
                    expand(comm, kind, algo, size, local, root, bytes, &mut ops).map_err(
                        |source| CheckError::Collective {
                            rank: me as Rank,
                            source,
                        },
                    )?;
                    self.inject(me, ops)?;
                }
                Op::Icollective {
                    comm,
                    kind,
                    root,
                    bytes,
                    algo,
                    req,
                } => {
                    let size = self.comm_size(me, comm)?;
                    let local = self.my_local(me, comm)?;
                    let seq = self.ranks[me].nbc_seq.entry(comm).or_insert(0);
                    let lane = *seq;
                    *seq += 1;
                    let mut ops = Vec::new();
                    Expansion::collective(
                        comm,
                        kind,
                        algo,
                        size,
                        local,
                        root,
                        bytes,
                        DEFAULT_ALLTOALL_THROTTLE,
                    )
                    .map_err(|source| CheckError::Collective {
                        rank: me as Rank,
                        source,
                    })?
                    .nonblocking(lane)
                    .fill(&mut ops, usize::MAX);
                    let key = self.new_req(me, Some(req))?;
                    self.ranks[me].nbcs.push(Nbc {
                        key,
                        ops: ops.into(),
                        waiting: None,
                        ids: BTreeMap::new(),
                    });
                    self.progress_nbcs(me)?;
                }
                Op::Alltoallv {
                    comm,
                    send_bytes,
                    recv_bytes,
                    algo,
                } => {
                    let size = self.comm_size(me, comm)?;
                    let local = self.my_local(me, comm)?;
                    let mut ops = Vec::new();
                    expand_alltoallv(comm, algo, size, local, &send_bytes, &recv_bytes, &mut ops)
                        .map_err(|source| CheckError::Collective {
                        rank: me as Rank,
                        source,
                    })?;
                    self.inject(me, ops)?;
                }
            }
        }
    }

    fn comm_size(&self, me: usize, comm: CommId) -> Result<u32, CheckError> {
        self.members
            .get(comm as usize)
            .map(|m| m.len() as u32)
            .ok_or_else(|| bad(me, format!("unknown communicator {comm}")))
    }

    fn inject(&mut self, me: usize, ops: Vec<Op>) -> Result<(), CheckError> {
        if !self.ranks[me].pending.is_empty() {
            return Err(bad(me, "collective inside a collective expansion".into()));
        }
        self.ranks[me].pending.extend(ops);
        Ok(())
    }

    fn wait(&mut self, me: usize, keys: Vec<u64>) -> Result<(), CheckError> {
        if let Some(k) = keys.iter().find(|k| !self.ranks[me].reqs.contains_key(k)) {
            return Err(bad(me, format!("wait on unknown request {k}")));
        }
        self.ranks[me].waiting = Some(keys);
        Ok(())
    }

    fn isend(
        &mut self,
        me: usize,
        comm: CommId,
        dst: Rank,
        tag: crate::op::Tag,
        bytes: u64,
        user: Option<u32>,
    ) -> Result<u64, CheckError> {
        let dst_world = self.to_world(me, comm, dst)?;
        if dst_world == me {
            return Err(bad(me, format!("send to self (comm {comm}, rank {dst})")));
        }
        let src_local = self.my_local(me, comm)?;
        let key = self.new_req(me, user)?;
        let index = self.ranks[me].sends;
        self.ranks[me].sends += 1;
        let msg = self
            .model
            .on_send(me as Rank, index, bytes)
            .map_err(|what| CheckError::Data {
                rank: me as Rank,
                what,
            })?;
        let fid = self.next_flight;
        self.next_flight += 1;
        self.flights.insert(
            fid,
            InFlight {
                src_world: me,
                send_req: key,
                bytes,
                msg: Some(msg),
            },
        );
        let env = Envelope {
            comm,
            src: src_local,
            tag,
        };
        if let Some(posted) = self.matchers[dst_world].arrive(env, fid) {
            self.complete(dst_world, posted, fid)?;
        }
        Ok(key)
    }

    fn irecv(
        &mut self,
        me: usize,
        comm: CommId,
        src: SrcSel,
        tag: TagSel,
        bytes: u64,
        user: Option<u32>,
    ) -> Result<u64, CheckError> {
        if let SrcSel::Rank(r) = src {
            if self.to_world(me, comm, r)? == me {
                return Err(bad(
                    me,
                    format!("receive from self (comm {comm}, rank {r})"),
                ));
            }
        }
        self.my_local(me, comm)?;
        let key = self.new_req(me, user)?;
        if let Some((_, fid)) = self.matchers[me].post(comm, src, tag, Posted { req: key, bytes }) {
            self.complete(me, Posted { req: key, bytes }, fid)?;
        }
        Ok(key)
    }

    fn finish(self) -> Result<Traffic, CheckError> {
        let stuck: Vec<usize> = (0..self.ranks.len())
            .filter(|&r| !self.ranks[r].done)
            .collect();
        if stuck.is_empty() {
            return Ok(self.traffic);
        }
        let mut msg = format!("{} rank(s) cannot finish", stuck.len());
        for &r in stuck.iter().take(8) {
            let _ = write!(msg, "; rank {r} blocked in {}", self.ranks[r].blocked_in);
            let posted: Vec<String> = self.matchers[r]
                .posted()
                .take(4)
                .map(|(c, s, t, p)| format!("recv(comm {c}, {s:?}, {t:?}, {} B)", p.bytes))
                .collect();
            if !posted.is_empty() {
                let _ = write!(msg, " waiting for [{}]", posted.join(", "));
            }
            let unexpected = self.matchers[r].unexpected_len();
            if unexpected > 0 {
                let _ = write!(msg, " with {unexpected} unmatched incoming message(s)");
            }
        }
        Err(CheckError::Deadlock(msg))
    }
}
