//! The OTF2 reader against the three real archives in `tests/data/otf2`. Expected values
//! come from reading the archives with the OTF2 reference library (its Python bindings, outside
//! this project): region Enter counts per MPI function, message records, clock properties and
//! event times. Collective sizes follow Score-P's convention (per-process totals; the reader
//! divides by the communicator size where Score-P multiplies).
mod common;

use std::collections::BTreeMap;

use common::{all_ops, data, scratch};
use tracewatt_trace::{
    convert, detect, info, open_trace, Call, CallKind, ReadOptions, TraceFormat, TraceInfo,
};
use tracewatt_workload::collectives::expand;
use tracewatt_workload::generators::Workload;
use tracewatt_workload::{CollKind, Op};

const ARCHIVES: &[&str] = &[
    "otf2/pipit-ping-pong",
    "otf2/sst-macro-10ranks",
    "otf2/tracer-stencil4d-32ranks",
];

fn read(rel: &str) -> TraceInfo {
    info(&data(rel), &ReadOptions::default()).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn calls(rel: &str, rank: u32) -> Vec<Call> {
    let t = open_trace(&data(rel), &ReadOptions::default()).unwrap();
    t.calls(rank)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

/// ns since the trace's origin, as the reader must compute them from ticks.
fn ns(ticks: u64, origin: u64, ticks_per_s: u64) -> u64 {
    ((ticks - origin) as u128 * 1_000_000_000 / ticks_per_s as u128) as u64
}

#[test]
fn archives_are_detected_by_directory_and_anchor() {
    for rel in ARCHIVES {
        let d = data(rel);
        assert_eq!(detect(&d).unwrap(), TraceFormat::Otf2, "{rel}");
        assert_eq!(
            detect(&d.join("traces.otf2")).unwrap(),
            TraceFormat::Otf2,
            "{rel}"
        );
    }
}

#[test]
fn pipit_ping_pong_matches_the_reference() {
    let i = read("otf2/pipit-ping-pong");
    assert_eq!(i.format, TraceFormat::Otf2);
    assert_eq!(i.ranks, 2);
    assert_eq!(i.communicators, 0);
    let want = counts(&[
        ("comm_rank", 2),
        ("comm_size", 2),
        ("finalize", 2),
        ("init", 2),
        ("recv", 16),
        ("send", 16),
    ]);
    assert_eq!(i.calls, want);
    // 16 KiB .. 2 MiB, each size sent once by each rank.
    assert_eq!(i.p2p_bytes, 2 * ((1 << 22) - (1 << 14)));
    assert_eq!(i.collective_bytes, 0);
    assert!(
        (i.duration_s.unwrap() - 0.199_534_505).abs() < 1e-8,
        "{i:?}"
    );
    assert!(i.unsupported.is_empty(), "{:?}", i.unsupported);
}

#[test]
fn pipit_rank_0_call_by_call() {
    let (origin, tps) = (7_397_466_976_977_800, 2_095_197_216);
    let c = calls("otf2/pipit-ping-pong", 0);
    let names: Vec<&str> = c
        .iter()
        .map(|c| tracewatt_trace::funcs::func_name(c.func))
        .collect();
    assert_eq!(
        &names[..5],
        ["init", "comm_size", "comm_rank", "send", "recv"]
    );
    assert_eq!(names.last(), Some(&"finalize"));
    assert_eq!(c[0].start_ns, ns(7_397_466_977_702_853, origin, tps));
    assert_eq!(c[0].end_ns, ns(7_397_467_382_698_364, origin, tps));
    assert_eq!(c[3].start_ns, ns(7_397_467_382_750_926, origin, tps));
    assert_eq!(c[3].end_ns, ns(7_397_467_382_788_022, origin, tps));
    assert_eq!(
        c[3].kind,
        CallKind::Send {
            comm: 0,
            peer: 1,
            tag: 10,
            bytes: 16384
        }
    );
    assert_eq!(
        c[4].kind,
        CallKind::Recv {
            comm: 0,
            peer: 1,
            tag: 20,
            bytes: 16384
        }
    );
    let sent: Vec<u64> = c
        .iter()
        .filter_map(|c| match c.kind {
            CallKind::Send { bytes, .. } => Some(bytes),
            _ => None,
        })
        .collect();
    assert_eq!(sent, (14..22).map(|k| 1u64 << k).collect::<Vec<_>>());
}

#[test]
fn sst_macro_matches_the_reference() {
    let i = read("otf2/sst-macro-10ranks");
    assert_eq!(i.ranks, 10);
    let want = counts(&[
        ("allgather", 360),
        ("allreduce", 360),
        ("alltoall", 360),
        ("bcast", 30),
        ("comm_free", 20),
        ("comm_rank", 110),
        ("comm_size", 100),
        ("comm_split", 20),
        ("finalize", 10),
        ("gather", 30),
        ("iallgather", 360),
        ("iallreduce", 360),
        ("ialltoall", 360),
        ("init", 10),
        ("initialized", 20),
        ("irecv", 1440),
        ("isend", 1440),
        ("reduce", 30),
        ("scatter", 30),
        ("wait", 1080),
        ("waitall", 480),
    ]);
    assert_eq!(i.calls, want);
    assert_eq!(i.p2p_bytes, 23_592_600);
    // The blocking collectives' 1,474,680 B, and as much again for the non-blocking ones: each
    // takes the size of the blocking one before it (see the next test), and the blocking
    // allgather, alltoall and allreduce are all but the 4 B of each of the 120 gather, scatter,
    // reduce and bcast calls.
    assert_eq!(i.collective_bytes, 1_474_680 + (1_474_680 - 120 * 4));
    assert!(
        (i.duration_s.unwrap() - 1.247_862_415).abs() < 1e-8,
        "{i:?}"
    );
    // Replayed, not unsupported (see the next test), with a word on how.
    assert!(
        i.warnings[0].starts_with("1080 non-blocking collectives carry no request or size"),
        "{:?}",
        i.warnings
    );
    assert!(
        i.unsupported.iter().all(|u| !u.name.starts_with("iall")),
        "{:?}",
        i.unsupported
    );
}

/// Score-P 2.0.2 wrote the non-blocking collectives' regions only: no request, communicator or
/// size, and no record in the `MPI_Wait`s completing them (otf2-print lists 360 Enters each of
/// MPI_Iallgather, MPI_Ialltoall and MPI_Iallreduce, 1080 of MPI_Wait, and no record between
/// any of these Enters and their Leaves). The program (sst-macro's
/// `tests/otf2_test_traces/mpi_coverage_test.cc`) runs, on the world, then on its pair
/// communicators (world ranks r and r + 6), then on single-rank ones, for count = 1, 2, ..,
/// 2048 ints: MPI_Allgather, MPI_Alltoall, MPI_Allreduce, the same three non-blocking, three
/// MPI_Waits. Following the reader's rule (each takes the communicator and size of the rank's
/// latest blocking collective of its operation), otf2-print's records give, per operation: 120
/// on the world, 24 on each of the 4 pair communicators, 144 on single-rank ones (local:
/// nothing to replay). So 120 + 96 = 216 replayed per operation, of 4 x (1 + 2 + .. + 2048) =
/// 16,380 B each over a rank's 12 calls per communicator: 18 x 16,380 = 294,840 B per
/// operation (10 ranks on the world, 8 on pairs); each completed by one of the rank's waits,
/// in the order posted.
///
/// What they send, by hand, with S = 16,380 B the sum of a rank's 12 sizes b: on a pair every
/// rank sends b per call whatever the algorithm (one message, or Rabenseifner's two halves):
/// 3 x 8 x S = 393,120 B. On the 10-rank world, per call over all ranks: allgather 90 b (Bruck
/// below 8192 B, ring at it: 9 blocks each), alltoall 150 b for b <= 256 B (Bruck, 5 + 4 + 4 +
/// 2 blocks each; those b sum to 508 B) and 90 b above (scattered), allreduce 28 b for b <=
/// 2048 B (recursive doubling: 2 b folded in, 8 ranks x 3 steps, 2 b back; those b sum to 4092)
/// and 18 b above (Rabenseifner: 2 b folded, 7 b halving down and 7 b doubling up, 2 b back).
/// So 90 S + (150 x 508 + 90 x 15,872) + (28 x 4092 + 18 x 12,288) = 3,314,640 B.
#[test]
fn sst_macro_replays_its_nonblocking_collectives() {
    let t = open_trace(&data("otf2/sst-macro-10ranks"), &ReadOptions::default()).unwrap();
    let mut members = vec![(0..10).collect::<Vec<u32>>()];
    members.extend(t.comms());
    let mut posted: BTreeMap<(CollKind, bool), (u64, u64)> = BTreeMap::new();
    let (mut waited, mut wire) = (0, [0u64; 2]);
    for (rank, ops) in all_ops(&t).into_iter().enumerate() {
        let mut in_flight = std::collections::VecDeque::new();
        for op in ops {
            match op {
                Op::Icollective {
                    comm,
                    kind,
                    bytes,
                    req,
                    root,
                    algo,
                } => {
                    let e = posted.entry((kind, comm == 0)).or_default();
                    *e = (e.0 + 1, e.1 + bytes);
                    in_flight.push_back(req);
                    let m = &members[comm as usize];
                    let me = m.iter().position(|&r| r == rank as u32).unwrap() as u32;
                    let mut out = Vec::new();
                    expand(comm, kind, algo, m.len() as u32, me, root, bytes, &mut out).unwrap();
                    for op in out {
                        if let Op::Isend { bytes, .. } = op {
                            wire[usize::from(comm != 0)] += bytes;
                        }
                    }
                }
                Op::Wait { req } if in_flight.contains(&req) => {
                    assert_eq!(in_flight.pop_front(), Some(req), "rank {rank}");
                    waited += 1;
                }
                _ => {}
            }
        }
        assert!(in_flight.is_empty(), "rank {rank}: {in_flight:?}");
    }
    for kind in [CollKind::Allgather, CollKind::Alltoall, CollKind::Allreduce] {
        let world = posted[&(kind, true)];
        let pairs = posted[&(kind, false)];
        assert_eq!((world.0, pairs.0), (120, 96), "{kind:?}");
        assert_eq!(world.1 + pairs.1, 294_840, "{kind:?}");
    }
    assert_eq!(waited, 3 * 216);
    assert_eq!(wire, [3_314_640, 393_120]);
}

/// The four 2-rank communicators of the global definitions ({0,6}, {1,7}, {2,8}, {3,9});
/// the single-rank ones are MPI_COMM_SELF.
#[test]
fn sst_macro_communicators_come_from_the_definitions() {
    let t = open_trace(&data("otf2/sst-macro-10ranks"), &ReadOptions::default()).unwrap();
    assert_eq!(t.info().communicators, 4);
    assert_eq!(
        t.comms(),
        vec![vec![0, 6], vec![1, 7], vec![2, 8], vec![3, 9]]
    );
    let c = calls("otf2/sst-macro-10ranks", 6);
    assert_eq!(
        c[0].kind,
        CallKind::CommDefine {
            new: 3,
            members: vec![0, 6]
        }
    );
    assert_eq!(tracewatt_trace::funcs::func_name(c[0].func), "comm_define");
    // Rank 6's collectives on its pair: 12 allreduce sizes 4 .. 8192 per call of each.
    let ops = &all_ops(&t)[6];
    let pair_allreduce: Vec<u64> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Collective {
                comm: 1,
                kind: CollKind::Allreduce,
                bytes,
                ..
            } => Some(*bytes),
            _ => None,
        })
        .collect();
    assert!(
        pair_allreduce.contains(&4) && pair_allreduce.contains(&8192),
        "{pair_allreduce:?}"
    );
    assert!(ops
        .iter()
        .any(|o| matches!(o, Op::Collective { comm: 0, .. })));
}

