//! `MPI_Cancel` and `MPI_Scan`/`MPI_Exscan` through the native format, the cross-rank checks and
//! the op builder, on hand-written traces whose right replay is known.

mod common;

use tracewatt_trace::call::{Call, CallKind, ANY, WORLD_HANDLE};
use tracewatt_trace::funcs::{self, Func};
use tracewatt_trace::{open_trace, NativeWriter, ReadOptions};
use tracewatt_workload::{CollKind, Op, SrcSel, WORLD};

fn call(func: Func, kind: CallKind) -> Call {
    Call::untimed(func, kind)
}

/// A native trace of `ranks`, each between MPI_Init and MPI_Finalize.
fn native(tag: &str, ranks: &[Vec<Call>]) -> std::path::PathBuf {
    let d = common::scratch(tag);
    let w = NativeWriter::create(&d, ranks.len() as u32).unwrap();
    for (r, calls) in ranks.iter().enumerate() {
        let mut rw = w.rank(r as u32, false).unwrap();
        rw.write(&call(funcs::F_INIT, CallKind::Init)).unwrap();
        for c in calls {
            rw.write(c).unwrap();
        }
        rw.write(&call(funcs::F_FINALIZE, CallKind::Finalize))
            .unwrap();
        rw.finish().unwrap();
    }
    d
}

fn send(tag: i32, bytes: u64) -> Call {
    let kind = CallKind::Send {
        comm: WORLD_HANDLE,
        peer: 1,
        tag,
        bytes,
    };
    call(funcs::F_SEND, kind)
}

fn recv(tag: i32, bytes: u64) -> Call {
    let kind = CallKind::Recv {
        comm: WORLD_HANDLE,
        peer: 0,
        tag,
        bytes,
    };
    call(funcs::F_RECV, kind)
}

const REQ: u64 = 0x5581_2000;

/// HPCC RandomAccess's ending: rank 1 posts a wildcard receive of 4 bytes, cancels it, waits
/// for it (`outcome`: the record after the wait, if any), then receives rank 0's 8-byte
/// message with an exact receive. Were the cancelled receive posted, it would take that
/// message (smaller than it: refused).
fn cancelled_wildcard(tag: &str, outcome: Option<bool>) -> std::path::PathBuf {
    let irecv = CallKind::Irecv {
        comm: WORLD_HANDLE,
        peer: ANY,
        tag: ANY,
        bytes: 4,
        req: REQ,
    };
    let mut rank1 = vec![
        call(funcs::F_IRECV, irecv),
        call(funcs::F_CANCEL, CallKind::Cancel { req: REQ }),
        call(funcs::F_WAIT, CallKind::Wait { req: REQ }),
    ];
    if let Some(cancelled) = outcome {
        let kind = CallKind::CancelOutcome {
            req: Some(REQ),
            cancelled,
        };
        rank1.push(call(funcs::F_CANCEL_OUTCOME, kind));
    }
    rank1.push(recv(3, 8));
    native(tag, &[vec![send(3, 8)], rank1])
}

/// Rank 1's replay: the exact receive, and no trace of the cancelled one.
fn assert_only_the_exact_receive(dir: &std::path::Path) {
    let t = open_trace(dir, &ReadOptions::default()).expect("the trace opens");
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    let ops = common::all_ops(&t);
    assert_eq!(
        ops[1],
        vec![Op::Recv {
            comm: WORLD,
            src: SrcSel::Rank(0),
            tag: tracewatt_workload::TagSel::Tag(3),
            bytes: 8,
        }]
    );
}

#[test]
fn a_cancelled_receive_matches_nothing() {
    assert_only_the_exact_receive(&cancelled_wildcard("cancelled", Some(true)));
}

#[test]
fn a_cancelled_receive_without_outcome_counts_as_cancelled() {
    assert_only_the_exact_receive(&cancelled_wildcard("no-outcome", None));
}

