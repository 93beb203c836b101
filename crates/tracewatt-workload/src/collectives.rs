//! Collectives decomposed into point-to-point operations by the standard algorithms (as in MPICH;
//! Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH",
//! IJHPCA 2005).
//!
//! [`Expansion`] writes one rank's part of a collective as `Isend`/`Irecv`/`Waitall` operations on
//! the collective's communicator, a few phases at a time ([`expand`] writes all of it at once).
//! Conventions every expansion follows:
//!
//! - Tags are negative (`-(1 + step)`), so a user's `ANY_TAG` receive never takes collective
//!   traffic; every rank derives the same tag for the same step. A non-blocking collective's
//!   tags sit in a lane of their own below those ([`Expansion::nonblocking`]).
//! - Request ids start at [`RESERVED_REQ_BASE`] and every phase waits for all it posted, so each
//!   piece of an expansion may start again at the base.
//! - A rank never sends to itself; its own block is a local copy.
//! - Blocks that do not divide evenly are split as evenly as possible: part `i` of `total` bytes in
//!   `parts` parts is `total / parts`, plus one byte for the first `total % parts` parts.
//! - Zero-byte messages are still sent wherever the algorithm sends a message (a barrier is all
//!   zero-byte messages; a 0-byte bcast still walks its tree), except in alltoallv, which like
//!   MPICH skips pairs whose count is zero (both sides see the same zero).
//!
//! Internally every algorithm is written once against a small `Sink` trait that also receives a
//! description of the data blocks each message carries; the operation sink ignores it, and the
//! test checker uses it to verify that the algorithm really delivers what MPI requires.

use crate::op::{
    CollAlgo, CollKind, CommId, Op, Rank, ReqId, SrcSel, Tag, TagSel, RESERVED_REQ_BASE,
};

/// Why a collective could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CollError {
    #[error("collective algorithm `{}` does not apply to {} (valid: {})", algo.name(), kind_name(*kind), valid_names(*kind))]
    NotApplicable {
        kind: Option<CollKind>,
        algo: CollAlgo,
    },
    #[error("{}: root {root} out of range for a communicator of {size} ranks", kind.name())]
    RootOutOfRange {
        kind: CollKind,
        root: Rank,
        size: u32,
    },
    #[error("rank {me} out of range for a communicator of {size} ranks")]
    RankOutOfRange { me: Rank, size: u32 },
    #[error("a collective needs a communicator of at least one rank")]
    EmptyCommunicator,
    #[error("alltoallv: {which} has {len} entries but the communicator has {size} ranks")]
    CountsLength {
        which: &'static str,
        len: usize,
        size: u32,
    },
}

fn kind_name(kind: Option<CollKind>) -> &'static str {
    kind.map_or("alltoallv", CollKind::name)
}

fn valid_names(kind: Option<CollKind>) -> String {
    let algos = match kind {
        Some(k) => valid_algorithms(k),
        None => ALLTOALLV_ALGORITHMS,
    };
    let mut s = String::from("auto");
    for a in algos {
        s.push_str(", ");
        s.push_str(a.name());
    }
    s
}

/// Algorithms accepted for alltoallv besides `Auto`.
pub const ALLTOALLV_ALGORITHMS: &[CollAlgo] = &[CollAlgo::PairwiseExchange, CollAlgo::Scattered];

/// The explicit algorithms that apply to a collective (`Auto` is always accepted as well).
pub fn valid_algorithms(kind: CollKind) -> &'static [CollAlgo] {
    use CollAlgo::*;
    match kind {
        CollKind::Barrier => &[Dissemination, RecursiveDoubling],
        CollKind::Bcast => &[BinomialTree, ScatterAllgather],
        CollKind::Reduce => &[BinomialTree],
        CollKind::Allreduce => &[RecursiveDoubling, Ring, Rabenseifner],
        CollKind::Allgather => &[RecursiveDoubling, Ring, Bruck],
        CollKind::Alltoall => &[PairwiseExchange, Bruck, Scattered, FullLane],
        CollKind::Gather | CollKind::Scatter => &[BinomialTree],
        CollKind::ReduceScatter => &[RecursiveHalving, PairwiseExchange, Ring],
        CollKind::Scan | CollKind::Exscan => &[RecursiveDoubling],
    }
}

/// MPICH-like default choice by communicator size and message size (`bytes` as in
/// [`Op::Collective`]):
///
/// | collective | choice |
/// |---|---|
/// | barrier | dissemination |
/// | bcast | binomial tree if `bytes < 12288` or `size < 8`, else scatter + ring allgather |
/// | reduce, gather, scatter | binomial tree |
/// | allreduce | recursive doubling if `bytes <= 2048` or `bytes < pof2(size)`, else Rabenseifner |
/// | allgather (`total = bytes * size`) | recursive doubling if size is a power of two and `total < 512 KiB`; Bruck if not and `total < 80 KiB`; else ring |
/// | alltoall | Bruck if `bytes <= 256` and `size >= 8`; scattered if `bytes <= 32768`; else pairwise exchange |
/// | reduce_scatter (`total = bytes * size`) | recursive halving if size is a power of two and `total < 512 KiB`, else pairwise exchange |
/// | scan, exscan | recursive doubling (MPICH's only algorithm for both) |
///
/// (MPICH's ring allreduce and its medium-size bcast variant are not chosen automatically.)
pub fn resolve_auto(kind: CollKind, size: u32, bytes: u64) -> CollAlgo {
    let pow2 = size.is_power_of_two();
    let total = bytes.saturating_mul(size as u64);
    match kind {
        CollKind::Barrier => CollAlgo::Dissemination,
        CollKind::Bcast => {
            if bytes < 12288 || size < 8 {
                CollAlgo::BinomialTree
            } else {
                CollAlgo::ScatterAllgather
            }
        }
        CollKind::Reduce | CollKind::Gather | CollKind::Scatter => CollAlgo::BinomialTree,
        CollKind::Allreduce => {
            if bytes <= 2048 || bytes < pof2_floor(size.max(1) as u64) {
                CollAlgo::RecursiveDoubling
            } else {
                CollAlgo::Rabenseifner
            }
        }
        CollKind::Allgather => {
            if pow2 && total < 512 * 1024 {
                CollAlgo::RecursiveDoubling
            } else if !pow2 && total < 80 * 1024 {
                CollAlgo::Bruck
            } else {
                CollAlgo::Ring
            }
        }
        CollKind::Alltoall => {
            if bytes <= 256 && size >= 8 {
                CollAlgo::Bruck
            } else if bytes <= 32768 {
                CollAlgo::Scattered
            } else {
                CollAlgo::PairwiseExchange
            }
        }
        CollKind::ReduceScatter => {
            if pow2 && total < 512 * 1024 {
                CollAlgo::RecursiveHalving
            } else {
                CollAlgo::PairwiseExchange
            }
        }
        CollKind::Scan | CollKind::Exscan => CollAlgo::RecursiveDoubling,
    }
}

