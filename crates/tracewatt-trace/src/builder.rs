//! Calls -> ops: the part every format shares. Computes the compute gaps from timestamps, maps
//! trace request handles to `ReqId`s, trace communicator handles to global communicators, and
//! turns each call into the simulator's ops.
//!
//! Approximations (documented in the crate README):
//! - `Waitany`/`Testany` wait for the request the trace says completed; `Waitsome`/`Testsome`
//!   wait for the ones it lists; a `Test*` that failed produces nothing, one that succeeded is a
//!   wait. The simulated run therefore completes requests in the traced order.
//! - Requests never completed in the trace (freed, or still pending) are waited for at
//!   `Finalize` (or at the end of the stream), so the simulated rank drains them.
//! - Gatherv, scatterv and allgatherv become `Alltoallv` with the exact per-pair sizes (the
//!   direct algorithm); reduce_scatter with unequal counts uses the mean block.
//! - Calls on MPI_COMM_SELF are local (collectives) or unsupported (point-to-point).
//! - A request the trace cancelled is never posted: the pre-pass finds the cancelled ones
//!   ([`OpBuilder::cancelled`]) and later passes drop the call that posted each
//!   ([`OpBuilder::dropping`]), so a cancelled receive matches no message and its completion
//!   completes nothing. A cancel that failed changes nothing (the request completed as usual).
//!   A cancel whose outcome the trace does not give counts as successful for a receive (an
//!   application cancels a receive it no longer expects to be matched) and failed for a send
//!   (MPI deprecates cancelling sends, and Open MPI never cancels one).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use tracewatt_core::time;

use tracewatt_workload::{CollAlgo, CollKind, CommId, Op, Rank, ReqId, SrcSel, TagSel, WORLD};

use crate::call::{
    Call, CallKind, CommHandle, GroupHandle, ReqHandle, VKind, ANY, MADE_UP_REQS, NULL_COMM_HANDLE,
    SELF_HANDLE, WORLD_HANDLE,
};
use crate::comms::CommHook;
use crate::error::{Location, TraceError};
use crate::funcs::Func;
use crate::{ComputeClock, ReadOptions, Window, WindowEdge};

/// Compute periods on one clock: the time from the latest end so far to the next call's start
/// (overlapping or out-of-order calls give none).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Gaps {
    prev_end_ns: Option<u64>,
}

impl Gaps {
    /// The gap before a call spanning `start_ns..end_ns` (0 for the first).
    pub(crate) fn gap_ns(&mut self, start_ns: u64, end_ns: u64) -> u64 {
        let gap = self.prev_end_ns.map_or(0, |p| start_ns.saturating_sub(p));
        self.prev_end_ns = Some(self.prev_end_ns.map_or(end_ns, |p| p.max(end_ns)));
        gap
    }
}

/// Where a trace handle points: a live simulator request, or a request that moves nothing
/// (MPI_PROC_NULL peer, or cancelled).
#[derive(Debug, Clone, Copy)]
enum Slot {
    Live(ReqId, Post),
    Null,
}

/// The call that posted a request: its index in the rank's stream, and whether it receives.
#[derive(Debug, Clone, Copy)]
struct Post {
    call: u64,
    recv: bool,
}

#[derive(Debug)]
pub(crate) struct OpBuilder {
    rank: Rank,
    file: PathBuf,
    compute_scale: f64,
    strict: bool,
    clock: ComputeClock,
    gaps: Gaps,
    comms: BTreeMap<CommHandle, CommId>,
    /// Members (world ranks) of communicators this rank created from groups, so their groups
    /// are known during the pre-pass too.
    created: BTreeMap<CommId, Vec<Rank>>,
    groups: BTreeMap<GroupHandle, Vec<Rank>>,
    num_ranks: u32,
    splits: usize,
    reqs: BTreeMap<ReqHandle, Slot>,
    /// Requests the trace stopped tracking (freed, or handle reused) that the sim must drain.
    detached: Vec<ReqId>,
    free_ids: Vec<ReqId>,
    next_id: ReqId,
    finalized: bool,
    window: Option<WindowState>,
    /// Calls fed so far (the next call's index in the rank's stream).
    fed: u64,
    /// Cancelled requests whose outcome is not known yet: still pending, or completed (the
    /// outcome follows the completing call). `last_completed`: the cancelled one completed last.
    cancelling: BTreeMap<ReqHandle, Post>,
    cancel_completed: BTreeMap<ReqHandle, Post>,
    last_completed: Option<ReqHandle>,
    /// Indices of the calls that posted requests found cancelled (sorted by [`Self::finish`]).
    pub cancelled: Vec<u64>,
    /// Posts to drop (a previous pass's `cancelled`) and the first not yet passed.
    dropped: Vec<u64>,
    next_drop: usize,
    pub out: VecDeque<Op>,
    pub unsupported: BTreeMap<String, u64>,
}

