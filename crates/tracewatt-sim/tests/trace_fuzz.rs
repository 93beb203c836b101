//! Single-byte corruption of the DUMPI traces kept in the repository (`tests/data/dumpi`): every
//! flip is either refused with the file, rank and byte offset, or harmless, i.e. the replay's
//! makespan moves by less than 0.5 % (the bar of issue #18).
//!
//! The default test flips `DEFAULT_FLIPS` seeded positions per trace (spread over its rank
//! files) and holds the first half of the bar: a refusal always names file, rank and offset.
//! The whole bar (flips read without error are harmless) is the ignored tests, which do not
//! pass yet: flipped tags, counts, datatypes and small timestamp moves read cleanly and can
//! deadlock the replay or move its makespan (issue #18; catching them needs cross-rank matching
//! in the pre-pass). Run them with
//! `cargo test --release -p tracewatt-sim --test trace_fuzz -- --ignored`.

use std::path::{Path, PathBuf};

use tracewatt_sim::{simulate_with, Config, Format};
use tracewatt_trace::{open_trace, ReadOptions};
use tracewatt_workload::generators::Workload;
use tracewatt_workload::Op;

const TRACES: &[&str] = &[
    "dumpi/sst-dumpi-testtrace",
    "dumpi/sst-macro-testbgp",
    "dumpi/npb-ft.S-4ranks",
    "dumpi/npb-cg.S-4ranks",
];
/// Flips per trace in the default test (keeps it near 10 s in a debug build).
const DEFAULT_FLIPS: usize = 300;
/// The largest relative makespan change a flip read without error may cause.
const HARMLESS: f64 = 0.005;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// A private copy of a trace directory's files.
fn copy(src: &Path, tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracewatt-fuzz-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    for e in std::fs::read_dir(src).expect("trace dir") {
        let p = e.expect("dir entry").path();
        if p.is_file() {
            std::fs::copy(&p, d.join(p.file_name().expect("file name"))).expect("copy");
        }
    }
    d
}

fn bin_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("trace dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    v.sort();
    v
}

