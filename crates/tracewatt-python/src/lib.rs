//! The `tracewatt._tracewatt` extension module: parses configurations and runs simulations in
//! Rust, with the GIL released, and hands back plain Python data. Errors map onto one exception
//! hierarchy rooted at `TracewattError`.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::time::{Duration, Instant};
use tracewatt_sim::{memory, Column, Config, Format, Progress, SimError};
use tracewatt_workload::Op;

/// Large runs are bound by memory latency over hundreds of MB of scattered records (requests,
/// messages, packets, per-rank matching tables). mimalloc backs them with transparent huge pages
/// (it asks for them with `madvise`, which is all Debian's default `madvise` THP mode grants),
/// which removes most TLB misses: the 8,192-rank torus all-to-all ran 26 % faster than on glibc's
/// allocator with 4 KiB pages (README, performance).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

create_exception!(
    _tracewatt,
    TracewattError,
    PyException,
    "Base class of every tracewatt error."
);
create_exception!(
    _tracewatt,
    ConfigError,
    TracewattError,
    "A configuration is malformed or impossible."
);
create_exception!(
    _tracewatt,
    TopologyError,
    ConfigError,
    "A topology cannot be built or routed as configured."
);
create_exception!(
    _tracewatt,
    MemoryLimitError,
    ConfigError,
    "The run would need more memory than this computer has available."
);
create_exception!(
    _tracewatt,
    WorkloadError,
    TracewattError,
    "A workload or rank program is invalid."
);
create_exception!(
    _tracewatt,
    TraceError,
    WorkloadError,
    "A trace cannot be read: names the file and, where it applies, the rank and byte offset or line."
);
create_exception!(
    _tracewatt,
    DeadlockError,
    TracewattError,
    "The workload cannot finish: ranks wait for messages nobody sends."
);
create_exception!(
    _tracewatt,
    RunInterrupted,
    TracewattError,
    "The simulation was interrupted."
);

fn to_py(e: SimError) -> PyErr {
    let msg = e.to_string();
    match e {
        SimError::Config { .. } => ConfigError::new_err(msg),
        SimError::Topology { .. } => TopologyError::new_err(msg),
        SimError::Memory { .. } => MemoryLimitError::new_err(msg),
        SimError::Trace { .. } => TraceError::new_err(msg),
        // A run past the longest simulated time could not complete, as a bad workload cannot.
        SimError::Workload { .. } | SimError::Program(_) | SimError::TimeLimit { .. } => {
            WorkloadError::new_err(msg)
        }
        SimError::Deadlock { .. } => DeadlockError::new_err(msg),
        SimError::Interrupted { .. } => RunInterrupted::new_err(msg),
        _ => TracewattError::new_err(msg),
    }
}

fn parse(text: &str, format: &str, source: &str) -> PyResult<Config> {
    let f = match format {
        "toml" => Format::Toml,
        "json" => Format::Json,
        other => {
            return Err(ConfigError::new_err(format!(
                "unknown configuration format `{other}`; expected toml or json"
            )))
        }
    };
    Config::parse(text, f, source).map_err(to_py)
}

/// Parses and validates a configuration; returns it with every default filled in, as JSON.
#[pyfunction]
fn resolve_config(text: &str, format: &str, source: &str) -> PyResult<String> {
    Ok(parse(text, format, source)?.resolved_json().to_string())
}

/// The always-on baseline of a configuration (every link class, and every node override, forced
/// to `always_on`), resolved, as JSON.
#[pyfunction]
fn baseline_config(text: &str, format: &str, source: &str) -> PyResult<String> {
    let mut config = parse(text, format, source)?;
    config.set_baseline();
    Ok(config.resolved_json().to_string())
}

/// Raises `MemoryLimitError` if `runs` simulations of the configuration at once (through Python,
/// which holds their results again) would need more memory than is available.
#[pyfunction]
fn check_memory(text: &str, format: &str, source: &str, runs: u64) -> PyResult<()> {
    let config = parse(text, format, source)?;
    memory::check(&config, source, &memory::THROUGH_PYTHON, runs).map_err(to_py)
}

