//! `trace info`'s byte and flop figures against values worked out by hand: collective size
//! arguments versus the bytes the replay sends, and SimGrid flops per rank.
mod common;

use common::{data, scratch};
use tracewatt_trace::call::{Call, CallKind, CollKind, WORLD_HANDLE};
use tracewatt_trace::{funcs, info, NativeWriter, ReadOptions};

fn coll(func: funcs::Func, kind: CollKind, bytes: u64) -> Call {
    Call::untimed(
        func,
        CallKind::Coll {
            comm: WORLD_HANDLE,
            kind,
            root: 0,
            bytes,
        },
    )
}

#[test]
fn wire_bytes_count_every_message_of_the_collectives() {
    // 4 ranks: alltoall (1,000 B per pair), bcast 500 B, reduce 300 B, allreduce 64 B, a
    // barrier, and rank 0 sends 100 B to rank 1.
    let d = scratch("wire");
    let w = NativeWriter::create(&d, 4).unwrap();
    for r in 0..4 {
        let mut rw = w.rank(r, false).unwrap();
        let mut calls = vec![
            Call::untimed(funcs::F_INIT, CallKind::Init),
            coll(funcs::F_ALLTOALL, CollKind::Alltoall, 1000),
            coll(funcs::F_BCAST, CollKind::Bcast, 500),
            coll(funcs::F_REDUCE, CollKind::Reduce, 300),
            coll(funcs::F_ALLREDUCE, CollKind::Allreduce, 64),
            coll(funcs::F_BARRIER, CollKind::Barrier, 0),
        ];
        let p2p = |func, kind| Call::untimed(func, kind);
        match r {
            0 => calls.push(p2p(
                funcs::F_SEND,
                CallKind::Send {
                    comm: WORLD_HANDLE,
                    peer: 1,
                    tag: 0,
                    bytes: 100,
                },
            )),
            1 => calls.push(p2p(
                funcs::F_RECV,
                CallKind::Recv {
                    comm: WORLD_HANDLE,
                    peer: 0,
                    tag: 0,
                    bytes: 100,
                },
            )),
            _ => {}
        }
        calls.push(Call::untimed(funcs::F_FINALIZE, CallKind::Finalize));
        for c in &calls {
            rw.write(c).unwrap();
        }
        rw.finish().unwrap();
    }
    let i = info(&d, &ReadOptions::default()).unwrap();
    // The calls' size arguments: 4 ranks x (1,000 + 500 + 300 + 64).
    assert_eq!(i.collective_bytes, 4 * (1000 + 500 + 300 + 64));
    assert_eq!(i.p2p_bytes, 100);
    // What moves, with the default algorithms on 4 ranks (docs/config.md, [mpi]): alltoall
    // (scattered, 1,000 B <= 32 KiB) sends 3 blocks per rank = 12,000; bcast and reduce
    // (binomial trees) send 3 messages each = 1,500 + 900; allreduce (recursive doubling,
    // 64 B <= 2 KiB) 2 messages per rank = 512; the barrier's messages are empty; plus 100.
    assert_eq!(i.wire_bytes, Some(12_000 + 1_500 + 900 + 512 + 100));
}

#[test]
fn simgrid_flops_per_rank_sum_compute_and_reductions() {
    let i = info(&data("simgrid-ti/ti-32ranks"), &ReadOptions::default()).unwrap();
    assert_eq!(i.rank_flops.len(), 32);
    // Worked out with awk over the files: `compute` lines' flops plus the comp_size (4th
    // column) of allreduce/reduce lines (the trace has no reducescatter).
    // Integers well below 2^53: their sums are exact in f64.
    assert_eq!(i.rank_flops[0].to_bits(), 73_132_290_173f64.to_bits());
    assert_eq!(i.rank_flops[31].to_bits(), 67_519_726_487f64.to_bits());
    let total: f64 = i.rank_flops.iter().sum();
    assert_eq!(total.to_bits(), 2_274_465_493_572f64.to_bits());
    // Formats whose compute is time carry none.
    let d = info(&data("dumpi/sst-dumpi-testtrace"), &ReadOptions::default()).unwrap();
    assert!(d.rank_flops.is_empty());
}