/// Default alltoallv algorithm: scattered (MPICH's default).
pub fn resolve_auto_alltoallv() -> CollAlgo {
    CollAlgo::Scattered
}

/// The algorithm that actually runs: `Auto` resolved, and the documented fallbacks applied —
/// allgather recursive doubling on a non-power-of-two size runs Bruck; reduce_scatter recursive
/// halving on a non-power-of-two size runs pairwise exchange. (Barrier recursive doubling and
/// allreduce recursive doubling/Rabenseifner handle any size with MPICH's pre/post step.)
pub fn effective_algorithm(
    kind: CollKind,
    algo: CollAlgo,
    size: u32,
    bytes: u64,
) -> Result<CollAlgo, CollError> {
    let algo = if algo == CollAlgo::Auto {
        resolve_auto(kind, size, bytes)
    } else {
        algo
    };
    if !valid_algorithms(kind).contains(&algo) {
        return Err(CollError::NotApplicable {
            kind: Some(kind),
            algo,
        });
    }
    let pow2 = size.is_power_of_two();
    Ok(match (kind, algo) {
        (CollKind::Allgather, CollAlgo::RecursiveDoubling) if !pow2 => CollAlgo::Bruck,
        (CollKind::ReduceScatter, CollAlgo::RecursiveHalving) if !pow2 => {
            CollAlgo::PairwiseExchange
        }
        _ => algo,
    })
}

/// MPICH's default for `MPIR_CVAR_ALLTOALL_THROTTLE`: the scattered alltoall(v) keeps at most
/// this many receives and this many sends posted at a time.
pub const DEFAULT_ALLTOALL_THROTTLE: u32 = 32;

/// Appends rank `me`'s whole part of a collective over `comm` (ranks comm-local) to `out`, with
/// the default alltoall throttle. See the module documentation for the conventions; `bytes` and
/// `root` mean what they mean in [`Op::Collective`].
#[allow(clippy::too_many_arguments)]
pub fn expand(
    comm: CommId,
    kind: CollKind,
    algo: CollAlgo,
    size: u32,
    me: Rank,
    root: Rank,
    bytes: u64,
    out: &mut Vec<Op>,
) -> Result<(), CollError> {
    let mut e = Expansion::collective(
        comm,
        kind,
        algo,
        size,
        me,
        root,
        bytes,
        DEFAULT_ALLTOALL_THROTTLE,
    )?;
    e.fill(out, usize::MAX);
    Ok(())
}

/// Appends rank `me`'s whole part of an alltoallv over `comm`: `send_bytes[i]` goes to comm rank
/// `i`, `recv_bytes[i]` comes from comm rank `i`. Pairs with zero bytes exchange no message.
pub fn expand_alltoallv(
    comm: CommId,
    algo: CollAlgo,
    size: u32,
    me: Rank,
    send_bytes: &[u64],
    recv_bytes: &[u64],
    out: &mut Vec<Op>,
) -> Result<(), CollError> {
    let mut e = Expansion::alltoallv(
        comm,
        algo,
        size,
        me,
        send_bytes.into(),
        recv_bytes.into(),
        DEFAULT_ALLTOALL_THROTTLE,
    )?;
    e.fill(out, usize::MAX);
    Ok(())
}

/// One rank's part of one collective, generated a phase at a time. An algorithm with O(n) steps
/// (ring, pairwise exchange, scattered) then never holds its whole schedule, which at 8,192
/// ranks is 16k operations per rank. Every phase ends by waiting for all it posted, so request
/// ids restart at [`RESERVED_REQ_BASE`] in each [`fill`](Self::fill).
#[derive(Debug, Clone)]
pub struct Expansion {
    comm: CommId,
    n: u64,
    me: u64,
    plan: Plan,
    next: u64,
    phases: u64,
    /// Added to every tag: 0, or a non-blocking collective's lane.
    tag_offset: Tag,
}

/// Per-peer byte counts of an alltoall (uniform) or an alltoallv (given; zero pairs skipped).
#[derive(Debug, Clone)]
enum Counts {
    Uniform(u64),
    PerRank { send: Box<[u64]>, recv: Box<[u64]> },
}

impl Counts {
    fn send(&self, dst: u64) -> u64 {
        match self {
            Counts::Uniform(b) => *b,
            Counts::PerRank { send, .. } => send[dst as usize],
        }
    }
    fn recv(&self, src: u64) -> u64 {
        match self {
            Counts::Uniform(b) => *b,
            Counts::PerRank { recv, .. } => recv[src as usize],
        }
    }
    fn skip_zero(&self) -> bool {
        matches!(self, Counts::PerRank { .. })
    }
}

/// The algorithm that runs, with what it needs.
#[derive(Debug, Clone)]
enum Plan {
    BarrierDissemination,
    BarrierRd,
    BcastBinomial {
        root: u64,
        bytes: u64,
    },
    BcastScatterAllgather {
        root: u64,
        bytes: u64,
    },
    ReduceBinomial {
        root: u64,
        bytes: u64,
    },
    AllreduceRd {
        bytes: u64,
    },
    AllreduceRing {
        bytes: u64,
    },
    AllreduceRabenseifner {
        bytes: u64,
    },
    AllgatherRd {
        bytes: u64,
    },
    AllgatherRing {
        bytes: u64,
    },
    AllgatherBruck {
        bytes: u64,
    },
    AlltoallBruck {
        bytes: u64,
    },
    AlltoallPairwise(Counts),
    /// Posts `block` peers' receives and sends at a time.
    AlltoallScattered {
        counts: Counts,
        block: u64,
    },
    /// `node` consecutive ranks per node; each of its two parts posts `block` peers at a time.
    AlltoallFullLane {
        bytes: u64,
        node: u64,
        block: u64,
    },
    GatherBinomial {
        root: u64,
        bytes: u64,
    },
    ScatterBinomial {
        root: u64,
        bytes: u64,
    },
    ReduceScatterHalving {
        bytes: u64,
    },
    ReduceScatterPairwise {
        bytes: u64,
    },
    ReduceScatterRing {
        bytes: u64,
    },
    /// Scan and exscan send the same messages; only what a rank keeps differs.
    ScanRd {
        bytes: u64,
    },
}

