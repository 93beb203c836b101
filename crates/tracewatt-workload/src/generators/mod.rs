//! Built-in workloads: the ping-pong of the EEE paper, synthetic traffic, the TraceR/TraceRP
//! communication benchmarks, collective loops, paced and shaped frame streams and NPB-like
//! skeletons. Each is selected by `kind` in a run's configuration ([`WorkloadSpec`]) and built
//! for a rank count and seed by [`build`].
//!
//! Programs are streamed: a generator produces one iteration's operations at a time, so an
//! 8,192-rank job with thousands of iterations never sits in memory. Anything random is drawn
//! from [`tracewatt_core::Rng`] streams forked from the seed, so the same seed gives the same
//! operations.

mod npb;
mod stream;
mod synthetic;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::op::{CollAlgo, CollKind, Op, Program, Rank};

pub use npb::NpbClass;

/// A job's communication and computation, one program per rank.
pub trait Workload: std::fmt::Debug + Send + Sync {
    fn num_ranks(&self) -> u32;
    /// Communicators besides world (comm id = index + 1), each as its members' WORLD ranks in
    /// comm-rank order.
    fn comms(&self) -> Vec<Vec<Rank>>;
    /// Rank `rank`'s program, streamed (never materialised whole).
    fn program(&self, rank: Rank) -> Program;
}

/// An invalid workload configuration: which field and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("workload.{field}: {expected}")]
pub struct WorkloadError {
    /// The offending field (`ranks` for the job's rank count).
    pub field: &'static str,
    pub expected: String,
}

pub(crate) fn invalid(field: &'static str, expected: impl Into<String>) -> WorkloadError {
    WorkloadError {
        field,
        expected: expected.into(),
    }
}

