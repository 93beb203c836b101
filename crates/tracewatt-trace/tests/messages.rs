//! What the readers say about inputs that are not (whole) traces: a rank file that ends early
//! says it is truncated or its rank never reached MPI_Finalize; a path that is no trace lists
//! what it holds.
mod common;

use std::path::Path;

use common::{data, scratch};
use tracewatt_trace::{convert, open_trace, ReadOptions};
use tracewatt_workload::generators::Workload;

/// The first error reading every rank of `path`.
fn first_error(path: &Path) -> String {
    let t = match open_trace(path, &ReadOptions::default()) {
        Ok(t) => t,
        Err(e) => return e.to_string(),
    };
    (0..t.num_ranks())
        .find_map(|r| t.program(r).find_map(|op| op.err()))
        .expect("the trace read cleanly")
        .to_string()
}

fn copy_files(src: &Path, dst: &Path, keep: impl Fn(&str) -> bool) {
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_file() && keep(&name) {
            std::fs::copy(&p, dst.join(&name)).unwrap();
        }
    }
}

fn cut(file: &Path, len: usize) {
    let b = std::fs::read(file).unwrap();
    std::fs::write(file, &b[..len]).unwrap();
}

const TRUNCATED: &str = "the file is truncated, or its rank never reached MPI_Finalize";

#[test]
fn a_dumpi_rank_file_cut_short_says_truncated_or_no_finalize() {
    let d = scratch("cut-dumpi");
    copy_files(&data("dumpi/sst-dumpi-testtrace"), &d, |_| true);
    let f = d.join("testtrace-0001.bin");
    let len = std::fs::metadata(&f).unwrap().len() as usize;
    for keep in [len / 2, len - 1] {
        copy_files(&data("dumpi/sst-dumpi-testtrace"), &d, |n| {
            n == "testtrace-0001.bin"
        });
        cut(&f, keep);
        let e = first_error(&d);
        assert!(
            e.contains("testtrace-0001.bin") && e.contains("rank 1") && e.contains(TRUNCATED),
            "{e}"
        );
    }
}

#[test]
fn a_native_rank_file_cut_short_says_truncated_or_no_finalize() {
    let d = scratch("cut-native");
    convert(
        &data("dumpi/sst-dumpi-testtrace"),
        &d,
        &ReadOptions::default(),
    )
    .unwrap();
    let f = d.join("rank-2.twr");
    // Without its end record (the last 2 bytes: FF and a one-byte count).
    let len = std::fs::metadata(&f).unwrap().len() as usize;
    cut(&f, len - 2);
    let e = first_error(&d);
    assert!(
        e.contains("rank-2.twr") && e.contains("rank 2") && e.contains(TRUNCATED),
        "{e}"
    );
}

#[test]
fn dumpi_rank_files_without_their_meta_are_named() {
    let d = scratch("no-meta");
    copy_files(&data("dumpi/sst-dumpi-testtrace"), &d, |n| {
        n.ends_with(".bin")
    });
    std::fs::write(d.join("notes.txt"), "recorded on Monday\n").unwrap();
    let e = first_error(&d);
    assert!(
        e.contains("not a trace")
            && e.contains("4 .bin files (DUMPI rank files need the .meta naming them)")
            && e.contains("1 .txt file"),
        "{e}"
    );
}

#[test]
fn native_rank_files_without_their_index_are_named() {
    let d = scratch("no-index");
    convert(
        &data("dumpi/sst-dumpi-testtrace"),
        &d,
        &ReadOptions::default(),
    )
    .unwrap();
    std::fs::remove_file(d.join("trace.twi")).unwrap();
    let e = first_error(&d);
    assert!(
        e.contains("4 .twr files (native rank files need their trace.twi)"),
        "{e}"
    );
}

#[test]
fn an_empty_directory_and_a_stray_file_say_what_they_are() {
    let d = scratch("empty");
    assert!(first_error(&d).contains("the directory is empty"));
    let f = d.join("junk.dat");
    std::fs::write(&f, b"\x7fELF\x02\x01\x01\x00rest").unwrap();
    let e = first_error(&f);
    assert!(
        e.contains("not a trace")
            && e.contains(r#"the file starts with "\x7fELF\x02\x01\x01\x00""#),
        "{e}"
    );
}
