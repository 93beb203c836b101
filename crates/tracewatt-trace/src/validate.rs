//! Cross-rank checks, run by [`crate::open`] after the pre-pass has resolved the communicators.
//! Every rank's calls become ops exactly as the replay makes them (the shared [`OpBuilder`]), and
//! the ops of all ranks are checked together, whatever the format:
//!
//! - **Point-to-point**: per communicator, every send matches a receive and every receive a
//!   send, by MPI's rules (source, tag, non-overtaking order, `ANY_SOURCE`/`ANY_TAG`; the
//!   simulator's own [`Matcher`]), and no send is larger than the receive it matches.
//! - **Collectives**: the members of a communicator call the same collectives in the same order,
//!   with the same root and size; for alltoallv what i sends j is no more than what j receives
//!   from i.
//! - **Communicators**: peers and roots inside their communicator, calls only on communicators
//!   the rank made (or after it made one the readers cannot follow), split colors agreeing with
//!   their new handle, trace-defined communicators with the same members on every member.
//! - **Program shape**: every rank calls `MPI_Init`; no request pending at `MPI_Finalize` (or
//!   the end) of a timed trace.
//! - **Time**: a call does not end before it starts nor start before the previous one ended.
//! - **Clocks** (ranks of one host, which read one clock; see [`crate::CallStream::host`]): a message
//!   is not received before it was sent (the send's start is not after the end of the call
//!   that completes its receive: a blocking receive, or the wait or test completing an
//!   irecv), and no member of a blocking collective ends before a member whose data it needs
//!   starts. Clocks of different hosts are not synchronised, so ranks of different or unknown
//!   hosts are not compared. A receive posted after an `ANY_SOURCE` one on its communicator
//!   is not compared either: its match depends on timing the trace does not hold exactly.
//!
//! (`MPI_Comm_create` callers passing one group is checked by the pre-pass's resolver.)
//!
//! Ranks are read together, merged by their calls' start times (one call per rank in turn for
//! traces without times): a wildcard receive then matches the message the traced run most likely
//! matched, and memory holds the messages in flight, not the trace. Every error names the file,
//! rank and byte offset (or line) of the offending call and, for a mismatch, of the other side.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::path::PathBuf;

use tracewatt_workload::matching::{Envelope, Matcher};
use tracewatt_workload::{CollKind, CommId, Op, Rank, ReqId, SrcSel, TagSel, WORLD};

use crate::builder::OpBuilder;
use crate::call::{CommHandle, NULL_COMM_HANDLE};
use crate::comms::{CommTable, Replay};
use crate::error::{Location, TraceError};
use crate::funcs::{self, func_name, Func};
use crate::{Call, CallIter, CallKind, CallSource, Pos, ReadOptions};

/// A call as the checks remember it: who made it, where it is, what it was.
#[derive(Debug, Clone, Copy)]
struct Site {
    rank: Rank,
    pos: Pos,
    func: Func,
}

/// One side of a point-to-point message.
#[derive(Debug, Clone, Copy)]
struct Side {
    site: Site,
    bytes: u64,
    tag: i32,
    clock: Clock,
}

/// A call's times on its host's clock (`host`: an index into the trace's hosts).
#[derive(Debug, Clone, Copy)]
struct HostTime {
    host: u32,
    start_ns: u64,
    end_ns: u64,
}

/// What the clock check knows of one side of a message: a send's start, a blocking receive's
/// end, or the host and request of an irecv (completed by a later wait or test).
#[derive(Debug, Clone, Copy)]
enum Clock {
    Unknown,
    At { host: u32, ns: u64 },
    Request { host: u32, req: ReqId },
}

/// An irecv request under the clock check, until both its message and its completion are
/// known.
#[derive(Debug, Clone, Copy, Default)]
enum Waiting {
    /// Not an irecv under the check (or checked already).
    #[default]
    No,
    Posted,
    /// Matched: the send's start and site.
    Sent(u64, Site),
    /// Completed: the end of the wait or test and its site.
    Done(u64, Site),
}

/// Request ids the clock check follows: the builder's ids are dense from 0 and recycled, so
/// a rank never holds more than this many at once in any trace one could replay.
const MAX_TRACKED_REQ: ReqId = 1 << 20;

/// A member's part in a blocking collective, for the clock check: whether every other member
/// receives its data (`src`), whether it receives every `src` member's data (`dst`).
#[derive(Debug, Clone, Copy)]
struct Role {
    src: bool,
    dst: bool,
}

/// Over a collective's members so far on one host: the latest start of a `src` member and the
/// earliest end of a `dst` member.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    latest_src_start: Option<(u64, Site)>,
    earliest_dst_end: Option<(u64, Site)>,
}

/// What every member of a collective must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sig {
    Coll {
        kind: CollKind,
        root: Rank,
        bytes: u64,
    },
    Alltoallv,
}

/// An alltoallv member's sizes by comm rank: (send, recv).
type Sizes = (Box<[u64]>, Box<[u64]>);

/// The `seq`-th collective on a communicator, while members are still arriving.
#[derive(Debug)]
struct Instance {
    sig: Sig,
    first: Site,
    arrived: u32,
    /// Alltoallv: each member's (send, recv) sizes by comm rank, once arrived.
    vectors: Vec<Option<(Sizes, Site, Option<HostTime>)>>,
    /// The clock check's spans by host.
    spans: BTreeMap<u32, Span>,
}