/// A built-in workload, as written in a run's configuration (`[job.workload]`, selected by
/// `kind`). Every field but the streams' `rate_mbps` has a default; unknown fields are errors.
/// Times are in microseconds (`*_us`) unless their name says otherwise, sizes in bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Rank 0 sends `bytes` to rank 1, which replies (the EEE paper's ping at fixed intervals).
    /// Rank 0 posts the reply's receive and the ping, then computes for `interval_us` and waits,
    /// so rounds start every `interval_us` plus the send overhead (`mpi.send_overhead_ns`) as
    /// long as the round trip is shorter. Ranks other than 0 and 1 (if any) do nothing.
    Pingpong {
        /// Message size each way (default 64, the paper's ICMP packet).
        #[serde(default = "d_64")]
        bytes: u64,
        /// Rounds (default 100).
        #[serde(default = "d_100")]
        iterations: u32,
        /// Send interval (default 1000 us; the paper sweeps 100-2000 us).
        #[serde(default = "d_1000f")]
        interval_us: f64,
    },
    /// Every rank sends `messages` messages of `bytes` to uniformly random other ranks with
    /// `isend`, at times set by `arrival`; receives with `ANY_SOURCE`; finishes with a waitall.
    UniformRandom {
        /// Messages sent per rank (default 20).
        #[serde(default = "d_20")]
        messages: u32,
        /// Message size (default 2048).
        #[serde(default = "d_2048")]
        bytes: u64,
        /// Time between a rank's sends (default 1.0 us); the mean gap with Poisson arrivals.
        #[serde(default = "d_1f")]
        interval_us: f64,
        /// How send times follow from `interval_us` (default [`Arrival::Fixed`]).
        #[serde(default)]
        arrival: Arrival,
    },
    /// 3-D halo exchange (TraceR's near-neighbour benchmark, the communication of an
    /// unstructured-mesh code): per iteration every rank exchanges `bytes` with its 6 neighbours
    /// in a periodic 3-D process grid (`MPI_Dims_create` shape), then computes.
    NearNeighbor {
        /// Default 10.
        #[serde(default = "d_10")]
        iterations: u32,
        /// Bytes per neighbour per iteration (default 8192).
        #[serde(default = "d_8192")]
        bytes: u64,
        /// Compute per iteration (default 10 us).
        #[serde(default = "d_10f")]
        compute_us: f64,
    },
    /// TraceR's permutation benchmark (matrix multiply/transpose traffic): per iteration every
    /// rank sends `bytes` to its partner in a fresh random permutation of the ranks and receives
    /// from the rank that maps to it, then computes. Fixed points exchange nothing.
    Permutation {
        /// Default 10.
        #[serde(default = "d_10")]
        iterations: u32,
        /// Default 65536.
        #[serde(default = "d_65536")]
        bytes: u64,
        /// Default 10 us.
        #[serde(default = "d_10f")]
        compute_us: f64,
    },
    /// The MPI collectives of Qbox first-principles MD on a 2-D process grid (rows x columns,
    /// `MPI_Dims_create` shape): per iteration compute, an alltoall on the column communicator
    /// (the FFT transposes), compute, an allreduce on the row communicator (the dense linear
    /// algebra), a bcast on the column communicator (root cycling through the column) and an
    /// 8-byte allreduce on world (the energy).
    Qbox {
        /// Default 10.
        #[serde(default = "d_10")]
        iterations: u32,
        /// Alltoall block per pair (default 4096).
        #[serde(default = "d_4096")]
        alltoall_bytes: u64,
        /// Row allreduce buffer (default 65536).
        #[serde(default = "d_65536")]
        allreduce_bytes: u64,
        /// Column bcast buffer (default 16384).
        #[serde(default = "d_16384")]
        bcast_bytes: u64,
        /// Each of the two compute phases per iteration (default 10 us).
        #[serde(default = "d_10f")]
        compute_us: f64,
    },
    /// 4-D stencil (TraceR's stencil4d): per iteration exchange `bytes` with the 8 neighbours in
    /// a periodic 4-D process grid, then compute.
    Stencil4d {
        /// Default 10.
        #[serde(default = "d_10")]
        iterations: u32,
        /// Default 8192.
        #[serde(default = "d_8192")]
        bytes: u64,
        /// Default 10 us.
        #[serde(default = "d_10f")]
        compute_us: f64,
    },
    /// MPI_Alltoall of `bytes` per pair on world, per iteration, with `compute_us` between.
    A2a {
        /// Default 1.
        #[serde(default = "d_1")]
        iterations: u32,
        /// Default 1024.
        #[serde(default = "d_1024")]
        bytes: u64,
        /// Default 0 us.
        #[serde(default)]
        compute_us: f64,
        /// Collective algorithm (default auto).
        #[serde(default = "d_auto")]
        algo: CollAlgo,
    },
    /// MPI_Allreduce of `bytes` on world per iteration, with `compute_us` between (SST Ember's
    /// Allreduce motif; its defaults: one iteration, one double, no compute).
    Allreduce {
        /// Default 1.
        #[serde(default = "d_1")]
        iterations: u32,
        /// The buffer (default 8, one double).
        #[serde(default = "d_8")]
        bytes: u64,
        /// Default 0 us.
        #[serde(default)]
        compute_us: f64,
        /// Collective algorithm (default auto).
        #[serde(default = "d_auto")]
        algo: CollAlgo,
    },
    /// MPI_Bcast of `bytes` from `root` per iteration (SST Ember's Bcast motif).
    Bcast {
        #[serde(default = "d_1")]
        iterations: u32,
        #[serde(default = "d_8")]
        bytes: u64,
        #[serde(default)]
        compute_us: f64,
        #[serde(default = "d_auto")]
        algo: CollAlgo,
        /// Root rank (default 0).
        #[serde(default)]
        root: Rank,
    },
    /// MPI_Allgather of a block of `bytes` per rank per iteration (SST Ember's Allgather motif).
    Allgather {
        #[serde(default = "d_1")]
        iterations: u32,
        #[serde(default = "d_8")]
        bytes: u64,
        #[serde(default)]
        compute_us: f64,
        #[serde(default = "d_auto")]
        algo: CollAlgo,
    },
    /// MPI_Reduce of `bytes` to `root` per iteration (SST Ember's Reduce motif).
    Reduce {
        #[serde(default = "d_1")]
        iterations: u32,
        #[serde(default = "d_8")]
        bytes: u64,
        #[serde(default)]
        compute_us: f64,
        #[serde(default = "d_auto")]
        algo: CollAlgo,
        #[serde(default)]
        root: Rank,
    },
    /// Frames from rank 0 to rank 1, evenly paced at `rate_mbps` (research.md section 3:
    /// PSPacer, GtrcNET-1 "ifg"). Rank 1 acknowledges like TCP (`stream.rs` has the details).
    /// Needs at least 2 ranks; other ranks do nothing.
    PacedStream {
        /// Average rate, Mb/s (required).
        rate_mbps: f64,
        /// Frames are sent while their send time is below this (default 0.1 s).
        #[serde(default = "d_0_1f")]
        duration_s: f64,
        /// Default 1500 (an Ethernet MTU).
        #[serde(default = "d_1500")]
        frame_bytes: u64,
        /// Data frames per ACK (default 2, TCP's delayed ACK; 0: no ACKs).
        #[serde(default = "d_2")]
        ack_every: u32,
        /// Default 64 (a minimum Ethernet frame).
        #[serde(default = "d_64")]
        ack_bytes: u64,
    },
    /// Frames from rank 0 to rank 1 in token-bucket bursts: every `bucket_period_us` the frames
    /// earned by the end of that period leave at once (research.md section 3: Linux HTB,
    /// GtrcNET-1 "shape").
    ShapedStream {
        rate_mbps: f64,
        #[serde(default = "d_0_1f")]
        duration_s: f64,
        #[serde(default = "d_1500")]
        frame_bytes: u64,
        #[serde(default = "d_2")]
        ack_every: u32,
        #[serde(default = "d_64")]
        ack_bytes: u64,
        /// Default 8000 us (the paper's 8 ms bursts).
        #[serde(default = "d_8000f")]
        bucket_period_us: f64,
    },
    /// NPB FT skeleton (see [`NpbClass`] for the parameters of all NPB kinds).
    Ft {
        #[serde(default)]
        class: NpbClass,
        #[serde(default)]
        iterations: Option<u32>,
        #[serde(default = "d_1f")]
        compute_scale: f64,
        #[serde(default)]
        gflops_per_rank: Option<f64>,
    },
    Cg {
        #[serde(default)]
        class: NpbClass,
        #[serde(default)]
        iterations: Option<u32>,
        #[serde(default = "d_1f")]
        compute_scale: f64,
        #[serde(default)]
        gflops_per_rank: Option<f64>,
    },
    Mg {
        #[serde(default)]
        class: NpbClass,
        #[serde(default)]
        iterations: Option<u32>,
        #[serde(default = "d_1f")]
        compute_scale: f64,
        #[serde(default)]
        gflops_per_rank: Option<f64>,
    },
    Lu {
        #[serde(default)]
        class: NpbClass,
        #[serde(default)]
        iterations: Option<u32>,
        #[serde(default = "d_1f")]
        compute_scale: f64,
        #[serde(default)]
        gflops_per_rank: Option<f64>,
    },
    Bt {
        #[serde(default)]
        class: NpbClass,
        #[serde(default)]
        iterations: Option<u32>,
        #[serde(default = "d_1f")]
        compute_scale: f64,
        #[serde(default)]
        gflops_per_rank: Option<f64>,
    },
    Sp {
        #[serde(default)]
        class: NpbClass,
        #[serde(default)]
        iterations: Option<u32>,
        #[serde(default = "d_1f")]
        compute_scale: f64,
        #[serde(default)]
        gflops_per_rank: Option<f64>,
    },
    Ep {
        #[serde(default)]
        class: NpbClass,
        #[serde(default)]
        iterations: Option<u32>,
        #[serde(default = "d_1f")]
        compute_scale: f64,
        #[serde(default)]
        gflops_per_rank: Option<f64>,
    },
    Is {
        #[serde(default)]
        class: NpbClass,
        #[serde(default)]
        iterations: Option<u32>,
        #[serde(default = "d_1f")]
        compute_scale: f64,
        #[serde(default)]
        gflops_per_rank: Option<f64>,
    },
}