/// A rank's way through the trace's window: marks where it enters and leaves it.
#[derive(Debug)]
struct WindowState {
    spec: Window,
    /// The trace's first call's start, ns (time edges count from it).
    origin_ns: u64,
    from_seen: u32,
    to_seen: u32,
    started: bool,
    stopped: bool,
    /// The stop call came before the start.
    stop_first: bool,
}

impl WindowState {
    fn mark(&mut self, start: bool, out: &mut VecDeque<Op>) {
        if start {
            self.started = true;
        } else {
            self.stopped = true;
        }
        out.push_back(Op::Window { start });
    }

    /// Before a call (and its compute gap): a time stop the call starts after.
    fn before(&mut self, call: &Call, timed: bool, out: &mut VecDeque<Op>) {
        if let WindowEdge::Time { ns } = self.spec.stop {
            let after = timed && call.start_ns > self.origin_ns.saturating_add(ns);
            if after && self.started && !self.stopped {
                self.mark(false, out);
            }
        }
    }

    /// After the call's compute gap, before its ops: the start.
    fn enter(&mut self, call: &Call, timed: bool, out: &mut VecDeque<Op>) {
        if self.started {
            return;
        }
        let now = match self.spec.start {
            WindowEdge::Trace => true,
            WindowEdge::Time { ns } => timed && call.start_ns >= self.origin_ns.saturating_add(ns),
            WindowEdge::Call { func, occurrence } => {
                if call.func == func {
                    self.from_seen += 1;
                }
                call.func == func && self.from_seen == occurrence
            }
        };
        if now {
            self.mark(true, out);
        }
    }

    /// After the call's ops: a call stop.
    fn after(&mut self, func: Func, out: &mut VecDeque<Op>) {
        if let WindowEdge::Call {
            func: f,
            occurrence,
        } = self.spec.stop
        {
            if func == f {
                self.to_seen += 1;
                if self.to_seen == occurrence && !self.stopped {
                    if self.started {
                        self.mark(false, out);
                    } else {
                        self.stop_first = true;
                    }
                }
            }
        }
    }
}

impl OpBuilder {
    pub fn new(rank: Rank, num_ranks: u32, file: PathBuf, opts: &ReadOptions) -> Self {
        let mut comms = BTreeMap::new();
        comms.insert(WORLD_HANDLE, WORLD);
        OpBuilder {
            rank,
            file,
            compute_scale: opts.compute_scale,
            strict: opts.strict,
            clock: opts.compute_clock,
            gaps: Gaps::default(),
            comms,
            created: BTreeMap::new(),
            groups: BTreeMap::new(),
            num_ranks,
            splits: 0,
            reqs: BTreeMap::new(),
            detached: Vec::new(),
            free_ids: Vec::new(),
            next_id: 0,
            finalized: false,
            window: None,
            fed: 0,
            cancelling: BTreeMap::new(),
            cancel_completed: BTreeMap::new(),
            last_completed: None,
            cancelled: Vec::new(),
            dropped: Vec::new(),
            next_drop: 0,
            out: VecDeque::new(),
            unsupported: BTreeMap::new(),
        }
    }

    /// Marks `window` in the ops; time edges count from `origin_ns`.
    pub fn windowed(mut self, window: Window, origin_ns: u64) -> Self {
        self.window = Some(WindowState {
            spec: window,
            origin_ns,
            from_seen: 0,
            to_seen: 0,
            started: false,
            stopped: false,
            stop_first: false,
        });
        self
    }

