//! The `tracewatt._tracewatt` extension module: parses configurations and runs simulations in
//! Rust, with the GIL released, and hands back plain Python data. Errors map onto one exception
//! hierarchy rooted at `TracewattError`.

use pyo3::buffer::{Element, PyBuffer};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::time::{Duration, Instant};
use tracewatt_power::dimm::{
    DimmLayout, DimmsOn, DIMM_GIB_RANGE, MAX_CHANNELS, MAX_DIMMS_PER_CHANNEL, MAX_DIMM_GIB,
    MIN_DIMM_GIB,
};
use tracewatt_sim::results::arrow_schema;
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
/// interrupts the run. Returns `{"summary": <json str>, "tables": {name: {"schema": [(column,
/// Arrow type)], "columns": {column: values}}}}`.
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
        let table = PyDict::new(py);
        table.set_item("schema", arrow_schema(t))?;
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
        table.set_item("columns", cols)?;
        tables.set_item(t.name, table)?;
    }
    out.set_item("tables", tables)?;
    Ok(out)
}

/// The DIMMs on (`tracewatt_power::dimm::DimmLayout::on`) for each memory in use in `gib`
/// (native-endian `f64`s, GiB) on a node of `channels x dimms_per_channel` DIMMs of `dimm_gib`:
/// `{"fits_first": bytes, "over": bytes}` (one 0 or 1 byte per memory) and
/// `{"bandwidth_preserving": bytes, "ideal": bytes}` (native-endian `u32` counts).
#[pyfunction]
fn dimms_on<'py>(
    py: Python<'py>,
    channels: u32,
    dimms_per_channel: u32,
    dimm_gib: f64,
    gib: &[u8],
) -> PyResult<Bound<'py, PyDict>> {
    let layout = DimmLayout {
        channels,
        dimms_per_channel,
        dimm_gib,
    };
    if !layout.within_limits() {
        return Err(PyValueError::new_err(format!(
            "DIMM layout beyond its limits (DIMM_LIMITS): {layout:?}"
        )));
    }
    let floats = gib.chunks_exact(8);
    if !floats.remainder().is_empty() {
        return Err(PyValueError::new_err(format!(
            "gib: expected 8-byte floats, got {} bytes",
            gib.len()
        )));
    }
    let on: Vec<_> = floats
        .map(|b| layout.on(f64::from_ne_bytes(b.try_into().unwrap_or_default())))
        .collect();
    let out = PyDict::new(py);
    let flags = |f: fn(&DimmsOn) -> bool| {
        PyBytes::new(py, &on.iter().map(|d| u8::from(f(d))).collect::<Vec<_>>())
    };
    let counts = |f: fn(&DimmsOn) -> u32| {
        PyBytes::new(
            py,
            &on.iter()
                .flat_map(|d| f(d).to_ne_bytes())
                .collect::<Vec<_>>(),
        )
    };
    out.set_item("fits_first", flags(|d| d.fits_first))?;
    out.set_item("over", flags(|d| d.over))?;
    out.set_item("bandwidth_preserving", counts(|d| d.bandwidth_preserving))?;
    out.set_item("ideal", counts(|d| d.ideal))?;
    Ok(out)
}

/// The limits of a node's DIMM layout, for `[power.dimms]` and the job-log analysis alike:
/// `{field: (least, most)}`.
fn dimm_limits(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("channels", (1, MAX_CHANNELS))?;
    d.set_item("dimms_per_channel", (1, MAX_DIMMS_PER_CHANNEL))?;
    d.set_item("dimm_gib", (MIN_DIMM_GIB, MAX_DIMM_GIB))?;
    Ok(d)
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

/// Column `key` of a table handed over as a dict of numpy arrays (any object with the buffer
/// protocol), copied.
fn column<T: Element>(table: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<T>> {
    let value = table
        .get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("missing column {key}")))?;
    PyBuffer::<T>::get(&value)?.to_vec(table.py())
}

