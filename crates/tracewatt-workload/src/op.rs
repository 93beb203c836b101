//! The operations a rank program is made of. Ranks are communicator-local unless noted; tags of
//! user point-to-point messages are >= 0 (negative tags are reserved for collective traffic, so a
//! user's `ANY_TAG` receive never steals a collective's message).

use serde::{Deserialize, Serialize};
use tracewatt_core::Ps;

/// A rank number: within a communicator, or within the job ("world") where said.
pub type Rank = u32;
pub type Tag = i32;
/// Index into the job's communicator table; 0 is the world communicator.
pub type CommId = u32;
/// A request handle, unique among a rank's outstanding requests.
pub type ReqId = u32;

/// The world communicator of a job.
pub const WORLD: CommId = 0;

/// Request ids at or above this are reserved for the expansion of collectives.
pub const RESERVED_REQ_BASE: ReqId = 0x8000_0000;

/// Source selector of a receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrcSel {
    Rank(Rank),
    Any,
}

/// Tag selector of a receive. `Any` matches every tag >= 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagSel {
    Tag(Tag),
    Any,
}

impl TagSel {
    pub fn matches(self, tag: Tag) -> bool {
        match self {
            TagSel::Tag(t) => t == tag,
            TagSel::Any => tag >= 0,
        }
    }
}

impl SrcSel {
    pub fn matches(self, src: Rank) -> bool {
        match self {
            SrcSel::Rank(r) => r == src,
            SrcSel::Any => true,
        }
    }
}

/// The collectives, with MPI's meaning of `bytes` for each (see [`Op::Collective`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollKind {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Allgather,
    Alltoall,
    Gather,
    Scatter,
    ReduceScatter,
    /// `MPI_Scan`: rank r ends with the reduction of ranks 0..=r (`bytes`: the buffer).
    Scan,
    /// `MPI_Exscan`: rank r ends with the reduction of ranks 0..r (`bytes`: the buffer).
    Exscan,
}

/// Collective algorithms. Not every algorithm applies to every collective; see
/// [`collectives::expand`](crate::collectives::expand).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollAlgo {
    /// Size-based choice like MPICH's.
    Auto,
    BinomialTree,
    RecursiveDoubling,
    Ring,
    PairwiseExchange,
    Bruck,
    /// Dissemination barrier.
    Dissemination,
    /// Every rank posts all its sends and receives at once (MPICH's "scattered" alltoall).
    Scattered,
    /// Broadcast as scatter + ring allgather (van de Geijn).
    ScatterAllgather,
    /// Allreduce as reduce-scatter + allgather (Rabenseifner).
    Rabenseifner,
    /// Reduce-scatter by recursive halving.
    RecursiveHalving,
    /// Alltoall by Träff and Hunold's full-lane decomposition: one combined message per other
    /// node along each lane (the ranks with the same index on their nodes), then an alltoall
    /// inside each node.
    FullLane,
}

/// One operation of a rank program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Local computation for a duration.
    Compute {
        ps: Ps,
    },
    /// A timer sleep until `ps` after the job's start: the rank neither computes nor waits in
    /// MPI meanwhile, and continues at once if that time has passed. Lets a generator send at
    /// absolute times, so the send overheads do not stretch its period.
    WaitUntil {
        ps: Ps,
    },
    /// Blocking send.
    Send {
        comm: CommId,
        dst: Rank,
        tag: Tag,
        bytes: u64,
    },
    /// Blocking receive.
    Recv {
        comm: CommId,
        src: SrcSel,
        tag: TagSel,
        bytes: u64,
    },
    Isend {
        comm: CommId,
        dst: Rank,
        tag: Tag,
        bytes: u64,
        req: ReqId,
    },
    Irecv {
        comm: CommId,
        src: SrcSel,
        tag: TagSel,
        bytes: u64,
        req: ReqId,
    },
    Wait {
        req: ReqId,
    },
    Waitall {
        reqs: Box<[ReqId]>,
    },
    /// A collective over `comm`. `bytes` is: the buffer for bcast, reduce, allreduce; each rank's
    /// block for allgather, gather, scatter, reduce_scatter; each pair's block for alltoall;
    /// ignored for barrier. `root` is comm-local and ignored where MPI has none.
    Collective {
        comm: CommId,
        kind: CollKind,
        root: Rank,
        bytes: u64,
        algo: CollAlgo,
    },
    /// A non-blocking collective (`MPI_Iallreduce`, `MPI_Ibcast`, ...): `comm`, `kind`, `root`,
    /// `bytes` and `algo` as in [`Op::Collective`]. The rank goes on at once; the collective
    /// runs its algorithm on its own and completes request `req`, which a `Wait` or `Waitall`
    /// waits for.
    Icollective {
        comm: CommId,
        kind: CollKind,
        root: Rank,
        bytes: u64,
        algo: CollAlgo,
        req: ReqId,
    },
    /// Alltoallv: `send_bytes[i]` goes to comm rank i; `recv_bytes[i]` comes from comm rank i.
    Alltoallv {
        comm: CommId,
        send_bytes: Box<[u64]>,
        recv_bytes: Box<[u64]>,
        algo: CollAlgo,
    },
    /// The rank enters (`start`) or leaves the timed region of its trace (`[jobs.trace]
    /// window`): takes no time; the run reports makespan and energy between the first entry and
    /// the last exit.
    Window {
        start: bool,
    },
}

/// A rank's program: a stream of operations, pulled one at a time so traces never sit in memory.
/// Fallible because a trace can turn out truncated or corrupt half-way through a run; generators
/// never fail and just wrap their ops in `Ok`.
pub type Program = Box<dyn Iterator<Item = Result<Op, ProgramError>> + Send>;

/// A rank program that cannot go on: where (source file, rank, byte offset) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: rank {rank}{}: {message}", offset.map(|o| format!(", byte offset {o}")).unwrap_or_default())]
pub struct ProgramError {
    pub source_name: String,
    pub rank: Rank,
    pub offset: Option<u64>,
    pub message: String,
}

impl CollKind {
    /// The snake_case name used in configuration files and messages.
    pub fn name(self) -> &'static str {
        match self {
            CollKind::Barrier => "barrier",
            CollKind::Bcast => "bcast",
            CollKind::Reduce => "reduce",
            CollKind::Allreduce => "allreduce",
            CollKind::Allgather => "allgather",
            CollKind::Alltoall => "alltoall",
            CollKind::Gather => "gather",
            CollKind::Scatter => "scatter",
            CollKind::ReduceScatter => "reduce_scatter",
            CollKind::Scan => "scan",
            CollKind::Exscan => "exscan",
        }
    }
}

impl CollAlgo {
    /// The snake_case name used in configuration files and messages.
    pub fn name(self) -> &'static str {
        match self {
            CollAlgo::Auto => "auto",
            CollAlgo::BinomialTree => "binomial_tree",
            CollAlgo::RecursiveDoubling => "recursive_doubling",
            CollAlgo::Ring => "ring",
            CollAlgo::PairwiseExchange => "pairwise_exchange",
            CollAlgo::Bruck => "bruck",
            CollAlgo::Dissemination => "dissemination",
            CollAlgo::Scattered => "scattered",
            CollAlgo::ScatterAllgather => "scatter_allgather",
            CollAlgo::Rabenseifner => "rabenseifner",
            CollAlgo::RecursiveHalving => "recursive_halving",
            CollAlgo::FullLane => "full_lane",
        }
    }
}
