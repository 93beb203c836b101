//! The cross-rank checks `open` makes (src/validate.rs), one test per check, on hand-written
//! native traces whose corrupt call is known: each error must name the file, rank and byte
//! offset of that call (record offsets are measured from the writer's output, not the reader),
//! and what was expected. Plus the readers' own new checks (DUMPI `.meta` lines, datatype
//! indices, SimGrid list files).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use tracewatt_trace::call::{Call, CallKind, VKind, NULL_COMM_HANDLE, WORLD_HANDLE};
use tracewatt_trace::funcs::{self, Func};
use tracewatt_trace::{open_trace, NativeWriter, ReadOptions};
use tracewatt_workload::CollKind;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracewatt-validate-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// Every rank's first call (an MPI program's ranks call MPI_Init).
fn init() -> Call {
    call(funcs::F_INIT, CallKind::Init)
}

/// Writes a native trace of `ranks` (each rank's calls after MPI_Init; timed when any call has
/// times).
fn native(tag: &str, ranks: &[Vec<Call>]) -> PathBuf {
    let d = scratch(tag);
    let w = NativeWriter::create(&d, ranks.len() as u32).unwrap();
    for (r, calls) in ranks.iter().enumerate() {
        let timed = calls.iter().any(|c| c.end_ns != 0);
        let mut rw = w.rank(r as u32, timed).unwrap();
        for c in std::iter::once(&init()).chain(calls) {
            rw.write(c).unwrap();
        }
        rw.finish().unwrap();
    }
    d
}

/// The byte offset of call `k` of rank `rank`'s file: 16 header bytes, the first block's
/// 4-byte length, and the records before it (MPI_Init first), each measured by writing it alone
/// (a file of one record is the header, one block's 8 bytes of framing, the record and a 2-byte
/// end record). The tests' files are smaller than one block.
fn offset(ranks: &[Vec<Call>], rank: usize, k: usize) -> u64 {
    let timed = ranks[rank].iter().any(|c| c.end_ns != 0);
    let mut off = 16 + 4;
    let before: Vec<Call> = std::iter::once(init())
        .chain(ranks[rank][..k].iter().cloned())
        .collect();
    for (i, c) in before.iter().enumerate() {
        // Tests run in parallel: each measurement gets its own directory.
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = scratch(&format!("len-{}-{i}", N.fetch_add(1, Ordering::Relaxed)));
        let w = NativeWriter::create(&d, 1).unwrap();
        let mut rw = w.rank(0, timed).unwrap();
        rw.write(c).unwrap();
        rw.finish().unwrap();
        off += std::fs::metadata(d.join("rank-0.twr")).unwrap().len() - 16 - 8 - 2;
        let _ = std::fs::remove_dir_all(&d);
    }
    off
}

/// `file: rank r, byte offset o` of record `k` of rank `r`.
fn at(dir: &Path, ranks: &[Vec<Call>], r: usize, k: usize) -> String {
    format!(
        "{}: rank {r}, byte offset {}",
        dir.join(format!("rank-{r}.twr")).display(),
        offset(ranks, r, k)
    )
}

fn refusal(dir: &Path) -> String {
    match open_trace(dir, &ReadOptions::default()) {
        Ok(_) => panic!("{} was accepted", dir.display()),
        Err(e) => e.to_string(),
    }
}

/// The id of an MPI function by its lower-case name.
fn id(name: &str) -> Func {
    funcs::func_id(name).expect("a known function")
}

fn call(func: Func, kind: CallKind) -> Call {
    Call::untimed(func, kind)
}
fn send(peer: i32, tag: i32, bytes: u64) -> Call {
    call(
        funcs::F_SEND,
        CallKind::Send {
            comm: WORLD_HANDLE,
            peer,
            tag,
            bytes,
        },
    )
}
fn recv(peer: i32, tag: i32, bytes: u64) -> Call {
    call(
        funcs::F_RECV,
        CallKind::Recv {
            comm: WORLD_HANDLE,
            peer,
            tag,
            bytes,
        },
    )
}
fn coll(func: Func, kind: CollKind, root: i32, bytes: u64) -> Call {
    call(
        func,
        CallKind::Coll {
            comm: WORLD_HANDLE,
            kind,
            root,
            bytes,
        },
    )
}
fn barrier() -> Call {
    coll(funcs::F_BARRIER, CollKind::Barrier, 0, 0)
}

#[test]
fn a_receive_no_send_matches_is_refused_naming_both_sides() {
    let t = vec![vec![send(1, 5, 8)], vec![recv(0, 6, 8)]];
    let d = native("tag", &t);
    let e = refusal(&d);
    assert!(
        e.starts_with(&format!(
            "{}: expected recv: a send matching this receive (from rank 0 of MPI_COMM_WORLD",
            at(&d, &t, 1, 0)
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "messages nobody received: {} (send) to rank 1 (tag 5, 8 bytes)",
            at(&d, &t, 0, 0)
        )),
        "{e}"
    );
}

