//! Truncated and corrupted versions of real traces (DUMPI, OTF2, native, SimGrid): every reader
//! must return errors (naming file and offset/line), never panic or hang.
mod common;

use std::path::{Path, PathBuf};

use common::{data, scratch};
use proptest::prelude::*;
use tracewatt_trace::{convert, open_trace, ReadOptions, TraceError};
use tracewatt_workload::generators::Workload;

/// Opens and runs every rank; Ok(()) if everything read cleanly.
fn run(path: &Path) -> Result<(), String> {
    let t = open_trace(path, &ReadOptions::default()).map_err(|e| e.to_string())?;
    for r in 0..t.num_ranks() {
        for op in t.program(r) {
            op.map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn copy_dir(src: &Path, tag: &str) -> PathBuf {
    let d = scratch(tag);
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
        }
    }
    d
}

/// A copy of an OTF2 archive (anchor, definitions, `traces/`).
fn otf2_copy(rel: &str, tag: &str) -> PathBuf {
    let d = copy_dir(&data(rel), tag);
    let sub = data(rel).join("traces");
    std::fs::create_dir(d.join("traces")).unwrap();
    for e in std::fs::read_dir(sub).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, d.join("traces").join(p.file_name().unwrap())).unwrap();
    }
    d
}

fn native_copy() -> PathBuf {
    let d = scratch("native-src");
    convert(
        &data("dumpi/sst-macro-testbgp"),
        &d,
        &ReadOptions::default(),
    )
    .unwrap();
    d
}

fn mutate(file: &Path, truncate: Option<usize>, flips: &[(usize, u8)]) {
    let mut b = std::fs::read(file).unwrap();
    for &(at, x) in flips {
        if !b.is_empty() {
            let i = at % b.len();
            b[i] ^= x.max(1);
        }
    }
    if let Some(t) = truncate {
        b.truncate(t % (b.len() + 1));
    }
    std::fs::write(file, b).unwrap();
}

#[test]
fn every_truncation_of_a_dumpi_rank_file_is_an_error_with_an_offset() {
    let d = copy_dir(&data("dumpi/sst-dumpi-testtrace"), "trunc-dumpi");
    let f = d.join("testtrace-0002.bin");
    let orig = std::fs::read(&f).unwrap();
    for len in (0..orig.len()).step_by(5) {
        std::fs::write(&f, &orig[..len]).unwrap();
        let e = run(&d).expect_err("truncated file read cleanly");
        assert!(
            e.contains("testtrace-0002.bin") && e.contains("rank 2"),
            "{e}"
        );
    }
}

#[test]
fn every_truncation_of_a_native_rank_file_is_an_error_with_an_offset() {
    let d = native_copy();
    let f = d.join("rank-3.twr");
    let orig = std::fs::read(&f).unwrap();
    for len in (0..orig.len()).step_by(13) {
        std::fs::write(&f, &orig[..len]).unwrap();
        let e = run(&d).expect_err("truncated file read cleanly");
        assert!(e.contains("rank-3.twr") && e.contains("byte offset"), "{e}");
    }
}

/// Where the end-of-file marker (`02`) is: only bytes after it (`01` closing the buffer, some
/// writers' newline) may be cut without harm.
fn eof_marker(b: &[u8]) -> usize {
    b.iter()
        .rposition(|&x| x == 2)
        .expect("an end-of-file marker")
}

/// Every cut up to the end-of-file marker is an error naming the event file, rank and offset.
#[test]
fn every_truncation_of_an_otf2_event_file_is_an_error_with_an_offset() {
    let d = otf2_copy("otf2/tracer-stencil4d-32ranks", "trunc-otf2-evt");
    let f = d.join("traces/5.evt");
    let orig = std::fs::read(&f).unwrap();
    let eof = eof_marker(&orig);
    for len in (0..=eof).step_by(3).chain([eof]) {
        std::fs::write(&f, &orig[..len]).unwrap();
        let e = run(&d).expect_err("truncated file read cleanly");
        assert!(
            e.contains("5.evt") && e.contains("rank 5") && e.contains("byte offset"),
            "{len}: {e}"
        );
    }
}

#[test]
fn every_truncation_of_otf2_definitions_is_an_error_naming_the_file() {
    let d = otf2_copy("otf2/sst-macro-10ranks", "trunc-otf2-def");
    for (name, rank) in [("traces.def", None), ("traces/3.def", Some(3))] {
        let f = d.join(name);
        let orig = std::fs::read(&f).unwrap();
        let eof = eof_marker(&orig);
        for len in (0..=eof).step_by(11).chain([eof]) {
            std::fs::write(&f, &orig[..len]).unwrap();
            let e = run(&d).expect_err("truncated definitions read cleanly");
            assert!(e.contains(name) && e.contains("byte offset"), "{len}: {e}");
            if let Some(r) = rank {
                assert!(e.contains(&format!("rank {r}")), "{len}: {e}");
            }
        }
        std::fs::write(&f, orig).unwrap();
    }
    // The anchor up to the number of global definitions (what the reader needs).
    let f = d.join("traces.otf2");
    let orig = std::fs::read(&f).unwrap();
    for len in 0..45 {
        std::fs::write(&f, &orig[..len]).unwrap();
        let e = run(&d).expect_err("truncated anchor read cleanly");
        assert!(
            e.contains("traces.otf2") && e.contains("byte offset"),
            "{len}: {e}"
        );
    }
}