    /// Drops the posts of the requests a previous pass found cancelled (its `cancelled`).
    pub fn dropping(mut self, cancelled: &[u64]) -> Self {
        self.dropped = cancelled.to_vec();
        self
    }

    /// Whether the call being fed posts a request the trace cancelled.
    fn cancelled_post(&mut self) -> bool {
        let at = self.fed - 1;
        while self.dropped.get(self.next_drop).is_some_and(|&d| d < at) {
            self.next_drop += 1;
        }
        self.dropped.get(self.next_drop) == Some(&at)
    }

    /// A request left the trace's tracking (completed or freed): a cancel on it now waits for
    /// its outcome; an older cancelled request completed under the same handle gets none.
    fn retire(&mut self, h: ReqHandle) {
        if let Some(p) = self.cancelling.remove(&h) {
            if let Some(old) = self.cancel_completed.insert(h, p) {
                self.resolve(old, None);
            }
            self.last_completed = Some(h);
        }
    }

    /// Records a cancelled request's outcome (`None`: unknown, see the module docs).
    fn resolve(&mut self, p: Post, cancelled: Option<bool>) {
        if cancelled.unwrap_or(p.recv) {
            self.cancelled.push(p.call);
        }
    }

    /// After the whole stream: why the rank's window is not a window (it never starts, or its
    /// stop comes first), if so.
    pub fn window_problem(&self) -> Option<String> {
        let w = self.window.as_ref()?;
        let name = |f: Func| crate::funcs::func_name(f);
        let edge = |e: WindowEdge| match e {
            WindowEdge::Trace => "the trace's start".to_string(),
            WindowEdge::Time { ns } => format!("a call at or after {} s", ns as f64 / 1e9),
            WindowEdge::Call { func, occurrence } => {
                format!(
                    "call {occurrence} of `{}` (it makes {})",
                    name(func),
                    w.from_seen
                )
            }
        };
        if w.stop_first {
            return Some("the window's stop (`to`) comes before its start (`from`)".into());
        }
        if !w.started {
            return Some(format!(
                "the window's start never comes: {}",
                edge(w.spec.start)
            ));
        }
        if let WindowEdge::Call { func, occurrence } = w.spec.stop {
            if !w.stopped {
                return Some(format!(
                    "the window's stop never comes: call {occurrence} of `{}` (it makes {})",
                    name(func),
                    w.to_seen
                ));
            }
        }
        None
    }

    fn unsupported(&mut self, name: &str) -> Result<(), TraceError> {
        *self.unsupported.entry(name.to_string()).or_insert(0) += 1;
        if self.strict {
            return Err(TraceError::Unsupported {
                at: Location {
                    file: self.file.clone(),
                    rank: Some(self.rank),
                    ..Default::default()
                },
                call: name.to_string(),
            });
        }
        Ok(())
    }

    /// A compute period of `ps` picoseconds (already scaled), checked as every configured time
    /// is: a large `compute_scale` (or a small SimGrid `flops_per_s`) must not wrap the clock.
    fn compute(&mut self, ps: f64) -> Result<(), TraceError> {
        if ps < 1.0 {
            return Ok(()); // shorter than the clock's resolution
        }
        let ps = time::duration(ps, time::PS).map_err(|e| TraceError::Time {
            at: Location {
                file: self.file.clone(),
                rank: Some(self.rank),
                ..Default::default()
            },
            what: format!("a compute period (the trace's time x compute_scale) {e}"),
        })?;
        self.out.push_back(Op::Compute { ps });
        Ok(())
    }

    fn alloc(&mut self) -> ReqId {
        if let Some(id) = self.free_ids.pop() {
            return id;
        }
        let id = self.next_id;
        // Stays far below RESERVED_REQ_BASE: ids are recycled once waited.
        self.next_id = self.next_id.saturating_add(1);
        id
    }

    fn bind(&mut self, h: ReqHandle, slot: Slot) {
        self.retire(h);
        if let Some(Slot::Live(old, _)) = self.reqs.insert(h, slot) {
            self.detached.push(old);
        }
    }

    /// Completes trace requests; returns the live ids to wait for.
    fn complete(&mut self, hs: &[ReqHandle]) -> Vec<ReqId> {
        let mut ids = Vec::new();
        for h in hs {
            self.retire(*h);
            if let Some(Slot::Live(id, _)) = self.reqs.remove(h) {
                ids.push(id);
            }
        }
        ids
    }