#[test]
fn a_send_nobody_receives_is_refused() {
    let t = vec![vec![send(1, 5, 8), send(1, 5, 8)], vec![recv(0, 5, 8)]];
    let d = native("extra-send", &t);
    let e = refusal(&d);
    assert!(
        e.starts_with(&format!(
            "{}: expected send: a receive matching this send (tag 5, 8 bytes) on rank 1",
            at(&d, &t, 0, 1)
        )),
        "{e}"
    );
}

#[test]
fn a_send_larger_than_its_receive_is_refused() {
    let t = vec![vec![send(1, 1, 100)], vec![recv(0, 1, 64)]];
    let d = native("larger", &t);
    let e = refusal(&d);
    assert_eq!(
        e,
        format!(
            "{}: expected recv: a receive of at least the 100 bytes of the send it matches, {} \
             (send), got 64 bytes",
            at(&d, &t, 1, 0),
            at(&d, &t, 0, 0)
        )
    );
}

/// Messages on one (source, tag) match receives in order (MPI's non-overtaking rule): the
/// 100-byte receive takes the first (8-byte) message, so the 8-byte receive gets 100 bytes.
#[test]
fn matching_follows_the_non_overtaking_order() {
    let t = vec![
        vec![send(1, 1, 8), send(1, 1, 100)],
        vec![recv(0, 1, 100), recv(0, 1, 8)],
    ];
    let d = native("order", &t);
    let e = refusal(&d);
    assert!(
        e.starts_with(&format!(
            "{}: expected recv: a receive of at least the 100 bytes of the send it matches, {}",
            at(&d, &t, 1, 1),
            at(&d, &t, 0, 1)
        )),
        "{e}"
    );
    // In the other order the same messages fit.
    let ok = vec![
        vec![send(1, 1, 8), send(1, 1, 100)],
        vec![recv(0, 1, 8), recv(0, 1, 100)],
    ];
    open_trace(&native("order-ok", &ok), &ReadOptions::default()).unwrap();
}

/// ANY_SOURCE and ANY_TAG (-1) receive whatever comes, in any order of arrival.
#[test]
fn wildcard_receives_match_as_mpi_does() {
    let any = tracewatt_trace::call::ANY;
    let t = vec![
        vec![send(2, 3, 8)],
        vec![send(2, 4, 8)],
        vec![recv(any, any, 8), recv(any, any, 8)],
    ];
    open_trace(&native("any", &t), &ReadOptions::default()).unwrap();
    // ANY_SOURCE with a tag: the tag-4 message matches neither receive.
    let t = vec![
        vec![send(2, 3, 8)],
        vec![send(2, 4, 8)],
        vec![recv(any, 3, 8), recv(any, 3, 8)],
    ];
    let d = native("any-tag", &t);
    let e = refusal(&d);
    assert!(
        e.starts_with(&format!(
            "{}: expected recv: a send matching this receive (from any rank of \
             MPI_COMM_WORLD, tag 3, 8 bytes), none found (1 receives unmatched); messages \
             nobody received: {} (send) to rank 2 (tag 4, 8 bytes)",
            at(&d, &t, 2, 1),
            at(&d, &t, 1, 0)
        )),
        "{e}"
    );
}

#[test]
fn members_calling_different_collectives_are_refused() {
    let t = vec![
        vec![barrier()],
        vec![coll(funcs::F_ALLREDUCE, CollKind::Allreduce, 0, 8)],
    ];
    let d = native("coll-kind", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected allreduce: collective #1 on MPI_COMM_WORLD to be barrier as on {} \
             (barrier), got allreduce of 8 bytes",
            at(&d, &t, 1, 0),
            at(&d, &t, 0, 0)
        )
    );
}

#[test]
fn a_root_or_size_differing_between_members_is_refused() {
    let bcast = |root, bytes| coll(funcs::F_BCAST, CollKind::Bcast, root, bytes);
    let t = vec![vec![bcast(0, 64)], vec![bcast(1, 64)]];
    let d = native("root", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected bcast: collective #1 on MPI_COMM_WORLD to be bcast of 64 bytes from \
             root 0 as on {} (bcast), got bcast of 64 bytes from root 1",
            at(&d, &t, 1, 0),
            at(&d, &t, 0, 0)
        )
    );
    let t = vec![vec![bcast(0, 64)], vec![bcast(0, 32)]];
    let e = refusal(&native("size", &t));
    assert!(e.ends_with("got bcast of 32 bytes from root 0"), "{e}");
}

