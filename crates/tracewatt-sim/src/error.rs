//! The simulation's error type. Every variant says where (file, field, rank) and what was
//! expected; the Python bindings map each variant to its own exception class.

use tracewatt_workload::ProgramError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The configuration is malformed or impossible. Fatal before the run starts.
    #[error("{source_name}{}: {message}", location(field, line_col))]
    Config {
        source_name: String,
        /// Dotted path of the offending field, e.g. `jobs[0].workload.iterations`; empty if the
        /// document as a whole is at fault.
        field: String,
        /// 1-based (line, column) in the source text, when known.
        line_col: Option<(usize, usize)>,
        message: String,
    },
    /// The topology cannot be built or routed as configured.
    #[error("{source_name}: {error}")]
    Topology {
        source_name: String,
        #[source]
        error: tracewatt_net::TopologyError,
    },
    /// The run would need more memory than is available (see [`crate::memory`]). Fatal before
    /// the run starts.
    #[error(
        "{source_name}: the run needs an estimated {} of memory ({what}), more than the {} \
         available (MemAvailable in /proc/meminfo); simulate a smaller machine or fewer ranks",
        gigabytes(*needed_bytes),
        gigabytes(*available_bytes)
    )]
    Memory {
        source_name: String,
        needed_bytes: u64,
        available_bytes: u64,
        /// What the estimate counts, e.g. `8,000,000 link directions and 2 ranks`.
        what: String,
    },
    /// A workload generator rejected its parameters.
    #[error("{source_name}: jobs[{job}].workload: {message}")]
    Workload {
        source_name: String,
        job: usize,
        message: String,
    },
    /// A job's trace cannot be opened or read (`message` names the file and, where it applies,
    /// the rank and byte offset or line).
    #[error("{source_name}: jobs[{job}].trace: {message}")]
    Trace {
        source_name: String,
        job: usize,
        message: String,
    },
    /// A rank program (e.g. a trace) failed while running.
    #[error(transparent)]
    Program(#[from] ProgramError),
    /// The workload cannot finish: ranks wait for messages nobody will send.
    #[error(
        "the workload cannot finish at t = {time_s} s: {blocked} rank(s) are blocked:\n{details}"
    )]
    Deadlock {
        time_s: f64,
        blocked: usize,
        details: String,
    },
    /// The run went past the longest simulated time,
    /// [`MAX_SIMULATED_PS`](tracewatt_core::time::MAX_SIMULATED_PS).
    #[error(
        "{source_name}: the simulation reached t = {time_s} s, past the longest simulated time \
         of {limit_s:e} s (about 93 days: simulated time is 64-bit picoseconds, with headroom \
         for sums); the jobs' workloads take longer than that"
    )]
    TimeLimit {
        source_name: String,
        time_s: f64,
        limit_s: f64,
    },
    /// The caller asked the run to stop (e.g. Ctrl-C).
    #[error("the simulation was interrupted at t = {time_s} s")]
    Interrupted { time_s: f64 },
}

fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

fn location(field: &str, line_col: &Option<(usize, usize)>) -> String {
    let mut s = String::new();
    if let Some((l, c)) = line_col {
        s.push_str(&format!(":{l}:{c}"));
    }
    if !field.is_empty() {
        s.push_str(&format!(": {field}"));
    }
    s
}

impl SimError {
    pub(crate) fn config(
        source: &str,
        field: &str,
        message: impl Into<String>,
        line_col: Option<(usize, usize)>,
    ) -> Self {
        SimError::Config {
            source_name: source.to_string(),
            field: field.to_string(),
            line_col,
            message: message.into(),
        }
    }

    /// A `[power]` or `[mpi.wait]` field the power crate rejected, in `source`.
    pub(crate) fn power_config(source: &str, e: tracewatt_power::config::ConfigError) -> Self {
        Self::config(source, &e.field, e.message, None)
    }
}