#[test]
fn bad_simgrid_lines_name_the_line() {
    let d = scratch("bad-ti");
    let f = d.join("t.txt");
    std::fs::write(&f, "0 init\n0 bcast x\n0 finalize\n").unwrap();
    let e = open_trace(&f, &ReadOptions::default()).unwrap_err();
    assert!(matches!(e, TraceError::Format { .. }));
    assert!(e.to_string().contains("line 2"), "{e}");
    // A negative size is no size: before, it was read as 0 bytes.
    std::fs::write(&f, "0 init\n0 send 0 -5\n0 finalize\n").unwrap();
    let e = open_trace(&f, &ReadOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("line 2") && e.to_string().contains("a count >= 0, got -5"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn corrupt_dumpi_never_panics(rank in 0u32..7, trunc in proptest::option::of(0usize..20_000), flips in proptest::collection::vec((0usize..20_000, any::<u8>()), 0..6)) {
        let d = copy_dir(&data("dumpi/sst-macro-testbgp"), "fuzz-dumpi");
        mutate(&d.join(format!("testbgp-{rank:04}.bin")), trunc, &flips);
        let _ = run(&d);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn corrupt_dumpi_meta_never_panics(trunc in proptest::option::of(0usize..200), flips in proptest::collection::vec((0usize..200, any::<u8>()), 0..4)) {
        let d = copy_dir(&data("dumpi/sst-dumpi-testtrace"), "fuzz-meta");
        mutate(&d.join("testtrace.meta"), trunc, &flips);
        let _ = run(&d);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn corrupt_native_never_panics(rank in 0u32..7, trunc in proptest::option::of(0usize..8_000), flips in proptest::collection::vec((0usize..8_000, any::<u8>()), 0..6), index in any::<bool>()) {
        let d = native_copy();
        let f = if index { d.join("trace.twi") } else { d.join(format!("rank-{rank}.twr")) };
        mutate(&f, trunc, &flips);
        let _ = run(&d);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn corrupt_otf2_never_panics(file in 0usize..22, trunc in proptest::option::of(0usize..30_000), flips in proptest::collection::vec((0usize..30_000, any::<u8>()), 0..6)) {
        let d = otf2_copy("otf2/sst-macro-10ranks", "fuzz-otf2");
        let name = match file {
            20 => "traces.otf2".to_string(),
            21 => "traces.def".to_string(),
            f => format!("traces/{}.{}", f / 2, if f % 2 == 0 { "evt" } else { "def" }),
        };
        mutate(&d.join(name), trunc, &flips);
        let _ = run(&d);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn corrupt_simgrid_never_panics(file in 0usize..33, trunc in proptest::option::of(0usize..3_000), flips in proptest::collection::vec((0usize..3_000, any::<u8>()), 0..6)) {
        let d = copy_dir(&data("simgrid-ti/ti-32ranks"), "fuzz-ti");
        let name = if file == 32 { "ranks.txt".to_string() } else { format!("ti_trace{file}.txt") };
        mutate(&d.join(name), trunc, &flips);
        let _ = run(&d);
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Every byte of the three OTF2 traces' anchors, global and location definitions, xored with
/// each of five masks (162,895 flips): a refusal names a byte offset. Slow (about 8 minutes of
/// CPU in a release build): `cargo test --release -p tracewatt-trace --test robustness --
/// --ignored`.
#[test]
#[ignore = "slow (about 8 CPU-minutes): cargo test --release -p tracewatt-trace --test robustness -- --ignored"]
fn every_flip_of_otf2_definitions_is_refused_with_an_offset_or_reads() {
    let mut failures = Vec::new();
    for rel in [
        "otf2/pipit-ping-pong",
        "otf2/sst-macro-10ranks",
        "otf2/tracer-stencil4d-32ranks",
    ] {
        let d = otf2_copy(rel, "flip-otf2-defs");
        let mut files = vec![d.join("traces.otf2"), d.join("traces.def")];
        for e in std::fs::read_dir(d.join("traces")).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "def") {
                files.push(p);
            }
        }
        files.sort();
        for f in &files {
            let orig = std::fs::read(f).unwrap();
            for at in 0..orig.len() {
                for mask in [0xff, 0x01, 0x80, 0x10, 0x06] {
                    mutate(f, None, &[(at, mask)]);
                    if let Err(e) = run(&d) {
                        if !e.contains("byte offset") {
                            failures.push(format!("{} byte {at} ^ {mask:#04x}: {e}", f.display()));
                        }
                    }
                    std::fs::write(f, &orig).unwrap();
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