#[test]
fn a_collective_a_member_never_calls_is_refused() {
    let t = vec![vec![barrier(), barrier()], vec![barrier()]];
    let d = native("missing-coll", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected barrier: every member of MPI_COMM_WORLD to call collective #2 \
             (barrier), only 1 of 2 did: rank 1 made 1 (the last: {} (barrier))",
            at(&d, &t, 0, 1),
            at(&d, &t, 1, 0)
        )
    );
}

#[test]
fn alltoallv_sizes_must_agree_pairwise() {
    let v = |send: Vec<u64>, recv: Vec<u64>| {
        call(
            funcs::F_ALLTOALLV,
            CallKind::VColl {
                comm: WORLD_HANDLE,
                kind: VKind::Alltoallv,
                root: 0,
                send,
                recv,
            },
        )
    };
    // Rank 0 sends 16 bytes to rank 1, which expects 8.
    let t = vec![
        vec![v(vec![0, 16], vec![0, 8])],
        vec![v(vec![8, 0], vec![8, 0])],
    ];
    let d = native("alltoallv", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected alltoallv: a receive of at least the 16 bytes of the send it matches, \
             {} (alltoallv), got 8 bytes",
            at(&d, &t, 1, 0),
            at(&d, &t, 0, 0)
        )
    );
}

#[test]
fn a_peer_outside_its_communicator_is_refused() {
    let split = |color, key| {
        call(
            funcs::F_COMM_SPLIT,
            CallKind::CommSplit {
                parent: WORLD_HANDLE,
                color,
                key,
                new: 4,
            },
        )
    };
    let on4 = |c: Call| match c.kind {
        CallKind::Send {
            peer, tag, bytes, ..
        } => call(
            c.func,
            CallKind::Send {
                comm: 4,
                peer,
                tag,
                bytes,
            },
        ),
        _ => c,
    };
    // Two colors: each rank alone in its communicator, so peer 1 is outside it.
    let t = vec![vec![split(0, 0), on4(send(1, 0, 8))], vec![split(1, 0)]];
    let d = native("peer", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected send: a destination below 1, the size of communicator 1 (1 ranks), \
             got 1",
            at(&d, &t, 0, 1)
        )
    );
}

#[test]
fn a_split_whose_color_and_new_communicator_disagree_is_refused() {
    let t = vec![vec![call(
        funcs::F_COMM_SPLIT,
        CallKind::CommSplit {
            parent: WORLD_HANDLE,
            color: -32766,
            key: 0,
            new: 4,
        },
    )]];
    let d = native("split", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected comm_split: a new communicator exactly when the color is not \
             MPI_UNDEFINED (color -32766, new handle 4)",
            at(&d, &t, 0, 0)
        )
    );
    let t = vec![vec![call(
        funcs::F_COMM_SPLIT,
        CallKind::CommSplit {
            parent: WORLD_HANDLE,
            color: -32766,
            key: 0,
            new: NULL_COMM_HANDLE,
        },
    )]];
    open_trace(&native("split-ok", &t), &ReadOptions::default()).unwrap();
}

fn timed(c: Call, start_ns: u64, end_ns: u64) -> Call {
    Call {
        start_ns,
        end_ns,
        ..c
    }
}

#[test]
fn time_running_backwards_is_refused() {
    // The second call starts 500 ns before the first ended.
    let t = vec![vec![
        timed(init(), 1_000, 2_000),
        timed(call(funcs::F_FINALIZE, CallKind::Finalize), 1_500, 3_000),
    ]];
    let d = native("backwards", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected finalize: a start time not before the previous call's end (starts \
             500 ns before it)",
            at(&d, &t, 0, 1)
        )
    );
    let t = vec![vec![timed(init(), 2_000, 1_000)]];
    let d = native("end-first", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected init: an end time not before its start (starts at 2000 ns, ends at \
             1000 ns)",
            at(&d, &t, 0, 0)
        )
    );
}

/// A copy of a DUMPI trace directory.
fn dumpi_copy(rel: &str, tag: &str) -> PathBuf {
    let d = scratch(tag);
    for e in std::fs::read_dir(data(rel)).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
    }
    d
}

#[test]
fn dumpi_rank_files_that_do_not_match_the_meta_name_its_line() {
    let d = dumpi_copy("dumpi/sst-dumpi-testtrace", "meta");
    let meta = d.join("testtrace.meta");
    let text = std::fs::read_to_string(&meta).unwrap();
    let line = |key: &str| 1 + text.lines().position(|l| l.starts_with(key)).unwrap();
    std::fs::write(
        &meta,
        text.replace("fileprefix=testtrace", "fileprefix=testtrack"),
    )
    .unwrap();
    let e = refusal(&d);
    assert!(
        e.starts_with(&format!(
            "{}, line {}: ",
            meta.display(),
            line("fileprefix")
        )),
        "{e}"
    );
    std::fs::write(&meta, text.replace("numprocs=4", "numprocs=3")).unwrap();
    let e = refusal(&d);
    assert!(
        e.starts_with(&format!(
            "{}, line {}: expected numprocs=3 and fileprefix=testtrace to match the rank files \
             beside it (4 found; testtrace-0003.bin is present beyond them)",
            meta.display(),
            line("numprocs")
        )),
        "{e}"
    );
}

