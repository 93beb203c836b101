//! Every job's workload: from its `[jobs.workload]` table (a generator) or its `[jobs.trace]`
//! table (a trace, read with `tracewatt-trace`; one pre-pass over its files).

use crate::assembly::STREAM_WORKLOAD;
use crate::config::{Config, JobSpec, TraceSpec};
use crate::error::SimError;
use tracewatt_core::Rng;
use tracewatt_workload::generators::{self, Workload, WorkloadSpec};

/// Every job's workload, and what the traces' pre-passes warn about (each prefixed by its job).
pub(crate) type WarnedWorkloads = (Vec<Box<dyn Workload>>, Vec<String>);

/// Builds every job's workload, with the traces' warnings.
pub(crate) fn build(config: &Config, source: &str) -> Result<WarnedWorkloads, SimError> {
    let mut warnings = Vec::new();
    let workloads = config
        .jobs
        .iter()
        .enumerate()
        .map(|(i, job)| {
            if let Some(t) = &job.trace {
                return traced(i, job, t, source, &mut warnings);
            }
            let Some(spec) = &job.workload else {
                return Err(SimError::config(
                    source,
                    &format!("jobs[{i}].workload"),
                    "missing: give a [jobs.workload] table or a [jobs.trace] table",
                    None,
                ));
            };
            generated(config, i, job, spec, source)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((workloads, warnings))
}

/// Job `i`'s trace, opened; what its pre-pass warns about goes to `warnings`.
fn traced(
    i: usize,
    job: &JobSpec,
    t: &TraceSpec,
    source: &str,
    warnings: &mut Vec<String>,
) -> Result<Box<dyn Workload>, SimError> {
    let path = t.resolve(source);
    let opts = tracewatt_trace::ReadOptions {
        compute_scale: t.compute_scale,
        flops_per_s: t.flops_per_s,
        strict: t.strict,
        compute_clock: t.compute_clock,
        // Checked when the configuration was read.
        window: t.window.as_ref().and_then(|w| w.to_window().ok()),
    };
    let trace_err = |e: tracewatt_trace::TraceError| SimError::Trace {
        source_name: source.to_string(),
        job: i,
        message: e.to_string(),
    };
    let format = tracewatt_trace::detect(&path).map_err(trace_err)?;
    if t.compute_clock == tracewatt_trace::ComputeClock::Cpu && !format.records_cpu_time() {
        return Err(SimError::config(
            source,
            &format!("jobs[{i}].trace.compute_clock"),
            format!(
                "\"cpu\" needs CPU times, and the trace {} ({}) records none: use \"wall\"",
                path.display(),
                serde_json::to_value(format)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            ),
            None,
        ));
    }
    let wl = tracewatt_trace::open_trace(&path, &opts).map_err(trace_err)?;
    let name = job.name.clone().unwrap_or_else(|| format!("jobs[{i}]"));
    warnings.extend(wl.info().warnings.iter().map(|w| format!("{name}: {w}")));
    if wl.num_ranks() != job.ranks {
        return Err(SimError::config(
            source,
            &format!("jobs[{i}].ranks"),
            format!(
                "the trace {} has {} ranks but the job has {}; set ranks = {}",
                path.display(),
                wl.num_ranks(),
                job.ranks,
                wl.num_ranks()
            ),
            None,
        ));
    }
    Ok(Box::new(wl))
}

/// Job `i`'s generated workload, on its own random stream (`STREAM_WORKLOAD + i`).
fn generated(
    config: &Config,
    i: usize,
    job: &JobSpec,
    spec: &WorkloadSpec,
    source: &str,
) -> Result<Box<dyn Workload>, SimError> {
    let seed = Rng::fork(config.seed, STREAM_WORKLOAD + i as u64).next_u64();
    generators::build(spec, job.ranks, seed).map_err(|e| {
        if e.field == "ranks" {
            // The job's rank count does not suit the generator: the run cannot go on.
            SimError::Workload {
                source_name: source.to_string(),
                job: i,
                message: e.to_string(),
            }
        } else {
            SimError::config(
                source,
                &format!("jobs[{i}].workload.{}", e.field),
                e.expected,
                None,
            )
        }
    })
}
