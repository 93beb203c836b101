//! The acceptance test of the collectives: every algorithm, run on every rank together by the
//! zero-time checker, must deliver exactly the data MPI semantics require. Messages carry a
//! description of their data blocks (from the algorithm); the checker verifies that the sender
//! holds what it sends when it sends it, that message bytes equal the blocks' sizes, that
//! reductions never count a contribution twice, and finally that every rank holds exactly what
//! the collective must leave there. A wrong peer, step, block or size fails.

use super::*;
use crate::check::{run, DataModel};
use crate::op::Program;
use std::collections::BTreeMap;

/// Records ops (through the real op sink) plus each send's block annotation.
struct Recorder<'a> {
    ops: OpSink<'a>,
    anns: Vec<(Mode, Vec<usize>)>,
}

impl Sink for Recorder<'_> {
    fn send(
        &mut self,
        peer: u64,
        tag: Tag,
        bytes: u64,
        mode: Mode,
        blocks: &dyn Fn(&mut Vec<usize>),
    ) {
        let mut v = Vec::new();
        blocks(&mut v);
        self.anns.push((mode, v));
        self.ops.send(peer, tag, bytes, mode, blocks);
    }
    fn recv(&mut self, peer: u64, tag: Tag, bytes: u64) {
        self.ops.recv(peer, tag, bytes);
    }
    fn wait(&mut self) {
        self.ops.wait();
    }
}

type Set = u128;

/// Blocks held per rank: block id -> contributor set.
struct Blocks {
    sizes: Vec<u64>,
    held: Vec<BTreeMap<usize, Set>>,
    anns: Vec<Vec<(Mode, Vec<usize>)>>,
}

