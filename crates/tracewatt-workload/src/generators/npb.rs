//! NPB-like skeletons: the communication of the NAS Parallel Benchmarks 3.x MPI versions (which
//! calls, partners and message sizes per class), with computation replaced by `Compute` ops.
//!
//! Parameters of every NPB kind (`ft, cg, mg, lu, bt, sp, ep, is`):
//!
//! - `class` (`"S"`, `"W"`, `"A"`, `"B"`, `"C"`, `"D"`; default `"B"`, one of the EEE paper's
//!   classes): problem size.
//! - `iterations` (default: the class's own count): time steps / outer iterations.
//! - `compute_scale` (default 1.0): multiplies every compute time.
//! - `gflops_per_rank` (default per benchmark, below): the rate at which one rank executes the
//!   benchmark's operation count.
//!
//! Compute time per iteration = (the benchmark's operation count per iteration, from the formula
//! NPB itself uses to report Mop/s) / ranks / `gflops_per_rank` x `compute_scale`:
//!
//! | kind | ops per iteration (NPB's Mop/s formula) | default Gop/s per rank | ranks |
//! |---|---|---|---|
//! | ft | `N (5.23518 + 7.21113 ln N)`, N = nx ny nz (+ `N (14.8157 + 7.19641 ln N)` once) | 0.8 | power of two, <= ny nz |
//! | cg | `2 na (3 + z(z+1) + 25 (5 + z(z+1)) + 3)`, z = nonzer | 0.25 | power of two |
//! | mg | `58 n^3` | 1.0 | power of two |
//! | lu | `1984.77 n^3 - 10923.3 n^2 + 27770.9 n - 144010` | 1.5 | power of two |
//! | bt | `3478.8 n^3 - 17655.7 n^2 + 28023.7 n` | 2.0 | square |
//! | sp | `881.174 n^3 - 4683.91 n^2 + 11484.5 n - 19272.4` | 1.2 | square |
//! | ep | `2^(m+1)` (one phase) | 0.045 | any |
//! | is | `total_keys` | 0.04 | power of two |
//!
//! The default rates are calibrated to a 2.0 GHz Sandy Bridge core (the EEE paper's Xeon
//! E5-2630L): e.g. FT class C on 16 ranks then computes ~25 s of its measured 35.7 s. On the
//! paper's setup (`miwa2014-16node`, 4 nodes x 4 ranks on one switch, EEE off) FT class C runs
//! 37.8 s, SP classes B and C 19.3 and 77.3 s, BT class C 91.5 s, against the measured 35.7,
//! 19.2, 84.1 and 93.7 s (BT's on the M7100 switch; research.md section 1; no CG time is given).
//!
//! Communication per benchmark (sizes in bytes; doubles are 8 B, complex 16 B):
//!
//! - **ft**: 3-D FFT with transposes. 1-D layout (ranks <= min(ny, nz)): one `MPI_Alltoall` on
//!   world of `16 N / ranks^2` per pair per FFT; 2-D layout otherwise (np1 x np2, np2 the largest
//!   power of two <= nz): alltoalls on both sub-communicators. One forward FFT before the
//!   iterations; per iteration compute (evolve + inverse FFT), the transpose(s) and the 16-byte
//!   checksum `MPI_Reduce` to rank 0.
//! - **cg**: nprows x npcols grid (npcols = nprows or 2 nprows), rank r owning the rows of block
//!   r / npcols (L = na / nprows of them). Per conjugate-gradient step (25 per outer iteration
//!   and a residual step): the matrix-vector product's row reduction (log2 npcols irecv/send
//!   exchanges along the row, nearest column first, each of the whole `8 L` on a square grid;
//!   on a non-square one `8 L/2`, the first exchange sending the other half), the transpose
//!   exchange with `exch_proc` (NPB's formula, the same `8 L` or `8 L/2`), and two 8-byte dot
//!   product reductions over the row (log2 npcols exchanges each, farthest column first); a
//!   16-byte norm reduction per outer iteration. (NPB 3.3/3.4's `setup_submatrix_info`; the
//!   DUMPI trace of CG class S on 4 ranks carries exactly these bytes per iteration.)
//! - **mg**: periodic 3-D process grid (powers of two, x first). Per V-cycle `comm3` halo
//!   exchanges axis by axis at every level (after resid at the top, rprj3 on the way down, psinv
//!   at the bottom, resid + psinv on the way up); face of `8 (e_a + 2)(e_b + 2)` for local
//!   extents `e = max(1, 2^k / p)`. Two 8-byte allreduces (norm2u3) before and after.
//! - **lu**: xdim x ydim grid (xdim >= ydim), no wrap-around. Per SSOR iteration: `exchange_3`
//!   (2 layers x 5 variables of each boundary, to each neighbour), then the lower-triangular
//!   wavefront over nz-2 planes (blocking recv from north and west, compute, blocking send to
//!   south and east, `40 x` boundary length each) and the upper one in reverse. Two 40-byte
//!   allreduces (l2norm) at the end.
//! - **bt, sp**: multi-partition over q x q ranks, q cells per rank (cell c of rank (i, j) at
//!   ((i+c), (j+c), c) mod q, so the x/y/z successors are (i+1, j), (i, j+1), (i-1, j-1)). Per
//!   time step, as NPB 3.3's `adi`: `copy_faces` (6 directions, 2 layers x 5 variables of the q-1
//!   interior cell faces), `compute_rhs` (sp also `txinvr`), the x, y and z solves pipelined over
//!   the q cells, `add`. A forward stage builds the cell's left-hand side (sp while the
//!   predecessor's message is in flight; bt receives first), waits for that message,
//!   eliminates and passes `w` doubles per face point to the successor (bt 30, sp 22); a back
//!   substitution stage (sp first inverts the cell finished before — `ninvr`, `pinvr`, `tzetar`
//!   — while the successor's message is in flight) waits, substitutes and passes 5 (bt) or 10
//!   (sp) to the predecessor. Two 40-byte allreduces at the end. The step's operations (NPB's
//!   formula above) are shared between these phases in the proportions of the source:
//!
//!   | operations per grid point and time step | sp | bt |
//!   |---|---|---|
//!   | `compute_rhs` (sp + `txinvr`) | 445 + 27 | 440 |
//!   | per direction, forward: left-hand side before the wait | 28 | 0 |
//!   | per direction, forward: after the wait (bt: left-hand side and block elimination) | 67 | 990 |
//!   | per direction, back: inversion before the wait (x / y / z) | 7 / 7 / 27 | 0 |
//!   | per direction, back: after the wait | 30 | 50 |
//!   | `add` | 5 | 5 |
//!   | total (NPB's formula at class C, n = 162) | 893 (853) | 3,565 (3,371) |
//!
//!   Counted in the NPB 3.3 MPI source: the `+ - * /` of the assignments in each routine's
//!   grid-point loops, an intrinsic (`dmax1`, ...) as one, a routine called per point (bt's
//!   `binvcrhs`, `matmul_sub`, `matvec_sub`) with its own count, boundary-plane loops left out.
//!   A stage works on one of the rank's q cells: 1/q of a direction's share.
//! - **ep**: compute, then allreduces of 8, 8 and 80 bytes (sx, sy, the 10 annulus counts).
//! - **is**: per iteration compute, allreduce of the bucket sizes (`4 (2^buckets + 5)`),
//!   alltoall of the 4-byte send counts, alltoallv of the keys (4 B each, spread evenly — NPB
//!   assigns buckets to balance keys per rank); at the end the boundary-key send to the next
//!   rank and a 4-byte reduce.