/// When `uniform_random`'s ranks send.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// After each send a rank computes for `interval_us`: its period is `interval_us` plus the
    /// send overhead, and all ranks run in lockstep.
    #[default]
    Fixed,
    /// A Poisson process per rank: exponential gaps of mean `interval_us`, each rank with its
    /// own random stream, sends at absolute times (the send overhead does not add to the gap),
    /// like CODES' and SST's synthetic traffic.
    Poisson,
}

fn d_1() -> u32 {
    1
}
fn d_2() -> u32 {
    2
}
fn d_10() -> u32 {
    10
}
fn d_20() -> u32 {
    20
}
fn d_100() -> u32 {
    100
}
fn d_8() -> u64 {
    8
}
fn d_64() -> u64 {
    64
}
fn d_1024() -> u64 {
    1024
}
fn d_1500() -> u64 {
    1500
}
fn d_2048() -> u64 {
    2048
}
fn d_4096() -> u64 {
    4096
}
fn d_8192() -> u64 {
    8192
}
fn d_16384() -> u64 {
    16384
}
fn d_65536() -> u64 {
    65536
}
fn d_0_1f() -> f64 {
    0.1
}
fn d_1f() -> f64 {
    1.0
}
fn d_10f() -> f64 {
    10.0
}
fn d_1000f() -> f64 {
    1000.0
}
fn d_8000f() -> f64 {
    8000.0
}
fn d_auto() -> CollAlgo {
    CollAlgo::Auto
}