/// Describes the configured machine (JSON).
#[pyfunction]
fn machine_info(py: Python<'_>, text: &str, format: &str, source: &str) -> PyResult<String> {
    let config = parse(text, format, source)?;
    let src = source.to_string();
    py.detach(move || tracewatt_sim::machine_info(&config, &src))
        .map(|v| v.to_string())
        .map_err(to_py)
}

/// (name, one-line description) of every machine preset.
#[pyfunction]
fn presets() -> Vec<(&'static str, &'static str)> {
    tracewatt_sim::presets::descriptions()
}

/// A cheap lower bound of a run's simulated time, s, for progress displays: over every rank, its
/// job's start plus the rank's compute and timed waits (communication counted as free), with the
/// GIL released. `None` when it is zero (nothing but communication) or the workloads cannot be
/// built or read: the run itself then reports that error with its context.
#[pyfunction]
fn estimate_sim_time(
    py: Python<'_>,
    text: &str,
    format: &str,
    source: &str,
) -> PyResult<Option<f64>> {
    let config = parse(text, format, source)?;
    let src = source.to_string();
    Ok(py.detach(move || {
        let workloads = tracewatt_sim::build_workloads(&config, &src).ok()?;
        let mut longest_s = 0.0f64;
        for (job, wl) in config.jobs.iter().zip(&workloads) {
            for rank in 0..wl.num_ranks() {
                let mut ps: u64 = 0;
                for op in wl.program(rank) {
                    match op.ok()? {
                        Op::Compute { ps: d } => ps = ps.saturating_add(d),
                        // Timed waits are until a time after the job's start.
                        Op::WaitUntil { ps: until } => ps = ps.max(until),
                        _ => {}
                    }
                }
                longest_s = longest_s.max(job.start_us * 1e-6 + ps as f64 * 1e-12);
            }
        }
        (longest_s > 0.0).then_some(longest_s)
    }))
}

/// Runs a simulation with the GIL released. `progress(dict)` is called about five times a second
/// with `sim_time_s`, `events`, `ranks_done`, `ranks_total`; its returning `False`, or Ctrl-C,
/// interrupts the run. Returns `{"summary": <json str>, "tables": {name: {column: list}}}`.
#[pyfunction]
#[pyo3(signature = (text, format, source, progress=None))]
fn simulate<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    source: &str,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let config = parse(text, format, source)?;
    memory::check(&config, source, &memory::THROUGH_PYTHON, 1).map_err(to_py)?;
    let src = source.to_string();
    let mut callback_error: Option<PyErr> = None;
    let results = py.detach(|| {
        let mut last = Instant::now();
        let mut report = |p: Progress| -> bool {
            let finished = p.ranks_done == p.ranks_total;
            if !finished && last.elapsed() < Duration::from_millis(200) {
                return true;
            }
            last = Instant::now();
            Python::attach(|py| {
                if let Err(e) = py.check_signals() {
                    callback_error = Some(e);
                    return false;
                }
                if let Some(cb) = &progress {
                    let d = PyDict::new(py);
                    let r = d
                        .set_item("sim_time_s", p.sim_time_s)
                        .and_then(|_| d.set_item("events", p.events))
                        .and_then(|_| d.set_item("ranks_done", p.ranks_done))
                        .and_then(|_| d.set_item("ranks_total", p.ranks_total))
                        .and_then(|_| cb.call1(py, (d,)));
                    match r {
                        Err(e) => {
                            callback_error = Some(e);
                            return false;
                        }
                        // `False` (exactly) asks the run to stop.
                        Ok(v) if v.bind(py).is(&*pyo3::types::PyBool::new(py, false)) => {
                            return false
                        }
                        Ok(_) => {}
                    }
                }
                true
            })
        };
        tracewatt_sim::simulate(&config, &src, &mut report)
    });
    if let Some(e) = callback_error {
        return Err(e);
    }
    let results = results.map_err(to_py)?;
    let out = PyDict::new(py);
    out.set_item("summary", results.summary.to_string())?;
    // Numeric columns go over as raw native-endian buffers ("u64" or "f64", bytes) that
    // pyarrow wraps without a Python object per value: on large tables that conversion, not the
    // simulation, was most of the call.
    let tables = PyDict::new(py);
    for t in &results.tables {
        let cols = PyDict::new(py);
        for (name, col) in &t.columns {
            match col {
                Column::U64(v) => {
                    cols.set_item(*name, ("u64", raw_bytes(py, v, u64::to_ne_bytes)?))?
                }
                Column::F64(v) => {
                    cols.set_item(*name, ("f64", raw_bytes(py, v, f64::to_ne_bytes)?))?
                }
                Column::OptU64(v) => cols.set_item(*name, v)?,
                Column::Str(v) => cols.set_item(*name, v)?,
            }
        }
        tables.set_item(t.name, cols)?;
    }
    out.set_item("tables", tables)?;
    Ok(out)
}