/// sst-dumpi-testtrace's rank 0 calls MPI_Isend (label 8) with count 1 of datatype index 9 (the
/// golden dump, testtrace-0000.txt); index 300 is beyond its size table.
#[test]
fn dumpi_datatype_indices_the_size_table_lacks_are_refused() {
    let d = dumpi_copy("dumpi/sst-dumpi-testtrace", "datatype");
    let f = d.join("testtrace-0000.bin");
    let mut b = std::fs::read(&f).unwrap();
    let golden = std::fs::read_to_string(d.join("testtrace-0000.txt")).unwrap();
    assert!(
        golden.contains("MPI_Isend entering"),
        "the golden dump shows an Isend"
    );
    // The Isend record: label 00 08, then the mask; count (4 bytes) and the datatype (2
    // bytes, big-endian) follow the record's times.
    let rec = b
        .windows(2)
        .position(|w| w == [0, 8])
        .expect("an Isend label");
    let tail = &b[rec..];
    let dt = tail
        .windows(6)
        .position(|w| w == [0, 0, 0, 1, 0, 9])
        .expect("count 1 and datatype 9")
        + rec
        + 4;
    b[dt..dt + 2].copy_from_slice(&300u16.to_be_bytes());
    std::fs::write(&f, &b).unwrap();
    let e = refusal(&d);
    assert!(
        e.starts_with(&format!(
            "{}: rank 0, byte offset {rec}: expected MPI_Isend's datatypes among the",
            f.display()
        )) && e.ends_with("of the rank's size table, got index 300"),
        "{e}"
    );
}

#[test]
fn a_simgrid_list_naming_a_missing_file_names_its_line() {
    let d = scratch("list");
    let a = data("simgrid-ti/actions");
    for n in ["actions0.txt", "actions1.txt"] {
        std::fs::copy(a.join(n), d.join(n)).unwrap();
    }
    let list = d.join("ranks.txt");
    std::fs::write(&list, "actions0.txt\nactions9.txt\n").unwrap();
    assert_eq!(
        refusal(&list),
        format!(
            "{}, line 2: expected a SimGrid action line, or in a list file the name of an \
             action file next to it, got `actions9.txt`",
            list.display()
        )
    );
}

#[test]
fn a_call_on_a_communicator_the_rank_never_made_is_refused() {
    let on7 = call(
        funcs::F_BARRIER,
        CallKind::Coll {
            comm: 7,
            kind: CollKind::Barrier,
            root: 0,
            bytes: 0,
        },
    );
    let t = vec![vec![barrier(), on7]];
    let d = native("unknown-comm", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected barrier: a communicator this rank created, got handle 7, which no \
             call of the rank made (and it made none the readers cannot follow)",
            at(&d, &t, 0, 1)
        )
    );
}

/// Every member of the parent passes MPI_Comm_create the same group; rank 2's differs.
#[test]
fn comm_create_callers_passing_different_groups_are_refused() {
    let create = |ranks: Vec<i32>| {
        vec![
            call(
                id("comm_group"),
                CallKind::GroupFromComm {
                    comm: WORLD_HANDLE,
                    group: 1,
                },
            ),
            call(
                id("group_incl"),
                CallKind::GroupSelect {
                    group: 1,
                    ranks,
                    exclude: false,
                    new: 2,
                },
            ),
            call(
                id("comm_create"),
                CallKind::CommCreate {
                    parent: WORLD_HANDLE,
                    group: 2,
                    new: 4,
                },
            ),
        ]
    };
    let t = vec![
        create(vec![0, 1, 2]),
        create(vec![0, 1, 2]),
        create(vec![0, 1]),
    ];
    let d = native("comm-create", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected comm_create: the group the other ranks passed ([0, 1, 2], world \
             ranks), got [0, 1]",
            at(&d, &t, 2, 2)
        )
    );
}

#[test]
fn a_rank_that_never_calls_mpi_init_is_refused() {
    let d = scratch("no-init");
    let w = NativeWriter::create(&d, 1).unwrap();
    let mut rw = w.rank(0, false).unwrap();
    rw.write(&barrier()).unwrap();
    rw.finish().unwrap();
    assert_eq!(
        refusal(&d),
        format!(
            // The first record: after the 16-byte header and the first block's length.
            "{}: rank 0, byte offset 20: expected barrier: an MPI program: the rank calls \
             MPI_Init or MPI_Init_thread, this one never does",
            d.join("rank-0.twr").display()
        )
    );
}