    fn wait_ids(&mut self, ids: Vec<ReqId>) {
        match ids.len() {
            0 => {}
            1 => self.out.push_back(Op::Wait { req: ids[0] }),
            _ => self.out.push_back(Op::Waitall {
                reqs: ids.clone().into_boxed_slice(),
            }),
        }
        self.free_ids.extend(ids);
    }

    fn comm(&self, h: CommHandle) -> Option<CommId> {
        self.comms.get(&h).copied()
    }

    /// Requests still pending that the trace itself made (not freed, not made up by a reader
    /// for a call recorded without one: handles from `u64::MAX` down).
    pub(crate) fn pending_requests(&self) -> usize {
        self.reqs
            .iter()
            .filter(|(&h, s)| matches!(s, Slot::Live(..)) && h < MADE_UP_REQS)
            .count()
    }

    /// Whether the rank called `MPI_Finalize` (calls after it are ignored).
    pub(crate) fn is_finalized(&self) -> bool {
        self.finalized
    }

    /// Whether `h` names a communicator this rank has (world, self, or one it created).
    pub(crate) fn knows_comm(&self, h: CommHandle) -> bool {
        h == SELF_HANDLE || self.comms.contains_key(&h)
    }

    /// Waits for everything still outstanding (see module docs) and settles the cancels whose
    /// outcome never came.
    pub fn finish(&mut self) {
        let unsettled = std::mem::take(&mut self.cancelling);
        let completed = std::mem::take(&mut self.cancel_completed);
        for p in unsettled.into_values().chain(completed.into_values()) {
            self.resolve(p, None);
        }
        self.cancelled.sort_unstable();
        let mut ids = std::mem::take(&mut self.detached);
        let live: Vec<ReqId> = std::mem::take(&mut self.reqs)
            .into_values()
            .filter_map(|s| match s {
                Slot::Live(id, _) => Some(id),
                Slot::Null => None,
            })
            .collect();
        ids.extend(live);
        ids.sort_unstable();
        self.wait_ids(ids);
    }

    pub fn feed(&mut self, call: Call, hook: &mut dyn CommHook) -> Result<(), TraceError> {
        self.fed += 1;
        let timed = call.start_ns != 0 || call.end_ns != 0;
        let span = match (self.clock, call.cpu_ns) {
            (ComputeClock::Wall, _) => timed.then_some((call.start_ns, call.end_ns)),
            (ComputeClock::Cpu, Some(cpu)) => Some(cpu),
            (ComputeClock::Cpu, None) if timed => {
                return Err(TraceError::format(
                    Location {
                        file: self.file.clone(),
                        rank: Some(self.rank),
                        ..Default::default()
                    },
                    "CPU times on every call for compute_clock = \"cpu\" (this trace records \
                     wall-clock times only; use compute_clock = \"wall\")",
                ))
            }
            (ComputeClock::Cpu, None) => None,
        };
        if let Some(w) = &mut self.window {
            w.before(&call, timed, &mut self.out);
        }
        if let Some((start, end)) = span {
            let gap = self.gaps.gap_ns(start, end);
            if gap > 0 {
                self.compute(gap as f64 * 1000.0 * self.compute_scale)?;
            }
        }
        if let Some(w) = &mut self.window {
            w.enter(&call, timed, &mut self.out);
        }
        let func = call.func;
        self.ops_of(call, hook)?;
        if let Some(w) = &mut self.window {
            w.after(func, &mut self.out);
        }
        Ok(())
    }