/// MPI_Irecv records only a request; peer, tag and size come from the completion in a later
/// Waitall. Rank 0's first receives, in post order (request ids 1..8).
#[test]
fn irecv_peers_come_from_their_completions() {
    let c = calls("otf2/tracer-stencil4d-32ranks", 0);
    let irecvs: Vec<(i32, i32, u64, u64)> = c
        .iter()
        .filter_map(|c| match c.kind {
            CallKind::Irecv {
                peer,
                tag,
                bytes,
                req,
                ..
            } => Some((peer, tag, bytes, req)),
            _ => None,
        })
        .take(8)
        .collect();
    let b = 131_072;
    assert_eq!(
        irecvs,
        [
            (1, 2, b, 1),
            (1, 1, b, 2),
            (2, 3, b, 3),
            (2, 4, b, 4),
            (4, 5, b, 5),
            (4, 6, b, 6),
            (8, 7, b, 7),
            (24, 8, b, 8)
        ]
    );
    let waitall = c
        .iter()
        .find_map(|c| match &c.kind {
            CallKind::Waitall { reqs } => Some(reqs.clone()),
            _ => None,
        })
        .unwrap();
    let mut sorted = waitall.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=8).collect::<Vec<u64>>());

    let c = calls("otf2/sst-macro-10ranks", 3);
    let first: Vec<(i32, i32, u64)> = c
        .iter()
        .filter_map(|c| match c.kind {
            CallKind::Irecv {
                peer, tag, bytes, ..
            } => Some((peer, tag, bytes)),
            _ => None,
        })
        .take(6)
        .collect();
    assert_eq!(
        first,
        [
            (2, 0, 4),
            (1, 0, 4),
            (9, 0, 4),
            (5, 1, 8),
            (7, 1, 8),
            (1, 1, 8)
        ]
    );
}

