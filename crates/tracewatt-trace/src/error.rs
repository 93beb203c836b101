//! Errors of trace reading. Every error names the file and, where it applies, the rank and the
//! byte offset (binary formats) or line (text formats), and says what was expected, so a user can
//! look at the exact spot of a truncated or corrupt trace.

use std::path::{Path, PathBuf};

use tracewatt_workload::{ProgramError, Rank};

/// Where in a trace something went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    pub file: PathBuf,
    pub rank: Option<Rank>,
    /// Byte offset in `file` (binary formats).
    pub offset: Option<u64>,
    /// 1-based line in `file` (text formats).
    pub line: Option<u64>,
}

impl Location {
    pub fn file(file: &Path) -> Self {
        Location {
            file: file.to_path_buf(),
            ..Default::default()
        }
    }
    pub fn at(file: &Path, rank: Option<Rank>, offset: u64) -> Self {
        Location {
            file: file.to_path_buf(),
            rank,
            offset: Some(offset),
            line: None,
        }
    }
    pub fn line(file: &Path, rank: Option<Rank>, line: u64) -> Self {
        Location {
            file: file.to_path_buf(),
            rank,
            offset: None,
            line: Some(line),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(r) = self.rank {
            write!(f, ": rank {r}")?;
        }
        if let Some(o) = self.offset {
            write!(f, ", byte offset {o}")?;
        }
        if let Some(l) = self.line {
            write!(f, ", line {l}")?;
        }
        Ok(())
    }
}

/// What a file that ends early means: writers complete a rank's file when it calls
/// MPI_Finalize (the DUMPI index, the native end record, OTF2's flush), so a rank killed or
/// hung before then leaves the same shape as a cut copy.
pub(crate) const TRUNCATED: &str =
    "the file is truncated, or its rank never reached MPI_Finalize (writers complete it there)";

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The data is not what the format says it must be.
    #[error("{at}: expected {expected}")]
    Format { at: Location, expected: String },
    /// `strict` and the trace uses a call the readers cannot simulate.
    #[error("{at}: unsupported call `{call}` (strict mode)")]
    Unsupported { at: Location, call: String },
    /// A time the trace gives is longer than a simulation can hold (`what` says which and why).
    #[error("{at}: {what}")]
    Time { at: Location, what: String },
    /// The ranks' calls do not fit together: a message nobody receives, a send larger than its
    /// receive, members of a communicator calling different collectives, time running backwards.
    #[error("{at}: expected {what}")]
    Inconsistent { at: Location, what: String },
    /// The path is not a trace of any known format.
    #[error("{}: not a trace tracewatt can read ({why})", path.display())]
    UnknownFormat { path: PathBuf, why: String },
}

impl TraceError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        TraceError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
    pub(crate) fn format(at: Location, expected: impl Into<String>) -> Self {
        TraceError::Format {
            at,
            expected: expected.into(),
        }
    }

    /// The error with `at`'s byte offset or line where it has neither (errors raised past the
    /// readers, e.g. by the op builder, which knows the rank but not the record).
    pub(crate) fn located(mut self, at: &Location) -> Self {
        if let TraceError::Format { at: a, .. }
        | TraceError::Unsupported { at: a, .. }
        | TraceError::Time { at: a, .. }
        | TraceError::Inconsistent { at: a, .. } = &mut self
        {
            if a.offset.is_none() && a.line.is_none() {
                a.offset = at.offset;
                a.line = at.line;
            }
        }
        self
    }

    /// The error as a rank program's error (the simulator's vocabulary).
    pub fn to_program_error(&self, rank: Rank) -> ProgramError {
        let (source_name, r, offset) = match self {
            TraceError::Io { path, .. } | TraceError::UnknownFormat { path, .. } => {
                (path.display().to_string(), None, None)
            }
            TraceError::Format { at, .. }
            | TraceError::Unsupported { at, .. }
            | TraceError::Time { at, .. }
            | TraceError::Inconsistent { at, .. } => {
                (at.file.display().to_string(), at.rank, at.offset)
            }
        };
        let expected = |at: &Location, what: &str| match at.line {
            Some(l) => format!("line {l}: expected {what}"),
            None => format!("expected {what}"),
        };
        let message = match self {
            TraceError::Format { at, expected: e } => expected(at, e),
            TraceError::Inconsistent { at, what } => expected(at, what),
            TraceError::Unsupported { call, .. } => {
                format!("unsupported call `{call}` (strict mode)")
            }
            TraceError::Time { what, .. } => what.clone(),
            TraceError::Io { source, .. } => source.to_string(),
            TraceError::UnknownFormat { why, .. } => why.clone(),
        };
        ProgramError {
            source_name,
            rank: r.unwrap_or(rank),
            offset,
            message,
        }
    }
}