impl WorkloadSpec {
    /// The `kind` name as written in configuration.
    pub fn kind_name(&self) -> &'static str {
        match self {
            WorkloadSpec::Pingpong { .. } => "pingpong",
            WorkloadSpec::UniformRandom { .. } => "uniform_random",
            WorkloadSpec::NearNeighbor { .. } => "near_neighbor",
            WorkloadSpec::Permutation { .. } => "permutation",
            WorkloadSpec::Qbox { .. } => "qbox",
            WorkloadSpec::Stencil4d { .. } => "stencil4d",
            WorkloadSpec::A2a { .. } => "a2a",
            WorkloadSpec::Allreduce { .. } => "allreduce",
            WorkloadSpec::Bcast { .. } => "bcast",
            WorkloadSpec::Allgather { .. } => "allgather",
            WorkloadSpec::Reduce { .. } => "reduce",
            WorkloadSpec::PacedStream { .. } => "paced_stream",
            WorkloadSpec::ShapedStream { .. } => "shaped_stream",
            WorkloadSpec::Ft { .. } => "ft",
            WorkloadSpec::Cg { .. } => "cg",
            WorkloadSpec::Mg { .. } => "mg",
            WorkloadSpec::Lu { .. } => "lu",
            WorkloadSpec::Bt { .. } => "bt",
            WorkloadSpec::Sp { .. } => "sp",
            WorkloadSpec::Ep { .. } => "ep",
            WorkloadSpec::Is { .. } => "is",
        }
    }
}