#[test]
fn stencil4d_matches_the_reference() {
    let i = read("otf2/tracer-stencil4d-32ranks");
    assert_eq!(i.ranks, 32);
    let want = counts(&[
        ("barrier", 96),
        ("init", 32),
        ("irecv", 512),
        ("send", 512),
        ("waitall", 64),
    ]);
    assert_eq!(i.calls, want);
    assert_eq!(i.p2p_bytes, 512 * 131_072);
    assert!(
        (i.duration_s.unwrap() - 1.553_251_672).abs() < 1e-8,
        "{i:?}"
    );
    assert!(i.unsupported.is_empty(), "{:?}", i.unsupported);
}

/// Rank 0 turns measurement off between MPI_Init and its first MPI_Irecv: that interval is
/// neither compute nor call time. Ticks from the reference: Init leaves at ...522_997_348,
/// measurement off ...522_999_901 .. on ...523_212_715, Irecv enters at ...523_251_979.
#[test]
fn measurement_off_is_not_compute() {
    let tps: u128 = 2_095_147_102;
    let gap_ticks: u128 = (523_251_979 - 522_997_348) - (523_212_715 - 522_999_901);
    let t = open_trace(
        &data("otf2/tracer-stencil4d-32ranks"),
        &ReadOptions::default(),
    )
    .unwrap();
    let ops = &all_ops(&t)[0];
    let Some(Op::Compute { ps }) = ops.first() else {
        panic!("{:?}", &ops[..3]);
    };
    let want_ps = (gap_ticks * 1_000_000_000_000 / tps) as u64;
    // The reader rounds each time to ns first.
    assert!(ps.abs_diff(want_ps) <= 2000, "{ps} vs {want_ps}");
    assert!(matches!(ops[1], Op::Irecv { .. }), "{:?}", &ops[..3]);
}

