//! Where a configuration's trace files are: a path as written, resolved against the
//! configuration file's directory, and the error for one that does not exist.

use crate::error::SimError;
use std::path::{Path, PathBuf};

/// A trace's path as written in the configuration `source`: as is if absolute, else relative to
/// the directory of `source` (or to the current directory when `source` is not a file name,
/// i.e. `<dict>` / `<string>`).
pub(crate) fn resolve(path: &str, source: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() || (source.starts_with('<') && source.ends_with('>')) {
        return p.to_path_buf();
    }
    match Path::new(source).parent() {
        Some(dir) => dir.join(p),
        None => p.to_path_buf(),
    }
}

/// The error for job `job`'s trace path that does not exist.
pub(crate) fn missing(source: &str, job: usize, resolved: &Path) -> SimError {
    SimError::config(
        source,
        &format!("jobs[{job}].trace.path"),
        format!("{}: no such file or directory", resolved.display()),
        None,
    )
}