/// Peers per scattered block; 0 (as in MPICH) posts all at once.
fn scatter_block(throttle: u32, n: u64) -> u64 {
    if throttle == 0 {
        n.max(1)
    } else {
        throttle as u64
    }
}

fn check_rank(size: u32, me: Rank) -> Result<(), CollError> {
    if size == 0 {
        return Err(CollError::EmptyCommunicator);
    }
    if me >= size {
        return Err(CollError::RankOutOfRange { me, size });
    }
    Ok(())
}

impl Expansion {
    /// Rank `me`'s part of a collective over `comm` (ranks comm-local); `bytes` and `root` mean
    /// what they mean in [`Op::Collective`]; `throttle` as [`DEFAULT_ALLTOALL_THROTTLE`].
    #[allow(clippy::too_many_arguments)]
    pub fn collective(
        comm: CommId,
        kind: CollKind,
        algo: CollAlgo,
        size: u32,
        me: Rank,
        root: Rank,
        bytes: u64,
        throttle: u32,
    ) -> Result<Self, CollError> {
        check_rank(size, me)?;
        let rooted = matches!(
            kind,
            CollKind::Bcast | CollKind::Reduce | CollKind::Gather | CollKind::Scatter
        );
        if rooted && root >= size {
            return Err(CollError::RootOutOfRange { kind, root, size });
        }
        let algo = effective_algorithm(kind, algo, size, bytes)?;
        let (n, root) = (size as u64, root as u64);
        use CollAlgo::*;
        let plan = match (kind, algo) {
            (CollKind::Barrier, Dissemination) => Plan::BarrierDissemination,
            (CollKind::Barrier, RecursiveDoubling) => Plan::BarrierRd,
            (CollKind::Bcast, BinomialTree) => Plan::BcastBinomial { root, bytes },
            (CollKind::Bcast, ScatterAllgather) => Plan::BcastScatterAllgather { root, bytes },
            (CollKind::Reduce, BinomialTree) => Plan::ReduceBinomial { root, bytes },
            (CollKind::Allreduce, RecursiveDoubling) => Plan::AllreduceRd { bytes },
            (CollKind::Allreduce, Ring) => Plan::AllreduceRing { bytes },
            (CollKind::Allreduce, Rabenseifner) => Plan::AllreduceRabenseifner { bytes },
            (CollKind::Allgather, RecursiveDoubling) => Plan::AllgatherRd { bytes },
            (CollKind::Allgather, Ring) => Plan::AllgatherRing { bytes },
            (CollKind::Allgather, Bruck) => Plan::AllgatherBruck { bytes },
            (CollKind::Alltoall, PairwiseExchange) => {
                Plan::AlltoallPairwise(Counts::Uniform(bytes))
            }
            (CollKind::Alltoall, Scattered) => Plan::AlltoallScattered {
                counts: Counts::Uniform(bytes),
                block: scatter_block(throttle, n),
            },
            (CollKind::Alltoall, Bruck) => Plan::AlltoallBruck { bytes },
            // One rank per node until `with_node_ranks` says otherwise.
            (CollKind::Alltoall, FullLane) => Plan::AlltoallFullLane {
                bytes,
                node: 1,
                block: scatter_block(throttle, n),
            },
            (CollKind::Gather, BinomialTree) => Plan::GatherBinomial { root, bytes },
            (CollKind::Scatter, BinomialTree) => Plan::ScatterBinomial { root, bytes },
            (CollKind::ReduceScatter, RecursiveHalving) => Plan::ReduceScatterHalving { bytes },
            (CollKind::ReduceScatter, PairwiseExchange) => Plan::ReduceScatterPairwise { bytes },
            (CollKind::ReduceScatter, Ring) => Plan::ReduceScatterRing { bytes },
            (CollKind::Scan | CollKind::Exscan, RecursiveDoubling) => Plan::ScanRd { bytes },
            (k, a) => {
                // effective_algorithm only returns pairs handled above.
                return Err(CollError::NotApplicable {
                    kind: Some(k),
                    algo: a,
                });
            }
        };
        Ok(Self::new(comm, n, me as u64, plan))
    }

    /// Rank `me`'s part of an alltoallv over `comm`: `send_bytes[i]` goes to comm rank `i`,
    /// `recv_bytes[i]` comes from comm rank `i`; `throttle` as [`DEFAULT_ALLTOALL_THROTTLE`].
    pub fn alltoallv(
        comm: CommId,
        algo: CollAlgo,
        size: u32,
        me: Rank,
        send_bytes: Box<[u64]>,
        recv_bytes: Box<[u64]>,
        throttle: u32,
    ) -> Result<Self, CollError> {
        check_rank(size, me)?;
        for (which, v) in [("send_bytes", &send_bytes), ("recv_bytes", &recv_bytes)] {
            if v.len() != size as usize {
                return Err(CollError::CountsLength {
                    which,
                    len: v.len(),
                    size,
                });
            }
        }
        let algo = if algo == CollAlgo::Auto {
            resolve_auto_alltoallv()
        } else {
            algo
        };
        let n = size as u64;
        let counts = Counts::PerRank {
            send: send_bytes,
            recv: recv_bytes,
        };
        let plan = match algo {
            CollAlgo::PairwiseExchange => Plan::AlltoallPairwise(counts),
            CollAlgo::Scattered => Plan::AlltoallScattered {
                counts,
                block: scatter_block(throttle, n),
            },
            a => {
                return Err(CollError::NotApplicable {
                    kind: None,
                    algo: a,
                })
            }
        };
        Ok(Self::new(comm, n, me as u64, plan))
    }

