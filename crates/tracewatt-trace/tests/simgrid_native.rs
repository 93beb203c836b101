//! SimGrid TI reader on every file of tests/data/simgrid-ti, and the native format:
//! conversion from every format, byte-identical round trips, identical ops after conversion.
mod common;

use std::path::Path;

use common::{all_ops, data, scratch, DUMPI};
use tracewatt_trace::call::{Call, CallKind};
use tracewatt_trace::funcs;
use tracewatt_trace::native::BLOCK_BYTES;
use tracewatt_trace::{convert, detect, info, open_trace, NativeWriter, ReadOptions, TraceFormat};
use tracewatt_workload::generators::Workload;
use tracewatt_workload::{CollKind, Op};

fn simgrid_files() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(data("simgrid-ti/actions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n != "actions0.txt" && n != "actions1.txt"
        })
        .collect();
    v.sort();
    v.push(data("simgrid-ti/ti-32ranks"));
    v.push(split_list());
    v
}

/// actions0.txt + actions1.txt are one 2-rank trace (SimGrid lists them in `split_traces`).
fn split_list() -> std::path::PathBuf {
    let d = scratch("split");
    let list = d.join("split_traces");
    let a = |n: &str| {
        data(&format!("simgrid-ti/actions/{n}"))
            .display()
            .to_string()
    };
    std::fs::write(
        &list,
        format!("{}\n{}\n", a("actions0.txt"), a("actions1.txt")),
    )
    .unwrap();
    list
}

#[test]
fn every_simgrid_file_reads_and_runs() {
    for p in simgrid_files() {
        assert_eq!(
            detect(&p).unwrap(),
            TraceFormat::SimgridTi,
            "{}",
            p.display()
        );
        let t = open_trace(&p, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            t.warnings().is_empty(),
            "{}: {:?}",
            p.display(),
            t.warnings()
        );
        let ops = all_ops(&t);
        assert!(ops.iter().all(|o| !o.is_empty()), "{}", p.display());
    }
}

#[test]
fn simgrid_conventions() {
    let opts = ReadOptions {
        flops_per_s: 1e9,
        ..Default::default()
    };
    // `init` without argument: MPI_BYTE; sizes are counts x type size.
    let t = open_trace(&data("simgrid-ti/actions/actions_allreduce.txt"), &opts).unwrap();
    let ops: Vec<Op> = t.program(1).collect::<Result<_, _>>().unwrap();
    assert_eq!(
        ops,
        [
            Op::Collective {
                comm: 0,
                kind: CollKind::Allreduce,
                root: 0,
                bytes: 50_000,
                algo: tracewatt_workload::CollAlgo::Auto
            },
            Op::Compute {
                ps: 500_000_000_000
            }, // the allreduce's 5e8 flops at 1 Gflop/s
            Op::Compute {
                ps: 500_000_000_000
            },
        ]
    );
    // `init 1`: MPI_DOUBLE by default.
    let t = open_trace(&data("simgrid-ti/ti-32ranks"), &opts).unwrap();
    let bcast = t
        .program(0)
        .find_map(|o| match o.unwrap() {
            Op::Collective {
                kind: CollKind::Bcast,
                bytes,
                ..
            } => Some(bytes),
            _ => None,
        })
        .unwrap();
    assert_eq!(bcast, 8);
    assert_eq!(t.info().ranks, 32);
    assert_eq!(t.info().calls["alltoallv"], 64);
    // wait <src> <dst> <tag> finds the irecv it names; the untouched isend is drained at finalize.
    let t = open_trace(&data("simgrid-ti/actions/actions_with_isend.txt"), &opts).unwrap();
    let ops: Vec<Op> = t.program(1).collect::<Result<_, _>>().unwrap();
    assert!(
        matches!(
            ops[0],
            Op::Irecv {
                req: 0,
                bytes: 1_000_000,
                ..
            }
        ),
        "{ops:?}"
    );
    assert!(ops.contains(&Op::Wait { req: 0 }));
    // Old two-argument form: `send <peer> <count>`.
    let d = scratch("old");
    let f = d.join("old.txt");
    std::fs::write(
        &f,
        "0 init\n1 init\n0 send 1 100\n1 recv 0 100\n0 finalize\n1 finalize\n",
    )
    .unwrap();
    let t = open_trace(&f, &opts).unwrap();
    let ops = all_ops(&t);
    assert_eq!(
        ops[0],
        [Op::Send {
            comm: 0,
            dst: 1,
            tag: 0,
            bytes: 100
        }]
    );
}