/// Builds a workload for `ranks` ranks; `seed` drives every random choice.
pub fn build(
    spec: &WorkloadSpec,
    ranks: u32,
    seed: u64,
) -> Result<Box<dyn Workload>, WorkloadError> {
    if ranks == 0 {
        return Err(invalid("ranks", "must be >= 1"));
    }
    use WorkloadSpec as W;
    match *spec {
        W::Pingpong {
            bytes,
            iterations,
            interval_us,
        } => synthetic::pingpong(ranks, bytes, iterations, interval_us),
        W::UniformRandom {
            messages,
            bytes,
            interval_us,
            arrival,
        } => synthetic::uniform_random(ranks, seed, messages, bytes, interval_us, arrival),
        W::NearNeighbor {
            iterations,
            bytes,
            compute_us,
        } => synthetic::halo("near_neighbor", ranks, 3, iterations, bytes, compute_us),
        W::Stencil4d {
            iterations,
            bytes,
            compute_us,
        } => synthetic::halo("stencil4d", ranks, 4, iterations, bytes, compute_us),
        W::Permutation {
            iterations,
            bytes,
            compute_us,
        } => synthetic::permutation(ranks, seed, iterations, bytes, compute_us),
        W::Qbox {
            iterations,
            alltoall_bytes,
            allreduce_bytes,
            bcast_bytes,
            compute_us,
        } => synthetic::qbox(
            ranks,
            iterations,
            [alltoall_bytes, allreduce_bytes, bcast_bytes],
            compute_us,
        ),
        W::A2a { .. }
        | W::Allreduce { .. }
        | W::Bcast { .. }
        | W::Allgather { .. }
        | W::Reduce { .. } => collective_loop(spec, ranks),
        W::PacedStream { .. } | W::ShapedStream { .. } => frame_stream(spec, ranks),
        W::Ft { .. }
        | W::Cg { .. }
        | W::Mg { .. }
        | W::Lu { .. }
        | W::Bt { .. }
        | W::Sp { .. }
        | W::Ep { .. }
        | W::Is { .. } => npb_skeleton(spec, ranks),
    }
}

/// The collective loops: `a2a`, `allreduce`, `bcast`, `allgather`, `reduce`.
fn collective_loop(spec: &WorkloadSpec, ranks: u32) -> Result<Box<dyn Workload>, WorkloadError> {
    use WorkloadSpec as W;
    let (kind, iterations, bytes, compute_us, algo, root) = match *spec {
        W::A2a {
            iterations,
            bytes,
            compute_us,
            algo,
        } => (CollKind::Alltoall, iterations, bytes, compute_us, algo, 0),
        W::Allreduce {
            iterations,
            bytes,
            compute_us,
            algo,
        } => (CollKind::Allreduce, iterations, bytes, compute_us, algo, 0),
        W::Bcast {
            iterations,
            bytes,
            compute_us,
            algo,
            root,
        } => (CollKind::Bcast, iterations, bytes, compute_us, algo, root),
        W::Allgather {
            iterations,
            bytes,
            compute_us,
            algo,
        } => (CollKind::Allgather, iterations, bytes, compute_us, algo, 0),
        W::Reduce {
            iterations,
            bytes,
            compute_us,
            algo,
            root,
        } => (CollKind::Reduce, iterations, bytes, compute_us, algo, root),
        _ => unreachable!("`{}` is not a collective loop", spec.kind_name()),
    };
    synthetic::collective_loop(kind, ranks, iterations, bytes, compute_us, algo, root)
}

/// The frame streams: `paced_stream`, and `shaped_stream` with its bucket period.
fn frame_stream(spec: &WorkloadSpec, ranks: u32) -> Result<Box<dyn Workload>, WorkloadError> {
    use WorkloadSpec as W;
    let (rate_mbps, duration_s, frame_bytes, ack_every, ack_bytes, bucket_period_us) = match *spec {
        W::PacedStream {
            rate_mbps,
            duration_s,
            frame_bytes,
            ack_every,
            ack_bytes,
        } => (
            rate_mbps,
            duration_s,
            frame_bytes,
            ack_every,
            ack_bytes,
            None,
        ),
        W::ShapedStream {
            rate_mbps,
            duration_s,
            frame_bytes,
            ack_every,
            ack_bytes,
            bucket_period_us,
        } => (
            rate_mbps,
            duration_s,
            frame_bytes,
            ack_every,
            ack_bytes,
            Some(bucket_period_us),
        ),
        _ => unreachable!("`{}` is not a frame stream", spec.kind_name()),
    };
    let params = stream::Params {
        rate_mbps,
        duration_s,
        frame_bytes,
        ack_every,
        ack_bytes,
    };
    stream::build(ranks, params, bucket_period_us)
}