    fn new(comm: CommId, n: u64, me: u64, plan: Plan) -> Self {
        let steps = n - 1;
        let phases = match &plan {
            Plan::AllreduceRing { .. } => 2 * steps,
            Plan::AllgatherRing { .. }
            | Plan::AlltoallPairwise(_)
            | Plan::ReduceScatterPairwise { .. }
            | Plan::ReduceScatterRing { .. } => steps,
            Plan::BcastScatterAllgather { .. } => 1 + steps,
            Plan::AlltoallScattered { block, .. } => n.div_ceil(*block),
            Plan::AlltoallFullLane { node, block, .. } => full_lane_phases(n, *node, *block).1,
            _ => 1,
        };
        Self {
            comm,
            n,
            me,
            plan,
            next: 0,
            phases,
            tag_offset: 0,
        }
    }

    /// The same collective run as the `seq`-th non-blocking collective (counting from 0) its
    /// rank started on its communicator, which every member numbers alike (MPI has them start
    /// collectives on a communicator in one order). Its tags move to a lane of their own below
    /// every blocking collective's, so collectives in flight together never take each other's
    /// messages. Lanes are reused cyclically, as MPICH reuses the tags of its per-communicator
    /// counter for non-blocking collectives: on `size` ranks,
    /// `(2^31 - 1) / (max(2 size, 200) + 2) - 1` of them (62 at 2^24 ranks) in flight at once
    /// on one communicator stay apart.
    pub fn nonblocking(mut self, seq: u64) -> Self {
        let span = tag_span(self.n);
        let lanes = (i32::MAX as u64 / span).saturating_sub(1).max(1);
        let offset = (1 + seq % lanes).saturating_mul(span);
        self.tag_offset = -(offset.min(i32::MAX as u64) as Tag);
        self
    }

    /// Tells a full-lane alltoall that its communicator's ranks sit `node_ranks` to a node, in
    /// order (comm ranks `0..node_ranks` on one node, the next `node_ranks` on another, ...).
    /// Where `node_ranks` does not divide the communicator, the lanes span the whole
    /// communicator (one rank per node), as a flat alltoall. Other collectives are unchanged.
    /// Must come before the first [`fill`](Self::fill).
    pub fn with_node_ranks(mut self, node_ranks: u32) -> Self {
        let k = node_ranks as u64;
        if let Plan::AlltoallFullLane { node, block, .. } = &mut self.plan {
            *node = if k >= 1 && self.n.is_multiple_of(k) {
                k
            } else {
                1
            };
            self.phases = full_lane_phases(self.n, *node, *block).1;
        }
        self
    }

    /// Appends the next phases to `out` until at least `min_ops` operations were appended or the
    /// collective is complete. Returns `false` once there was nothing left to append.
    pub fn fill(&mut self, out: &mut Vec<Op>, min_ops: usize) -> bool {
        let start = out.len();
        let mut sink = OpSink::new(self.comm, out);
        sink.tag_offset = self.tag_offset;
        while self.next < self.phases && sink.out.len() - start < min_ops.max(1) {
            self.emit(&mut sink, self.next);
            self.next += 1;
        }
        sink.wait();
        out.len() > start
    }

    /// Writes every phase to `s` (the data-flow checker's entry).
    #[cfg(test)]
    pub(crate) fn emit_all<S: Sink>(&self, s: &mut S) {
        for phase in 0..self.phases {
            self.emit(s, phase);
        }
    }