/// `values` as one `bytes` object of their 8-byte native representations.
fn raw_bytes<'py, T: Copy>(
    py: Python<'py>,
    values: &[T],
    to_bytes: fn(T) -> [u8; 8],
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, 8 * values.len(), |buf| {
        for (out, &v) in buf.chunks_exact_mut(8).zip(values) {
            out.copy_from_slice(&to_bytes(v));
        }
        Ok(())
    })
}

fn read_options(
    compute_scale: f64,
    flops_per_s: f64,
    strict: bool,
) -> PyResult<tracewatt_trace::ReadOptions> {
    if !(compute_scale.is_finite() && compute_scale >= 0.0) {
        return Err(PyValueError::new_err(format!(
            "compute_scale must be a non-negative number, got {compute_scale}"
        )));
    }
    if !(flops_per_s.is_finite() && flops_per_s > 0.0) {
        return Err(PyValueError::new_err(format!(
            "flops_per_s must be a positive number, got {flops_per_s}"
        )));
    }
    Ok(tracewatt_trace::ReadOptions {
        compute_scale,
        flops_per_s,
        strict,
        ..Default::default()
    })
}

fn trace_err(e: tracewatt_trace::TraceError) -> PyErr {
    TraceError::new_err(e.to_string())
}

fn info_json(info: &tracewatt_trace::TraceInfo) -> PyResult<String> {
    serde_json::to_string(info)
        .map_err(|e| TracewattError::new_err(format!("cannot serialise the trace info: {e}")))
}

/// Reads a whole trace (any supported format) with the GIL released; returns its `TraceInfo`
/// (format, path, ranks, communicators, calls by name summed over ranks, p2p_bytes,
/// collective_bytes, duration_s, unsupported) as JSON.
#[pyfunction]
#[pyo3(signature = (path, compute_scale=1.0, flops_per_s=1e9, strict=false))]
fn trace_info(
    py: Python<'_>,
    path: std::path::PathBuf,
    compute_scale: f64,
    flops_per_s: f64,
    strict: bool,
) -> PyResult<String> {
    let opts = read_options(compute_scale, flops_per_s, strict)?;
    let info = py
        .detach(|| tracewatt_trace::info(&path, &opts))
        .map_err(trace_err)?;
    info_json(&info)
}

/// Converts a trace to tracewatt's native format in `out_dir` (created if missing), with the GIL
/// released; returns the converted trace's `TraceInfo` as JSON.
#[pyfunction]
#[pyo3(signature = (path, out_dir, compute_scale=1.0, flops_per_s=1e9, strict=false))]
fn trace_convert(
    py: Python<'_>,
    path: std::path::PathBuf,
    out_dir: std::path::PathBuf,
    compute_scale: f64,
    flops_per_s: f64,
    strict: bool,
) -> PyResult<String> {
    let opts = read_options(compute_scale, flops_per_s, strict)?;
    let info = py
        .detach(|| tracewatt_trace::convert(&path, &out_dir, &opts))
        .map_err(trace_err)?;
    info_json(&info)
}

#[pymodule]
fn _tracewatt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(machine_info, m)?)?;
    m.add_function(wrap_pyfunction!(check_memory, m)?)?;
    m.add_function(wrap_pyfunction!(baseline_config, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_sim_time, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_convert, m)?)?;
    m.add("TracewattError", py.get_type::<TracewattError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TopologyError", py.get_type::<TopologyError>())?;
    m.add("MemoryLimitError", py.get_type::<MemoryLimitError>())?;
    m.add("WorkloadError", py.get_type::<WorkloadError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("DeadlockError", py.get_type::<DeadlockError>())?;
    m.add("RunInterrupted", py.get_type::<RunInterrupted>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
