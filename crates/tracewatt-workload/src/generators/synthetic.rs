//! Ping-pong, uniform random traffic, the TraceR/TraceRP benchmarks and collective loops.

use std::sync::Arc;

use tracewatt_core::Rng;

use super::{
    at_least_one, dims_create, generated, invalid, stepped, us_field, Arrival, Workload,
    WorkloadError,
};
use crate::op::{CollAlgo, CollKind, Op, Rank, SrcSel, TagSel, WORLD};

/// Rng stream labels, so generators never shift each other's draws.
const LABEL_UNIFORM: u64 = 0x756e_6966;
const LABEL_PERMUTATION: u64 = 0x7065_726d;
const LABEL_POISSON: u64 = 0x706f_6973;

fn compute(ps: u64) -> Option<Op> {
    (ps > 0).then_some(Op::Compute { ps })
}

pub(super) fn pingpong(
    ranks: u32,
    bytes: u64,
    iterations: u32,
    interval_us: f64,
) -> Result<Box<dyn Workload>, WorkloadError> {
    if ranks < 2 {
        return Err(invalid(
            "ranks",
            format!("pingpong needs at least 2 ranks, got {ranks}"),
        ));
    }
    at_least_one("iterations", iterations)?;
    let interval = us_field("interval_us", interval_us)?;
    generated("pingpong", ranks, Vec::new(), move |rank| match rank {
        0 => stepped(iterations as u64, move |_| {
            let mut v = vec![
                Op::Irecv {
                    comm: WORLD,
                    src: SrcSel::Rank(1),
                    tag: TagSel::Tag(1),
                    bytes,
                    req: 1,
                },
                Op::Isend {
                    comm: WORLD,
                    dst: 1,
                    tag: 0,
                    bytes,
                    req: 0,
                },
            ];
            v.extend(compute(interval));
            v.push(Op::Waitall {
                reqs: Box::new([0, 1]),
            });
            v
        }),
        1 => stepped(iterations as u64, move |_| {
            vec![
                Op::Recv {
                    comm: WORLD,
                    src: SrcSel::Rank(0),
                    tag: TagSel::Tag(0),
                    bytes,
                },
                Op::Send {
                    comm: WORLD,
                    dst: 0,
                    tag: 1,
                    bytes,
                },
            ]
        }),
        _ => Box::new(std::iter::empty()),
    })
}

/// Destination of rank `r`'s messages, drawn uniformly among the other ranks.
fn uniform_dests(seed: u64, r: Rank, ranks: u32, messages: u32) -> impl Iterator<Item = Rank> {
    let mut rng = Rng::fork(seed, LABEL_UNIFORM ^ ((r as u64) << 20));
    (0..messages).map(move |_| {
        let d = rng.below(ranks as u64 - 1) as Rank;
        if d >= r {
            d + 1
        } else {
            d
        }
    })
}

/// Send times of rank `r` for Poisson arrivals, from the job's start: running sums of
/// exponential gaps of mean `mean_ps`, each rounded to a picosecond (the sums are then exact).
fn poisson_times(seed: u64, r: Rank, mean_ps: u64) -> impl Iterator<Item = u64> {
    let mut rng = Rng::fork(seed, LABEL_POISSON ^ ((r as u64) << 20));
    let mut t = 0u64;
    std::iter::repeat_with(move || {
        // 1 - U lies in (0, 1], so the logarithm is finite.
        let gap = -(1.0 - rng.unit_f64()).ln() * mean_ps as f64;
        t += gap.round() as u64;
        t
    })
}