/// A corrupt MPI region name in OTF2's global definitions (stencil4d's `MPI_Barrier`) is
/// refused at its string definition, which starts a few bytes before the name's text.
#[test]
fn an_otf2_mpi_region_name_that_is_no_identifier_is_refused() {
    let d = scratch("otf2-name");
    let src = data("otf2/tracer-stencil4d-32ranks");
    std::fs::copy(src.join("traces.otf2"), d.join("traces.otf2")).unwrap();
    std::fs::create_dir_all(d.join("traces")).unwrap();
    for e in std::fs::read_dir(src.join("traces")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.join("traces").join(p.file_name().unwrap())).unwrap();
    }
    let mut defs = std::fs::read(src.join("traces.def")).unwrap();
    let name = defs
        .windows(11)
        .position(|w| w == b"MPI_Barrier")
        .expect("the barrier region's name");
    defs[name + 5] = 0xFF;
    std::fs::write(d.join("traces.def"), &defs).unwrap();
    let e = refusal(&d.join("traces.otf2"));
    let prefix = format!("{}, byte offset ", d.join("traces.def").display());
    let off: usize = e
        .strip_prefix(&prefix)
        .and_then(|r| r.split(':').next())
        .and_then(|o| o.parse().ok())
        .unwrap_or_else(|| panic!("{e}"));
    assert!(
        name - 6 <= off && off < name,
        "{off} vs the name at {name}: {e}"
    );
    assert!(
        e.ends_with(
            "expected an MPI function name of letters, digits and `_`, got `MPI_B\u{fffd}rrier`"
        ),
        "{e}"
    );
}

/// A timed trace records every call: a request still pending at MPI_Finalize means the call
/// that completed it is missing (MPI requires every request complete or freed by then).
#[test]
fn a_request_pending_at_finalize_in_a_timed_trace_is_refused() {
    let irecv = call(
        funcs::F_IRECV,
        CallKind::Irecv {
            comm: WORLD_HANDLE,
            peer: 1,
            tag: 0,
            bytes: 8,
            req: 5,
        },
    );
    let fin = call(funcs::F_FINALIZE, CallKind::Finalize);
    let t = vec![
        vec![timed(irecv, 10, 20), timed(fin.clone(), 30, 40)],
        vec![timed(send(0, 0, 8), 10, 20), timed(fin, 30, 40)],
    ];
    let d = native("pending", &t);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: expected finalize: every request completed or freed before MPI_Finalize, 1 \
             still pending (the calls that completed them are missing)",
            at(&d, &t, 0, 1)
        )
    );
}

/// A copy of an OTF2 archive with one byte of `file` xored with `mask`.
fn otf2_flipped(rel: &str, tag: &str, file: &str, at: usize, mask: u8) -> PathBuf {
    let d = scratch(tag);
    let src = data(rel);
    std::fs::create_dir_all(d.join("traces")).unwrap();
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(src.join(f), d.join(f)).unwrap();
    }
    for e in std::fs::read_dir(src.join("traces")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.join("traces").join(p.file_name().unwrap())).unwrap();
    }
    let mut b = std::fs::read(d.join(file)).unwrap();
    b[at] ^= mask;
    std::fs::write(d.join(file), &b).unwrap();
    d
}

/// pipit ping-pong's MPI locations group lists location 1 at byte 9742 of traces.def; xored
/// with 0x5d it lists location 92, which no Location definition defines (the group record
/// starts a few bytes before).
#[test]
fn an_otf2_rank_whose_location_is_undefined_is_refused_at_its_group() {
    let d = otf2_flipped("otf2/pipit-ping-pong", "otf2-loc", "traces.def", 9742, 0x5d);
    let e = refusal(&d.join("traces.otf2"));
    let prefix = format!("{}, byte offset ", d.join("traces.def").display());
    let off: usize = e
        .strip_prefix(&prefix)
        .and_then(|r| r.split(':').next())
        .and_then(|o| o.parse().ok())
        .unwrap_or_else(|| panic!("{e}"));
    assert!((9742 - 16..9742).contains(&off), "{e}");
    assert!(
        e.ends_with("expected MPI ranks that are defined locations, got location 92"),
        "{e}"
    );
}

/// The MPI_Isend string definition at byte 4024 of pipit ping-pong's traces.def has length
/// 0x0c; byte 4026 xor 0x90 makes it 0x9c, swallowing the next definitions, string 185 among
/// them: region 164 (its record at byte 8526, its body at 8528) is then named by no string.
#[test]
fn an_otf2_region_named_by_an_undefined_string_is_refused_at_its_definition() {
    let d = otf2_flipped(
        "otf2/pipit-ping-pong",
        "otf2-name",
        "traces.def",
        4026,
        0x90,
    );
    assert_eq!(
        refusal(&d.join("traces.otf2")),
        format!(
            "{}, byte offset 8528: expected a region named by defined strings, got string 185",
            d.join("traces.def").display()
        )
    );
}

