#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use tracewatt_workload::generators::Workload;
use tracewatt_workload::Op;

/// A trace kept in the repository, `tests/data/<rel>` (provenance and licences in its README).
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

/// The optional data (README, "Optional data"): the folder in `TRACEWATT_OPTIONAL_DATA`, else
/// `shared/data` beside the clone; only the optional (ignored) tests read it, and they fail
/// clearly if it is missing when they are asked for.
pub fn shared_data(rel: &str) -> PathBuf {
    let root = std::env::var_os("TRACEWATT_OPTIONAL_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        PathBuf::from,
    );
    let p = root.join(rel);
    assert!(
        p.exists(),
        "{}: missing; this optional test needs the optional data (set TRACEWATT_OPTIONAL_DATA)",
        p.display()
    );
    p
}

/// A fresh scratch directory under the system temp dir.
pub fn scratch(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "tracewatt-trace-test-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    d
}

/// Every rank's ops, panicking on a program error.
pub fn all_ops(w: &dyn Workload) -> Vec<Vec<Op>> {
    (0..w.num_ranks())
        .map(|r| {
            w.program(r)
                .collect::<Result<Vec<_>, _>>()
                .unwrap_or_else(|e| panic!("rank {r}: {e}"))
        })
        .collect()
}

pub const DUMPI: &[&str] = &[
    "dumpi/sst-dumpi-testtrace",
    "dumpi/sst-macro-testbgp",
    "dumpi/npb-cg.S-4ranks",
    "dumpi/npb-ft.S-4ranks",
];