#[test]
fn a_failed_cancel_leaves_the_receive_posted() {
    // The receive was not cancelled, so it took the 8-byte message: larger than it, refused.
    let d = cancelled_wildcard("failed", Some(false));
    let e = open_trace(&d, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least the 8 bytes"), "{e}");
    assert!(e.contains("got 4 bytes"), "{e}");
}

#[test]
fn a_dumpi_style_outcome_names_the_request_completed_last() {
    // MPI_Test_cancelled names a status: the outcome goes to the cancelled request that
    // completed last, here the second of two cancelled receives (the first one failed, so its
    // receive takes rank 0's first message).
    let irecv = |req, bytes| CallKind::Irecv {
        comm: WORLD_HANDLE,
        peer: 0,
        tag: 3,
        bytes,
        req,
    };
    let outcome = |req, cancelled| CallKind::CancelOutcome { req, cancelled };
    let rank1 = vec![
        call(funcs::F_IRECV, irecv(1, 8)),
        call(funcs::F_CANCEL, CallKind::Cancel { req: 1 }),
        call(funcs::F_WAIT, CallKind::Wait { req: 1 }),
        call(funcs::F_TEST_CANCELLED, outcome(None, false)),
        call(funcs::F_IRECV, irecv(2, 8)),
        call(funcs::F_CANCEL, CallKind::Cancel { req: 2 }),
        call(funcs::F_WAIT, CallKind::Wait { req: 2 }),
        call(funcs::F_TEST_CANCELLED, outcome(None, true)),
    ];
    let d = native("dumpi-style", &[vec![send(3, 8)], rank1]);
    let t = open_trace(&d, &ReadOptions::default()).expect("the trace opens");
    let irecvs = common::all_ops(&t)[1]
        .iter()
        .filter(|o| matches!(o, Op::Irecv { .. }))
        .count();
    assert_eq!(irecvs, 1);
}

#[test]
fn cancel_records_read_back_as_written() {
    let calls = vec![
        call(funcs::F_CANCEL, CallKind::Cancel { req: REQ }),
        call(
            funcs::F_CANCEL_OUTCOME,
            CallKind::CancelOutcome {
                req: Some(REQ),
                cancelled: true,
            },
        ),
        call(
            funcs::F_TEST_CANCELLED,
            CallKind::CancelOutcome {
                req: None,
                cancelled: false,
            },
        ),
    ];
    let d = native("roundtrip", std::slice::from_ref(&calls));
    let t = open_trace(&d, &ReadOptions::default()).expect("the trace opens");
    let read: Vec<Call> = t.calls(0).unwrap().map(Result::unwrap).collect();
    assert_eq!(read[1..4], calls[..]);
    // The tracer's outcome record is no MPI call; MPI_Test_cancelled is.
    assert_eq!(t.info().calls.get("cancel_outcome"), None);
    assert_eq!(t.info().calls.get("test_cancelled"), Some(&1));
}

#[test]
fn scans_replay_as_collectives_and_members_must_agree() {
    let scan = |kind, bytes| {
        let c = CallKind::Coll {
            comm: WORLD_HANDLE,
            kind,
            root: 0,
            bytes,
        };
        call(
            if kind == CollKind::Scan {
                funcs::F_SCAN
            } else {
                funcs::F_EXSCAN
            },
            c,
        )
    };
    let ranks: Vec<Vec<Call>> = (0..3)
        .map(|_| vec![scan(CollKind::Scan, 16), scan(CollKind::Exscan, 8)])
        .collect();
    let t = open_trace(&native("scan", &ranks), &ReadOptions::default()).expect("opens");
    assert!(t.warnings().is_empty(), "{:?}", t.warnings());
    let kinds: Vec<(CollKind, u64)> = common::all_ops(&t)[2]
        .iter()
        .filter_map(|o| match o {
            Op::Collective { kind, bytes, .. } => Some((*kind, *bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, vec![(CollKind::Scan, 16), (CollKind::Exscan, 8)]);
    // Recursive doubling on 3 ranks: rank 0 sends to 1 and 2, ranks 1 and 2 to 0 (see the
    // collectives' own test): 4 messages of each buffer.
    let info =
        tracewatt_trace::info(&native("scan-info", &ranks), &ReadOptions::default()).expect("info");
    assert_eq!(info.wire_bytes, Some(4 * 16 + 4 * 8));

    let mut differing = ranks.clone();
    differing[1][1] = scan(CollKind::Scan, 8);
    let e = open_trace(&native("scan-differ", &differing), &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("exscan"), "{e}");
}