/// Rank 0's first Enter in pipit ping-pong (its record at byte 51 of 0.evt) enters region 3;
/// byte 53 xor 0xf3 makes it region 240, which traces.def does not define.
#[test]
fn an_otf2_event_of_an_undefined_region_is_refused() {
    let d = otf2_flipped(
        "otf2/pipit-ping-pong",
        "otf2-enter",
        "traces/0.evt",
        53,
        0xf3,
    );
    assert_eq!(
        refusal(&d.join("traces.otf2")),
        format!(
            "{}: rank 0, byte offset 51: expected an Enter or Leave of a region the global \
             definitions define, got region 240",
            d.join("traces").join("0.evt").display()
        )
    );
}

/// pipit ping-pong's ClockProperties (traces.def from byte 18) give 2,095,197,216 ticks per
/// second, origin 0x1a47f4ff668388 and length 0x18ed6394 ticks (its top byte at byte 37).
/// Byte 37 xor 0x10 shortens the length to 0x08ed6394: the trace's later events fall after
/// its end, refused at the first of them.
#[test]
fn an_otf2_event_after_the_traces_span_is_refused() {
    let d = otf2_flipped("otf2/pipit-ping-pong", "otf2-span", "traces.def", 37, 0x10);
    let (origin, length) = (0x1a47f4ff668388u64, 0x08ed6394u64);
    let e = refusal(&d.join("traces.otf2"));
    let within = format!(
        ": expected an event time within the trace's span (ClockProperties: ticks {origin} to {}), got tick ",
        origin + length
    );
    let (place, tick) = e.split_once(&within).unwrap_or_else(|| panic!("{e}"));
    assert!(
        place.contains(".evt: rank ") && place.contains(", byte offset "),
        "{e}"
    );
    assert!(tick.parse::<u64>().unwrap() > origin + length, "{e}");
}

/// sst-macro-10ranks' traces.def defines "MPI_Group_free" as string 193 (its id at byte 4304);
/// xored with 0xff the id is 62, which an earlier record already defines.
#[test]
fn an_otf2_string_defined_twice_is_refused() {
    let d = otf2_flipped(
        "otf2/sst-macro-10ranks",
        "otf2-dup",
        "traces.def",
        4304,
        0xff,
    );
    let e = refusal(&d.join("traces.otf2"));
    assert!(
        e.starts_with(&format!("{}, byte offset ", d.join("traces.def").display())),
        "{e}"
    );
    assert!(e.ends_with(": expected string 62 defined once"), "{e}");
}

/// sst-macro-10ranks was written by OTF2 2.0 (its anchor), whose last event record type is 84.
/// Byte 15234 of 2.evt, a timestamp record's type (5), xored with 0xff is type 250: a reader
/// would skip it by its length, and with it the 152 bytes of calls that follow.
#[test]
fn an_otf2_event_type_the_writers_version_does_not_define_is_refused() {
    let d = otf2_flipped(
        "otf2/sst-macro-10ranks",
        "otf2-type",
        "traces/2.evt",
        15234,
        0xff,
    );
    assert_eq!(
        refusal(&d.join("traces.otf2")),
        format!(
            "{}: rank 2, byte offset 15234: expected an event record type the trace's OTF2 \
             version defines (at most 84), got type 250",
            d.join("traces").join("2.evt").display()
        )
    );
}

/// pipit ping-pong's traces.def spells "MPI_Finalize" (string 125) from byte 2829; xored with
/// 0x20 its first letter makes it "mPI_Finalize", which name and canonical name both use. Its
/// region still says MPI is its paradigm, with a function's role: refused there, where the
/// call would otherwise become a user region and the rank's last compute would vanish.
#[test]
fn an_otf2_mpi_function_region_without_an_mpi_name_is_refused() {
    let d = otf2_flipped(
        "otf2/pipit-ping-pong",
        "otf2-fname",
        "traces.def",
        2829,
        0x20,
    );
    let e = refusal(&d.join("traces.otf2"));
    assert!(
        e.starts_with(&format!("{}, byte offset ", d.join("traces.def").display())),
        "{e}"
    );
    assert!(
        e.contains("expected an MPI function's region (paradigm MPI, role "),
        "{e}"
    );
    assert!(e.ends_with(") named `MPI_...`, got `mPI_Finalize`"), "{e}");
}

/// pipit ping-pong's MPI_Send region (region 193, its record's body at byte 9021 of
/// traces.def) has name and canonical name string 214, "MPI_Send"; byte 9024 xor 0xc2 makes
/// its name string 20, "main".
#[test]
fn an_otf2_mpi_region_whose_name_and_canonical_name_differ_is_refused() {
    let d = otf2_flipped(
        "otf2/pipit-ping-pong",
        "otf2-canon",
        "traces.def",
        9024,
        0xc2,
    );
    assert_eq!(
        refusal(&d.join("traces.otf2")),
        format!(
            "{}, byte offset 9021: expected an MPI function's region with its name as its \
             canonical name, got `main` and `MPI_Send`",
            d.join("traces.def").display()
        )
    );
}