    /// The ops of one call (after its compute gap).
    fn ops_of(&mut self, call: Call, hook: &mut dyn CommHook) -> Result<(), TraceError> {
        if self.finalized {
            // MPI allows nothing after Finalize but a few queries; traces of finalize hooks
            // sometimes show more. Ignore rather than simulate on a finished rank.
            return Ok(());
        }
        let name = crate::funcs::func_name(call.func);
        match call.kind {
            CallKind::Local | CallKind::Init => {}
            CallKind::Unsupported { name } => self.unsupported(&name)?,
            CallKind::Compute { ps, .. } => self.compute(ps as f64 * self.compute_scale)?,
            CallKind::Finalize => {
                self.finish();
                self.finalized = true;
            }
            CallKind::Send {
                comm,
                peer,
                tag,
                bytes,
            } => self.send(name, comm, peer, tag, bytes, None)?,
            CallKind::Isend {
                comm,
                peer,
                tag,
                bytes,
                req,
            } => self.send(name, comm, peer, tag, bytes, Some(req))?,
            CallKind::Recv {
                comm,
                peer,
                tag,
                bytes,
            } => self.recv(name, comm, peer, tag, bytes, None)?,
            CallKind::Irecv {
                comm,
                peer,
                tag,
                bytes,
                req,
            } => self.recv(name, comm, peer, tag, bytes, Some(req))?,
            CallKind::Sendrecv {
                comm,
                dst,
                send_tag,
                send_bytes,
                src,
                recv_tag,
                recv_bytes,
            } => self.sendrecv(
                name,
                comm,
                (dst, send_tag, send_bytes),
                (src, recv_tag, recv_bytes),
            )?,
            CallKind::Wait { req } | CallKind::Test { req, flag: true } => self.wait_for(&[req]),
            CallKind::Waitall { reqs } | CallKind::Testall { reqs, flag: true } => {
                self.wait_for(&reqs)
            }
            CallKind::Waitany { reqs, index }
            | CallKind::Testany {
                reqs,
                index,
                flag: true,
            } => self.wait_for(&picked(&reqs, &[index])),
            CallKind::Waitsome { reqs, indices } | CallKind::Testsome { reqs, indices } => {
                self.wait_for(&picked(&reqs, &indices))
            }
            // A test that found nothing complete completes nothing.
            CallKind::Test { .. } | CallKind::Testall { .. } | CallKind::Testany { .. } => {}
            CallKind::RequestFree { req } => self.request_free(req),
            CallKind::Cancel { req } => self.cancel(req),
            CallKind::CancelOutcome { req, cancelled } => self.cancel_outcome(req, cancelled),
            CallKind::Coll {
                comm,
                kind,
                root,
                bytes,
            } => self.collective(name, (comm, kind, root, bytes), None)?,
            CallKind::Icoll {
                comm,
                kind,
                root,
                bytes,
                req,
            } => self.collective(name, (comm, kind, root, bytes), Some(req))?,
            CallKind::VColl {
                comm,
                kind,
                root,
                send,
                recv,
            } => self.v_collective(name, comm, kind, root, (send, recv), hook)?,
            CallKind::CommSplit {
                parent,
                color,
                key,
                new,
            } => self.comm_split(name, parent, (color, key), new, hook)?,
            CallKind::CommCreate { parent, group, new } => {
                self.comm_create(name, parent, group, new, hook)?
            }
            CallKind::CommDefine { new, members } => self.comm_define(new, members, hook),
            CallKind::CommFree { comm } => self.comm_free(comm),
            CallKind::GroupFromComm { comm, group } => self.group_from_comm(comm, group, hook),
            CallKind::GroupSelect {
                group,
                ranks,
                exclude,
                new,
            } => self.group_select(group, &ranks, exclude, new),
            CallKind::GroupFree { group } => self.set_group(group, None),
        }
        Ok(())
    }

    // ---- point-to-point ----

    /// A send, or with the trace's request handle `req` an isend (a cancelled one is dropped).
    fn send(
        &mut self,
        name: &str,
        comm: CommHandle,
        peer: i32,
        tag: i32,
        bytes: u64,
        req: Option<ReqHandle>,
    ) -> Result<(), TraceError> {
        if peer < 0 || (req.is_some() && self.cancelled_post()) {
            self.bind_null(req);
            return Ok(()); // MPI_PROC_NULL, or a cancelled isend
        }
        let (Some(comm), true) = (self.comm(comm), tag >= 0) else {
            self.bind_null(req);
            return self.unsupported(&format!("{name} (unknown communicator or negative tag)"));
        };
        let dst = peer as Rank;
        let op = match req {
            None => Op::Send {
                comm,
                dst,
                tag,
                bytes,
            },
            Some(h) => Op::Isend {
                comm,
                dst,
                tag,
                bytes,
                req: self.post(h, false),
            },
        };
        self.out.push_back(op);
        Ok(())
    }