/// An index column (int64): every value must be >= 0.
fn indices(table: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<usize>> {
    column::<i64>(table, key)?
        .into_iter()
        .map(|i| {
            usize::try_from(i)
                .map_err(|_| PyValueError::new_err(format!("{key}: negative index {i}")))
        })
        .collect()
}

/// A flag column (uint8: 0 false, else true; numpy's bools have no buffer format of their own
/// that PyO3 reads).
fn flags(table: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<bool>> {
    Ok(column::<u8>(table, key)?
        .into_iter()
        .map(|v| v != 0)
        .collect())
}

/// An optional index column (int64, -1 for none).
fn optional_indices(table: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<Option<usize>>> {
    Ok(column::<i64>(table, key)?
        .into_iter()
        .map(|i| usize::try_from(i).ok())
        .collect())
}

fn scalar<'py, T: FromPyObjectOwned<'py>>(table: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    table
        .get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("missing {key}")))?
        .extract()
        .map_err(Into::into)
}

/// The columns `screen_idle` takes, owned (the core borrows them), named as the core's.
struct ScreenColumns {
    trailing_idle_s: Vec<f64>,
    active_w: Vec<f64>,
    lpi_w: Vec<f64>,
    refresh_period_s: Vec<f64>,
    refresh_time_s: Vec<f64>,
    class: Vec<Option<usize>>,
    paired: Vec<bool>,
    selected: Vec<bool>,
    counts: CountColumns,
    hist: HistColumns,
    pairs: Option<PairColumns>,
    messages: Option<MessageColumns>,
}

struct CountColumns {
    link: Vec<usize>,
    threshold_s: Vec<f64>,
    count: Vec<f64>,
    total_s: Vec<f64>,
}

struct HistColumns {
    link: Vec<usize>,
    lo_s: Vec<f64>,
    hi_s: Vec<f64>,
    count: Vec<f64>,
    total_s: Vec<f64>,
}

struct PairColumns {
    pairs: usize,
    a: Vec<usize>,
    b: Vec<usize>,
    threshold_s: Vec<f64>,
    count: Vec<f64>,
    total_s: Vec<f64>,
    trailing_idle_s: Vec<f64>,
}

struct MessageColumns {
    ranks: usize,
    src: Vec<usize>,
    dst: Vec<usize>,
    src_node: Vec<usize>,
    dst_node: Vec<usize>,
    uplink: Vec<Option<usize>>,
    downlink: Vec<Option<usize>>,
    hops: Vec<f64>,
    classes: usize,
    start_s: Vec<f64>,
    end_s: Vec<f64>,
    rendezvous: Vec<bool>,
    counted: Option<CountedColumns>,
    horizon_s: f64,
}

struct CountedColumns {
    message: Vec<usize>,
    threshold_s: Vec<f64>,
    hops: Vec<f64>,
}

impl ScreenColumns {
    fn read(
        links: &Bound<'_, PyDict>,
        counts: &Bound<'_, PyDict>,
        hist: &Bound<'_, PyDict>,
        pairs: Option<&Bound<'_, PyDict>>,
        messages: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let f = column::<f64>;
        let pairs = match pairs {
            Some(p) => Some(PairColumns {
                pairs: scalar(p, "pairs")?,
                a: indices(p, "a")?,
                b: indices(p, "b")?,
                threshold_s: f(p, "threshold_s")?,
                count: f(p, "count")?,
                total_s: f(p, "total_s")?,
                trailing_idle_s: f(p, "trailing_idle_s")?,
            }),
            None => None,
        };
        let messages = match messages {
            Some(m) => {
                let counted = match m.get_item("counted")?.filter(|c| !c.is_none()) {
                    Some(c) => {
                        let c = c.cast_into::<PyDict>()?;
                        Some(CountedColumns {
                            message: indices(&c, "message")?,
                            threshold_s: f(&c, "threshold_s")?,
                            hops: f(&c, "hops")?,
                        })
                    }
                    None => None,
                };
                Some(MessageColumns {
                    ranks: scalar(m, "ranks")?,
                    src: indices(m, "src")?,
                    dst: indices(m, "dst")?,
                    src_node: indices(m, "src_node")?,
                    dst_node: indices(m, "dst_node")?,
                    uplink: optional_indices(m, "uplink")?,
                    downlink: optional_indices(m, "downlink")?,
                    hops: f(m, "hops")?,
                    classes: scalar(m, "classes")?,
                    start_s: f(m, "start_s")?,
                    end_s: f(m, "end_s")?,
                    rendezvous: flags(m, "rendezvous")?,
                    counted,
                    horizon_s: scalar(m, "horizon_s")?,
                })
            }
            None => None,
        };
        Ok(Self {
            trailing_idle_s: f(links, "trailing_idle_s")?,
            active_w: f(links, "active_w")?,
            lpi_w: f(links, "lpi_w")?,
            refresh_period_s: f(links, "refresh_period_s")?,
            refresh_time_s: f(links, "refresh_time_s")?,
            class: optional_indices(links, "class")?,
            paired: flags(links, "paired")?,
            selected: flags(links, "selected")?,
            counts: CountColumns {
                link: indices(counts, "link")?,
                threshold_s: f(counts, "threshold_s")?,
                count: f(counts, "count")?,
                total_s: f(counts, "total_s")?,
            },
            hist: HistColumns {
                link: indices(hist, "link")?,
                lo_s: f(hist, "lo_s")?,
                hi_s: f(hist, "hi_s")?,
                count: f(hist, "count")?,
                total_s: f(hist, "total_s")?,
            },
            pairs,
            messages,
        })
    }

    fn run(&self, span_s: f64) -> tracewatt_screen::Run<'_> {
        use tracewatt_screen::{Counted, IdleCounts, IdleHist, Links, Messages, PairCounts, Run};
        Run {
            links: Links {
                trailing_idle_s: &self.trailing_idle_s,
                active_w: &self.active_w,
                lpi_w: &self.lpi_w,
                refresh_period_s: &self.refresh_period_s,
                refresh_time_s: &self.refresh_time_s,
                class: &self.class,
                paired: &self.paired,
                selected: &self.selected,
            },
            idle_counts: IdleCounts {
                link: &self.counts.link,
                threshold_s: &self.counts.threshold_s,
                count: &self.counts.count,
                total_s: &self.counts.total_s,
            },
            hist: IdleHist {
                link: &self.hist.link,
                lo_s: &self.hist.lo_s,
                hi_s: &self.hist.hi_s,
                count: &self.hist.count,
                total_s: &self.hist.total_s,
            },
            pairs: self.pairs.as_ref().map(|p| PairCounts {
                pairs: p.pairs,
                a: &p.a,
                b: &p.b,
                threshold_s: &p.threshold_s,
                count: &p.count,
                total_s: &p.total_s,
                trailing_idle_s: &p.trailing_idle_s,
            }),
            messages: self.messages.as_ref().map(|m| Messages {
                ranks: m.ranks,
                src: &m.src,
                dst: &m.dst,
                src_node: &m.src_node,
                dst_node: &m.dst_node,
                uplink: &m.uplink,
                downlink: &m.downlink,
                hops: &m.hops,
                classes: m.classes,
                start_s: &m.start_s,
                end_s: &m.end_s,
                rendezvous: &m.rendezvous,
                counted: m.counted.as_ref().map(|c| Counted {
                    message: &c.message,
                    threshold_s: &c.threshold_s,
                    hops: &c.hops,
                }),
                horizon_s: m.horizon_s,
            }),
            span_s,
        }
    }
}