fn read_all(path: &Path) -> Vec<Vec<Call>> {
    let t = open_trace(path, &ReadOptions::default()).unwrap();
    (0..t.info().ranks)
        .map(|r| t.calls(r).unwrap().collect::<Result<_, _>>().unwrap())
        .collect()
}

#[test]
fn convert_round_trips_byte_identical_and_keeps_ops() {
    let mut sources: Vec<_> = DUMPI.iter().map(|r| data(r)).collect();
    sources.extend(simgrid_files());
    for src in sources {
        let a = scratch("a");
        let b = scratch("b");
        let info_a = convert(&src, &a, &ReadOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        assert_eq!(info_a.format, TraceFormat::Native);
        convert(&a, &b, &ReadOptions::default()).unwrap();
        let orig = info(&src, &ReadOptions::default()).unwrap();
        assert_eq!(
            (orig.calls.clone(), orig.p2p_bytes, orig.collective_bytes),
            (
                info_a.calls.clone(),
                info_a.p2p_bytes,
                info_a.collective_bytes
            )
        );
        for r in 0..orig.ranks {
            let f = format!("rank-{r}.twr");
            assert_eq!(
                std::fs::read(a.join(&f)).unwrap(),
                std::fs::read(b.join(&f)).unwrap(),
                "{}",
                src.display()
            );
        }
        assert_eq!(
            std::fs::read(a.join("trace.twi")).unwrap(),
            std::fs::read(b.join("trace.twi")).unwrap()
        );
        // Every call as read, CPU times included (native version 3); SimGrid's flops are
        // kept as the compute time they give.
        let mut want = read_all(&src);
        for c in want.iter_mut().flatten() {
            if let CallKind::Compute { flops, .. } = &mut c.kind {
                *flops = None;
            }
        }
        assert_eq!(want, read_all(&a));
        let (wo, wa) = (
            open_trace(&src, &ReadOptions::default()).unwrap(),
            open_trace(&a, &ReadOptions::default()).unwrap(),
        );
        assert_eq!(all_ops(&wo), all_ops(&wa), "{}", src.display());
        assert_eq!(wo.comms(), wa.comms());
        let _ = std::fs::remove_dir_all(a);
        let _ = std::fs::remove_dir_all(b);
    }
}

#[test]
fn native_writer_by_hand() {
    // What a generator (or Python) writes: explicit computes and a ring of sends.
    let d = scratch("hand");
    let n = 3;
    let w = NativeWriter::create(&d, n).unwrap();
    for r in 0..n {
        let mut rw = w.rank(r, false).unwrap();
        rw.write(&Call::untimed(funcs::F_INIT, CallKind::Init))
            .unwrap();
        rw.write(&Call::untimed(
            funcs::F_COMPUTE,
            CallKind::Compute {
                ps: 1000,
                flops: None,
            },
        ))
        .unwrap();
        let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
        rw.write(&Call::untimed(
            funcs::F_IRECV,
            CallKind::Irecv {
                comm: 0,
                peer: prev as i32,
                tag: 7,
                bytes: 64,
                req: 9,
            },
        ))
        .unwrap();
        rw.write(&Call::untimed(
            funcs::F_SEND,
            CallKind::Send {
                comm: 0,
                peer: next as i32,
                tag: 7,
                bytes: 64,
            },
        ))
        .unwrap();
        rw.write(&Call::untimed(funcs::F_WAIT, CallKind::Wait { req: 9 }))
            .unwrap();
        rw.write(&Call::untimed(funcs::F_FINALIZE, CallKind::Finalize))
            .unwrap();
        rw.finish().unwrap();
    }
    let t = open_trace(&d, &ReadOptions::default()).unwrap();
    assert_eq!(t.info().p2p_bytes, 192);
    let ops = all_ops(&t);
    assert_eq!(ops[1][0], Op::Compute { ps: 1000 });
    assert_eq!(ops[1][3], Op::Wait { req: 0 });
}

#[test]
fn strict_makes_unsupported_fatal() {
    let d = scratch("strict");
    let f = d.join("scan.txt");
    std::fs::write(&f, "0 init\n0 scan 10 0\n0 finalize\n").unwrap();
    let t = open_trace(&f, &ReadOptions::default()).unwrap();
    assert_eq!(t.warnings().len(), 1);
    assert_eq!(
        (t.warnings()[0].name.as_str(), t.warnings()[0].count),
        ("scan", 1)
    );
    let e = open_trace(
        &f,
        &ReadOptions {
            strict: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("scan"), "{e}");
}

#[test]
fn info_serialises() {
    let i = info(&data("dumpi/sst-dumpi-testtrace"), &ReadOptions::default()).unwrap();
    let j = serde_json::to_value(&i).unwrap();
    assert_eq!(j["format"], "dumpi");
    assert_eq!(j["calls"]["isend"], 4);
    assert!(j["duration_s"].as_f64().unwrap() > 0.0);
}

/// CRC-32 (ISO-HDLC, zlib's) bit by bit, as the format's spec defines it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// A version-4 rank file's header and records without the blocks' framing, each block's
/// length and CRC checked on the way.
fn unframe(b: &[u8]) -> Vec<u8> {
    let mut out = b[..16].to_vec();
    let mut at = 16;
    while at < b.len() {
        let n = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
        assert!(
            n == BLOCK_BYTES || at + 4 + n + 4 == b.len(),
            "block at {at}: {n} bytes"
        );
        let crc = u32::from_le_bytes(b[at + 4 + n..at + 8 + n].try_into().unwrap());
        assert_eq!(crc, crc32(&b[at..at + 4 + n]), "block at {at}");
        out.extend_from_slice(&b[at + 4..at + 4 + n]);
        at += 4 + n + 4;
    }
    out
}

/// The error of a one-rank trace: at open, or at the first call of rank 0 that fails.
fn first_error(dir: &Path) -> String {
    match open_trace(dir, &ReadOptions::default()) {
        Err(e) => e.to_string(),
        Ok(t) => t
            .calls(0)
            .unwrap()
            .find_map(Result::err)
            .expect("an error")
            .to_string(),
    }
}

#[test]
fn crc32_is_the_standard_one() {
    // The check value of CRC-32/ISO-HDLC (the "123456789" test vector of the CRC catalogue).
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}

/// A rank file of several blocks: the blocks hold 64 KiB each (the last fewer), their CRCs are
/// the standard CRC-32 of length and payload, and a flipped byte in the second block is refused
/// at that block's offset before anything in it is decoded.
#[test]
fn multi_block_rank_files_check_every_block() {
    let a = scratch("blocks");
    let w = NativeWriter::create(&a, 1).unwrap();
    let mut rw = w.rank(0, true).unwrap();
    let call = |k: u64, kind: CallKind| Call {
        func: funcs::func_id(match kind {
            CallKind::Init => "init",
            CallKind::Finalize => "finalize",
            _ => "comm_rank",
        })
        .unwrap(),
        start_ns: 1_000 * k,
        end_ns: 1_000 * k + 10,
        cpu_ns: None,
        kind,
    };
    rw.write(&call(0, CallKind::Init)).unwrap();
    let n = 40_000u64;
    for k in 1..=n {
        rw.write(&call(k, CallKind::Local)).unwrap();
    }
    rw.write(&call(n + 1, CallKind::Finalize)).unwrap();
    rw.finish().unwrap();
    let f = a.join("rank-0.twr");
    let b = std::fs::read(&f).unwrap();
    let plain = unframe(&b);
    let blocks = (plain.len() - 16).div_ceil(BLOCK_BYTES);
    assert!(blocks >= 3, "{blocks} blocks");
    assert_eq!(b.len(), plain.len() + 8 * blocks);
    let calls = read_all(&a);
    assert_eq!(calls[0].len() as u64, n + 2);
    assert_eq!(calls[0][n as usize], call(n, CallKind::Local));
    // A byte in the middle of the second block: refused at the block's start.
    let second = 16 + (BLOCK_BYTES + 8);
    let mut bad = b.clone();
    bad[second + 1_000] ^= 0x10;
    std::fs::write(&f, &bad).unwrap();
    let err = first_error(&a);
    assert!(
        err.contains("rank-0.twr")
            && err.contains("rank 0")
            && err.contains(&format!("byte offset {second}"))
            && err.contains("CRC-32"),
        "{err}"
    );
    // Cut inside the last block: truncated.
    std::fs::write(&f, &b[..b.len() - 3]).unwrap();
    let err = first_error(&a);
    assert!(err.contains("truncated"), "{err}");
    let _ = std::fs::remove_dir_all(a);
}

#[test]
fn version_1_files_still_read_and_unknown_versions_do_not() {
    // A DUMPI trace has no OTF2-only communicators, so its calls written without their CPU
    // times (version 3's addition) are also a valid version 1 file once the version fields say
    // so.
    let a = scratch("v1");
    let calls = read_all(&data(DUMPI[0]));
    let w = NativeWriter::create(&a, calls.len() as u32).unwrap();
    for (r, rank_calls) in calls.iter().enumerate() {
        let mut rw = w.rank(r as u32, true).unwrap();
        for c in rank_calls {
            rw.write(&Call {
                cpu_ns: None,
                ..c.clone()
            })
            .unwrap();
        }
        rw.finish().unwrap();
    }
    let want = read_all(&a);
    let mut files = vec![a.join("trace.twi")];
    files.extend((0..want.len()).map(|r| a.join(format!("rank-{r}.twr"))));
    // Version 4's framing off: the index's 16 bytes, each rank file's header and records.
    for f in &files {
        let b = std::fs::read(f).unwrap();
        let plain = if f.ends_with("trace.twi") {
            assert_eq!(crc32(&b[..16]).to_le_bytes(), b[16..20]);
            b[..16].to_vec()
        } else {
            unframe(&b)
        };
        std::fs::write(f, plain).unwrap();
    }
    let set_version = |v: u16| {
        for f in &files {
            let mut b = std::fs::read(f).unwrap();
            b[8..10].copy_from_slice(&v.to_le_bytes());
            std::fs::write(f, b).unwrap();
        }
    };
    set_version(1);
    assert_eq!(read_all(&a), want);
    // Before version 3 a tag with the CPU bit is no record: the first record (Init, tag 3) at
    // offset 16.
    let r0 = a.join("rank-0.twr");
    let mut b = std::fs::read(&r0).unwrap();
    assert_eq!(b[16], 3);
    b[16] |= tracewatt_trace::native::TAG_CPU;
    std::fs::write(&r0, &b).unwrap();
    let err = open_trace(&a, &ReadOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("byte offset 16") && err.to_string().contains("got 67"),
        "{err}"
    );
    set_version(tracewatt_trace::NATIVE_VERSION + 1);
    let err = open_trace(&a, &ReadOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("native format version 1 to"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(a);
}

/// One file holding all 32 ranks of ti-32ranks, its lines interleaved (a line of each rank in
/// turn, so every rank's lines are many runs, with comments between some) or one rank after the
/// other: each rank reads exactly the calls of its own file, and an error names its line in the
/// shared file.
#[test]
fn a_shared_simgrid_file_reads_each_rank_as_its_own_file() {
    let dir = data("simgrid-ti/ti-32ranks");
    let per_rank: Vec<Vec<String>> = (0..32)
        .map(|r| {
            std::fs::read_to_string(dir.join(format!("ti_trace{r}.txt")))
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect()
        })
        .collect();
    let listed = open_trace(&dir, &ReadOptions::default()).unwrap();
    let longest = per_rank.iter().map(Vec::len).max().unwrap();
    let interleaved: Vec<String> = (0..longest)
        .flat_map(|i| {
            let lines: Vec<String> = per_rank.iter().filter_map(|l| l.get(i).cloned()).collect();
            lines
                .into_iter()
                .chain(std::iter::once(format!("# step {i}")))
        })
        .collect();
    let blocked: Vec<String> = per_rank.concat();
    for (name, lines) in [("interleaved", &interleaved), ("blocked", &blocked)] {
        let f = scratch("ti-shared").join(format!("{name}.txt"));
        std::fs::write(&f, lines.join("\n") + "\n").unwrap();
        let shared = open_trace(&f, &ReadOptions::default()).unwrap();
        assert_eq!(shared.info().ranks, 32);
        for r in 0..32 {
            let a: Vec<Call> = listed.calls(r).unwrap().map(Result::unwrap).collect();
            let b: Vec<Call> = shared.calls(r).unwrap().map(Result::unwrap).collect();
            assert_eq!(a, b, "{name}: rank {r}");
        }
    }
    // Rank 5's third line made bad: two steps of 33 lines (32 ranks' lines and a comment)
    // and ranks 0-4's lines come before it.
    let mut bad = interleaved.clone();
    let at = 2 * 33 + 5;
    assert!(bad[at].starts_with("5 "), "{}", bad[at]);
    bad[at] = "5 bcast x".into();
    let f = scratch("ti-shared-bad").join("bad.txt");
    std::fs::write(&f, bad.join("\n") + "\n").unwrap();
    let e = open_trace(&f, &ReadOptions::default())
        .expect_err("a bad line")
        .to_string();
    assert!(
        e.contains("rank 5") && e.contains(&format!("line {}", at + 1)),
        "{e}"
    );
}