    /// A receive, or with the trace's request handle `req` an irecv (a cancelled one is
    /// dropped).
    fn recv(
        &mut self,
        name: &str,
        comm: CommHandle,
        peer: i32,
        tag: i32,
        bytes: u64,
        req: Option<ReqHandle>,
    ) -> Result<(), TraceError> {
        if peer < ANY || (req.is_some() && self.cancelled_post()) {
            self.bind_null(req);
            return Ok(()); // MPI_PROC_NULL, or a cancelled irecv
        }
        let Some(comm) = self.comm(comm) else {
            self.bind_null(req);
            return self.unsupported(&format!("{name} (unknown communicator)"));
        };
        let (src, tag) = (src_sel(peer), tag_sel(tag));
        let op = match req {
            None => Op::Recv {
                comm,
                src,
                tag,
                bytes,
            },
            Some(h) => Op::Irecv {
                comm,
                src,
                tag,
                bytes,
                req: self.post(h, true),
            },
        };
        self.out.push_back(op);
        Ok(())
    }

    /// A sendrecv: an irecv and an isend, then a wait for both. `to` and `from`: peer, tag and
    /// bytes of the send and of the receive.
    fn sendrecv(
        &mut self,
        name: &str,
        comm: CommHandle,
        to: (i32, i32, u64),
        from: (i32, i32, u64),
    ) -> Result<(), TraceError> {
        let Some(c) = self.comm(comm) else {
            return self.unsupported(&format!("{name} (unknown communicator)"));
        };
        let ((dst, send_tag, send_bytes), (src, recv_tag, recv_bytes)) = (to, from);
        let mut ids = Vec::new();
        if src >= ANY {
            let id = self.alloc();
            ids.push(id);
            self.out.push_back(Op::Irecv {
                comm: c,
                src: src_sel(src),
                tag: tag_sel(recv_tag),
                bytes: recv_bytes,
                req: id,
            });
        }
        if dst >= 0 && send_tag >= 0 {
            let id = self.alloc();
            ids.push(id);
            self.out.push_back(Op::Isend {
                comm: c,
                dst: dst as Rank,
                tag: send_tag,
                bytes: send_bytes,
                req: id,
            });
        }
        self.wait_ids(ids);
        Ok(())
    }

    /// Binds the request handle of a call that posts nothing (if it has one).
    fn bind_null(&mut self, req: Option<ReqHandle>) {
        if let Some(h) = req {
            self.bind(h, Slot::Null);
        }
    }

    /// A new live request for the trace's handle `h`, posted by the call being fed.
    fn post(&mut self, h: ReqHandle, recv: bool) -> ReqId {
        let id = self.alloc();
        let post = Post {
            call: self.fed - 1,
            recv,
        };
        self.bind(h, Slot::Live(id, post));
        id
    }

    // ---- completion and cancelling ----

    /// Completes the trace's requests `hs` and waits for the live ones.
    fn wait_for(&mut self, hs: &[ReqHandle]) {
        let ids = self.complete(hs);
        self.wait_ids(ids);
    }

    fn request_free(&mut self, req: ReqHandle) {
        self.retire(req);
        if let Some(Slot::Live(id, _)) = self.reqs.remove(&req) {
            self.detached.push(id);
        }
    }

    fn cancel(&mut self, req: ReqHandle) {
        if let Some(&Slot::Live(_, post)) = self.reqs.get(&req) {
            self.cancelling.insert(req, post);
        }
    }

    fn cancel_outcome(&mut self, req: Option<ReqHandle>, cancelled: bool) {
        let h = req.or(self.last_completed);
        let post = h.and_then(|h| {
            self.cancel_completed
                .remove(&h)
                .or_else(|| self.cancelling.remove(&h))
        });
        if let Some(p) = post {
            self.resolve(p, Some(cancelled));
        }
    }

    // ---- collectives ----