pub(super) fn uniform_random(
    ranks: u32,
    seed: u64,
    messages: u32,
    bytes: u64,
    interval_us: f64,
    arrival: Arrival,
) -> Result<Box<dyn Workload>, WorkloadError> {
    if ranks < 2 {
        return Err(invalid(
            "ranks",
            format!("uniform_random needs at least 2 ranks, got {ranks}"),
        ));
    }
    let interval = us_field("interval_us", interval_us)?;
    // Expected receive counts per rank: O(ranks) memory, O(ranks * messages) time, once.
    let mut expect = vec![0u32; ranks as usize];
    for r in 0..ranks {
        for d in uniform_dests(seed, r, ranks, messages) {
            expect[d as usize] += 1;
        }
    }
    let expect = Arc::new(expect);
    generated("uniform_random", ranks, Vec::new(), move |rank| {
        let recvs = expect[rank as usize];
        // Request ids: receives 0..recvs, sends recvs..recvs+messages.
        let posts = (0..recvs).map(move |i| Op::Irecv {
            comm: WORLD,
            src: SrcSel::Any,
            tag: TagSel::Tag(0),
            bytes,
            req: i,
        });
        let mut times = (arrival == Arrival::Poisson).then(|| poisson_times(seed, rank, interval));
        let sends = uniform_dests(seed, rank, ranks, messages)
            .enumerate()
            .flat_map(move |(i, dst)| {
                let send = Op::Isend {
                    comm: WORLD,
                    dst,
                    tag: 0,
                    bytes,
                    req: recvs + i as u32,
                };
                match times.as_mut().and_then(Iterator::next) {
                    Some(ps) => vec![Op::WaitUntil { ps }, send],
                    None => std::iter::once(send).chain(compute(interval)).collect(),
                }
            });
        let wait = std::iter::once_with(move || Op::Waitall {
            reqs: (0..recvs + messages).collect(),
        });
        Box::new(posts.chain(sends).chain(wait).map(Ok))
    })
}

/// Periodic grid neighbours of `rank` (row-major, last dimension fastest): for each dimension,
/// (plus neighbour, minus neighbour).
pub(super) fn grid_neighbours(dims: &[u32], rank: Rank) -> Vec<(Rank, Rank)> {
    let mut coords = vec![0u32; dims.len()];
    let mut r = rank;
    for d in (0..dims.len()).rev() {
        coords[d] = r % dims[d];
        r /= dims[d];
    }
    let index = |c: &[u32]| c.iter().zip(dims).fold(0u32, |acc, (&x, &n)| acc * n + x);
    (0..dims.len())
        .map(|d| {
            let mut plus = coords.clone();
            plus[d] = (coords[d] + 1) % dims[d];
            let mut minus = coords.clone();
            minus[d] = (coords[d] + dims[d] - 1) % dims[d];
            (index(&plus), index(&minus))
        })
        .collect()
}

/// One halo exchange on `comm` with every neighbour (self-neighbours skipped): tag `2d` for data
/// travelling +d, `2d + 1` for -d, so a 2-wide dimension (plus == minus) still pairs correctly.
pub(super) fn halo_ops(neigh: &[(Rank, Rank)], me: Rank, bytes: u64, req0: u32, out: &mut Vec<Op>) {
    let mut reqs = Vec::new();
    let mut req = req0;
    for (d, &(plus, minus)) in neigh.iter().enumerate() {
        let t = 2 * d as i32;
        if minus != me {
            out.push(Op::Irecv {
                comm: WORLD,
                src: SrcSel::Rank(minus),
                tag: TagSel::Tag(t),
                bytes,
                req,
            });
            reqs.push(req);
            req += 1;
        }
        if plus != me {
            out.push(Op::Irecv {
                comm: WORLD,
                src: SrcSel::Rank(plus),
                tag: TagSel::Tag(t + 1),
                bytes,
                req,
            });
            reqs.push(req);
            req += 1;
        }
    }
    for (d, &(plus, minus)) in neigh.iter().enumerate() {
        let t = 2 * d as i32;
        if plus != me {
            out.push(Op::Isend {
                comm: WORLD,
                dst: plus,
                tag: t,
                bytes,
                req,
            });
            reqs.push(req);
            req += 1;
        }
        if minus != me {
            out.push(Op::Isend {
                comm: WORLD,
                dst: minus,
                tag: t + 1,
                bytes,
                req,
            });
            reqs.push(req);
            req += 1;
        }
    }
    if !reqs.is_empty() {
        out.push(Op::Waitall { reqs: reqs.into() });
    }
}