struct RankState {
    calls: CallIter,
    builder: OpBuilder,
    /// The next call (merged by start time) and its position.
    next: Option<(Call, Pos)>,
    /// Calls taken so far (the merge order of untimed traces).
    taken: u64,
    /// This rank's number in each communicator it used.
    local: BTreeMap<CommId, Rank>,
    /// Whether the rank made communicators the readers cannot follow (a skipped creation):
    /// calls on handles it never created are then expected, else refused.
    opaque_comms: bool,
    /// The rank's first and last MPI calls, whether it called `MPI_Init` (an MPI program
    /// must), and whether its calls are timed.
    first_call: Option<Site>,
    last_call: Option<Site>,
    initialized: bool,
    timed: bool,
    prev_end_ns: Option<u64>,
    /// The rank's host (an index into the trace's hosts), if the trace records it.
    host: Option<u32>,
    /// Communicators on which the rank posted an `ANY_SOURCE` receive.
    wildcard: BTreeSet<CommId>,
}

struct Checker<'a> {
    table: &'a CommTable,
    files: Vec<PathBuf>,
    /// Per world rank (the receiver): posted receives and messages not yet received.
    matchers: Vec<Matcher<Side, Side>>,
    pending: BTreeMap<(CommId, u64), Instance>,
    /// Per world rank and communicator: collectives called, and the last.
    colls: Vec<BTreeMap<CommId, (u64, Site)>>,
    /// The first calls skipped as unsupported (named in mismatch errors: a corrupt field can
    /// make a call unsupported and leave its peers unmatched).
    skipped: Vec<Site>,
    /// Communicators the trace defines (OTF2): the first definition and its members.
    defined: BTreeMap<u32, (Site, Vec<Rank>)>,
    /// Host names by index.
    hosts: Vec<String>,
    /// Per world rank and request id, irecvs under the clock check.
    irecvs: Vec<Vec<Waiting>>,
}

/// How many skipped calls mismatch errors name.
const SKIPPED_NAMED: usize = 3;

/// Checks a trace whose pre-pass resolved `table` and found the `cancelled` posts; see the
/// module docs.
pub(crate) fn check(
    source: &dyn CallSource,
    table: &CommTable,
    opts: &ReadOptions,
    cancelled: &[Vec<u64>],
) -> Result<(), TraceError> {
    let n = source.num_ranks();
    let mut c = Checker {
        table,
        files: (0..n).map(|r| source.rank_file(r)).collect(),
        matchers: (0..n).map(|_| Matcher::new()).collect(),
        pending: BTreeMap::new(),
        colls: vec![BTreeMap::new(); n as usize],
        skipped: Vec::new(),
        defined: BTreeMap::new(),
        hosts: Vec::new(),
        irecvs: vec![Vec::new(); n as usize],
    };
    let mut ranks = Vec::with_capacity(n as usize);
    let mut heap = BinaryHeap::new();
    for rank in 0..n {
        let calls = source.calls(rank)?;
        let host = calls.host().map(|h| c.host_index(h));
        let mut s = RankState {
            calls,
            builder: OpBuilder::new(rank, n, c.files[rank as usize].clone(), opts)
                .dropping(&cancelled[rank as usize]),
            next: None,
            taken: 0,
            local: BTreeMap::new(),
            opaque_comms: false,
            first_call: None,
            last_call: None,
            initialized: false,
            timed: false,
            prev_end_ns: None,
            host,
            wildcard: BTreeSet::new(),
        };
        if let Some(key) = advance(&mut s, rank)? {
            heap.push(Reverse(key));
        }
        ranks.push(s);
    }
    while let Some(Reverse((_, _, rank))) = heap.pop() {
        let s = &mut ranks[rank as usize];
        let Some((call, pos)) = s.next.take() else {
            continue;
        };
        c.call(s, rank, call, pos)?;
        match advance(s, rank)? {
            Some(key) => heap.push(Reverse(key)),
            None => c.ended(s)?,
        }
    }
    c.finish()
}

/// Reads a rank's next call; returns its merge key.
fn advance(s: &mut RankState, rank: Rank) -> Result<Option<(u64, u64, Rank)>, TraceError> {
    let Some(call) = s.calls.next().transpose()? else {
        return Ok(None);
    };
    let key = (call.start_ns, s.taken, rank);
    s.taken += 1;
    s.next = Some((call, s.calls.pos()));
    Ok(Some(key))
}