    /// A collective, or with the trace's request handle `req` a non-blocking one.
    fn collective(
        &mut self,
        name: &str,
        (comm, kind, root, bytes): (CommHandle, CollKind, i32, u64),
        req: Option<ReqHandle>,
    ) -> Result<(), TraceError> {
        if comm == SELF_HANDLE {
            self.bind_null(req);
            return Ok(());
        }
        let Some(c) = self.comm(comm) else {
            self.bind_null(req);
            return self.unsupported(&format!("{name} (unknown communicator)"));
        };
        let rooted = matches!(
            kind,
            CollKind::Bcast | CollKind::Reduce | CollKind::Gather | CollKind::Scatter
        );
        if rooted && root < 0 {
            self.bind_null(req);
            return self.unsupported(&format!("{name} (intercommunicator root)"));
        }
        let root = if rooted { root as Rank } else { 0 };
        let (comm, algo) = (c, CollAlgo::Auto);
        let op = match req {
            None => Op::Collective {
                comm,
                kind,
                root,
                bytes,
                algo,
            },
            Some(h) => Op::Icollective {
                comm,
                kind,
                root,
                bytes,
                algo,
                req: self.post(h, false),
            },
        };
        self.out.push_back(op);
        Ok(())
    }

    /// A collective with per-rank sizes (`send`, `recv` as the trace gives them): an
    /// `Alltoallv` with every pair's size, or a reduce_scatter of the mean block.
    fn v_collective(
        &mut self,
        name: &str,
        comm: CommHandle,
        kind: VKind,
        root: i32,
        (send, recv): (Vec<u64>, Vec<u64>),
        hook: &mut dyn CommHook,
    ) -> Result<(), TraceError> {
        if comm == SELF_HANDLE {
            return Ok(());
        }
        let Some(c) = self.comm(comm) else {
            return self.unsupported(&format!("{name} (unknown communicator)"));
        };
        let Some(table) = hook.table() else {
            return Ok(()); // pre-pass: sizes are not final yet, ops are discarded anyway
        };
        let n = table.size(c).unwrap_or(0) as usize;
        let me = table.rank_in(c, self.rank).unwrap_or(0) as usize;
        let first = |v: &[u64]| v.first().copied().unwrap_or(0);
        let fit = |v: &[u64]| -> Box<[u64]> {
            let mut v = v.to_vec();
            v.resize(n, 0);
            v.into_boxed_slice()
        };
        let root = usize::try_from(root).unwrap_or(usize::MAX);
        let (send_bytes, recv_bytes) = match kind {
            VKind::Alltoallv => (fit(&send), fit(&recv)),
            VKind::Allgatherv => (vec![first(&send); n].into_boxed_slice(), fit(&recv)),
            VKind::Gatherv if root < n => {
                let mut s = vec![0; n];
                s[root] = first(&send);
                let r = if me == root {
                    fit(&recv)
                } else {
                    vec![0; n].into_boxed_slice()
                };
                (s.into_boxed_slice(), r)
            }
            VKind::Scatterv if root < n => {
                let mut r = vec![0; n];
                r[root] = first(&recv);
                let s = if me == root {
                    fit(&send)
                } else {
                    vec![0; n].into_boxed_slice()
                };
                (s, r.into_boxed_slice())
            }
            VKind::ReduceScatter => {
                let total = recv.iter().fold(0u64, |a, b| a.saturating_add(*b));
                let bytes = if recv.is_empty() {
                    0
                } else {
                    total.div_ceil(recv.len() as u64)
                };
                self.out.push_back(Op::Collective {
                    comm: c,
                    kind: CollKind::ReduceScatter,
                    root: 0,
                    bytes,
                    algo: CollAlgo::Auto,
                });
                return Ok(());
            }
            VKind::Gatherv | VKind::Scatterv => {
                return self.unsupported(&format!("{name} (bad root)"));
            }
        };
        self.out.push_back(Op::Alltoallv {
            comm: c,
            send_bytes,
            recv_bytes,
            algo: CollAlgo::Auto,
        });
        Ok(())
    }

    // ---- communicators and groups ----

    /// The index of the rank's next communicator creation (the hook matches them across ranks
    /// by it).
    fn next_creation(&mut self) -> usize {
        let k = self.splits;
        self.splits += 1;
        k
    }