impl DataModel for Blocks {
    type Msg = (Mode, Vec<(usize, Set)>);
    fn on_send(&mut self, rank: Rank, index: u64, bytes: u64) -> Result<Self::Msg, String> {
        let (mode, blocks) = self.anns[rank as usize]
            .get(index as usize)
            .ok_or("send without annotation")?
            .clone();
        let sum: u64 = blocks.iter().map(|&b| self.sizes[b]).sum();
        if sum != bytes {
            return Err(format!(
                "send of {bytes} B carries blocks {blocks:?} of {sum} B"
            ));
        }
        let mut items = Vec::new();
        for b in blocks {
            match self.held[rank as usize].get(&b) {
                Some(&set) => items.push((b, set)),
                None => return Err(format!("sends block {b} it does not hold")),
            }
        }
        Ok((mode, items))
    }
    fn on_deliver(&mut self, rank: Rank, (mode, items): Self::Msg) -> Result<(), String> {
        let held = &mut self.held[rank as usize];
        for (b, set) in items {
            match mode {
                Mode::Copy => {
                    held.insert(b, set);
                }
                Mode::Union => *held.entry(b).or_default() |= set,
                Mode::Combine => combine(held, b, set)?,
                Mode::Prefix => {
                    combine(held, b, set)?;
                    // From lower ranks only (a recursive-doubling partner's block lies wholly
                    // below or above): also into the result.
                    if set >> rank == 0 {
                        combine(held, b + 1, set)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Reduces `set` into block `b`, refusing a contribution counted twice.
fn combine(held: &mut BTreeMap<usize, Set>, b: usize, set: Set) -> Result<(), String> {
    let h = held.entry(b).or_default();
    if *h & set != 0 {
        return Err(format!("block {b}: contributions {set:b} counted twice"));
    }
    *h |= set;
    Ok(())
}

fn full(n: u64) -> Set {
    if n == 128 {
        Set::MAX
    } else {
        (1 << n) - 1
    }
}

/// Which blocks a rank must end with, and whether they must be fully reduced.
enum Want {
    /// Every rank holds every block.
    AllEverywhere,
    /// `root` holds every block.
    AllAt(usize),
    /// Rank r holds block r.
    Own,
    /// Rank d holds block s*n+d for every s.
    Transposed,
    /// Rank r's result (block 1) reduces exactly ranks 0..=r (`inclusive`) or 0..r.
    Prefix { inclusive: bool },
}

struct Case {
    n: u64,
    sizes: Vec<u64>,
    init: Vec<BTreeMap<usize, Set>>,
    want: Want,
    reduced: bool,
    /// Zero-byte blocks need not be delivered (alltoallv skips empty pairs).
    zero_ok: bool,
}

fn case(kind: CollKind, algo: CollAlgo, n: u64, root: u64, bytes: u64) -> Case {
    let nu = n as usize;
    let me_set = |r: usize| 1u128 << r;
    let blocks_n = vec![bytes; nu];
    let eff = effective_algorithm(kind, algo, n as u32, bytes).expect("valid");
    let mut init = vec![BTreeMap::new(); nu];
    let (sizes, want, reduced) = match kind {
        CollKind::Barrier => {
            for (r, h) in init.iter_mut().enumerate() {
                h.insert(0, me_set(r));
            }
            (vec![0], Want::AllEverywhere, true)
        }
        CollKind::Bcast => {
            let segs = buffer_segments(kind, eff, n as u32, bytes);
            for b in 0..segs.len() {
                init[root as usize].insert(b, me_set(root as usize));
            }
            (segs, Want::AllEverywhere, false)
        }
        CollKind::Reduce | CollKind::Allreduce => {
            let segs = buffer_segments(kind, eff, n as u32, bytes);
            for (r, h) in init.iter_mut().enumerate() {
                for b in 0..segs.len() {
                    h.insert(b, me_set(r));
                }
            }
            let want = if kind == CollKind::Reduce {
                Want::AllAt(root as usize)
            } else {
                Want::AllEverywhere
            };
            (segs, want, true)
        }
        CollKind::Allgather | CollKind::Gather => {
            for (r, h) in init.iter_mut().enumerate() {
                h.insert(r, me_set(r));
            }
            let want = if kind == CollKind::Gather {
                Want::AllAt(root as usize)
            } else {
                Want::AllEverywhere
            };
            (blocks_n, want, false)
        }
        CollKind::Scatter => {
            for b in 0..nu {
                init[root as usize].insert(b, me_set(root as usize));
            }
            (blocks_n, Want::Own, false)
        }
        CollKind::ReduceScatter => {
            for (r, h) in init.iter_mut().enumerate() {
                for b in 0..nu {
                    h.insert(b, me_set(r));
                }
            }
            (blocks_n, Want::Own, true)
        }
        CollKind::Alltoall => {
            for (r, h) in init.iter_mut().enumerate() {
                for d in 0..nu {
                    h.insert(r * nu + d, me_set(r));
                }
            }
            (vec![bytes; nu * nu], Want::Transposed, false)
        }
        CollKind::Scan | CollKind::Exscan => {
            let inclusive = kind == CollKind::Scan;
            for (r, h) in init.iter_mut().enumerate() {
                h.insert(0, me_set(r));
                if inclusive {
                    h.insert(1, me_set(r));
                }
            }
            (vec![bytes; 2], Want::Prefix { inclusive }, false)
        }
    };
    Case {
        n,
        sizes,
        init,
        want,
        reduced,
        zero_ok: false,
    }
}

/// Runs `sched` for every rank through the checker and verifies the final state of `c`.
/// Returns bytes received per rank.
fn check_case(c: Case, sched: &dyn Fn(&mut Recorder, u64)) -> Result<Vec<u64>, String> {
    let n = c.n as usize;
    let mut programs: Vec<Program> = Vec::new();
    let mut anns = Vec::new();
    for me in 0..c.n {
        let mut out = Vec::new();
        let mut rec = Recorder {
            ops: OpSink::new(WORLD_FOR_TEST, &mut out),
            anns: Vec::new(),
        };
        sched(&mut rec, me);
        rec.wait();
        anns.push(rec.anns);
        for op in &out {
            assert!(
                matches!(op, Op::Isend { .. } | Op::Irecv { .. } | Op::Waitall { .. }),
                "{op:?}"
            );
            if let Op::Isend { tag, .. }
            | Op::Irecv {
                tag: TagSel::Tag(tag),
                ..
            } = op
            {
                assert!(*tag < 0, "collective tag {tag} must be negative");
                // Non-blocking collectives' lanes start below this.
                assert!(
                    i64::from(*tag) > -(tag_span(c.n) as i64),
                    "tag {tag} on {n} ranks"
                );
            }
        }
        programs.push(Box::new(out.into_iter().map(Ok)));
    }
    let mut model = Blocks {
        sizes: c.sizes.clone(),
        held: c.init.clone(),
        anns,
    };
    let traffic = run(c.n as u32, &[], programs, &mut model).map_err(|e| e.to_string())?;
    let fullset = full(c.n);
    let ok_block = |r: usize, b: usize| -> Result<(), String> {
        match model.held[r].get(&b) {
            None if c.zero_ok && c.sizes[b] == 0 => Ok(()),
            None => Err(format!("rank {r} lacks block {b}")),
            Some(&s) if c.reduced && s != fullset => {
                Err(format!("rank {r} block {b} reduces only {s:b}"))
            }
            _ => Ok(()),
        }
    };
    match c.want {
        Want::AllEverywhere => {
            for r in 0..n {
                for b in 0..c.sizes.len() {
                    ok_block(r, b)?;
                }
            }
        }
        Want::AllAt(root) => {
            for b in 0..c.sizes.len() {
                ok_block(root, b)?;
            }
        }
        Want::Own => {
            for r in 0..n {
                ok_block(r, r)?;
            }
        }
        Want::Transposed => {
            for d in 0..n {
                for s in 0..n {
                    ok_block(d, s * n + d)?;
                }
            }
        }
        Want::Prefix { inclusive } => {
            for r in 0..n {
                let want = full(r as u64 + u64::from(inclusive));
                let got = model.held[r].get(&1).copied().unwrap_or(0);
                if got != want {
                    return Err(format!("rank {r} result reduces {got:b}, want {want:b}"));
                }
            }
        }
    }
    Ok(traffic.received)
}

const WORLD_FOR_TEST: CommId = 0;

fn sizes() -> Vec<u64> {
    (1..=17).chain([32, 64]).collect()
}

const BYTES: [u64; 5] = [0, 1, 5, 1000, 4099];
const THROTTLES: [u32; 3] = [0, 3, DEFAULT_ALLTOALL_THROTTLE];

fn check_kind(kind: CollKind) {
    let mut algos = vec![CollAlgo::Auto];
    algos.extend_from_slice(valid_algorithms(kind));
    let rooted = matches!(
        kind,
        CollKind::Bcast | CollKind::Reduce | CollKind::Gather | CollKind::Scatter
    );
    // The throttle only changes the scattered alltoall: all at once, small blocks, MPICH's.
    let throttles: &[u32] = if kind == CollKind::Alltoall {
        &THROTTLES
    } else {
        &[DEFAULT_ALLTOALL_THROTTLE]
    };
    for (&algo, &throttle) in algos
        .iter()
        .flat_map(|a| throttles.iter().map(move |t| (a, t)))
    {
        for n in sizes() {
            let roots: Vec<u64> = if rooted {
                let mut r = vec![0, n - 1, n / 2];
                r.dedup();
                r
            } else {
                vec![0]
            };
            for bytes in BYTES {
                for &root in &roots {
                    let c = case(kind, algo, n, root, bytes);
                    let sched = |s: &mut Recorder, me: u64| {
                        Expansion::collective(
                            0,
                            kind,
                            algo,
                            n as u32,
                            me as Rank,
                            root as Rank,
                            bytes,
                            throttle,
                        )
                        .expect("schedule")
                        .emit_all(s);
                    };
                    let received = check_case(c, &sched).unwrap_or_else(|e| {
                        panic!(
                            "{} / {} throttle={throttle} n={n} root={root} bytes={bytes}: {e}",
                            kind.name(),
                            algo.name()
                        )
                    });
                    check_received(kind, algo, n, root, bytes, &received);
                }
            }
        }
    }
}

/// Exact per-rank received bytes where the algorithm fixes them by a simple formula.
fn check_received(kind: CollKind, algo: CollAlgo, n: u64, root: u64, bytes: u64, got: &[u64]) {
    let eff = effective_algorithm(kind, algo, n as u32, bytes).expect("valid");
    let expect = |r: u64| -> Option<u64> {
        use CollAlgo::*;
        match (kind, eff) {
            (CollKind::Allgather, _) => Some((n - 1) * bytes),
            (CollKind::Alltoall, PairwiseExchange | Scattered | FullLane) => Some((n - 1) * bytes),
            (CollKind::Alltoall, Bruck) => {
                let mut total = 0;
                let mut p = 1;
                while p < n {
                    total += (0..n).filter(|j| j & p != 0).count() as u64 * bytes;
                    p *= 2;
                }
                Some(total)
            }
            (CollKind::Bcast, BinomialTree) => Some(if r == root { 0 } else { bytes }),
            (CollKind::Gather, _) if r == root => Some((n - 1) * bytes),
            (CollKind::Scatter, _) if r == root => Some(0),
            (CollKind::ReduceScatter, PairwiseExchange) => Some((n - 1) * bytes),
            (CollKind::ReduceScatter, Ring) => Some((n - 1) * bytes),
            (CollKind::Barrier, _) => Some(0),
            _ => None,
        }
    };
    for r in 0..n {
        if let Some(e) = expect(r) {
            assert_eq!(
                got[r as usize],
                e,
                "{} / {} n={n} rank {r} received bytes",
                kind.name(),
                eff.name()
            );
        }
    }
}

#[test]
fn barrier_all_algorithms() {
    check_kind(CollKind::Barrier);
}
#[test]
fn bcast_all_algorithms() {
    check_kind(CollKind::Bcast);
}
#[test]
fn reduce_all_algorithms() {
    check_kind(CollKind::Reduce);
}
#[test]
fn allreduce_all_algorithms() {
    check_kind(CollKind::Allreduce);
}
#[test]
fn allgather_all_algorithms() {
    check_kind(CollKind::Allgather);
}
#[test]
fn alltoall_all_algorithms() {
    check_kind(CollKind::Alltoall);
}
#[test]
fn gather_all_algorithms() {
    check_kind(CollKind::Gather);
}
#[test]
fn scatter_all_algorithms() {
    check_kind(CollKind::Scatter);
}
#[test]
fn reduce_scatter_all_algorithms() {
    check_kind(CollKind::ReduceScatter);
}
#[test]
fn scan_all_algorithms() {
    check_kind(CollKind::Scan);
}
#[test]
fn exscan_all_algorithms() {
    check_kind(CollKind::Exscan);
}

/// Recursive-doubling scan messages worked out by hand: rank r exchanges `bytes` with r ^ 2^k
/// for every k with 2^k < n where that partner exists. n = 4: partners 1,2 / 0,3 / 3,0 / 2,1,
/// two sends each. n = 5 (rounds 1, 2, 4): rank 0 -> 1,2,4; 1 -> 0,3; 2 -> 3,0; 3 -> 2,1;
/// 4 -> 0 (5 and 6 do not exist): 3,2,2,2,1 sends. n = 3: 0 -> 1,2; 1 -> 0; 2 -> 0.
#[test]
fn scan_messages_by_hand() {
    for kind in [CollKind::Scan, CollKind::Exscan] {
        for (n, sends) in [
            (4u32, vec![2, 2, 2, 2]),
            (5, vec![3, 2, 2, 2, 1]),
            (3, vec![2, 1, 1]),
        ] {
            for me in 0..n {
                let mut out = Vec::new();
                expand(7, kind, CollAlgo::Auto, n, me, 0, 24, &mut out).expect("expands");
                let mut peers = Vec::new();
                for op in &out {
                    if let Op::Isend { dst, bytes, .. } = op {
                        assert_eq!(*bytes, 24);
                        peers.push(*dst);
                    }
                }
                let want: Vec<Rank> = (0..3).map(|k| me ^ (1 << k)).filter(|&p| p < n).collect();
                assert_eq!(peers, want, "{} n={n} rank {me}", kind.name());
                assert_eq!(peers.len(), sends[me as usize], "n={n} rank {me}");
                let recvs = out.iter().filter(|o| matches!(o, Op::Irecv { .. })).count();
                assert_eq!(recvs, sends[me as usize], "n={n} rank {me} receives");
            }
        }
    }
}

#[test]
fn alltoallv_all_algorithms() {
    for algo in [
        CollAlgo::Auto,
        CollAlgo::PairwiseExchange,
        CollAlgo::Scattered,
    ] {
        for (n, throttle) in sizes().into_iter().flat_map(|n| THROTTLES.map(|t| (n, t))) {
            let nu = n as usize;
            // A deterministic irregular matrix with zeros: bytes(s -> d).
            let m = |s: usize, d: usize| -> u64 {
                if s == d {
                    0
                } else {
                    ((s * 7 + d * 13) % 5) as u64 * 37
                }
            };
            let mut init = vec![BTreeMap::new(); nu];
            let mut sizes_v = vec![0; nu * nu];
            for (s, h) in init.iter_mut().enumerate() {
                for d in 0..nu {
                    h.insert(s * nu + d, 1u128 << s);
                    sizes_v[s * nu + d] = m(s, d);
                }
            }
            let c = Case {
                n,
                sizes: sizes_v,
                init,
                want: Want::Transposed,
                reduced: false,
                zero_ok: true,
            };
            let sched = |s: &mut Recorder, me: u64| {
                let me = me as usize;
                let send: Vec<u64> = (0..nu).map(|d| m(me, d)).collect();
                let recv: Vec<u64> = (0..nu).map(|s| m(s, me)).collect();
                Expansion::alltoallv(
                    0,
                    algo,
                    n as u32,
                    me as Rank,
                    send.into(),
                    recv.into(),
                    throttle,
                )
                .expect("schedule")
                .emit_all(s);
            };
            let received = check_case(c, &sched).unwrap_or_else(|e| {
                panic!("alltoallv / {} throttle={throttle} n={n}: {e}", algo.name())
            });
            for (d, got) in received.iter().enumerate() {
                let want: u64 = (0..nu).filter(|&s| s != d).map(|s| m(s, d)).sum();
                assert_eq!(*got, want);
            }
        }
    }
}

#[test]
fn checker_rejects_broken_algorithms() {
    // A ring allgather that stops one step early.
    let n = 6;
    let short = |s: &mut Recorder, me: u64| {
        for i in 0..n - 1 {
            ring_allgather_step(s, n, me, me, &|_| 8, &|j| j as usize, 0, i);
        }
    };
    assert!(check_case(case(CollKind::Allgather, CollAlgo::Ring, n, 0, 8), &short).is_ok());
    let broken = |s: &mut Recorder, me: u64| {
        let right = (me + 1) % n;
        let left = (me + n - 1) % n;
        for i in 0..n - 2 {
            let sb = (me + n - i) % n;
            s.send(right, tag(i), 8, Mode::Copy, &|v| v.push(sb as usize));
            s.recv(left, tag(i), 8);
            s.wait();
        }
    };
    let err = check_case(case(CollKind::Allgather, CollAlgo::Ring, n, 0, 8), &broken).unwrap_err();
    assert!(err.contains("lacks block"), "{err}");
    // A reduce that double-counts: every rank sends its partial to the root directly AND the root
    // gets a forwarded partial.
    let double = |s: &mut Recorder, me: u64| match me {
        0 => {
            s.recv(1, tag(0), 8);
            s.recv(2, tag(0), 8);
            s.wait();
        }
        1 => {
            s.recv(2, tag(1), 8);
            s.wait();
            s.send(0, tag(0), 8, Mode::Combine, &|v| v.push(0));
            s.wait();
        }
        _ => {
            s.send(1, tag(1), 8, Mode::Combine, &|v| v.push(0));
            s.send(0, tag(0), 8, Mode::Combine, &|v| v.push(0));
            s.wait();
        }
    };
    let err = check_case(
        case(CollKind::Reduce, CollAlgo::BinomialTree, 3, 0, 8),
        &double,
    )
    .unwrap_err();
    assert!(err.contains("counted twice"), "{err}");
    // A wrong message size.
    let wrong_size = |s: &mut Recorder, me: u64| {
        let peer = 1 - me;
        s.send(peer, tag(0), 9, Mode::Copy, &|v| v.push(me as usize));
        s.recv(peer, tag(0), 9);
        s.wait();
    };
    let err = check_case(
        case(CollKind::Allgather, CollAlgo::Ring, 2, 0, 8),
        &wrong_size,
    )
    .unwrap_err();
    assert!(err.contains("carries blocks"), "{err}");
}

#[test]
fn expand_emits_only_nonblocking_ops_and_waits_everything() {
    let mut out = Vec::new();
    expand(
        3,
        CollKind::Allreduce,
        CollAlgo::Auto,
        12,
        5,
        0,
        100_000,
        &mut out,
    )
    .expect("expand");
    let mut outstanding = std::collections::BTreeSet::new();
    for op in &out {
        match op {
            Op::Isend { comm, req, .. } | Op::Irecv { comm, req, .. } => {
                assert_eq!(*comm, 3);
                assert!(*req >= RESERVED_REQ_BASE);
                assert!(outstanding.insert(*req));
            }
            Op::Waitall { reqs } => {
                for r in reqs.iter() {
                    assert!(outstanding.remove(r));
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(outstanding.is_empty());
}

#[test]
fn errors_name_the_problem() {
    let mut out = Vec::new();
    let e = expand(0, CollKind::Bcast, CollAlgo::Ring, 4, 0, 0, 8, &mut out).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("ring") && msg.contains("bcast"), "{msg}");
    let e = expand(0, CollKind::Gather, CollAlgo::Auto, 4, 0, 4, 8, &mut out).unwrap_err();
    assert!(matches!(e, CollError::RootOutOfRange { .. }), "{e}");
    let e = expand_alltoallv(0, CollAlgo::Bruck, 2, 0, &[0, 1], &[0, 1], &mut out).unwrap_err();
    assert!(e.to_string().contains("alltoallv"), "{e}");
    let e = expand_alltoallv(0, CollAlgo::Auto, 3, 0, &[0, 1], &[0, 1, 2], &mut out).unwrap_err();
    assert!(e.to_string().contains("send_bytes"), "{e}");
}

#[test]
fn auto_thresholds() {
    use CollAlgo::*;
    assert_eq!(resolve_auto(CollKind::Bcast, 64, 12287), BinomialTree);
    assert_eq!(resolve_auto(CollKind::Bcast, 64, 12288), ScatterAllgather);
    assert_eq!(resolve_auto(CollKind::Bcast, 7, 1 << 20), BinomialTree);
    assert_eq!(
        resolve_auto(CollKind::Allreduce, 64, 2048),
        RecursiveDoubling
    );
    assert_eq!(resolve_auto(CollKind::Allreduce, 64, 2049), Rabenseifner);
    assert_eq!(
        resolve_auto(CollKind::Allgather, 64, 8191),
        RecursiveDoubling
    );
    assert_eq!(resolve_auto(CollKind::Allgather, 64, 8192), Ring);
    assert_eq!(resolve_auto(CollKind::Allgather, 10, 100), Bruck);
    assert_eq!(resolve_auto(CollKind::Alltoall, 8, 256), Bruck);
    assert_eq!(resolve_auto(CollKind::Alltoall, 4, 256), Scattered);
    assert_eq!(
        resolve_auto(CollKind::Alltoall, 64, 32769),
        PairwiseExchange
    );
    assert_eq!(
        resolve_auto(CollKind::ReduceScatter, 12, 8),
        PairwiseExchange
    );
    assert_eq!(
        resolve_auto(CollKind::ReduceScatter, 16, 8),
        RecursiveHalving
    );
}

/// An operation with its request id taken out, to compare schedules filled in different pieces.
fn shape(op: &Op) -> String {
    match op {
        Op::Isend {
            dst, tag, bytes, ..
        } => format!("isend {dst} {tag} {bytes}"),
        Op::Irecv {
            src, tag, bytes, ..
        } => format!("irecv {src:?} {tag:?} {bytes}"),
        Op::Waitall { reqs } => format!("waitall {}", reqs.len()),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn filling_piece_by_piece_gives_the_whole_schedule_and_waits_each_piece() {
    let cases = [
        (CollKind::Allreduce, CollAlgo::Ring, 4099),
        (CollKind::Allgather, CollAlgo::Ring, 7),
        (CollKind::Bcast, CollAlgo::ScatterAllgather, 50_000),
        (CollKind::Alltoall, CollAlgo::PairwiseExchange, 10),
        (CollKind::Alltoall, CollAlgo::Scattered, 10),
        (CollKind::ReduceScatter, CollAlgo::PairwiseExchange, 10),
        (CollKind::ReduceScatter, CollAlgo::Ring, 10),
        (CollKind::Allreduce, CollAlgo::Rabenseifner, 4099),
    ];
    for (kind, algo, bytes) in cases {
        for (n, me) in [(1, 0), (2, 1), (13, 5), (16, 9)] {
            let plan = Expansion::collective(7, kind, algo, n, me, 0, bytes, 3).expect("plan");
            let mut whole = Vec::new();
            plan.clone().fill(&mut whole, usize::MAX);
            let mut e = plan;
            let (mut pieces, mut buf, mut fills) = (Vec::new(), Vec::new(), 0);
            while e.fill(&mut buf, 1) {
                fills += 1;
                // Every piece waits for every request it posts.
                let posted: Vec<ReqId> = buf
                    .iter()
                    .filter_map(|op| match op {
                        Op::Isend { req, .. } | Op::Irecv { req, .. } => Some(*req),
                        _ => None,
                    })
                    .collect();
                let waited: Vec<ReqId> = buf
                    .iter()
                    .filter_map(|op| match op {
                        Op::Waitall { reqs } => Some(reqs.iter().copied()),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                assert_eq!(posted, waited, "{kind:?} {algo:?} n={n}");
                pieces.append(&mut buf);
            }
            assert!(!e.fill(&mut buf, 1) && buf.is_empty(), "stays done");
            let whole: Vec<String> = whole.iter().map(shape).collect();
            let pieces: Vec<String> = pieces.iter().map(shape).collect();
            assert_eq!(whole, pieces, "{kind:?} {algo:?} n={n} me={me}");
            if matches!(algo, CollAlgo::Ring | CollAlgo::PairwiseExchange) && n > 2 {
                assert!(fills > 1, "{kind:?} {algo:?} n={n} is generated lazily");
            }
        }
    }
}

#[test]
fn scattered_alltoall_posts_at_most_throttle_peers_at_a_time() {
    let (n, me) = (10u32, 4u32);
    let waits = |throttle: u32| -> Vec<usize> {
        let mut e = Expansion::collective(
            0,
            CollKind::Alltoall,
            CollAlgo::Scattered,
            n,
            me,
            0,
            64,
            throttle,
        )
        .expect("plan");
        let mut out = Vec::new();
        e.fill(&mut out, usize::MAX);
        out.iter()
            .filter_map(|op| match op {
                Op::Waitall { reqs } => Some(reqs.len()),
                _ => None,
            })
            .collect()
    };
    // MPICH's blocks of 3 peer offsets: {0,1,2} (0 is the rank itself), {3,4,5}, {6,7,8}, {9}.
    assert_eq!(waits(3), vec![4, 6, 6, 2]);
    assert_eq!(waits(0), vec![18]);
    assert_eq!(waits(DEFAULT_ALLTOALL_THROTTLE), vec![18]);
    // Within a block, receives come from me + i and sends go to me - i.
    let mut e = Expansion::collective(0, CollKind::Alltoall, CollAlgo::Scattered, n, me, 0, 64, 3)
        .expect("plan");
    let mut out = Vec::new();
    e.fill(&mut out, 1);
    let first: Vec<String> = out.iter().map(shape).collect();
    assert_eq!(
        first,
        [
            "irecv Rank(5) Tag(-1) 64",
            "irecv Rank(6) Tag(-1) 64",
            "isend 3 -1 64",
            "isend 2 -1 64",
            "waitall 4"
        ]
    );
}

#[test]
fn bruck_alltoall_message_sizes_follow_the_slot_count() {
    // Step k carries the slots j < n with bit k set: for n = 13, k = 0..3 -> 6, 6, 5, 5 slots.
    let mut out = Vec::new();
    expand(
        0,
        CollKind::Alltoall,
        CollAlgo::Bruck,
        13,
        2,
        0,
        10,
        &mut out,
    )
    .expect("expand");
    let sends: Vec<u64> = out
        .iter()
        .filter_map(|op| match op {
            Op::Isend { bytes, .. } => Some(*bytes),
            _ => None,
        })
        .collect();
    assert_eq!(sends, vec![60, 60, 50, 50]);
}

/// A non-blocking collective's tags sit in a lane of `tag_span(n)` = 202 tags on 4 ranks: the
/// first started on a communicator in -404..=-203, the second in -606..=-405, below every
/// blocking collective's (-201..=-1); lanes come round again after (2^31 - 1) / 202 - 1 of
/// them.
#[test]
fn nonblocking_collectives_get_tag_lanes_of_their_own() {
    let tags = |seq: Option<u64>| -> Vec<Tag> {
        let e = Expansion::collective(0, CollKind::Allreduce, CollAlgo::Ring, 4, 1, 0, 64, 32)
            .expect("expansion");
        let mut e = match seq {
            Some(s) => e.nonblocking(s),
            None => e,
        };
        let mut out = Vec::new();
        e.fill(&mut out, usize::MAX);
        out.iter()
            .filter_map(|op| match op {
                Op::Isend { tag, .. } => Some(*tag),
                _ => None,
            })
            .collect()
    };
    // A ring allreduce on 4 ranks: 3 reduce-scatter steps (tags -1..-3), then 3 allgather
    // steps, whose steps count from n + 1 = 5 (tags -6..-8).
    assert_eq!(tags(None), [-1, -2, -3, -6, -7, -8]);
    assert_eq!(tags(Some(0)), [-203, -204, -205, -208, -209, -210]);
    assert_eq!(tags(Some(1)), [-405, -406, -407, -410, -411, -412]);
    let lanes = 2_147_483_647 / 202 - 1;
    assert_eq!(tags(Some(lanes)), tags(Some(0)));
}

/// Two non-blocking collectives in flight together with a blocking one, each rank waiting for
/// them in the other order, run to the end in the checker. By hand on 4 ranks: the 8-byte
/// allreduce runs recursive doubling (2 steps of one 8-byte message per rank: 8 messages), the
/// 8-byte alltoall the scattered algorithm (3 per rank: 12), the barrier dissemination (2
/// zero-byte ones per rank: 8): 28 messages, 160 bytes.
#[test]
fn nonblocking_collectives_overlap_in_the_checker() {
    let programs: Vec<Program> = (0..4)
        .map(|_| {
            let nb = |kind, req| Op::Icollective {
                comm: 0,
                kind,
                root: 0,
                bytes: 8,
                algo: CollAlgo::Auto,
                req,
            };
            let ops = vec![
                nb(CollKind::Allreduce, 0),
                nb(CollKind::Alltoall, 1),
                Op::Collective {
                    comm: 0,
                    kind: CollKind::Barrier,
                    root: 0,
                    bytes: 0,
                    algo: CollAlgo::Auto,
                },
                Op::Waitall {
                    reqs: vec![1, 0].into_boxed_slice(),
                },
            ];
            Box::new(ops.into_iter().map(Ok)) as Program
        })
        .collect();
    let t = run(4, &[], programs, &mut crate::check::NoData).expect("runs");
    assert_eq!((t.messages, t.sent.iter().sum::<u64>()), (28, 160));
}

#[test]
fn full_lane_alltoall_delivers_every_block_on_multi_rank_nodes() {
    // Ranks per node dividing n, and two that do not (the lanes then span all ranks).
    for (n, node) in [
        (12u64, 3u32),
        (12, 4),
        (12, 6),
        (12, 12),
        (8, 2),
        (9, 3),
        (10, 4),
        (7, 2),
    ] {
        for throttle in [0, 1, 2, DEFAULT_ALLTOALL_THROTTLE] {
            for bytes in [0, 1, 1000] {
                let c = case(CollKind::Alltoall, CollAlgo::FullLane, n, 0, bytes);
                let sched = |s: &mut Recorder, me: u64| {
                    Expansion::collective(
                        0,
                        CollKind::Alltoall,
                        CollAlgo::FullLane,
                        n as u32,
                        me as Rank,
                        0,
                        bytes,
                        throttle,
                    )
                    .expect("schedule")
                    .with_node_ranks(node)
                    .emit_all(s);
                };
                let got = check_case(c, &sched).unwrap_or_else(|e| {
                    panic!("n={n} node={node} throttle={throttle} bytes={bytes}: {e}")
                });
                // Each rank receives, from the other nodes' ranks of its lane, those nodes'
                // blocks for its whole node, and from each other rank of its node the blocks of
                // every node's rank of that lane: (nodes - 1) k + (k - 1) nodes blocks.
                let k = if n.is_multiple_of(node as u64) {
                    node as u64
                } else {
                    1
                };
                let nodes = n / k;
                let want = ((nodes - 1) * k + (k - 1) * nodes) * bytes;
                assert!(
                    got.iter().all(|&g| g == want),
                    "n={n} node={node} throttle={throttle}: received {got:?}, want {want} each"
                );
            }
        }
    }
}

#[test]
fn full_lane_alltoall_sends_one_message_per_other_node_then_shares_inside_the_node() {
    // 12 ranks, 4 per node (3 nodes): rank 5 is rank 1 of node 1. Along lane 1 it receives
    // from node 2 (rank 9) and node 0 (rank 1) and sends to node 0 (rank 1) and node 2
    // (rank 9), 4 blocks of 10 B each; then, in its node (ranks 4-7), 3 blocks of 10 B to each.
    let mut e = Expansion::collective(0, CollKind::Alltoall, CollAlgo::FullLane, 12, 5, 0, 10, 32)
        .expect("plan")
        .with_node_ranks(4);
    let mut out = Vec::new();
    e.fill(&mut out, usize::MAX);
    let got: Vec<String> = out.iter().map(shape).collect();
    assert_eq!(
        got,
        [
            "irecv Rank(9) Tag(-1) 40",
            "irecv Rank(1) Tag(-1) 40",
            "isend 1 -1 40",
            "isend 9 -1 40",
            "waitall 4",
            "irecv Rank(6) Tag(-2) 30",
            "irecv Rank(7) Tag(-2) 30",
            "irecv Rank(4) Tag(-2) 30",
            "isend 4 -2 30",
            "isend 7 -2 30",
            "isend 6 -2 30",
            "waitall 6",
        ]
    );
}