    fn emit<S: Sink>(&self, s: &mut S, phase: u64) {
        let (n, me) = (self.n, self.me);
        let slot = |j: u64| j as usize;
        match &self.plan {
            Plan::BarrierDissemination => barrier_dissemination(s, n, me),
            Plan::BarrierRd => allreduce_rd(s, n, me, 0, Mode::Union, 1),
            Plan::BcastBinomial { root, bytes } => bcast_binomial(s, n, me, *root, *bytes),
            Plan::BcastScatterAllgather { root, bytes } => {
                // Van de Geijn: binomial scatter of n chunks, then a ring allgather of them.
                let vr = (me + n - root) % n;
                if phase == 0 {
                    let bytes_of = |a: u64, b: u64| split_range(*bytes, n, a, b);
                    binomial_scatter(s, n, vr, *root, &bytes_of, &slot);
                } else {
                    let size_of = |j: u64| split(*bytes, n, j);
                    ring_allgather_step(s, n, me, vr, &size_of, &slot, 0, phase - 1);
                }
            }
            Plan::ReduceBinomial { root, bytes } => reduce_binomial(s, n, me, *root, *bytes),
            Plan::AllreduceRd { bytes } => allreduce_rd(s, n, me, *bytes, Mode::Combine, 1),
            Plan::AllreduceRing { bytes } => {
                let size_of = |b: u64| split(*bytes, n, b);
                if phase < n - 1 {
                    reduce_scatter_ring_step(s, n, me, &size_of, 0, phase);
                } else {
                    ring_allgather_step(s, n, me, me, &size_of, &slot, n, phase - (n - 1));
                }
            }
            Plan::AllreduceRabenseifner { bytes } => allreduce_rabenseifner(s, n, me, *bytes),
            Plan::AllgatherRd { bytes } => allgather_rd(s, n, me, *bytes),
            Plan::AllgatherRing { bytes } => {
                ring_allgather_step(s, n, me, me, &|_| *bytes, &slot, 0, phase)
            }
            Plan::AllgatherBruck { bytes } => allgather_bruck(s, n, me, *bytes),
            Plan::AlltoallBruck { bytes } => alltoall_bruck(s, n, me, *bytes),
            Plan::AlltoallPairwise(counts) => alltoall_pairwise_step(s, n, me, counts, phase + 1),
            Plan::AlltoallScattered { counts, block } => {
                alltoall_scattered_block(s, n, me, counts, phase * block, *block)
            }
            Plan::AlltoallFullLane { bytes, node, block } => {
                alltoall_full_lane_phase(s, n, me, *bytes, *node, *block, phase)
            }
            Plan::GatherBinomial { root, bytes } => gather_binomial(s, n, me, *root, *bytes),
            Plan::ScatterBinomial { root, bytes } => {
                let vr = (me + n - root) % n;
                binomial_scatter(s, n, vr, *root, &|a, b| (b - a) * bytes, &|j| {
                    ((j + root) % n) as usize
                });
            }
            Plan::ReduceScatterHalving { bytes } => {
                recursive_halving_core(s, n, me, &|r| r, &|a, b| (b - a) * bytes, 1)
            }
            Plan::ReduceScatterPairwise { bytes } => {
                reduce_scatter_pairwise_step(s, n, me, *bytes, phase + 1)
            }
            Plan::ReduceScatterRing { bytes } => {
                reduce_scatter_ring_step(s, n, me, &|_| *bytes, 0, phase)
            }
            Plan::ScanRd { bytes } => scan_rd(s, n, me, *bytes),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The sink the algorithms write to.

/// How the receiver applies a message's blocks (for the data-flow checker only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The block replaces the receiver's copy (plain data movement).
    Copy,
    /// The block is reduced into the receiver's partial result; contributions must be disjoint.
    Combine,
    /// Knowledge that accumulates (barrier): overlap allowed.
    Union,
    /// A scan's partial result (block 0): reduced into the receiver's partial, and into its
    /// result (block 1) when it comes from lower ranks.
    Prefix,
}

/// Where an algorithm writes its messages. `blocks` lists the data blocks a message carries,
/// computed only if the sink wants them.
pub(crate) trait Sink {
    fn send(
        &mut self,
        peer: u64,
        tag: Tag,
        bytes: u64,
        mode: Mode,
        blocks: &dyn Fn(&mut Vec<usize>),
    );
    fn recv(&mut self, peer: u64, tag: Tag, bytes: u64);
    /// Wait for every request issued since the last wait.
    fn wait(&mut self);
}

struct OpSink<'a> {
    comm: CommId,
    out: &'a mut Vec<Op>,
    pending: Vec<ReqId>,
    next: ReqId,
    tag_offset: Tag,
}

impl<'a> OpSink<'a> {
    fn new(comm: CommId, out: &'a mut Vec<Op>) -> Self {
        Self {
            comm,
            out,
            pending: Vec::new(),
            next: RESERVED_REQ_BASE,
            tag_offset: 0,
        }
    }
    fn req(&mut self) -> ReqId {
        let r = self.next;
        self.next = self.next.wrapping_add(1).max(RESERVED_REQ_BASE);
        self.pending.push(r);
        r
    }
}

impl Sink for OpSink<'_> {
    fn send(&mut self, peer: u64, tag: Tag, bytes: u64, _: Mode, _: &dyn Fn(&mut Vec<usize>)) {
        let req = self.req();
        self.out.push(Op::Isend {
            comm: self.comm,
            dst: peer as Rank,
            tag: tag.saturating_add(self.tag_offset),
            bytes,
            req,
        });
    }
    fn recv(&mut self, peer: u64, tag: Tag, bytes: u64) {
        let req = self.req();
        self.out.push(Op::Irecv {
            comm: self.comm,
            src: SrcSel::Rank(peer as Rank),
            tag: TagSel::Tag(tag.saturating_add(self.tag_offset)),
            bytes,
            req,
        });
    }
    fn wait(&mut self) {
        if !self.pending.is_empty() {
            let reqs = std::mem::take(&mut self.pending).into_boxed_slice();
            self.out.push(Op::Waitall { reqs });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Tag of step `step` of a collective: negative so user `ANY_TAG` receives never match.
fn tag(step: u64) -> Tag {
    -1 - (step.min(i32::MAX as u64 - 1) as Tag)
}

/// More than the steps of any algorithm on `n` ranks (a ring allreduce's run to `2n - 1`,
/// Rabenseifner's post-step is step 200): every blocking collective's tag is above
/// `-tag_span(n)`.
fn tag_span(n: u64) -> u64 {
    (2 * n).max(200) + 2
}

/// Largest power of two <= n (n >= 1).
fn pof2_floor(n: u64) -> u64 {
    1 << (63 - n.leading_zeros())
}

/// Part `i` of `total` split into `parts` as evenly as possible.
pub(crate) fn split(total: u64, parts: u64, i: u64) -> u64 {
    total / parts + u64::from(i < total % parts)
}

/// Sum of parts `a..b` of `total` split into `parts`.
fn split_range(total: u64, parts: u64, a: u64, b: u64) -> u64 {
    let r = total % parts;
    (b - a) * (total / parts) + b.min(r).saturating_sub(a.min(r))
}

/// How the buffer of a bcast/reduce/allreduce is cut into blocks by an algorithm (for the
/// checker): one block, `size` blocks, or `pof2(size)` blocks.
#[cfg(test)]
pub(crate) fn buffer_segments(kind: CollKind, algo: CollAlgo, size: u32, bytes: u64) -> Vec<u64> {
    let n = size as u64;
    let parts = match (kind, algo) {
        (CollKind::Bcast, CollAlgo::ScatterAllgather) | (CollKind::Allreduce, CollAlgo::Ring) => n,
        (CollKind::Allreduce, CollAlgo::Rabenseifner) => pof2_floor(n),
        _ => 1,
    };
    (0..parts).map(|i| split(bytes, parts, i)).collect()
}

// ---------------------------------------------------------------------------------------------
// The algorithms. `n` = communicator size, `me` = comm rank, as u64 so sums cannot overflow.

/// Dissemination barrier (Hensgen, Finkel & Manber): in round k send to `me + 2^k`, receive from
/// `me - 2^k`; ceil(log2 n) rounds of zero-byte messages.
fn barrier_dissemination<S: Sink>(s: &mut S, n: u64, me: u64) {
    let mut dist = 1;
    let mut k = 0;
    while dist < n {
        s.recv((me + n - dist) % n, tag(k), 0);
        s.send((me + dist) % n, tag(k), 0, Mode::Union, &|v| v.push(0));
        s.wait();
        dist *= 2;
        k += 1;
    }
}

/// MPICH's non-power-of-two pre-step: the first `2 * rem` ranks pair up, even ones hand their
/// whole buffer to the odd neighbour and sit out. Returns the rank's index among the `pof2`
/// remaining ranks, or `None` if it sits out.
fn fold_to_pof2<S: Sink>(
    s: &mut S,
    n: u64,
    me: u64,
    bytes: u64,
    mode: Mode,
    nblocks: u64,
) -> Option<u64> {
    let rem = n - pof2_floor(n);
    if me < 2 * rem {
        if me & 1 == 0 {
            s.send(me + 1, tag(0), bytes, mode, &|v| {
                v.extend(0..nblocks as usize)
            });
            s.wait();
            None
        } else {
            s.recv(me - 1, tag(0), bytes);
            s.wait();
            Some(me / 2)
        }
    } else {
        Some(me - rem)
    }
}

/// The matching post-step: odd ranks of the first `2 * rem` give the result back.
fn unfold_from_pof2<S: Sink>(s: &mut S, n: u64, me: u64, bytes: u64, nblocks: u64, step: u64) {
    let rem = n - pof2_floor(n);
    if me < 2 * rem {
        if me % 2 == 1 {
            s.send(me - 1, tag(step), bytes, Mode::Copy, &|v| {
                v.extend(0..nblocks as usize)
            });
        } else {
            s.recv(me + 1, tag(step), bytes);
        }
        s.wait();
    }
}

/// Real rank of index `nr` among the pof2 ranks left after [`fold_to_pof2`].
fn pof2_real(n: u64, nr: u64) -> u64 {
    let rem = n - pof2_floor(n);
    if nr < rem {
        nr * 2 + 1
    } else {
        nr + rem
    }
}

/// Recursive-doubling allreduce (whole buffer exchanged with `me ^ 2^k`), with MPICH's
/// pre/post step for non-power-of-two sizes. Also the recursive-doubling barrier (0 bytes).
fn allreduce_rd<S: Sink>(s: &mut S, n: u64, me: u64, bytes: u64, mode: Mode, nblocks: u64) {
    let pof2 = pof2_floor(n);
    if let Some(nr) = fold_to_pof2(s, n, me, bytes, mode, nblocks) {
        let mut mask = 1;
        let mut step = 1;
        while mask < pof2 {
            let dst = pof2_real(n, nr ^ mask);
            s.send(dst, tag(step), bytes, mode, &|v| {
                v.extend(0..nblocks as usize)
            });
            s.recv(dst, tag(step), bytes);
            s.wait();
            mask <<= 1;
            step += 1;
        }
    }
    unfold_from_pof2(s, n, me, bytes, nblocks, 64);
}

/// Recursive-doubling scan and exscan (MPICH's `MPIR_Scan_intra_recursive_doubling` and its
/// exscan twin): in round k exchange the partial reduction of the rank's 2^k-block with
/// `me ^ 2^k` when that rank exists; a partial from below also goes into the result. Chosen over
/// Open MPI's linear chain (rank r waits for r - 1, n - 1 steps) because this module follows
/// MPICH and the chain's latency grows with n. Per rank: one send and one receive of `bytes`
/// per round whose partner exists, ceil(log2 n) rounds.
fn scan_rd<S: Sink>(s: &mut S, n: u64, me: u64, bytes: u64) {
    let mut mask = 1;
    let mut step = 0;
    while mask < n {
        let dst = me ^ mask;
        if dst < n {
            s.send(dst, tag(step), bytes, Mode::Prefix, &|v| v.push(0));
            s.recv(dst, tag(step), bytes);
            s.wait();
        }
        mask <<= 1;
        step += 1;
    }
}

/// Binomial-tree broadcast: receive from the parent (clear the lowest set bit of the relative
/// rank), then send to children `vr + 2^k` for decreasing k.
fn bcast_binomial<S: Sink>(s: &mut S, n: u64, me: u64, root: u64, bytes: u64) {
    let vr = (me + n - root) % n;
    let abs = |v: u64| (v + root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            s.recv(abs(vr - mask), tag(0), bytes);
            s.wait();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            s.send(abs(vr + mask), tag(0), bytes, Mode::Copy, &|v| v.push(0));
        }
        mask >>= 1;
    }
    s.wait();
}

/// Binomial scatter over relative ranks: relative rank `vr` receives the blocks of its subtree
/// `[vr, vr + lowbit(vr))` from its parent and hands `[c, c + m)` to each child `c = vr + m`.
/// `bytes_of(a, b)` is the size of blocks `a..b`, `block_id` maps a relative block to the id the
/// checker knows.
fn binomial_scatter<S: Sink>(
    s: &mut S,
    n: u64,
    vr: u64,
    root: u64,
    bytes_of: &dyn Fn(u64, u64) -> u64,
    block_id: &dyn Fn(u64) -> usize,
) {
    let abs = |v: u64| (v + root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            let hi = (vr + mask).min(n);
            s.recv(abs(vr - mask), tag(0), bytes_of(vr, hi));
            s.wait();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            let c = vr + mask;
            let hi = (c + mask).min(n);
            s.send(abs(c), tag(0), bytes_of(c, hi), Mode::Copy, &|v| {
                v.extend((c..hi).map(block_id))
            });
        }
        mask >>= 1;
    }
    s.wait();
}

/// Step `i` of a ring allgather: send block `pos - i` to the right neighbour and receive block
/// `pos - i - 1` from the left (positions mod n); after steps 0..n-1 every rank has every block.
#[allow(clippy::too_many_arguments)]
fn ring_allgather_step<S: Sink>(
    s: &mut S,
    n: u64,
    me: u64,
    pos: u64,
    size_of: &dyn Fn(u64) -> u64,
    block_id: &dyn Fn(u64) -> usize,
    tag0: u64,
    i: u64,
) {
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let sb = (pos + n - i % n) % n;
    let rb = (pos + 2 * n - i % n - 1) % n;
    s.send(right, tag(tag0 + 1 + i), size_of(sb), Mode::Copy, &|v| {
        v.push(block_id(sb))
    });
    s.recv(left, tag(tag0 + 1 + i), size_of(rb));
    s.wait();
}

/// Binomial-tree reduce (commutative): receive partial results from children `vr | 2^k` while
/// bit k of `vr` is clear, then send to the parent.
fn reduce_binomial<S: Sink>(s: &mut S, n: u64, me: u64, root: u64, bytes: u64) {
    let vr = (me + n - root) % n;
    let abs = |v: u64| (v + root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask == 0 {
            let src = vr | mask;
            if src < n {
                s.recv(abs(src), tag(0), bytes);
                s.wait();
            }
        } else {
            s.send(abs(vr & !mask), tag(0), bytes, Mode::Combine, &|v| {
                v.push(0)
            });
            s.wait();
            break;
        }
        mask <<= 1;
    }
}

/// Binomial-tree gather: like reduce, but a rank forwards the blocks of its whole subtree.
fn gather_binomial<S: Sink>(s: &mut S, n: u64, me: u64, root: u64, bytes: u64) {
    let vr = (me + n - root) % n;
    let abs = |v: u64| (v + root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask == 0 {
            let src = vr | mask;
            if src < n {
                let hi = (src + mask).min(n);
                s.recv(abs(src), tag(0), (hi - src) * bytes);
                s.wait();
            }
        } else {
            let hi = (vr + mask).min(n);
            s.send(
                abs(vr & !mask),
                tag(0),
                (hi - vr) * bytes,
                Mode::Copy,
                &|v| v.extend((vr..hi).map(|j| abs(j) as usize)),
            );
            s.wait();
            break;
        }
        mask <<= 1;
    }
}

/// Recursive halving among `p` (a power of two) participants with index `nr`: at each step keep
/// the half of the current block range containing `nr` and send the other half (reduced so far)
/// to `nr ^ mask`; ends holding block `nr` fully reduced. `bytes_of(a, b)` sizes blocks `a..b`,
/// `real` maps a participant index to its comm rank.
fn recursive_halving_core<S: Sink>(
    s: &mut S,
    p: u64,
    nr: u64,
    real: &dyn Fn(u64) -> u64,
    bytes_of: &dyn Fn(u64, u64) -> u64,
    step0: u64,
) {
    let (mut lo, mut hi) = (0, p);
    let mut mask = p / 2;
    let mut step = step0;
    while mask > 0 {
        let mid = lo + (hi - lo) / 2;
        let (keep, give) = if nr & mask == 0 {
            ((lo, mid), (mid, hi))
        } else {
            ((mid, hi), (lo, mid))
        };
        let dst = real(nr ^ mask);
        s.send(
            dst,
            tag(step),
            bytes_of(give.0, give.1),
            Mode::Combine,
            &|v| v.extend((give.0..give.1).map(|b| b as usize)),
        );
        s.recv(dst, tag(step), bytes_of(keep.0, keep.1));
        s.wait();
        (lo, hi) = keep;
        mask /= 2;
        step += 1;
    }
}

/// Rabenseifner allreduce: (pre-step to pof2), reduce-scatter by recursive halving over pof2
/// blocks, allgather by recursive doubling, (post-step).
fn allreduce_rabenseifner<S: Sink>(s: &mut S, n: u64, me: u64, bytes: u64) {
    let pof2 = pof2_floor(n);
    let bytes_of = |a: u64, b: u64| split_range(bytes, pof2, a, b);
    if let Some(nr) = fold_to_pof2(s, n, me, bytes, Mode::Combine, pof2) {
        let real = |x: u64| pof2_real(n, x);
        recursive_halving_core(s, pof2, nr, &real, &bytes_of, 1);
        let mut mask = 1;
        let mut step = 100;
        while mask < pof2 {
            let partner = nr ^ mask;
            let mine = nr & !(mask - 1);
            let theirs = partner & !(mask - 1);
            let dst = real(partner);
            s.send(
                dst,
                tag(step),
                bytes_of(mine, mine + mask),
                Mode::Copy,
                &|v| v.extend((mine..mine + mask).map(|b| b as usize)),
            );
            s.recv(dst, tag(step), bytes_of(theirs, theirs + mask));
            s.wait();
            mask <<= 1;
            step += 1;
        }
    }
    unfold_from_pof2(s, n, me, bytes, pof2, 200);
}

/// Recursive-doubling allgather (power-of-two sizes): exchange the aligned group of `2^k` blocks
/// with `me ^ 2^k`.
fn allgather_rd<S: Sink>(s: &mut S, n: u64, me: u64, bytes: u64) {
    let mut mask = 1;
    let mut step = 0;
    while mask < n {
        let partner = me ^ mask;
        let mine = me & !(mask - 1);
        s.send(partner, tag(step), mask * bytes, Mode::Copy, &|v| {
            v.extend((mine..mine + mask).map(|b| b as usize))
        });
        s.recv(partner, tag(step), mask * bytes);
        s.wait();
        mask <<= 1;
        step += 1;
    }
}

/// Bruck allgather: local slot j holds block `me + j`; at step k send slots `0..2^k` to
/// `me - 2^k` and receive the same count from `me + 2^k`; a last partial step for non-powers of two.
fn allgather_bruck<S: Sink>(s: &mut S, n: u64, me: u64, bytes: u64) {
    let mut pof2 = 1;
    let mut step = 0;
    while pof2 <= n / 2 {
        let (dst, src) = ((me + n - pof2) % n, (me + pof2) % n);
        s.send(dst, tag(step), pof2 * bytes, Mode::Copy, &|v| {
            v.extend((0..pof2).map(|j| ((me + j) % n) as usize))
        });
        s.recv(src, tag(step), pof2 * bytes);
        s.wait();
        pof2 *= 2;
        step += 1;
    }
    let rem = n - pof2;
    if rem > 0 {
        let (dst, src) = ((me + n - pof2) % n, (me + pof2) % n);
        s.send(dst, tag(step), rem * bytes, Mode::Copy, &|v| {
            v.extend((0..rem).map(|j| ((me + j) % n) as usize))
        });
        s.recv(src, tag(step), rem * bytes);
        s.wait();
    }
}

/// Step `i` (1..n) of a pairwise-exchange alltoall(v): exchange with `me ^ i` (power-of-two
/// sizes) or send to `me + i` and receive from `me - i`. Block (src, dst) has id `src * n + dst`.
fn alltoall_pairwise_step<S: Sink>(s: &mut S, n: u64, me: u64, c: &Counts, i: u64) {
    let (dst, src) = if n.is_power_of_two() {
        (me ^ i, me ^ i)
    } else {
        ((me + i) % n, (me + n - i) % n)
    };
    send_if(s, c.skip_zero(), dst, tag(i), c.send(dst), me * n + dst);
    recv_if(s, c.skip_zero(), src, tag(i), c.recv(src));
    s.wait();
}

/// One block of MPICH's scattered alltoall(v): for peer offsets `first..first + block` (own
/// offset 0 is a local copy) post the receive from `me + i` and the send to `me - i`, then wait.
fn alltoall_scattered_block<S: Sink>(
    s: &mut S,
    n: u64,
    me: u64,
    c: &Counts,
    first: u64,
    block: u64,
) {
    let offsets = first.max(1)..(first + block).min(n);
    for i in offsets.clone() {
        let src = (me + i) % n;
        recv_if(s, c.skip_zero(), src, tag(0), c.recv(src));
    }
    for i in offsets {
        let dst = (me + n - i) % n;
        send_if(s, c.skip_zero(), dst, tag(0), c.send(dst), me * n + dst);
    }
    s.wait();
}

/// A full-lane alltoall's phases on `n` ranks, `node` per node, `block` peers at a time: those
/// of the exchange between nodes, and the total.
fn full_lane_phases(n: u64, node: u64, block: u64) -> (u64, u64) {
    let lane = (n / node - 1).div_ceil(block);
    (lane, lane + (node - 1).div_ceil(block))
}

/// One phase of Träff and Hunold's full-lane alltoall ("Decomposing MPI collectives for
/// exploiting multi-lane communication", IEEE Cluster 2020). Rank `me` is rank `l` of node `b`
/// (ranks `b * node .. (b + 1) * node`). First, along its lane (rank `l` of every node) it sends
/// each other node, in one message, its blocks for all that node's ranks, as a scattered
/// alltoall does between ranks (receive from node `b + j`, send to node `b - j`). Then, inside
/// its node, it gives each other rank of it the blocks for that rank it now holds: one from
/// every node's rank `l`, its own included. A node's ranks thus send `nodes - 1` messages each
/// over the network instead of `n - node`.
fn alltoall_full_lane_phase<S: Sink>(
    s: &mut S,
    n: u64,
    me: u64,
    bytes: u64,
    node: u64,
    block: u64,
    phase: u64,
) {
    let nodes = n / node;
    let (b, l) = (me / node, me % node);
    let (lane_phases, _) = full_lane_phases(n, node, block);
    if phase < lane_phases {
        let offsets = phase * block + 1..((phase + 1) * block + 1).min(nodes);
        for j in offsets.clone() {
            s.recv((b + j) % nodes * node + l, tag(0), node * bytes);
        }
        for j in offsets {
            let to = (b + nodes - j) % nodes;
            s.send(to * node + l, tag(0), node * bytes, Mode::Copy, &|v| {
                v.extend((0..node).map(|i| (me * n + to * node + i) as usize))
            });
        }
    } else {
        let first = (phase - lane_phases) * block + 1;
        let offsets = first..(first + block).min(node);
        for i in offsets.clone() {
            s.recv(b * node + (l + i) % node, tag(1), nodes * bytes);
        }
        for i in offsets {
            let to = b * node + (l + node - i) % node;
            s.send(to, tag(1), nodes * bytes, Mode::Copy, &|v| {
                v.extend((0..nodes).map(|c| ((c * node + l) * n + to) as usize))
            });
        }
    }
    s.wait();
}

/// Send one alltoall block, unless it is empty and empty pairs are skipped (alltoallv).
fn send_if<S: Sink>(s: &mut S, skip_zero: bool, dst: u64, t: Tag, bytes: u64, block: u64) {
    if !(skip_zero && bytes == 0) {
        s.send(dst, t, bytes, Mode::Copy, &|v| v.push(block as usize));
    }
}

fn recv_if<S: Sink>(s: &mut S, skip_zero: bool, src: u64, t: Tag, bytes: u64) {
    if !(skip_zero && bytes == 0) {
        s.recv(src, t, bytes);
    }
}

/// Bruck alltoall: slot j of rank r holds the block destined to `r + j`; at step k every slot
/// with bit k set moves to `r + 2^k`. Each rank receives
/// `bytes * sum_k |{ j < n : bit k of j set }|` bytes in total.
fn alltoall_bruck<S: Sink>(s: &mut S, n: u64, me: u64, bytes: u64) {
    let mut pof2 = 1;
    let mut step = 0;
    while pof2 < n {
        let (dst, src) = ((me + pof2) % n, (me + n - pof2) % n);
        // Slots j < n with bit k set: pof2 in each full period of 2 * pof2, plus the tail.
        let count = n / (2 * pof2) * pof2 + (n % (2 * pof2)).saturating_sub(pof2);
        s.send(dst, tag(step), count * bytes, Mode::Copy, &|v| {
            for j in (0..n).filter(|j| j & pof2 != 0) {
                let orig = (me + n - (j & (pof2 - 1))) % n;
                let dest = (orig + j) % n;
                v.push((orig * n + dest) as usize);
            }
        });
        s.recv(src, tag(step), count * bytes);
        s.wait();
        pof2 *= 2;
        step += 1;
    }
}

/// Step `i` (1..n) of a pairwise reduce-scatter: send my contribution to block `me + i` to its
/// owner and combine the contribution to my block from `me - i`.
fn reduce_scatter_pairwise_step<S: Sink>(s: &mut S, n: u64, me: u64, bytes: u64, i: u64) {
    let (dst, src) = ((me + i) % n, (me + n - i) % n);
    s.send(dst, tag(i), bytes, Mode::Combine, &|v| v.push(dst as usize));
    s.recv(src, tag(i), bytes);
    s.wait();
}

/// Step `i` (0..n-1) of a ring reduce-scatter: send the partial block `me - 1 - i` right and
/// combine block `me - 2 - i` from the left; after n-1 steps rank `me` holds block `me` reduced.
fn reduce_scatter_ring_step<S: Sink>(
    s: &mut S,
    n: u64,
    me: u64,
    size_of: &dyn Fn(u64) -> u64,
    tag0: u64,
    i: u64,
) {
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let sb = (me + 2 * n - 1 - i) % n;
    let rb = (me + 2 * n - 2 - i) % n;
    s.send(right, tag(tag0 + i), size_of(sb), Mode::Combine, &|v| {
        v.push(sb as usize)
    });
    s.recv(left, tag(tag0 + i), size_of(rb));
    s.wait();
}

#[cfg(test)]
#[path = "collectives_tests.rs"]
mod tests;