/// Rank 0's first Enter of MPI_Send in pipit ping-pong (byte 135 of 0.evt) names region 193;
/// byte 137 xor 0xc2 makes it region 3, a user region. The send's message record then stands
/// outside any MPI call, refused there.
#[test]
fn an_otf2_message_record_outside_an_mpi_call_is_refused() {
    let d = otf2_flipped(
        "otf2/pipit-ping-pong",
        "otf2-region",
        "traces/0.evt",
        137,
        0xc2,
    );
    let e = refusal(&d.join("traces.otf2"));
    assert!(
        e.starts_with(&format!(
            "{}: rank 0, byte offset ",
            d.join("traces").join("0.evt").display()
        )) && e.ends_with(
            "expected an MPI message or collective record inside an MPI call's Enter and Leave \
             (are the global definitions' MPI regions intact?)"
        ),
        "{e}"
    );
}

/// A native index's rank count names rank files that must all be there.
#[test]
fn a_native_index_counting_more_ranks_than_files_is_refused() {
    let t = vec![vec![barrier()], vec![barrier()]];
    let d = native("index-ranks", &t);
    let index = d.join("trace.twi");
    let mut b = std::fs::read(&index).unwrap();
    b[12] = 3; // the rank count (little-endian u32 at byte 12): 3 ranks, 2 files
    let crc = crc32fast::hash(&b[..16]); // as a writer would have written it
    b[16..20].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&index, &b).unwrap();
    assert_eq!(
        refusal(&d),
        format!(
            "{}, byte offset 12: expected 3 ranks, each with its file beside the index \
             (rank-2.twr is missing)",
            index.display()
        )
    );
}

/// sst-dumpi-testtrace (4 ranks on one host, `hadalst-mbp.ca.sandia.gov`) with bytes of rank
/// files replaced: `(rank, offset, bytes)`. Its records have mask 0x4f (module docs of
/// tests/dumpi.rs): label u16, mask u8, thread u16, CPU {start, stop}, wall {start, stop}, each
/// {u16 s, u32 ns}, so a record's wall stop nanoseconds are 25 bytes in. Every rank's file has
/// Isend at 159, Recv (from the previous rank) at 208 and Allreduce at 308; rank 3's header is
/// at 377: version, start time, then the hostname's u16 length at 388 and its text at 390.
fn dumpi_patched(tag: &str, patches: &[(usize, usize, &[u8])]) -> PathBuf {
    let d = scratch(tag);
    for e in std::fs::read_dir(data("dumpi/sst-dumpi-testtrace")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
    }
    for &(rank, at, bytes) in patches {
        let f = d.join(format!("testtrace-000{rank}.bin"));
        let mut b = std::fs::read(&f).unwrap();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        std::fs::write(&f, b).unwrap();
    }
    d
}

/// The text dumps' wall-clock second of every call (1296777956 s) plus `ns`, in ns.
fn testtrace_ns(ns: u64) -> u64 {
    1_296_777_956_000_000_000 + ns
}

/// Rank 0's Recv (from rank 3) runs from .739699 to .739880 s; rank 3's Isend to it starts at
/// .739754 s. Its end moved to .739700 s (still after its start, before Wait's start) makes the
/// message received 54 us before it was sent, on one host's clock.
#[test]
fn a_message_received_before_it_was_sent_on_one_host_is_refused() {
    let recv_end = 739_700_000u32.to_be_bytes();
    let d = dumpi_patched("clock-p2p", &[(0, 208 + 25, &recv_end)]);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: rank 0, byte offset 208: expected recv: a message received no earlier than it \
             was sent (both ranks on host hadalst-mbp.ca.sandia.gov, one clock): the send, {}: \
             rank 3, byte offset 159 (isend), starts at {} ns, this call completing its receive \
             ends at {} ns, 54000 ns earlier",
            d.join("testtrace-0000.bin").display(),
            d.join("testtrace-0003.bin").display(),
            testtrace_ns(739_754_000),
            testtrace_ns(739_700_000),
        )
    );
}

/// The same times with rank 3 on another host (its hostname's first letter changed): clocks of
/// different hosts are not synchronised, so they are not compared.
#[test]
fn ranks_on_different_hosts_are_not_compared() {
    let recv_end = 739_700_000u32.to_be_bytes();
    let d = dumpi_patched("clock-hosts", &[(0, 208 + 25, &recv_end), (3, 390, b"H")]);
    open_trace(&d, &ReadOptions::default()).expect("clocks of two hosts are not compared");
}

