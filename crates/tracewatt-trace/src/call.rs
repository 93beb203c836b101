//! The readers' common vocabulary: one recorded MPI call of one rank, in the trace's own terms
//! (communicator and request *handles* as the rank saw them, peers communicator-local, bytes
//! already multiplied out from counts and datatype sizes). Every reader produces these, the
//! native format stores exactly these, and [`crate::builder`] turns them into simulator ops.

use crate::funcs::Func;

/// Communicator handle as a rank saw it. [`WORLD_HANDLE`] and [`SELF_HANDLE`] are fixed.
pub type CommHandle = u32;
pub const WORLD_HANDLE: CommHandle = 0;
pub const SELF_HANDLE: CommHandle = 1;
/// A handle that names no communicator (MPI_COMM_NULL).
pub const NULL_COMM_HANDLE: CommHandle = u32::MAX;

/// Group handle as a rank saw it.
pub type GroupHandle = u32;

/// Request handle as the trace names it; unique among a rank's outstanding requests at a time.
pub type ReqHandle = u64;

/// Handles from here up are made up by a reader for calls the trace recorded without a request
/// (an OTF2 isend without its request record, a non-blocking collective of Score-P before OTF2
/// 3.0), counting down from `u64::MAX`; a trace's own handles stay below.
pub const MADE_UP_REQS: ReqHandle = u64::MAX / 2;

/// Peer value meaning MPI_ANY_SOURCE (receives) / tag value meaning MPI_ANY_TAG.
pub const ANY: i32 = -1;
/// Peer value meaning MPI_PROC_NULL: the call moves nothing.
pub const PROC_NULL: i32 = -2;

/// Collectives with one size per call (the meaning of `bytes` follows `tracewatt_workload::Op`).
pub use tracewatt_workload::CollKind;