    /// Names the created communicator `gid` by the trace's handle `new`; a creation that made
    /// none (or into MPI_COMM_NULL) forgets the handle instead.
    fn name_comm(&mut self, new: CommHandle, gid: Option<CommId>) -> Option<CommId> {
        match gid {
            Some(g) if new != NULL_COMM_HANDLE => {
                self.comms.insert(new, g);
                Some(g)
            }
            _ => {
                self.comms.remove(&new);
                None
            }
        }
    }

    fn comm_split(
        &mut self,
        name: &str,
        parent: CommHandle,
        (color, key): (i32, i32),
        new: CommHandle,
        hook: &mut dyn CommHook,
    ) -> Result<(), TraceError> {
        let k = self.next_creation();
        let p = self.comm(parent);
        let gid = hook.split(self.rank, k, p, color, key);
        if self.name_comm(new, gid).is_none() && p.is_none() {
            self.unsupported(&format!("{name} (unknown parent communicator)"))?;
        }
        Ok(())
    }

    fn comm_create(
        &mut self,
        name: &str,
        parent: CommHandle,
        group: GroupHandle,
        new: CommHandle,
        hook: &mut dyn CommHook,
    ) -> Result<(), TraceError> {
        let k = self.next_creation();
        let p = self.comm(parent);
        let members = self.groups.get(&group).cloned();
        let gid = hook.create(self.rank, k, p, members.as_deref());
        match self.name_comm(new, gid) {
            Some(g) => {
                if let Some(m) = members {
                    self.created.insert(g, m);
                }
            }
            None if p.is_none() || members.is_none() => {
                self.unsupported(&format!("{name} (unknown parent communicator or group)"))?;
            }
            None => {}
        }
        Ok(())
    }

    fn comm_define(&mut self, new: CommHandle, members: Vec<Rank>, hook: &mut dyn CommHook) {
        let k = self.next_creation();
        let gid = hook.define(self.rank, k, new, &members);
        if let Some(g) = self.name_comm(new, gid) {
            self.created.insert(g, members);
        }
    }

    fn comm_free(&mut self, comm: CommHandle) {
        if comm != WORLD_HANDLE {
            self.comms.remove(&comm);
        }
    }

    /// Names `members` (or forgets the handle, if `None`) as the trace's group `h`.
    fn set_group(&mut self, h: GroupHandle, members: Option<Vec<Rank>>) {
        match members {
            Some(m) => {
                self.groups.insert(h, m);
            }
            None => {
                self.groups.remove(&h);
            }
        }
    }

    fn group_from_comm(&mut self, comm: CommHandle, group: GroupHandle, hook: &mut dyn CommHook) {
        let members = match self.comm(comm) {
            Some(WORLD) => Some((0..self.num_ranks).collect()),
            Some(c) => self.created.get(&c).cloned().or_else(|| {
                hook.table()
                    .and_then(|t| t.members.get(c as usize).cloned())
            }),
            None => None,
        };
        self.set_group(group, members);
    }

    /// `MPI_Group_incl` (`exclude` false) or `MPI_Group_excl`: the group `new` of the listed
    /// positions of `group`, or of all others.
    fn group_select(&mut self, group: GroupHandle, ranks: &[i32], exclude: bool, new: GroupHandle) {
        let sel = self.groups.get(&group).and_then(|g| {
            if exclude {
                let out: Vec<Rank> = g
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !ranks.contains(&(*i as i32)))
                    .map(|(_, &w)| w)
                    .collect();
                Some(out)
            } else {
                ranks
                    .iter()
                    .map(|&i| usize::try_from(i).ok().and_then(|i| g.get(i)).copied())
                    .collect()
            }
        });
        self.set_group(new, sel);
    }
}

/// The handles a `*any`/`*some` call says completed: `reqs` at `indices` (out-of-range and
/// negative indices name none).
fn picked(reqs: &[ReqHandle], indices: &[i32]) -> Vec<ReqHandle> {
    indices
        .iter()
        .filter_map(|&i| usize::try_from(i).ok().and_then(|i| reqs.get(i)).copied())
        .collect()
}

fn src_sel(peer: i32) -> SrcSel {
    if peer < 0 {
        SrcSel::Any
    } else {
        SrcSel::Rank(peer as Rank)
    }
}

fn tag_sel(tag: i32) -> TagSel {
    if tag < 0 {
        TagSel::Any
    } else {
        TagSel::Tag(tag)
    }
}