/// The same times with every rank's hostname starting `localhost` (its first 9 letters
/// replaced): nodes of a cluster can all report it, so it names no host.
#[test]
fn ranks_on_localhost_are_not_compared() {
    let recv_end = 739_700_000u32.to_be_bytes();
    let mut patches: Vec<(usize, usize, &[u8])> = vec![(0, 208 + 25, &recv_end)];
    patches.extend((0..4).map(|r| (r, 390, &b"localhost"[..])));
    let d = dumpi_patched("clock-localhost", &patches);
    open_trace(&d, &ReadOptions::default()).expect("localhost names no host");
}

/// Allreduce starts at .739810 (rank 1), .739817 (3), .739908 (2) and .739909 s (0). Rank 1's
/// end moved to .739850 s: it ended before rank 2, whose data its result needs, started.
#[test]
fn a_collective_member_ending_before_another_starts_on_one_host_is_refused() {
    let end = 739_850_000u32.to_be_bytes();
    let d = dumpi_patched("clock-coll", &[(1, 308 + 25, &end)]);
    assert_eq!(
        refusal(&d),
        format!(
            "{}: rank 1, byte offset 308: expected allreduce: a collective that ends no earlier \
             than every member whose data it needs starts (both ranks on host \
             hadalst-mbp.ca.sandia.gov, one clock): this call ends at {} ns, {}: rank 2, byte \
             offset 308 (allreduce) starts at {} ns, 58000 ns later",
            d.join("testtrace-0001.bin").display(),
            testtrace_ns(739_850_000),
            d.join("testtrace-0002.bin").display(),
            testtrace_ns(739_908_000),
        )
    );
}

/// pipit ping-pong's traces.def has a String record at byte 5434 whose length (17, at 5435)
/// xored with 0xff becomes 238: the reader skips 238 bytes onto byte 5674, a 2 (end of file)
/// inside a later record, and every location definition after it is lost. No record is left
/// to point at, so the refusal names where the definitions ended.
#[test]
fn otf2_definitions_ending_early_are_refused_where_they_end() {
    let d = otf2_flipped(
        "otf2/pipit-ping-pong",
        "otf2-defs-end",
        "traces.def",
        5435,
        0xff,
    );
    assert_eq!(
        refusal(&d.join("traces.otf2")),
        format!(
            "{}, byte offset 5674: expected 1..2^24 MPI ranks (the members of MPI's locations \
             group or the process location groups; found 0; this is MPI's locations group, the \
             first location group, the first definition the reader skips, or where the \
             definitions end)",
            d.join("traces.def").display()
        )
    );
}

/// In pipit ping-pong's rank 0 (0.evt, read with a hex dump), MPI_Init's Enter is at byte 63
/// after its timestamp record at 54, and its Leave at 75 after the timestamp record at 66 (type
/// byte, then the u64 at 67-74, little-endian). Byte 71 xored with 0xff makes the Leave's time
/// earlier than the Enter's: refused at that timestamp record, not read as a call of no
/// duration.
#[test]
fn an_otf2_event_earlier_than_the_previous_is_refused() {
    let d = otf2_flipped(
        "otf2/pipit-ping-pong",
        "otf2-backwards",
        "traces/0.evt",
        71,
        0xff,
    );
    let e = refusal(&d.join("traces.otf2"));
    assert!(
        e.starts_with(&format!(
            "{}: rank 0, byte offset 66: expected a timestamp not before the previous event's \
             (time runs forward in a location; ",
            d.join("traces").join("0.evt").display()
        )),
        "{e}"
    );
}

/// stencil4d's rank 1 (traces/1.evt, read with a hex dump) switches measurement off at byte 51
/// (type 11, length 1, mode 2) and on at byte 63 (mode byte 1 at 65). Reading the time between
/// them as cut out of every later time, a corrupt mode would move all of them.
#[test]
fn an_otf2_measurement_switch_to_the_state_it_is_in_is_refused() {
    let events = |at, mask| {
        let d = otf2_flipped(
            "otf2/tracer-stencil4d-32ranks",
            "otf2-measurement",
            "traces/1.evt",
            at,
            mask,
        );
        let file = d.join("traces").join("1.evt");
        (refusal(&d.join("traces.otf2")), file)
    };
    // Mode 1 (on) made 2 (off) while off.
    let (e, file) = events(65, 0x03);
    assert_eq!(
        e,
        format!(
            "{}: rank 1, byte offset 63: expected a measurement switched off only while on, and \
             on only while off",
            file.display()
        )
    );
    // Neither mode.
    let (e, file) = events(65, 0xff);
    assert_eq!(
        e,
        format!(
            "{}: rank 1, byte offset 63: expected a measurement mode, 1 (on) or 2 (off), got 254",
            file.display()
        )
    );
}