pub(super) fn halo(
    name: &'static str,
    ranks: u32,
    ndims: usize,
    iterations: u32,
    bytes: u64,
    compute_us: f64,
) -> Result<Box<dyn Workload>, WorkloadError> {
    at_least_one("iterations", iterations)?;
    let c = us_field("compute_us", compute_us)?;
    let dims = dims_create(ranks, ndims);
    generated(name, ranks, Vec::new(), move |rank| {
        let neigh = grid_neighbours(&dims, rank);
        stepped(iterations as u64, move |_| {
            let mut v = Vec::new();
            halo_ops(&neigh, rank, bytes, 0, &mut v);
            v.extend(compute(c));
            v
        })
    })
}

/// A keyed pseudo-random permutation of `0..n` (4-round Feistel network with cycle walking):
/// `O(1)` per lookup in both directions, so no rank ever holds the whole permutation.
#[derive(Debug, Clone, Copy)]
struct Feistel {
    n: u64,
    half: u32,
    keys: [u64; 4],
}

impl Feistel {
    fn new(n: u64, rng: &mut Rng) -> Self {
        let bits = 64 - (n.max(2) - 1).leading_zeros();
        Self {
            n,
            half: bits.div_ceil(2).max(1),
            keys: [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ],
        }
    }
    fn f(&self, k: u64, x: u64) -> u64 {
        let mut z = x ^ k;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) & ((1 << self.half) - 1)
    }
    fn once(&self, x: u64) -> u64 {
        let mask = (1 << self.half) - 1;
        let (mut l, mut r) = (x >> self.half, x & mask);
        for &k in &self.keys {
            (l, r) = (r, l ^ self.f(k, r));
        }
        (l << self.half) | r
    }
    fn once_inv(&self, y: u64) -> u64 {
        let mask = (1 << self.half) - 1;
        let (mut l, mut r) = (y >> self.half, y & mask);
        for &k in self.keys.iter().rev() {
            (l, r) = (r ^ self.f(k, l), l);
        }
        (l << self.half) | r
    }
    fn forward(&self, mut x: u64) -> u64 {
        loop {
            x = self.once(x);
            if x < self.n {
                return x;
            }
        }
    }
    fn inverse(&self, mut y: u64) -> u64 {
        loop {
            y = self.once_inv(y);
            if y < self.n {
                return y;
            }
        }
    }
}

pub(super) fn permutation(
    ranks: u32,
    seed: u64,
    iterations: u32,
    bytes: u64,
    compute_us: f64,
) -> Result<Box<dyn Workload>, WorkloadError> {
    at_least_one("iterations", iterations)?;
    let c = us_field("compute_us", compute_us)?;
    generated("permutation", ranks, Vec::new(), move |rank| {
        stepped(iterations as u64, move |it| {
            let mut rng = Rng::fork(seed, LABEL_PERMUTATION ^ (it << 24));
            let p = Feistel::new(ranks as u64, &mut rng);
            let dst = p.forward(rank as u64) as Rank;
            let src = p.inverse(rank as u64) as Rank;
            let mut v = Vec::new();
            if dst != rank {
                v.push(Op::Irecv {
                    comm: WORLD,
                    src: SrcSel::Rank(src),
                    tag: TagSel::Tag(0),
                    bytes,
                    req: 0,
                });
                v.push(Op::Isend {
                    comm: WORLD,
                    dst,
                    tag: 0,
                    bytes,
                    req: 1,
                });
                v.push(Op::Waitall {
                    reqs: Box::new([0, 1]),
                });
            }
            v.extend(compute(c));
            v
        })
    })
}