impl Checker<'_> {
    fn host_index(&mut self, host: String) -> u32 {
        match self.hosts.iter().position(|h| *h == host) {
            Some(i) => i as u32,
            None => {
                self.hosts.push(host);
                (self.hosts.len() - 1) as u32
            }
        }
    }

    fn loc(&self, site: Site) -> Location {
        site.pos
            .location(&self.files[site.rank as usize], site.rank)
    }

    /// `site` with its call's name, for messages.
    fn describe(&self, site: Site) -> String {
        format!("{} ({})", self.loc(site), func_name(site.func))
    }

    /// An error at `site`; it names the calls skipped as unsupported so far, which a corrupt
    /// field may have made so and which then leave other calls unmatched.
    fn error(&self, site: Site, what: String) -> TraceError {
        TraceError::Inconsistent {
            at: self.loc(site),
            what: format!("{}: {what}{}", func_name(site.func), self.skipped_note()),
        }
    }

    fn comm_name(&self, comm: CommId) -> String {
        if comm == WORLD {
            "MPI_COMM_WORLD".to_string()
        } else {
            format!("communicator {comm} ({} ranks)", self.comm_size(comm))
        }
    }

    fn comm_size(&self, comm: CommId) -> u32 {
        self.table.size(comm).unwrap_or(0)
    }

    fn call(
        &mut self,
        s: &mut RankState,
        rank: Rank,
        call: Call,
        pos: Pos,
    ) -> Result<(), TraceError> {
        let site = Site {
            rank,
            pos,
            func: call.func,
        };
        let timed = call.start_ns != 0 || call.end_ns != 0;
        if timed {
            self.check_time(s, site, &call)?;
        }
        let at = s.host.filter(|_| timed).map(|host| {
            let (start_ns, end_ns) = s.calls.host_times_ns(&call);
            HostTime {
                host,
                start_ns,
                end_ns,
            }
        });
        if let CallKind::CommDefine { new, members } = &call.kind {
            self.check_define(site, *new, members)?;
        }
        if let CallKind::CommSplit { color, new, .. } = call.kind {
            // MPI gives MPI_COMM_NULL exactly to the ranks with color MPI_UNDEFINED.
            if (color < 0) != (new == NULL_COMM_HANDLE) {
                return Err(self.error(
                    site,
                    format!(
                        "a new communicator exactly when the color is not MPI_UNDEFINED (color \
                         {color}, new handle {new})"
                    ),
                ));
            }
        }
        if !funcs::is_pseudo(call.func) {
            s.first_call.get_or_insert(site);
            s.last_call = Some(site);
        }
        s.initialized |= call.kind == CallKind::Init;
        if let Some(h) = comm_used(&call.kind).filter(|&h| !s.builder.knows_comm(h)) {
            if !s.opaque_comms && !s.builder.is_finalized() {
                return Err(self.error(
                    site,
                    format!(
                        "a communicator this rank created, got handle {h}, which no call of the \
                         rank made (and it made none the readers cannot follow)"
                    ),
                ));
            }
        }
        s.timed |= call.start_ns != 0 || call.end_ns != 0;
        if call.kind == CallKind::Finalize {
            self.drained(s, site)?;
        }
        let creates = creates_comm(&call);
        let unsupported = |b: &OpBuilder| b.unsupported.values().sum::<u64>();
        let before = unsupported(&s.builder);
        s.builder
            .feed(call, &mut Replay(self.table))
            .map_err(|e| e.located(&self.loc(site)))?;
        if unsupported(&s.builder) > before {
            s.opaque_comms |= creates;
            if self.skipped.len() < SKIPPED_NAMED {
                self.skipped.push(site);
            }
        }
        while let Some(op) = s.builder.out.pop_front() {
            self.op(s, site, op, at)?;
        }
        Ok(())
    }

    /// A communicator the trace defines: every member defines it with the same members, itself
    /// among them.
    fn check_define(&mut self, site: Site, new: u32, members: &[Rank]) -> Result<(), TraceError> {
        if !members.contains(&site.rank) {
            return Err(self.error(
                site,
                format!(
                    "a communicator definition listing its own rank {}",
                    site.rank
                ),
            ));
        }
        match self.defined.get(&new) {
            Some((first, m)) if m.as_slice() != members => Err(self.error(
                site,
                format!(
                    "communicator {new} to have the members {m:?} as on {}, got {members:?}",
                    self.describe(*first)
                ),
            )),
            Some(_) => Ok(()),
            None => {
                self.defined.insert(new, (site, members.to_vec()));
                Ok(())
            }
        }
    }

    fn check_time(&self, s: &mut RankState, site: Site, call: &Call) -> Result<(), TraceError> {
        if call.end_ns < call.start_ns {
            return Err(self.error(
                site,
                format!(
                    "an end time not before its start (starts at {} ns, ends at {} ns)",
                    call.start_ns, call.end_ns
                ),
            ));
        }
        if let Some(prev) = s.prev_end_ns.filter(|&p| call.start_ns < p) {
            return Err(self.error(
                site,
                format!(
                    "a start time not before the previous call's end (starts {} ns before it)",
                    prev - call.start_ns
                ),
            ));
        }
        s.prev_end_ns = Some(call.end_ns);
        Ok(())
    }

    /// A rank's calls ended: it must have called `MPI_Init` (a rank without it lost its calls'
    /// identities, e.g. to corrupt OTF2 region definitions).
    fn ended(&self, s: &RankState) -> Result<(), TraceError> {
        match (s.first_call, s.last_call) {
            (Some(first), _) if !s.initialized => Err(self.error(
                first,
                "an MPI program: the rank calls MPI_Init or MPI_Init_thread, this one never does"
                    .to_string(),
            )),
            (_, Some(last)) => self.drained(s, last),
            _ => Ok(()),
        }
    }

    /// At MPI_Finalize, or at the end of a rank without one: MPI requires every request
    /// complete (or freed) by then. Checked on timed traces, which record every call;
    /// SimGrid's time-independent ones leave sends unwaited.
    fn drained(&self, s: &RankState, site: Site) -> Result<(), TraceError> {
        let n = s.builder.pending_requests();
        if s.timed && n > 0 && !s.builder.is_finalized() {
            return Err(self.error(
                site,
                format!(
                    "every request completed or freed before MPI_Finalize, {n} still pending \
                     (the calls that completed them are missing)"
                ),
            ));
        }
        Ok(())
    }

    /// This rank's number in `comm`, checked to be a member.
    fn my_rank(&self, s: &mut RankState, site: Site, comm: CommId) -> Result<Rank, TraceError> {
        if let Some(&r) = s.local.get(&comm) {
            return Ok(r);
        }
        let r = self.table.rank_in(comm, site.rank).ok_or_else(|| {
            self.error(
                site,
                format!("a call on a communicator holding rank {}", site.rank),
            )
        })?;
        s.local.insert(comm, r);
        Ok(r)
    }

    fn peer_in(&self, site: Site, comm: CommId, peer: Rank, what: &str) -> Result<(), TraceError> {
        let size = self.comm_size(comm);
        if peer >= size {
            return Err(self.error(
                site,
                format!(
                    "a {what} below {size}, the size of {}, got {peer}",
                    self.comm_name(comm)
                ),
            ));
        }
        Ok(())
    }

    fn op(
        &mut self,
        s: &mut RankState,
        site: Site,
        op: Op,
        at: Option<HostTime>,
    ) -> Result<(), TraceError> {
        match op {
            Op::Send {
                comm,
                dst,
                tag,
                bytes,
            }
            | Op::Isend {
                comm,
                dst,
                tag,
                bytes,
                ..
            } => {
                let me = self.my_rank(s, site, comm)?;
                self.peer_in(site, comm, dst, "destination")?;
                let to = self.table.members[comm as usize][dst as usize];
                let clock = at.map_or(Clock::Unknown, |a| Clock::At {
                    host: a.host,
                    ns: a.start_ns,
                });
                let send = Side {
                    site,
                    bytes,
                    tag,
                    clock,
                };
                let env = Envelope { comm, src: me, tag };
                if let Some(recv) = self.matchers[to as usize].arrive(env, send) {
                    self.delivered(send, recv)?;
                }
            }
            Op::Recv {
                comm,
                src,
                tag,
                bytes,
            } => {
                let clock = at.map_or(Clock::Unknown, |a| Clock::At {
                    host: a.host,
                    ns: a.end_ns,
                });
                self.receive(s, site, comm, src, tag, bytes, clock)?;
            }
            Op::Irecv {
                comm,
                src,
                tag,
                bytes,
                req,
            } => {
                *self.waiting(site.rank, req) = Waiting::No;
                let clock = at
                    .filter(|_| req < MAX_TRACKED_REQ)
                    .map_or(Clock::Unknown, |a| Clock::Request { host: a.host, req });
                self.receive(s, site, comm, src, tag, bytes, clock)?;
            }
            Op::Wait { req } => self.completed(site, &[req], at)?,
            Op::Waitall { reqs } => self.completed(site, &reqs, at)?,
            Op::Collective {
                comm,
                kind,
                root,
                bytes,
                ..
            }
            | Op::Icollective {
                comm,
                kind,
                root,
                bytes,
                ..
            } => {
                if kind_has_root(kind) {
                    self.peer_in(site, comm, root, "root")?;
                }
                let sig = Sig::Coll { kind, root, bytes };
                self.collective(s, site, comm, sig, None, at)?;
            }
            Op::Alltoallv {
                comm,
                send_bytes,
                recv_bytes,
                ..
            } => {
                self.collective(
                    s,
                    site,
                    comm,
                    Sig::Alltoallv,
                    Some((send_bytes, recv_bytes)),
                    at,
                )?;
            }
            Op::Compute { .. } | Op::WaitUntil { .. } | Op::Window { .. } => {}
        }
        Ok(())
    }

    /// A receive posted; `clock`: when it completes, if known.
    #[allow(clippy::too_many_arguments)]
    fn receive(
        &mut self,
        s: &mut RankState,
        site: Site,
        comm: CommId,
        src: SrcSel,
        tag: TagSel,
        bytes: u64,
        clock: Clock,
    ) -> Result<(), TraceError> {
        self.my_rank(s, site, comm)?;
        match src {
            SrcSel::Rank(p) => self.peer_in(site, comm, p, "source")?,
            SrcSel::Any => {
                s.wildcard.insert(comm);
            }
        }
        let t = match tag {
            TagSel::Tag(t) => t,
            TagSel::Any => crate::call::ANY,
        };
        // After an ANY_SOURCE receive the match the checks make may not be the run's.
        let clock = if s.wildcard.contains(&comm) {
            Clock::Unknown
        } else {
            clock
        };
        if let Clock::Request { req, .. } = clock {
            *self.waiting(site.rank, req) = Waiting::Posted;
        }
        let recv = Side {
            site,
            bytes,
            tag: t,
            clock,
        };
        if let Some((_, send)) = self.matchers[site.rank as usize].post(comm, src, tag, recv) {
            self.delivered(send, recv)?;
        }
        Ok(())
    }

    /// A matched message: it fits, and on one host it is not received before it was sent
    /// (checked now, or when the wait or test completing the irecv comes).
    fn delivered(&mut self, send: Side, recv: Side) -> Result<(), TraceError> {
        self.fits(send, recv)?;
        let Clock::At { host, ns: sent } = send.clock else {
            return Ok(());
        };
        match recv.clock {
            Clock::At { host: h, ns: done } if h == host => {
                self.after_send(host, send.site, sent, recv.site, done)
            }
            Clock::Request { host: h, req } if h == host => {
                let waiting = self.waiting(recv.site.rank, req);
                match *waiting {
                    Waiting::Done(done, site) => {
                        *waiting = Waiting::No;
                        self.after_send(host, send.site, sent, site, done)
                    }
                    Waiting::Posted => {
                        *waiting = Waiting::Sent(sent, send.site);
                        Ok(())
                    }
                    Waiting::No | Waiting::Sent(..) => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// A wait or test completed `reqs` at `at`: the irecvs among them already matched must
    /// have been sent by then; the others' completion is kept for their match.
    fn completed(
        &mut self,
        site: Site,
        reqs: &[ReqId],
        at: Option<HostTime>,
    ) -> Result<(), TraceError> {
        let Some(at) = at else {
            return Ok(());
        };
        for &req in reqs {
            let waiting = self.waiting(site.rank, req);
            match *waiting {
                Waiting::Sent(sent, send) => {
                    *waiting = Waiting::No;
                    self.after_send(at.host, send, sent, site, at.end_ns)?;
                }
                Waiting::Posted => *waiting = Waiting::Done(at.end_ns, site),
                Waiting::No | Waiting::Done(..) => {}
            }
        }
        Ok(())
    }

    /// The clock check's state of `rank`'s request `req` (ids beyond [`MAX_TRACKED_REQ`] share
    /// one slot that is never `Posted`, so they are not checked).
    fn waiting(&mut self, rank: Rank, req: ReqId) -> &mut Waiting {
        let v = &mut self.irecvs[rank as usize];
        let i = req.min(MAX_TRACKED_REQ) as usize;
        if v.len() <= i {
            v.resize(i + 1, Waiting::No);
        }
        &mut v[i]
    }

    /// The call completing a receive (`recv`, ending at `done` ns) ends no earlier than the
    /// send (`send`, starting at `sent` ns) started: both on one host's clock.
    fn after_send(
        &self,
        host: u32,
        send: Site,
        sent: u64,
        recv: Site,
        done: u64,
    ) -> Result<(), TraceError> {
        if done >= sent {
            return Ok(());
        }
        Err(self.error(
            recv,
            format!(
                "a message received no earlier than it was sent (both ranks on host {}, one \
                 clock): the send, {}, starts at {sent} ns, this call completing its receive \
                 ends at {done} ns, {} ns earlier",
                self.hosts[host as usize],
                self.describe(send),
                sent - done
            ),
        ))
    }

    /// A matched message: the send must fit the receive.
    fn fits(&self, send: Side, recv: Side) -> Result<(), TraceError> {
        if send.bytes > recv.bytes {
            return Err(self.error(
                recv.site,
                format!(
                    "a receive of at least the {} bytes of the send it matches, {}, got {} bytes",
                    send.bytes,
                    self.describe(send.site),
                    recv.bytes
                ),
            ));
        }
        Ok(())
    }

    fn collective(
        &mut self,
        s: &mut RankState,
        site: Site,
        comm: CommId,
        sig: Sig,
        vectors: Option<Sizes>,
        at: Option<HostTime>,
    ) -> Result<(), TraceError> {
        let me = self.my_rank(s, site, comm)?;
        let size = self.comm_size(comm);
        let seq = self.colls[site.rank as usize]
            .entry(comm)
            .or_insert((0, site));
        let key = (comm, seq.0);
        *seq = (seq.0 + 1, site);
        let inst = self.pending.entry(key).or_insert_with(|| Instance {
            sig,
            first: site,
            arrived: 0,
            vectors: Vec::new(),
            spans: BTreeMap::new(),
        });
        let (inst_sig, first) = (inst.sig, inst.first);
        if inst_sig != sig {
            return Err(self.error(
                site,
                format!(
                    "collective #{} on {} to be {} as on {}, got {}",
                    key.1 + 1,
                    self.comm_name(comm),
                    describe_sig(inst_sig),
                    self.describe(first),
                    describe_sig(sig)
                ),
            ));
        }
        inst.arrived += 1;
        // Only blocking collectives: a non-blocking one's data may arrive after its post ends.
        let at = at.filter(|_| BLOCKING_COLLECTIVES.contains(&site.func));
        if let (Some(at), Sig::Coll { kind, root, bytes }) = (at, sig) {
            let role = role(kind, bytes, me == root);
            let span = inst.spans.get(&at.host).copied().unwrap_or_default();
            let (result, span) = self.in_span(span, site, at, role);
            let inst = self.pending.get_mut(&key).expect("inserted above");
            inst.spans.insert(at.host, span);
            result?;
        }
        let inst = self.pending.get_mut(&key).expect("inserted above");
        if let Some((send, recv)) = vectors {
            if inst.vectors.is_empty() {
                inst.vectors = vec![None; size as usize];
            }
            let vectors = std::mem::take(&mut inst.vectors);
            let result = self.pairs_fit(&vectors, me, &send, &recv, site, at);
            let inst = self.pending.get_mut(&key).expect("inserted above");
            inst.vectors = vectors;
            result?;
            inst.vectors[me as usize] = Some(((send, recv), site, at));
        }
        if self.pending[&key].arrived >= size {
            self.pending.remove(&key);
        }
        Ok(())
    }

    /// A member of a blocking collective joins its host's span (returned updated): it does not
    /// start after a member that needs its data ended, nor end before a member whose data it
    /// needs started.
    fn in_span(
        &self,
        mut sp: Span,
        site: Site,
        at: HostTime,
        role: Role,
    ) -> (Result<(), TraceError>, Span) {
        let mut result = Ok(());
        if role.src {
            if let Some((end, dst)) = sp.earliest_dst_end.filter(|&(e, _)| at.start_ns > e) {
                result = Err(self.before_other(at.host, (dst, end), (site, at.start_ns)));
            }
            if sp.latest_src_start.is_none_or(|(t, _)| at.start_ns > t) {
                sp.latest_src_start = Some((at.start_ns, site));
            }
        }
        if role.dst {
            if let Some((start, src)) = sp.latest_src_start.filter(|&(t, _)| at.end_ns < t) {
                result = result.and(Err(self.before_other(
                    at.host,
                    (site, at.end_ns),
                    (src, start),
                )));
            }
            if sp.earliest_dst_end.is_none_or(|(e, _)| at.end_ns < e) {
                sp.earliest_dst_end = Some((at.end_ns, site));
            }
        }
        (result, sp)
    }

    /// A collective member (`dst`, ending at the ns given) ended before a member whose data it
    /// needs (`src`, starting at the ns given) started, on one host's clock.
    fn before_other(&self, host: u32, dst: (Site, u64), src: (Site, u64)) -> TraceError {
        self.error(
            dst.0,
            format!(
                "a collective that ends no earlier than every member whose data it needs \
                 starts (both ranks on host {}, one clock): this call ends at {} ns, {} starts \
                 at {} ns, {} ns later",
                self.hosts[host as usize],
                dst.1,
                self.describe(src.0),
                src.1,
                src.1 - dst.1
            ),
        )
    }

    /// Alltoallv: member `me`'s sizes against every member already arrived, and on one host
    /// (`at`) no member ends before a member sending it data started.
    fn pairs_fit(
        &self,
        vectors: &[Option<(Sizes, Site, Option<HostTime>)>],
        me: Rank,
        send: &[u64],
        recv: &[u64],
        site: Site,
        at_me: Option<HostTime>,
    ) -> Result<(), TraceError> {
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        let me = me as usize;
        for (i, other) in vectors.iter().enumerate() {
            let Some(((osend, orecv), osite, oat)) = other else {
                continue;
            };
            if let (Some(a), Some(o)) =
                (at_me, oat.filter(|o| Some(o.host) == at_me.map(|a| a.host)))
            {
                if at(osend, me) > 0 && a.end_ns < o.start_ns {
                    return Err(self.before_other(a.host, (site, a.end_ns), (*osite, o.start_ns)));
                }
                if at(send, i) > 0 && o.end_ns < a.start_ns {
                    return Err(self.before_other(a.host, (*osite, o.end_ns), (site, a.start_ns)));
                }
            }
            let mine = Side {
                site,
                bytes: 0,
                tag: 0,
                clock: Clock::Unknown,
            };
            let theirs = Side {
                site: *osite,
                bytes: 0,
                tag: 0,
                clock: Clock::Unknown,
            };
            // i -> me, then me -> i.
            self.fits(
                Side {
                    bytes: at(osend, me),
                    ..theirs
                },
                Side {
                    bytes: at(recv, i),
                    ..mine
                },
            )?;
            self.fits(
                Side {
                    bytes: at(send, i),
                    ..mine
                },
                Side {
                    bytes: at(orecv, me),
                    ..theirs
                },
            )?;
        }
        Ok(())
    }

    /// What is left unmatched or incomplete at the end. A corrupt field shows up on both sides
    /// (a send whose tag changed leaves it and its receive unmatched) or on the other side only
    /// (a send skipped as unsupported leaves its receive unmatched), so the error lists both
    /// sides and the skipped calls.
    fn finish(&self) -> Result<(), TraceError> {
        let recvs: Vec<(CommId, SrcSel, TagSel, &Side)> =
            self.matchers.iter().flat_map(|m| m.posted()).collect();
        let sends: Vec<(Rank, &Side)> = self
            .matchers
            .iter()
            .enumerate()
            .flat_map(|(to, m)| m.unexpected().map(move |(_, s)| (to as Rank, s)))
            .collect();
        let list_sends = || {
            sends
                .iter()
                .take(3)
                .map(|(to, s)| {
                    format!(
                        "{} to rank {to} (tag {}, {} bytes)",
                        self.describe(s.site),
                        s.tag,
                        s.bytes
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        if let Some(&(comm, src, tag, recv)) = recvs.first() {
            let from = match src {
                SrcSel::Rank(r) => {
                    let world = self.table.members[comm as usize][r as usize];
                    format!(
                        "rank {r} of {}, world rank {world} ({})",
                        self.comm_name(comm),
                        self.files[world as usize].display()
                    )
                }
                SrcSel::Any => format!("any rank of {}", self.comm_name(comm)),
            };
            let tag = match tag {
                TagSel::Tag(t) => format!("tag {t}"),
                TagSel::Any => "any tag".to_string(),
            };
            let unmatched = if sends.is_empty() {
                String::new()
            } else {
                format!("; messages nobody received: {}", list_sends())
            };
            return Err(self.error(
                recv.site,
                format!(
                    "a send matching this receive (from {from}, {tag}, {} bytes), none found \
                     ({} receives unmatched){unmatched}",
                    recv.bytes,
                    recvs.len(),
                ),
            ));
        }
        if let Some(&(to, send)) = sends.first() {
            return Err(self.error(
                send.site,
                format!(
                    "a receive matching this send (tag {}, {} bytes) on rank {to} ({}), none \
                     found; messages nobody received: {}",
                    send.tag,
                    send.bytes,
                    self.files[to as usize].display(),
                    list_sends(),
                ),
            ));
        }
        if let Some(((comm, seq), inst)) = self.pending.iter().next() {
            let missing: Vec<String> = self.table.members[*comm as usize]
                .iter()
                .filter_map(|&m| {
                    let (n, last) = self.colls[m as usize].get(comm).copied().unzip();
                    (n.unwrap_or(0) <= *seq).then(|| match last {
                        Some(site) => format!(
                            "rank {m} made {} (the last: {})",
                            n.unwrap_or(0),
                            self.describe(site)
                        ),
                        None => {
                            format!("rank {m} ({}) made none", self.files[m as usize].display())
                        }
                    })
                })
                .take(3)
                .collect();
            return Err(self.error(
                inst.first,
                format!(
                    "every member of {} to call collective #{} ({}), only {} of {} did: {}",
                    self.comm_name(*comm),
                    seq + 1,
                    describe_sig(inst.sig),
                    inst.arrived,
                    self.comm_size(*comm),
                    missing.join("; "),
                ),
            ));
        }
        Ok(())
    }

    /// The calls skipped as unsupported, for mismatch errors.
    fn skipped_note(&self) -> String {
        if self.skipped.is_empty() {
            return String::new();
        }
        let l: Vec<String> = self.skipped.iter().map(|&s| self.describe(s)).collect();
        format!("; calls skipped as unsupported: {}", l.join("; "))
    }
}

/// The communicator a point-to-point call or collective runs on.
fn comm_used(kind: &CallKind) -> Option<CommHandle> {
    match kind {
        CallKind::Send { comm, .. }
        | CallKind::Recv { comm, .. }
        | CallKind::Isend { comm, .. }
        | CallKind::Irecv { comm, .. }
        | CallKind::Sendrecv { comm, .. }
        | CallKind::Coll { comm, .. }
        | CallKind::Icoll { comm, .. }
        | CallKind::VColl { comm, .. } => Some(*comm),
        _ => None,
    }
}

/// Whether a call makes a communicator (skipped ones leave handles the readers cannot follow).
fn creates_comm(call: &Call) -> bool {
    const CREATORS: &[&str] = &[
        "cart_create",
        "cart_sub",
        "graph_create",
        "dist_graph_create",
        "dist_graph_create_adjacent",
        "intercomm_create",
        "intercomm_merge",
        "comm_spawn",
        "comm_spawn_multiple",
        "comm_accept",
        "comm_connect",
        "comm_join",
        "comm_get_parent",
        "comm_split_type",
        "comm_idup",
        "comm_create_group",
    ];
    match &call.kind {
        CallKind::CommSplit { .. } | CallKind::CommCreate { .. } => true,
        CallKind::Unsupported { name } => {
            CREATORS.contains(&name.as_str()) || CREATORS.contains(&func_name(call.func))
        }
        _ => CREATORS.contains(&func_name(call.func)),
    }
}

/// Blocking collectives (the clock check): a member's call spans its data's exchange.
const BLOCKING_COLLECTIVES: &[Func] = &[
    funcs::F_BARRIER,
    funcs::F_BCAST,
    funcs::F_REDUCE,
    funcs::F_ALLREDUCE,
    funcs::F_ALLGATHER,
    funcs::F_ALLGATHERV,
    funcs::F_ALLTOALL,
    funcs::F_ALLTOALLV,
    funcs::F_GATHER,
    funcs::F_GATHERV,
    funcs::F_SCATTER,
    funcs::F_SCATTERV,
    funcs::F_REDUCE_SCATTER_BLOCK,
];

/// A member's part in a collective of one size (`is_root`: it is the root). Without data
/// (other than a barrier) nothing need be exchanged: MPI libraries return at once.
fn role(kind: CollKind, bytes: u64, is_root: bool) -> Role {
    let (src, dst) = match kind {
        CollKind::Barrier => (true, true),
        _ if bytes == 0 => (false, false),
        CollKind::Allreduce
        | CollKind::Allgather
        | CollKind::Alltoall
        | CollKind::ReduceScatter => (true, true),
        CollKind::Bcast | CollKind::Scatter => (is_root, !is_root),
        CollKind::Reduce | CollKind::Gather => (!is_root, is_root),
        // A prefix: a member needs only the lower ranks' data, which a symmetric role cannot
        // say; not checked (scans are not among BLOCKING_COLLECTIVES either).
        CollKind::Scan | CollKind::Exscan => (false, false),
    };
    Role { src, dst }
}

fn kind_has_root(kind: CollKind) -> bool {
    matches!(
        kind,
        CollKind::Bcast | CollKind::Reduce | CollKind::Gather | CollKind::Scatter
    )
}

fn describe_sig(sig: Sig) -> String {
    match sig {
        Sig::Coll { kind, root, bytes } if kind_has_root(kind) => {
            format!("{} of {bytes} bytes from root {root}", kind.name())
        }
        Sig::Coll {
            kind: CollKind::Barrier,
            ..
        } => "barrier".to_string(),
        Sig::Coll { kind, bytes, .. } => format!("{} of {bytes} bytes", kind.name()),
        Sig::Alltoallv => "alltoallv".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::{ANY, WORLD_HANDLE};
    use crate::comms::Resolver;
    use crate::{CallStream, TraceFormat};

    /// Ranks of hand-written calls, every rank on host `h` (or none); call k of a rank is at
    /// byte offset 10 k of `rank-<r>`.
    #[derive(Debug)]
    struct Fake {
        ranks: Vec<Vec<Call>>,
        host: Option<&'static str>,
    }

    struct FakeCalls {
        calls: std::vec::IntoIter<Call>,
        taken: u64,
        host: Option<&'static str>,
    }

    impl Iterator for FakeCalls {
        type Item = Result<Call, TraceError>;
        fn next(&mut self) -> Option<Self::Item> {
            self.taken += 1;
            self.calls.next().map(Ok)
        }
    }

    impl CallStream for FakeCalls {
        fn pos(&self) -> Pos {
            Pos::Offset(10 * (self.taken - 1))
        }
        fn host(&self) -> Option<String> {
            self.host.map(str::to_string)
        }
    }

    impl CallSource for Fake {
        fn format(&self) -> TraceFormat {
            TraceFormat::Dumpi
        }
        fn num_ranks(&self) -> u32 {
            self.ranks.len() as u32
        }
        fn rank_file(&self, rank: Rank) -> PathBuf {
            PathBuf::from(format!("rank-{rank}"))
        }
        fn calls(&self, rank: Rank) -> Result<CallIter, TraceError> {
            Ok(Box::new(FakeCalls {
                calls: self.ranks[rank as usize].clone().into_iter(),
                taken: 0,
                host: self.host,
            }))
        }
    }

    fn at(func: Func, kind: CallKind, start_ns: u64, end_ns: u64) -> Call {
        Call {
            func,
            start_ns,
            end_ns,
            cpu_ns: None,
            kind,
        }
    }

    /// Each rank: MPI_Init at 1-2 ns, its calls, MPI_Finalize at 1000-1001 ns.
    fn checked(ranks: Vec<Vec<Call>>, host: Option<&'static str>) -> Result<(), String> {
        let n = ranks.len() as u32;
        let ranks = ranks
            .into_iter()
            .map(|calls| {
                let mut v = vec![at(funcs::F_INIT, CallKind::Init, 1, 2)];
                v.extend(calls);
                v.push(at(funcs::F_FINALIZE, CallKind::Finalize, 1000, 1001));
                v
            })
            .collect();
        let table = Resolver::new(n).finish();
        let cancelled = vec![Vec::new(); n as usize];
        check(
            &Fake { ranks, host },
            &table,
            &ReadOptions::default(),
            &cancelled,
        )
        .map_err(|e| e.to_string())
    }

    fn send(start: u64, end: u64) -> Call {
        let kind = CallKind::Send {
            comm: WORLD_HANDLE,
            peer: 1,
            tag: 0,
            bytes: 8,
        };
        at(funcs::F_SEND, kind, start, end)
    }

    fn irecv(peer: i32, start: u64, end: u64) -> Call {
        let kind = CallKind::Irecv {
            comm: WORLD_HANDLE,
            peer,
            tag: 0,
            bytes: 8,
            req: 7,
        };
        at(funcs::F_IRECV, kind, start, end)
    }

    fn wait(start: u64, end: u64) -> Call {
        at(funcs::F_WAIT, CallKind::Wait { req: 7 }, start, end)
    }

    fn bcast(root: i32, bytes: u64, start: u64, end: u64) -> Call {
        let kind = CallKind::Coll {
            comm: WORLD_HANDLE,
            kind: CollKind::Bcast,
            root,
            bytes,
        };
        at(funcs::F_BCAST, kind, start, end)
    }

    /// Rank 1 posts an irecv at 10-11 ns and waits for it at 20-30 ns; rank 0's send starts at
    /// 40 ns: the wait completed the receive 10 ns before the send began.
    #[test]
    fn an_irecv_completed_before_its_send_started_is_refused_at_the_wait() {
        let ranks = vec![vec![send(40, 50)], vec![irecv(0, 10, 11), wait(20, 30)]];
        assert_eq!(
            checked(ranks.clone(), Some("h")).unwrap_err(),
            "rank-1: rank 1, byte offset 20: expected wait: a message received no earlier than \
             it was sent (both ranks on host h, one clock): the send, rank-0: rank 0, byte \
             offset 10 (send), starts at 40 ns, this call completing its receive ends at 30 ns, \
             10 ns earlier"
        );
        checked(ranks, None).expect("ranks of unknown hosts are not compared");
    }

    /// The same with an `MPI_ANY_SOURCE` irecv: which send it got depends on timing the trace
    /// does not hold, so it is not compared.
    #[test]
    fn a_wildcard_receive_is_not_compared() {
        let ranks = vec![vec![send(40, 50)], vec![irecv(ANY, 10, 11), wait(20, 30)]];
        checked(ranks, Some("h")).expect("wildcard receives are not compared");
    }

    /// A bcast's non-root (rank 1) cannot end before the root (rank 0) starts; with no data
    /// nothing need be exchanged, and the root may end before a non-root starts.
    #[test]
    fn a_bcast_member_ending_before_the_root_starts_is_refused() {
        let ranks = vec![vec![bcast(0, 8, 40, 50)], vec![bcast(0, 8, 10, 30)]];
        assert_eq!(
            checked(ranks, Some("h")).unwrap_err(),
            "rank-1: rank 1, byte offset 10: expected bcast: a collective that ends no earlier \
             than every member whose data it needs starts (both ranks on host h, one clock): \
             this call ends at 30 ns, rank-0: rank 0, byte offset 10 (bcast) starts at 40 ns, \
             10 ns later"
        );
        let empty = vec![vec![bcast(0, 0, 40, 50)], vec![bcast(0, 0, 10, 30)]];
        checked(empty, Some("h")).expect("a bcast of no data exchanges nothing");
        let root_early = vec![vec![bcast(0, 8, 10, 20)], vec![bcast(0, 8, 40, 50)]];
        checked(root_early, Some("h")).expect("the root needs no member's data");
    }
}