#[test]
fn every_rank_drains_and_conversion_keeps_calls_and_ops() {
    for rel in ARCHIVES {
        let src = data(rel);
        let t = open_trace(&src, &ReadOptions::default()).unwrap();
        let ops = all_ops(&t);
        let out = scratch("otf2-native");
        let converted = convert(&src, &out, &ReadOptions::default()).unwrap();
        let i = t.info();
        assert_eq!(converted.format, TraceFormat::Native);
        assert_eq!(
            (
                &converted.calls,
                converted.p2p_bytes,
                converted.collective_bytes
            ),
            (&i.calls, i.p2p_bytes, i.collective_bytes),
            "{rel}"
        );
        assert_eq!(converted.communicators, i.communicators, "{rel}");
        assert_eq!(converted.unsupported, i.unsupported, "{rel}");
        let n = open_trace(&out, &ReadOptions::default()).unwrap();
        for r in 0..t.num_ranks() {
            let a: Vec<Call> = t.calls(r).unwrap().map(Result::unwrap).collect();
            let b: Vec<Call> = n.calls(r).unwrap().map(Result::unwrap).collect();
            assert_eq!(a, b, "{rel} rank {r}");
        }
        assert_eq!(all_ops(&n), ops, "{rel}");
        let _ = std::fs::remove_dir_all(out);
    }
}

#[test]
fn compute_scale_scales_the_gaps() {
    let rel = "otf2/pipit-ping-pong";
    let base = all_ops(&open_trace(&data(rel), &ReadOptions::default()).unwrap());
    let opts = ReadOptions {
        compute_scale: 0.5,
        ..ReadOptions::default()
    };
    let half = all_ops(&open_trace(&data(rel), &opts).unwrap());
    let compute = |ops: &[Op]| -> u64 {
        ops.iter()
            .map(|o| match o {
                Op::Compute { ps } => *ps,
                _ => 0,
            })
            .sum()
    };
    let (a, b) = (compute(&base[0]), compute(&half[0]));
    assert!(
        a > 0 && b.abs_diff(a / 2) <= base[0].len() as u64,
        "{a} {b}"
    );
}

#[test]
fn a_missing_event_file_is_named() {
    let d = scratch("otf2-missing");
    let src = data("otf2/pipit-ping-pong");
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(src.join(f), d.join(f)).unwrap();
    }
    std::fs::create_dir(d.join("traces")).unwrap();
    std::fs::copy(src.join("traces/0.evt"), d.join("traces/0.evt")).unwrap();
    let e = open_trace(&d, &ReadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("1.evt"), "{e}");
}