/// Screens link low-power settings from one run's tables (`tracewatt-screen`), with the GIL
/// released: the `timeout` policy at every setting, or with `oracle` the oracle at every
/// (sleep, wake) time. Each table is a dict of numpy arrays named as the core's fields (indices
/// int64, -1 for none); `pairs` and `messages` may be None. Returns the rows as a dict of
/// columns.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn screen_idle<'py>(
    py: Python<'py>,
    links: &Bound<'py, PyDict>,
    idle_thresholds: &Bound<'py, PyDict>,
    idle_hist: &Bound<'py, PyDict>,
    pairs: Option<&Bound<'py, PyDict>>,
    messages: Option<&Bound<'py, PyDict>>,
    span_s: f64,
    timeouts_us: Vec<f64>,
    wakes_us: Vec<f64>,
    sleeps_us: Vec<f64>,
    oracle: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let columns = ScreenColumns::read(links, idle_thresholds, idle_hist, pairs, messages)?;
    let settings = tracewatt_screen::Settings {
        timeouts_us: &timeouts_us,
        wakes_us: &wakes_us,
        sleeps_us: &sleeps_us,
    };
    let rows = py
        .detach(|| {
            let run = columns.run(span_s);
            if oracle {
                tracewatt_screen::screen_oracle(&run, &settings)
            } else {
                tracewatt_screen::screen(&run, &settings)
            }
        })
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let out = PyDict::new(py);
    type Figure = fn(&tracewatt_screen::Row) -> f64;
    let floats: [(&str, Figure); 13] = [
        ("idle_timeout_us", |r| r.idle_timeout_us),
        ("wake_time_us", |r| r.wake_time_us),
        ("sleep_time_us", |r| r.sleep_time_us),
        ("wakes", |r| r.wakes),
        ("max_link_wakes", |r| r.max_link_wakes),
        ("lpi_s", |r| r.lpi_s),
        ("lpi_fraction", |r| r.lpi_fraction),
        ("link_energy_j", |r| r.link_energy_j),
        ("link_saving_pct", |r| r.link_saving_pct),
        ("chain_wakes", |r| r.chain_wakes),
        ("bound_threshold_us", |r| r.bound_threshold_us),
        ("penalty_bound_s", |r| r.penalty_bound_s),
        ("penalty_bound_pct", |r| r.penalty_bound_pct),
    ];
    for (name, get) in floats {
        out.set_item(name, PyList::new(py, rows.iter().map(get))?)?;
    }
    out.set_item(
        "bound",
        PyList::new(py, rows.iter().map(|r| r.bound.name()))?,
    )?;
    out.set_item("exact", PyList::new(py, rows.iter().map(|r| r.exact))?)?;
    out.set_item("paired", PyList::new(py, rows.iter().map(|r| r.paired))?)?;
    out.set_item(
        "pairs_exact",
        PyList::new(py, rows.iter().map(|r| r.pairs_exact))?,
    )?;
    out.set_item("confirm", PyList::new(py, rows.iter().map(|r| r.confirm))?)?;
    Ok(out)
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
    m.add_function(wrap_pyfunction!(dimms_on, m)?)?;
    m.add("DIMM_LIMITS", dimm_limits(py)?)?;
    m.add("DIMM_GIB_RANGE", DIMM_GIB_RANGE)?;
    m.add("FLOW_TRAIN_SEGMENTS", tracewatt_sim::FLOW_TRAIN_SEGMENTS)?;
    m.add("FLOW_SEGMENT_PACKETS", tracewatt_sim::FLOW_SEGMENT_PACKETS)?;
    m.add(
        "FLOW_SHORT_UNIT_PACKETS",
        tracewatt_sim::FLOW_SHORT_UNIT_PACKETS,
    )?;
    m.add_function(wrap_pyfunction!(screen_idle, m)?)?;
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