use serde::{Deserialize, Serialize};

use super::synthetic::halo_ops;
use super::{generated, invalid, stepped, Workload, WorkloadError};
use crate::op::{CollAlgo, CollKind, CommId, Op, Rank, SrcSel, Tag, TagSel, WORLD};

/// NPB problem class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub enum NpbClass {
    #[serde(alias = "s")]
    S,
    #[serde(alias = "w")]
    W,
    #[serde(alias = "a")]
    A,
    #[default]
    #[serde(alias = "b")]
    B,
    #[serde(alias = "c")]
    C,
    #[serde(alias = "d")]
    D,
}

impl NpbClass {
    fn idx(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Params {
    pub class: NpbClass,
    pub iterations: Option<u32>,
    pub compute_scale: f64,
    pub gflops_per_rank: Option<f64>,
}

/// Validated compute model: picoseconds for `ops` operations spread over all ranks.
#[derive(Debug, Clone, Copy)]
struct Rate {
    ps_per_op_per_rank: f64,
}

impl Rate {
    /// The compute time of `ops` operations, checked as every configured time is (a large
    /// `compute_scale` or a small `gflops_per_rank` can make it too long).
    fn ps(self, ops: f64) -> Result<u64, WorkloadError> {
        use tracewatt_core::time;
        time::duration((ops * self.ps_per_op_per_rank).max(0.0), time::PS).map_err(|e| {
            invalid(
                "compute_scale",
                format!("with gflops_per_rank, gives a compute period that {e}"),
            )
        })
    }
}

fn compute(ps: u64) -> Option<Op> {
    (ps > 0).then_some(Op::Compute { ps })
}

fn coll(comm: CommId, kind: CollKind, root: Rank, bytes: u64) -> Op {
    Op::Collective {
        comm,
        kind,
        root,
        bytes,
        algo: CollAlgo::Auto,
    }
}

fn log2(n: u32) -> u32 {
    31 - n.leading_zeros()
}

fn need_pow2(name: &str, ranks: u32) -> Result<(), WorkloadError> {
    if ranks.is_power_of_two() {
        Ok(())
    } else {
        Err(invalid(
            "ranks",
            format!("{name} needs a power-of-two rank count, got {ranks}"),
        ))
    }
}

pub(super) fn build(
    name: &'static str,
    ranks: u32,
    p: Params,
) -> Result<Box<dyn Workload>, WorkloadError> {
    if let Some(0) = p.iterations {
        return Err(invalid("iterations", "must be >= 1"));
    }
    if !(p.compute_scale.is_finite() && p.compute_scale >= 0.0) {
        return Err(invalid(
            "compute_scale",
            format!("must be a finite number >= 0, got {}", p.compute_scale),
        ));
    }
    let default_rate = match name {
        "ft" => 0.8,
        "cg" => 0.25,
        "mg" => 1.0,
        "lu" => 1.5,
        "bt" => 2.0,
        "sp" => 1.2,
        "ep" => 0.045,
        _ => 0.04,
    };
    let g = p.gflops_per_rank.unwrap_or(default_rate);
    if !(g.is_finite() && g > 0.0) {
        return Err(invalid(
            "gflops_per_rank",
            format!("must be a finite number > 0, got {g}"),
        ));
    }
    // ops / ranks / (g * 1e9) s = ops * 1000 / (ranks * g) ps.
    let rate = Rate {
        ps_per_op_per_rank: p.compute_scale * 1000.0 / (ranks as f64 * g),
    };
    let c = p.class.idx();
    match name {
        "ft" => ft(ranks, p, rate, c),
        "cg" => cg(ranks, p, rate, c),
        "mg" => mg(ranks, p, rate, c),
        "lu" => lu(ranks, p, rate, c),
        "bt" | "sp" => bt_sp(name, ranks, p, rate, c),
        "ep" => ep(ranks, p, rate, c),
        _ => is(ranks, p, rate, c),
    }
}

fn ep(ranks: u32, p: Params, rate: Rate, c: usize) -> Result<Box<dyn Workload>, WorkloadError> {
    const M: [u32; 6] = [24, 25, 28, 30, 32, 36];
    let iters = p.iterations.unwrap_or(1);
    let ps = rate.ps(2f64.powi(M[c] as i32 + 1))?;
    generated("ep", ranks, Vec::new(), move |_| {
        stepped(iters as u64, move |_| {
            let mut v: Vec<Op> = compute(ps).into_iter().collect();
            v.push(coll(WORLD, CollKind::Allreduce, 0, 8));
            v.push(coll(WORLD, CollKind::Allreduce, 0, 8));
            v.push(coll(WORLD, CollKind::Allreduce, 0, 80));
            v
        })
    })
}

fn is(ranks: u32, p: Params, rate: Rate, c: usize) -> Result<Box<dyn Workload>, WorkloadError> {
    need_pow2("is", ranks)?;
    const KEYS_LOG2: [u32; 6] = [16, 20, 23, 25, 27, 31];
    const BUCKETS_LOG2: [u32; 6] = [9, 10, 10, 10, 10, 10];
    let total = 1u64 << KEYS_LOG2[c];
    let bucket_bytes = 4 * ((1u64 << BUCKETS_LOG2[c]) + 5);
    let iters = p.iterations.unwrap_or(10);
    let ps = rate.ps(total as f64)?;
    let np = ranks as u64;
    let split = crate::collectives::split;
    generated("is", ranks, Vec::new(), move |rank| {
        let me = rank as u64;
        let mine = split(total, np, me);
        let body = stepped(iters as u64, move |_| {
            let send: Box<[u64]> = (0..np)
                .map(|d| if d == me { 0 } else { 4 * split(mine, np, d) })
                .collect();
            let recv: Box<[u64]> = (0..np)
                .map(|s| {
                    if s == me {
                        0
                    } else {
                        4 * split(split(total, np, s), np, me)
                    }
                })
                .collect();
            let mut v: Vec<Op> = compute(ps).into_iter().collect();
            v.push(coll(WORLD, CollKind::Allreduce, 0, bucket_bytes));
            v.push(coll(WORLD, CollKind::Alltoall, 0, 4));
            v.push(Op::Alltoallv {
                comm: WORLD,
                send_bytes: send,
                recv_bytes: recv,
                algo: CollAlgo::Auto,
            });
            v
        });
        let fin = std::iter::once_with(move || {
            let mut v = Vec::new();
            let mut reqs = Vec::new();
            if me > 0 {
                v.push(Op::Irecv {
                    comm: WORLD,
                    src: SrcSel::Rank(rank - 1),
                    tag: TagSel::Tag(1000),
                    bytes: 4,
                    req: 0,
                });
                reqs.push(0);
            }
            if me + 1 < np {
                v.push(Op::Isend {
                    comm: WORLD,
                    dst: rank + 1,
                    tag: 1000,
                    bytes: 4,
                    req: 1,
                });
                reqs.push(1);
            }
            if !reqs.is_empty() {
                v.push(Op::Waitall { reqs: reqs.into() });
            }
            v.push(coll(WORLD, CollKind::Reduce, 0, 4));
            v
        })
        .flatten()
        .map(Ok);
        Box::new(body.chain(fin))
    })
}

fn ft(ranks: u32, p: Params, rate: Rate, c: usize) -> Result<Box<dyn Workload>, WorkloadError> {
    need_pow2("ft", ranks)?;
    const DIMS: [(u64, u64, u64, u32); 6] = [
        (64, 64, 64, 6),
        (128, 128, 32, 6),
        (256, 256, 128, 6),
        (512, 256, 256, 20),
        (512, 512, 512, 20),
        (2048, 1024, 1024, 25),
    ];
    let (nx, ny, nz, niter) = DIMS[c];
    let n = nx * ny * nz;
    let np = ranks as u64;
    if np > ny * nz {
        return Err(invalid(
            "ranks",
            format!(
                "ft class {:?} supports at most {} ranks, got {ranks}",
                p.class,
                ny * nz
            ),
        ));
    }
    let nf = n as f64;
    let setup_ps = rate.ps(nf * (14.8157 + 7.19641 * nf.ln()))?;
    let iter_ps = rate.ps(nf * (5.23518 + 7.21113 * nf.ln()))?;
    let iters = p.iterations.unwrap_or(niter);
    // Transposes: (comm selector, bytes per pair) for one 3-D FFT.
    let (comms, np1, np2) = if np <= ny.min(nz) {
        (Vec::new(), 1u64, np)
    } else {
        let np2 = 1u64 << (63 - np.min(nz).leading_zeros());
        let np1 = np / np2;
        let mut comms: Vec<Vec<Rank>> = (0..np2)
            .map(|g| (0..np1).map(|i| (g * np1 + i) as Rank).collect())
            .collect();
        comms.extend((0..np1).map(|col| (0..np2).map(|k| (col + np1 * k) as Rank).collect()));
        (comms, np1, np2)
    };
    let two_d = np1 > 1;
    generated("ft", ranks, comms, move |rank| {
        let r = rank as u64;
        let transposes = move || -> Vec<Op> {
            if two_d {
                vec![
                    coll(
                        (1 + r / np1) as CommId,
                        CollKind::Alltoall,
                        0,
                        16 * n / (np * np1),
                    ),
                    coll(
                        (1 + np2 + r % np1) as CommId,
                        CollKind::Alltoall,
                        0,
                        16 * n / (np * np2),
                    ),
                ]
            } else if np > 1 {
                vec![coll(WORLD, CollKind::Alltoall, 0, 16 * n / (np * np))]
            } else {
                Vec::new()
            }
        };
        let mut pro: Vec<Op> = compute(setup_ps).into_iter().collect();
        pro.extend(transposes());
        let body = stepped(iters as u64, move |_| {
            let mut v: Vec<Op> = compute(iter_ps).into_iter().collect();
            v.extend(transposes());
            v.push(coll(WORLD, CollKind::Reduce, 0, 16));
            v
        });
        Box::new(pro.into_iter().map(Ok).chain(body))
    })
}

/// Exchange with a partner (irecv + isend + waitall), skipped if the partner is oneself.
fn sendrecv(v: &mut Vec<Op>, me: Rank, peer: Rank, tag: Tag, send: u64, recv: u64) {
    if peer == me {
        return;
    }
    v.push(Op::Irecv {
        comm: WORLD,
        src: SrcSel::Rank(peer),
        tag: TagSel::Tag(tag),
        bytes: recv,
        req: 0,
    });
    v.push(Op::Isend {
        comm: WORLD,
        dst: peer,
        tag,
        bytes: send,
        req: 1,
    });
    v.push(Op::Waitall {
        reqs: Box::new([0, 1]),
    });
}

fn cg(ranks: u32, p: Params, rate: Rate, c: usize) -> Result<Box<dyn Workload>, WorkloadError> {
    need_pow2("cg", ranks)?;
    const T: [(u64, u64, u32); 6] = [
        (1400, 7, 15),
        (7000, 8, 15),
        (14000, 11, 15),
        (75000, 13, 75),
        (150000, 15, 75),
        (1500000, 21, 100),
    ];
    let (na, z, niter) = T[c];
    let iters = p.iterations.unwrap_or(niter);
    let ops =
        2.0 * na as f64 * (3.0 + (z * (z + 1)) as f64 + 25.0 * (5.0 + (z * (z + 1)) as f64) + 3.0);
    let matvec_ps = rate.ps(ops / 26.0)?;
    let nprows = 1u32 << (log2(ranks) / 2);
    let npcols = ranks / nprows;
    let l2npcols = log2(npcols);
    let square = npcols == nprows;
    // NPB's `setup_submatrix_info`: rank r owns the rows of block r / npcols (the first
    // na mod nprows blocks one row longer) and sends them whole (square grid) or one half of
    // them (even ranks the first, larger half).
    let rows = move |r: Rank| {
        let block = (r / npcols) as u64;
        na / nprows as u64 + u64::from(block < na % nprows as u64)
    };
    let send_len = move |r: Rank| match (square, r % 2) {
        (true, _) => rows(r),
        (false, 0) => rows(r).div_ceil(2),
        (false, _) => rows(r) / 2,
    };
    // Bytes r sends in the row reduction's exchange with the column at distance `dist`: on a
    // non-square grid the first one (distance 1) sends the other half of the rows.
    let reduce_bytes = move |r: Rank, dist: u32| {
        8 * if !square && dist == 1 {
            rows(r) - send_len(r)
        } else {
            send_len(r)
        }
    };
    generated("cg", ranks, Vec::new(), move |me| {
        let (row, col) = (me / npcols, me % npcols);
        let exch = if square {
            (me % nprows) * nprows + me / nprows
        } else {
            2 * (((me / 2) % nprows) * nprows + (me / 2) / nprows) + me % 2
        };
        let partner = move |j: u32| row * npcols + (col ^ (npcols >> (j + 1)));
        let reduce_scalar = move |v: &mut Vec<Op>, bytes: u64| {
            for j in 0..l2npcols {
                sendrecv(v, me, partner(j), 10 + j as Tag, bytes, bytes);
            }
        };
        let matvec = move |v: &mut Vec<Op>| {
            v.extend(compute(matvec_ps));
            // Nearest column first, as NPB's `do i = l2npcols, 1, -1`.
            for j in (0..l2npcols).rev() {
                let (peer, dist) = (partner(j), npcols >> (j + 1));
                let (send, recv) = (reduce_bytes(me, dist), reduce_bytes(peer, dist));
                sendrecv(v, me, peer, 40 + j as Tag, send, recv);
            }
            sendrecv(v, me, exch, 1, 8 * send_len(me), 8 * send_len(exch));
        };
        stepped(iters as u64, move |_| {
            let mut v = Vec::new();
            reduce_scalar(&mut v, 8);
            for _ in 0..25 {
                matvec(&mut v);
                reduce_scalar(&mut v, 8);
                reduce_scalar(&mut v, 8);
            }
            matvec(&mut v);
            reduce_scalar(&mut v, 8);
            reduce_scalar(&mut v, 16);
            v
        })
    })
}

fn mg(ranks: u32, p: Params, rate: Rate, c: usize) -> Result<Box<dyn Workload>, WorkloadError> {
    need_pow2("mg", ranks)?;
    const T: [(u32, u32); 6] = [
        (32, 4),
        (128, 4),
        (256, 4),
        (256, 20),
        (512, 20),
        (1024, 50),
    ];
    let (n, nit) = T[c];
    let iters = p.iterations.unwrap_or(nit);
    let lt = log2(n);
    let mut dims = [1u32; 3];
    for b in 0..log2(ranks) {
        dims[(b % 3) as usize] *= 2;
    }
    // Levels at which comm3 runs during one iteration.
    let mut levels = vec![lt];
    levels.extend((1..lt).rev());
    levels.push(1);
    for k in 2..lt {
        levels.extend([k, k]);
    }
    levels.extend([lt, lt]);
    let weight: f64 = levels.iter().map(|&k| 8f64.powi(k as i32)).sum();
    let ops = 58.0 * (n as f64).powi(3);
    // Compute before each level's halo exchange, checked once here.
    let levels: Vec<(u32, u64)> = levels
        .into_iter()
        .map(|k| Ok((k, rate.ps(ops * 8f64.powi(k as i32) / weight)?)))
        .collect::<Result<_, WorkloadError>>()?;
    let levels = std::sync::Arc::new(levels);
    generated("mg", ranks, Vec::new(), move |rank| {
        let neigh = super::synthetic::grid_neighbours(&dims, rank);
        let comm3 = move |v: &mut Vec<Op>, k: u32| {
            let e: Vec<u64> = dims
                .iter()
                .map(|&pd| ((1u64 << k) / pd as u64).max(1))
                .collect();
            for d in 0..3 {
                let face = 8
                    * (0..3)
                        .filter(|&o| o != d)
                        .map(|o| e[o] + 2)
                        .product::<u64>();
                halo_ops(&neigh[d..d + 1], rank, face, 0, v);
            }
        };
        let levels = levels.clone();
        let mut pro = Vec::new();
        comm3(&mut pro, lt);
        pro.push(coll(WORLD, CollKind::Allreduce, 0, 8));
        pro.push(coll(WORLD, CollKind::Allreduce, 0, 8));
        let body = stepped(iters as u64, move |_| {
            let mut v = Vec::new();
            for &(k, ps) in levels.iter() {
                v.extend(compute(ps));
                comm3(&mut v, k);
            }
            v
        });
        let fin = [
            coll(WORLD, CollKind::Allreduce, 0, 8),
            coll(WORLD, CollKind::Allreduce, 0, 8),
        ];
        Box::new(
            pro.into_iter()
                .map(Ok)
                .chain(body)
                .chain(fin.into_iter().map(Ok)),
        )
    })
}

fn lu(ranks: u32, p: Params, rate: Rate, c: usize) -> Result<Box<dyn Workload>, WorkloadError> {
    need_pow2("lu", ranks)?;
    const T: [(u64, u32); 6] = [
        (12, 50),
        (33, 300),
        (64, 250),
        (102, 250),
        (162, 250),
        (408, 300),
    ];
    let (n, itmax) = T[c];
    let iters = p.iterations.unwrap_or(itmax);
    let ndim = log2(ranks);
    let xdim = (1u32 << (ndim / 2)) * if ndim % 2 == 1 { 2 } else { 1 };
    let ydim = ranks / xdim;
    if xdim as u64 > n / 2 {
        return Err(invalid(
            "ranks",
            format!(
                "lu class {:?} supports at most {} ranks per grid side",
                p.class,
                n / 2
            ),
        ));
    }
    let nf = n as f64;
    let ops = 1984.77 * nf.powi(3) - 10923.3 * nf * nf + 27770.9 * nf - 144010.0;
    let planes = n - 2;
    let rhs_ps = rate.ps(ops / 3.0)?;
    let plane_ps = rate.ps(ops / 3.0 / planes as f64)?;
    let nx_l = n.div_ceil(xdim as u64);
    let ny_l = n.div_ceil(ydim as u64);
    generated("lu", ranks, Vec::new(), move |me| {
        let (i, j) = (me % xdim, me / xdim);
        let g = LuGrid {
            north: (i > 0).then(|| me - 1),
            south: (i + 1 < xdim).then(|| me + 1),
            west: (j > 0).then(|| me - xdim),
            east: (j + 1 < ydim).then(|| me + xdim),
            ns: 5 * ny_l * 8,
            ew: 5 * nx_l * 8,
        };
        let body = stepped(iters as u64, move |_| {
            let mut v = Vec::new();
            g.exchange(&mut v, n);
            v.extend(compute(rhs_ps));
            // blts: wavefront from the north-west corner; buts: from the south-east corner.
            let (nw, se) = ([g.north, g.west], [g.south, g.east]);
            g.sweep(&mut v, (nw, se), [1, 2], planes, plane_ps);
            g.sweep(&mut v, (se, nw), [3, 4], planes, plane_ps);
            v
        });
        let fin = [
            coll(WORLD, CollKind::Allreduce, 0, 40),
            coll(WORLD, CollKind::Allreduce, 0, 40),
        ];
        Box::new(body.chain(fin.into_iter().map(Ok)))
    })
}

/// An LU rank's neighbours on the 2-D process grid (none at the grid's edges), and the bytes
/// of one plane's boundary it exchanges with a north or south (`ns`) and a west or east (`ew`)
/// neighbour.
#[derive(Debug, Clone, Copy)]
struct LuGrid {
    north: Option<Rank>,
    south: Option<Rank>,
    west: Option<Rank>,
    east: Option<Rank>,
    ns: u64,
    ew: u64,
}

impl LuGrid {
    /// exchange_3: 2 layers of the 5 variables over the whole depth `n`, with every neighbour
    /// at once.
    fn exchange(&self, v: &mut Vec<Op>, n: u64) {
        let (ns, ew) = (2 * self.ns * n, 2 * self.ew * n);
        let mut reqs = Vec::new();
        let mut req = 0;
        for (peer, bytes, t) in [
            (self.north, ns, 5),
            (self.south, ns, 6),
            (self.west, ew, 7),
            (self.east, ew, 8),
        ] {
            if let Some(peer) = peer {
                v.push(Op::Irecv {
                    comm: WORLD,
                    src: SrcSel::Rank(peer),
                    tag: TagSel::Tag(t),
                    bytes,
                    req,
                });
                reqs.push(req);
                req += 1;
            }
        }
        // The tag names the direction the data travels from the receiver's view: what I send
        // south is what my south neighbour receives from its north (tag 5).
        for (peer, bytes, t) in [
            (self.south, ns, 5),
            (self.north, ns, 6),
            (self.east, ew, 7),
            (self.west, ew, 8),
        ] {
            if let Some(peer) = peer {
                v.push(Op::Isend {
                    comm: WORLD,
                    dst: peer,
                    tag: t,
                    bytes,
                    req,
                });
                reqs.push(req);
                req += 1;
            }
        }
        if !reqs.is_empty() {
            v.push(Op::Waitall { reqs: reqs.into() });
        }
    }

    /// A wavefront sweep over `planes` planes: per plane, its boundaries from the two
    /// neighbours `from` (north or south, then west or east) with tags `tags`, its compute,
    /// and its boundaries to the two neighbours `to`.
    fn sweep(
        &self,
        v: &mut Vec<Op>,
        (from, to): ([Option<Rank>; 2], [Option<Rank>; 2]),
        tags: [Tag; 2],
        planes: u64,
        plane_ps: u64,
    ) {
        let bytes = [self.ns, self.ew];
        for _ in 0..planes {
            for ((peer, tag), bytes) in from.into_iter().zip(tags).zip(bytes) {
                if let Some(src) = peer {
                    v.push(Op::Recv {
                        comm: WORLD,
                        src: SrcSel::Rank(src),
                        tag: TagSel::Tag(tag),
                        bytes,
                    });
                }
            }
            v.extend(compute(plane_ps));
            for ((peer, tag), bytes) in to.into_iter().zip(tags).zip(bytes) {
                if let Some(dst) = peer {
                    v.push(Op::Send {
                        comm: WORLD,
                        dst,
                        tag,
                        bytes,
                    });
                }
            }
        }
    }
}

/// Where one time step of BT / SP spends its operations, per grid point, as counted in the NPB 3.3
/// MPI source (module docs): the phases between which the skeleton communicates.
struct Adi {
    /// `compute_rhs` (SP also `txinvr`): after `copy_faces`, before the x solve.
    rhs: f64,
    /// Per direction, forward stages: building the cell's left-hand side while the
    /// predecessor's message is in flight (SP `lhsx/y/z`; BT receives first).
    lhs: f64,
    /// Per direction, forward stages: the elimination after the receive.
    fwd: f64,
    /// Per direction (x, y, z), back-substitution stages: the block-diagonal inversion
    /// of the cell finished before, while the successor's message is in flight (SP `ninvr`,
    /// `pinvr`, `tzetar`; BT has none).
    inv: [f64; 3],
    /// Per direction, back-substitution stages: the substitution after the receive.
    back: f64,
    /// `add`, after the z solve.
    add: f64,
}

impl Adi {
    fn total(&self) -> f64 {
        self.rhs + 3.0 * (self.lhs + self.fwd + self.back) + self.inv.iter().sum::<f64>() + self.add
    }
}

const SP_ADI: Adi = Adi {
    rhs: 445.0 + 27.0,
    lhs: 28.0,
    fwd: 67.0,
    inv: [7.0, 7.0, 27.0],
    back: 30.0,
    add: 5.0,
};

const BT_ADI: Adi = Adi {
    rhs: 440.0,
    lhs: 0.0,
    fwd: 990.0,
    inv: [0.0; 3],
    back: 50.0,
    add: 5.0,
};

/// Compute of one cell's stages of one direction's solve, ps.
#[derive(Debug, Clone, Copy)]
struct Stage {
    lhs: u64,
    fwd: u64,
    inv: u64,
    back: u64,
}

fn bt_sp(
    name: &'static str,
    ranks: u32,
    p: Params,
    rate: Rate,
    c: usize,
) -> Result<Box<dyn Workload>, WorkloadError> {
    let q = (ranks as f64).sqrt().round() as u32;
    if q * q != ranks {
        return Err(invalid(
            "ranks",
            format!("{name} needs a square rank count, got {ranks}"),
        ));
    }
    let bt = name == "bt";
    const BT: [(u64, u32); 6] = [
        (12, 60),
        (24, 200),
        (64, 200),
        (102, 200),
        (162, 200),
        (408, 250),
    ];
    const SP: [(u64, u32); 6] = [
        (12, 100),
        (36, 400),
        (64, 400),
        (102, 400),
        (162, 400),
        (408, 500),
    ];
    let (n, niter) = if bt { BT[c] } else { SP[c] };
    if q as u64 > n {
        return Err(invalid(
            "ranks",
            format!(
                "{name} class {:?} supports at most {} ranks",
                p.class,
                n * n
            ),
        ));
    }
    let iters = p.iterations.unwrap_or(niter);
    let nf = n as f64;
    let ops = if bt {
        3478.8 * nf.powi(3) - 17655.7 * nf * nf + 28023.7 * nf
    } else {
        881.174 * nf.powi(3) - 4683.91 * nf * nf + 11484.5 * nf - 19272.4
    };
    let adi = if bt { &BT_ADI } else { &SP_ADI };
    // NPB's operation count for the whole step, shared out in the source's proportions; a stage
    // works on one of the rank's q cells.
    let per_point = ops / adi.total();
    let cell_ps = |x: f64| rate.ps(x * per_point / q as f64);
    let rhs_ps = rate.ps(adi.rhs * per_point)?;
    let add_ps = rate.ps(adi.add * per_point)?;
    let stage = |inv: f64| -> Result<Stage, WorkloadError> {
        Ok(Stage {
            lhs: cell_ps(adi.lhs)?,
            fwd: cell_ps(adi.fwd)?,
            inv: cell_ps(inv)?,
            back: cell_ps(adi.back)?,
        })
    };
    let stages = [stage(adi.inv[0])?, stage(adi.inv[1])?, stage(adi.inv[2])?];
    let cell = n.div_ceil(q as u64);
    let face = cell * cell;
    let faces_bytes = (q as u64 - 1) * 2 * 5 * face * 8;
    let (fwd_bytes, back_bytes) = if bt {
        (30 * face * 8, 5 * face * 8)
    } else {
        (22 * face * 8, 10 * face * 8)
    };
    generated(name, ranks, Vec::new(), move |me| {
        let (i, j) = (me % q, me / q);
        let at = |i: u32, j: u32| (j % q) * q + (i % q);
        // (successor, predecessor) per direction.
        let neigh = [
            (at(i + 1, j), at(i + q - 1, j)),
            (at(i, j + 1), at(i, j + q - 1)),
            (at(i + q - 1, j + q - 1), at(i + 1, j + 1)),
        ];
        let body = stepped(iters as u64, move |_| {
            let mut v = Vec::new();
            if faces_bytes > 0 {
                halo_ops(&neigh, me, faces_bytes, 0, &mut v);
            }
            v.extend(compute(rhs_ps));
            for (d, &(succ, pred)) in neigh.iter().enumerate() {
                solve(
                    &mut v,
                    q,
                    d as i32,
                    succ,
                    pred,
                    me,
                    [fwd_bytes, back_bytes],
                    stages[d],
                );
            }
            v.extend(compute(add_ps));
            v
        });
        let fin = [
            coll(WORLD, CollKind::Allreduce, 0, 40),
            coll(WORLD, CollKind::Allreduce, 0, 40),
        ];
        Box::new(body.chain(fin.into_iter().map(Ok)))
    })
}

/// One pipelined line solve over the q cells of a direction, as NPB runs it: forward elimination
/// stage by stage (build the cell's left-hand side, wait for the predecessor's message,
/// eliminate, send to the successor), then back substitution in reverse (invert the cell
/// finished before, wait for the successor's message, substitute, send to the predecessor; the
/// last cell is inverted at the end). Receives are pre-posted one stage ahead, as NPB does, so
/// the ring never deadlocks and a message can arrive during the compute before the wait.
#[allow(clippy::too_many_arguments)]
fn solve(
    v: &mut Vec<Op>,
    q: u32,
    d: i32,
    succ: Rank,
    pred: Rank,
    me: Rank,
    [fwd, back]: [u64; 2],
    ps: Stage,
) {
    if succ == me {
        // One rank per line: no communication.
        for _ in 0..q {
            v.extend(compute(ps.lhs + ps.fwd + ps.inv + ps.back));
        }
        return;
    }
    let mut req: u32 = 0;
    let mut sends = Vec::new();
    let tag = |phase: i32, s: u32| (2 * d + phase + 1) * 1_000_000 + s as i32;
    let mut pending: Option<u32> = None;
    for s in 0..q {
        v.extend(compute(ps.lhs));
        if let Some(r) = pending.take() {
            v.push(Op::Wait { req: r });
        }
        v.extend(compute(ps.fwd));
        if s + 1 < q {
            v.push(Op::Irecv {
                comm: WORLD,
                src: SrcSel::Rank(pred),
                tag: TagSel::Tag(tag(0, s + 1)),
                bytes: fwd,
                req,
            });
            pending = Some(req);
            req += 1;
            v.push(Op::Isend {
                comm: WORLD,
                dst: succ,
                tag: tag(0, s + 1),
                bytes: fwd,
                req,
            });
            sends.push(req);
            req += 1;
        }
    }
    for s in (0..q).rev() {
        if s + 1 < q {
            v.extend(compute(ps.inv));
        }
        if let Some(r) = pending.take() {
            v.push(Op::Wait { req: r });
        }
        v.extend(compute(ps.back));
        if s > 0 {
            v.push(Op::Irecv {
                comm: WORLD,
                src: SrcSel::Rank(succ),
                tag: TagSel::Tag(tag(1, s - 1)),
                bytes: back,
                req,
            });
            pending = Some(req);
            req += 1;
            v.push(Op::Isend {
                comm: WORLD,
                dst: pred,
                tag: tag(1, s - 1),
                bytes: back,
                req,
            });
            sends.push(req);
            req += 1;
        }
    }
    v.extend(compute(ps.inv));
    if !sends.is_empty() {
        v.push(Op::Waitall { reqs: sends.into() });
    }
}