/// Every rank's ops, or the first error's message.
fn ops(dir: &Path) -> Result<Vec<Vec<Op>>, String> {
    let t = open_trace(dir, &ReadOptions::default()).map_err(|e| e.to_string())?;
    (0..t.num_ranks())
        .map(|r| {
            t.program(r)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// The replay's makespan on a single switch with one node per rank.
fn makespan_s(dir: &Path) -> Result<f64, String> {
    let t = open_trace(dir, &ReadOptions::default()).map_err(|e| e.to_string())?;
    let ranks = t.num_ranks();
    let text = format!(
        "seed = 1\n[machine]\nranks_per_node = 1\n[machine.topology]\nkind = \"single_switch\"\n\
         nodes = {ranks}\n[machine.links]\nbandwidth_gbps = 10.0\n\
         latency_ns = 2500.0\n[[jobs]]\nname = \"trace\"\nranks = {ranks}\n[jobs.trace]\npath = {:?}\n",
        dir.display().to_string()
    );
    let config = Config::parse(&text, Format::Toml, "<fuzz>").map_err(|e| e.to_string())?;
    let r = simulate_with(&config, "<fuzz>", vec![Box::new(t)], &mut |_| true)
        .map_err(|e| e.to_string())?;
    r.summary["makespan_s"]
        .as_f64()
        .ok_or_else(|| "no makespan_s".to_string())
}

/// splitmix64: a seeded, dependency-free position stream.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Applies each flip (file index, position, xor mask) to a copy of `rel`, checks it, restores
/// the byte; returns the failures (empty when every flip met the bar).
/// With `replay` false, flips read without error are not judged (no replay).
fn check_flips(
    rel: &str,
    flips: impl Iterator<Item = (usize, usize, u8)>,
    replay: bool,
) -> Vec<String> {
    let dir = copy(&data(rel), &rel.replace('/', "-"));
    let files = bin_files(&dir);
    let base_ops = ops(&dir).expect("the original trace reads");
    let base_s = makespan_s(&dir).expect("the original trace replays");
    let originals: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).expect("read"))
        .collect();
    let mut failures = Vec::new();
    for (fi, pos, mask) in flips {
        let (file, orig) = (&files[fi], &originals[fi]);
        let mut b = orig.clone();
        b[pos] ^= mask;
        std::fs::write(file, &b).expect("write");
        let name = file.file_name().expect("file name").to_string_lossy();
        let rank = fi; // rank files sort in rank order
        let verdict = match ops(&dir) {
            Err(e) => {
                let named = e.contains(name.as_ref())
                    && e.contains(&format!("rank {rank}"))
                    && e.contains("byte offset");
                (!named).then(|| format!("refused without file/rank/offset: {e}"))
            }
            Ok(o) if !replay || o == base_ops => None,
            Ok(_) => match makespan_s(&dir) {
                Ok(s) if ((s - base_s) / base_s).abs() < HARMLESS => None,
                Ok(s) => Some(format!("read cleanly, makespan {base_s} s -> {s} s")),
                Err(e) => Some(format!("read cleanly, replay failed: {e}")),
            },
        };
        if let Some(v) = verdict {
            failures.push(format!("{name} byte {pos} ^ {mask:#04x}: {v}"));
        }
        std::fs::write(file, orig).expect("restore");
    }
    let _ = std::fs::remove_dir_all(&dir);
    failures
}

fn file_lens(rel: &str) -> Vec<usize> {
    bin_files(&data(rel))
        .iter()
        .map(|f| std::fs::metadata(f).expect("metadata").len() as usize)
        .collect()
}

/// `n` seeded flips (file, position, nonzero xor mask) per trace.
fn seeded(rel: &str, seed: u64, n: usize) -> Vec<(usize, usize, u8)> {
    let lens = file_lens(rel);
    let mut state = seed;
    (0..n)
        .map(|_| {
            let fi = next(&mut state) as usize % lens.len();
            let pos = next(&mut state) as usize % lens[fi];
            let mask = (next(&mut state) % 255 + 1) as u8;
            (fi, pos, mask)
        })
        .collect()
}

#[test]
fn seeded_single_byte_flips_refused_name_file_rank_and_offset() {
    let mut all = Vec::new();
    for (i, rel) in TRACES.iter().enumerate() {
        all.extend(check_flips(
            rel,
            seeded(rel, 18 + i as u64, DEFAULT_FLIPS).into_iter(),
            false,
        ));
    }
    assert!(
        all.is_empty(),
        "{} flips failed:\n{}",
        all.len(),
        all.join("\n")
    );
}

/// The acceptance: 2,000 seeded flips per rank file, the whole bar.
#[test]
#[ignore = "does not pass yet (issue #18); cargo test --release -p tracewatt-sim --test trace_fuzz -- --ignored"]
fn seeded_single_byte_flips_are_refused_with_a_location_or_harmless() {
    let mut all = Vec::new();
    for (i, rel) in TRACES.iter().enumerate() {
        let n = 2000 * file_lens(rel).len();
        all.extend(check_flips(
            rel,
            seeded(rel, 18 + i as u64, n).into_iter(),
            true,
        ));
    }
    assert!(
        all.is_empty(),
        "{} flips failed:\n{}",
        all.len(),
        all.join("\n")
    );
}

/// Every byte of every rank file, flipped to its complement.
#[test]
#[ignore = "slow, does not pass yet (issue #18); cargo test --release -p tracewatt-sim --test trace_fuzz -- --ignored"]
fn every_single_byte_flip_is_refused_with_a_location_or_harmless() {
    let mut all = Vec::new();
    for rel in TRACES {
        let lens = file_lens(rel);
        let flips = lens
            .iter()
            .enumerate()
            .flat_map(|(fi, &n)| (0..n).map(move |pos| (fi, pos, 0xff)));
        all.extend(check_flips(rel, flips, true));
    }
    assert!(
        all.is_empty(),
        "{} flips failed:\n{}",
        all.len(),
        all.join("\n")
    );
}