/// The NPB skeletons, which share their parameters.
fn npb_skeleton(spec: &WorkloadSpec, ranks: u32) -> Result<Box<dyn Workload>, WorkloadError> {
    use WorkloadSpec as W;
    let params = match *spec {
        W::Ft {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        }
        | W::Cg {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        }
        | W::Mg {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        }
        | W::Lu {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        }
        | W::Bt {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        }
        | W::Sp {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        }
        | W::Ep {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        }
        | W::Is {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        } => npb::Params {
            class,
            iterations,
            compute_scale,
            gflops_per_rank,
        },
        _ => unreachable!("`{}` is not an NPB skeleton", spec.kind_name()),
    };
    npb::build(spec.kind_name(), ranks, params)
}

// ---------------------------------------------------------------------------------------------
// Shared pieces.

type Body = dyn Fn(Rank) -> Program + Send + Sync;

/// A workload defined by a program-making closure.
pub(crate) struct Generated {
    name: &'static str,
    ranks: u32,
    comms: Vec<Vec<Rank>>,
    body: Arc<Body>,
}

impl std::fmt::Debug for Generated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generated")
            .field("name", &self.name)
            .field("ranks", &self.ranks)
            .field("comms", &self.comms.len())
            .finish()
    }
}

impl Workload for Generated {
    fn num_ranks(&self) -> u32 {
        self.ranks
    }
    fn comms(&self) -> Vec<Vec<Rank>> {
        self.comms.clone()
    }
    fn program(&self, rank: Rank) -> Program {
        (self.body)(rank)
    }
}

pub(crate) fn generated(
    name: &'static str,
    ranks: u32,
    comms: Vec<Vec<Rank>>,
    body: impl Fn(Rank) -> Program + Send + Sync + 'static,
) -> Result<Box<dyn Workload>, WorkloadError> {
    Ok(Box::new(Generated {
        name,
        ranks,
        comms,
        body: Arc::new(body),
    }))
}

/// A program of `count` steps, each step's ops made on demand.
pub(crate) fn stepped(count: u64, step: impl Fn(u64) -> Vec<Op> + Send + 'static) -> Program {
    Box::new((0..count).flat_map(step).map(Ok))
}

/// A time field in microseconds, in picoseconds (checked as every configured time is).
pub(crate) fn us_field(field: &'static str, us: f64) -> Result<u64, WorkloadError> {
    use tracewatt_core::time;
    time::duration(us, time::US).map_err(|e| invalid(field, e.to_string()))
}

pub(crate) fn at_least_one(field: &'static str, v: u32) -> Result<(), WorkloadError> {
    if v == 0 {
        Err(invalid(field, "must be >= 1"))
    } else {
        Ok(())
    }
}

/// Balanced factorisation of `n` into `d` dimensions, largest first (like `MPI_Dims_create`).
pub(crate) fn dims_create(n: u32, d: usize) -> Vec<u32> {
    let mut factors = Vec::new();
    let mut m = n;
    let mut p = 2;
    while p * p <= m {
        while m / p * p == m {
            factors.push(p);
            m /= p;
        }
        p += 1;
    }
    if m > 1 {
        factors.push(m);
    }
    let mut dims = vec![1u32; d];
    for f in factors.into_iter().rev() {
        if let Some(smallest) = dims.iter_mut().min() {
            *smallest *= f;
        }
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

#[cfg(test)]
mod tests;