/// Collectives with per-rank sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VKind {
    Alltoallv,
    Allgatherv,
    Gatherv,
    Scatterv,
    /// `MPI_Reduce_scatter` with per-rank receive counts.
    ReduceScatter,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CallKind {
    /// A call that moves no data and changes nothing the simulator models (comm_rank, wtime,
    /// type_commit, probe, ...). Counted in `TraceInfo`, produces no op.
    Local,
    /// A call the readers cannot simulate; counted, skipped (fatal in strict mode).
    Unsupported {
        name: String,
    },
    /// Explicit computation (SimGrid `compute`/`sleep`, native traces written by generators).
    /// `flops`: the operations it was given in (SimGrid `compute`, a reduction's `comp_size`);
    /// `None` for time (`sleep`, native records, which store the time only).
    Compute {
        ps: u64,
        flops: Option<f64>,
    },
    Init,
    Finalize,
    Send {
        comm: CommHandle,
        peer: i32,
        tag: i32,
        bytes: u64,
    },
    Recv {
        comm: CommHandle,
        peer: i32,
        tag: i32,
        bytes: u64,
    },
    Isend {
        comm: CommHandle,
        peer: i32,
        tag: i32,
        bytes: u64,
        req: ReqHandle,
    },
    Irecv {
        comm: CommHandle,
        peer: i32,
        tag: i32,
        bytes: u64,
        req: ReqHandle,
    },
    Sendrecv {
        comm: CommHandle,
        dst: i32,
        send_tag: i32,
        send_bytes: u64,
        src: i32,
        recv_tag: i32,
        recv_bytes: u64,
    },
    Wait {
        req: ReqHandle,
    },
    Waitall {
        reqs: Vec<ReqHandle>,
    },
    /// `index`: position in `reqs` of the request that completed (< 0: none did).
    Waitany {
        reqs: Vec<ReqHandle>,
        index: i32,
    },
    Waitsome {
        reqs: Vec<ReqHandle>,
        indices: Vec<i32>,
    },
    Test {
        req: ReqHandle,
        flag: bool,
    },
    Testall {
        reqs: Vec<ReqHandle>,
        flag: bool,
    },
    Testany {
        reqs: Vec<ReqHandle>,
        index: i32,
        flag: bool,
    },
    Testsome {
        reqs: Vec<ReqHandle>,
        indices: Vec<i32>,
    },
    RequestFree {
        req: ReqHandle,
    },
    /// `MPI_Cancel` of a pending request. Whether it took effect is known only when the request
    /// completes: [`CallKind::CancelOutcome`].
    Cancel {
        req: ReqHandle,
    },
    /// Whether a cancelled request was cancelled (`MPI_Test_cancelled` on the status that
    /// completed it), recorded after the call that completed it. `req: None` (DUMPI's
    /// `MPI_Test_cancelled`, which names a status, not a request): the cancelled request
    /// completed last. A cancelled request whose outcome no record gives counts as cancelled
    /// if it was a receive, not if it was a send (see [`crate::builder`]).
    CancelOutcome {
        req: Option<ReqHandle>,
        cancelled: bool,
    },
    Coll {
        comm: CommHandle,
        kind: CollKind,
        root: i32,
        bytes: u64,
    },
    /// A non-blocking collective (`MPI_Iallreduce`, `MPI_Ibcast`, ...): `comm`, `kind`, `root`
    /// and `bytes` as in [`CallKind::Coll`]; it completes request `req`, which a later wait or
    /// test completes.
    Icoll {
        comm: CommHandle,
        kind: CollKind,
        root: i32,
        bytes: u64,
        req: ReqHandle,
    },
    /// Per-rank sizes, in bytes, indexed by comm rank. Which vector matters depends on `kind`:
    /// alltoallv both; allgatherv `send[0]` = this rank's block, `recv` = everyone's;
    /// gatherv `send[0]` + `recv` (root only); scatterv `send` (root only) + `recv[0]`;
    /// reduce_scatter `recv` = every rank's block.
    VColl {
        comm: CommHandle,
        kind: VKind,
        root: i32,
        send: Vec<u64>,
        recv: Vec<u64>,
    },
    /// `MPI_Comm_split`; `MPI_Comm_dup` is recorded as a split with color 0 and key = rank.
    /// `color < 0` (MPI_UNDEFINED) yields no communicator.
    CommSplit {
        parent: CommHandle,
        color: i32,
        key: i32,
        new: CommHandle,
    },
    CommFree {
        comm: CommHandle,
    },
    /// `MPI_Comm_group`: `group` holds the communicator's members.
    GroupFromComm {
        comm: CommHandle,
        group: GroupHandle,
    },
    /// `MPI_Group_incl` (`exclude == false`) / `MPI_Group_excl`: ranks are positions in `group`.
    GroupSelect {
        group: GroupHandle,
        ranks: Vec<i32>,
        exclude: bool,
        new: GroupHandle,
    },
    GroupFree {
        group: GroupHandle,
    },
    /// `MPI_Comm_create`: every member of `parent` calls it with the same group; members not in
    /// the group get MPI_COMM_NULL.
    CommCreate {
        parent: CommHandle,
        group: GroupHandle,
        new: CommHandle,
    },
    /// A communicator the trace defines rather than records the creation of (OTF2): every
    /// member records it once, with the same `new` handle and `members` (world ranks in
    /// communicator rank order), before using it.
    CommDefine {
        new: CommHandle,
        members: Vec<u32>,
    },
}

/// One call: its MPI function, wall-clock start and end (ns, any fixed origin per trace; both 0
/// when the format has no timestamps) and what it did.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub func: Func,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The process's CPU time at start and end (ns), where the format records it (DUMPI).
    pub cpu_ns: Option<(u64, u64)>,
    pub kind: CallKind,
}

impl Call {
    pub fn untimed(func: Func, kind: CallKind) -> Self {
        Call {
            func,
            start_ns: 0,
            end_ns: 0,
            cpu_ns: None,
            kind,
        }
    }

    /// Bytes this call sends point-to-point (for `TraceInfo`).
    pub fn p2p_bytes(&self) -> u64 {
        match &self.kind {
            CallKind::Send { peer, bytes, .. } | CallKind::Isend { peer, bytes, .. }
                if *peer >= 0 =>
            {
                *bytes
            }
            CallKind::Sendrecv {
                dst, send_bytes, ..
            } if *dst >= 0 => *send_bytes,
            _ => 0,
        }
    }

    /// This rank's contribution to collectives: the `bytes` argument of the resulting op
    /// (alltoallv: the sum of what it sends; v-collectives: the sum of its send vector, or its
    /// block for allgatherv/reduce_scatter).
    pub fn coll_bytes(&self) -> u64 {
        match &self.kind {
            CallKind::Coll { kind, bytes, .. } | CallKind::Icoll { kind, bytes, .. }
                if *kind != CollKind::Barrier =>
            {
                *bytes
            }
            CallKind::VColl { send, .. } => send.iter().fold(0u64, |a, b| a.saturating_add(*b)),
            _ => 0,
        }
    }
}