pub(super) fn qbox(
    ranks: u32,
    iterations: u32,
    [a2a_bytes, allreduce_bytes, bcast_bytes]: [u64; 3],
    compute_us: f64,
) -> Result<Box<dyn Workload>, WorkloadError> {
    at_least_one("iterations", iterations)?;
    let c = us_field("compute_us", compute_us)?;
    let dims = dims_create(ranks, 2);
    let (nprow, npcol) = (dims[0], dims[1]);
    // rank = row * npcol + col. Row comms (size npcol) get ids 1..=nprow, column comms (size
    // nprow) ids nprow+1..=nprow+npcol.
    let mut comms: Vec<Vec<Rank>> = (0..nprow)
        .map(|r| (0..npcol).map(|c| r * npcol + c).collect())
        .collect();
    comms.extend((0..npcol).map(|c| (0..nprow).map(|r| r * npcol + c).collect()));
    generated("qbox", ranks, comms, move |rank| {
        let (row, col) = (rank / npcol, rank % npcol);
        let row_comm = 1 + row;
        let col_comm = 1 + nprow + col;
        stepped(iterations as u64, move |it| {
            let coll = |comm, kind, root, bytes| Op::Collective {
                comm,
                kind,
                root,
                bytes,
                algo: CollAlgo::Auto,
            };
            let mut v = Vec::new();
            v.extend(compute(c));
            v.push(coll(col_comm, CollKind::Alltoall, 0, a2a_bytes));
            v.extend(compute(c));
            v.push(coll(row_comm, CollKind::Allreduce, 0, allreduce_bytes));
            v.push(coll(
                col_comm,
                CollKind::Bcast,
                (it % nprow as u64) as Rank,
                bcast_bytes,
            ));
            v.push(coll(WORLD, CollKind::Allreduce, 0, 8));
            v
        })
    })
}

/// `iterations` x (one collective of `kind` on world, then `compute_us`): `a2a` and the
/// collective micro-workloads. `root` matters only to rooted collectives.
pub(super) fn collective_loop(
    kind: CollKind,
    ranks: u32,
    iterations: u32,
    bytes: u64,
    compute_us: f64,
    algo: CollAlgo,
    root: Rank,
) -> Result<Box<dyn Workload>, WorkloadError> {
    at_least_one("iterations", iterations)?;
    let c = us_field("compute_us", compute_us)?;
    let valid = crate::collectives::valid_algorithms(kind);
    if algo != CollAlgo::Auto && !valid.contains(&algo) {
        let names: Vec<&str> = valid.iter().map(|a| a.name()).collect();
        return Err(invalid(
            "algo",
            format!(
                "`{}` does not apply to {}; expected auto, {}",
                algo.name(),
                kind.name(),
                names.join(", ")
            ),
        ));
    }
    if root >= ranks {
        return Err(invalid(
            "root",
            format!("must be a rank of the job (< {ranks}), got {root}"),
        ));
    }
    let name = match kind {
        CollKind::Alltoall => "a2a",
        k => k.name(),
    };
    generated(name, ranks, Vec::new(), move |_| {
        stepped(iterations as u64, move |_| {
            let mut v = vec![Op::Collective {
                comm: WORLD,
                kind,
                root,
                bytes,
                algo,
            }];
            v.extend(compute(c));
            v
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feistel_is_a_permutation_with_inverse() {
        for n in [1u64, 2, 3, 7, 16, 100, 1000] {
            let p = Feistel::new(n, &mut Rng::new(n));
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.forward(x);
                assert!(y < n);
                assert!(!seen[y as usize]);
                seen[y as usize] = true;
                assert_eq!(p.inverse(y), x);
            }
        }
    }

    #[test]
    fn grid_neighbours_wrap() {
        let n = grid_neighbours(&[2, 3], 0);
        assert_eq!(n, vec![(3, 3), (1, 2)]);
    }
}
