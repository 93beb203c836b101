//! Sizes a configuration may leave to its traces, filled in before it is read: a `[jobs.trace]`
//! job without `ranks` takes the trace's rank count, and a `single_switch` machine without
//! `nodes` gets the nodes its jobs take (so a trace alone sizes the run). Given values are kept:
//! a job's `ranks` that disagrees with its trace is refused when the trace is opened, naming
//! both counts.

use crate::error::SimError;
use crate::trace_path;
use toml::Value;

/// Fills `jobs[i].ranks` from traces and `machine.topology.nodes` of a single switch from the
/// jobs, on the configuration as written (after the preset is merged). Values of the wrong type
/// are left for deserialisation to report.
pub(crate) fn fill(value: &mut Value, source: &str) -> Result<(), SimError> {
    let Some(jobs) = value.get_mut("jobs").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for (i, job) in jobs.iter_mut().enumerate() {
        let Some(job) = job.as_table_mut() else {
            continue;
        };
        if job.contains_key("ranks") {
            continue;
        }
        let Some(path) = job
            .get("trace")
            .and_then(|t| t.get("path"))
            .and_then(Value::as_str)
        else {
            if job.contains_key("workload") {
                return Err(SimError::config(
                    source,
                    &format!("jobs[{i}].ranks"),
                    "missing: a [jobs.workload] job needs its rank count (a [jobs.trace] job \
                     takes the trace's)",
                    None,
                ));
            }
            continue;
        };
        let resolved = trace_path::resolve(path, source);
        if !resolved.exists() {
            return Err(trace_path::missing(source, i, &resolved));
        }
        let n = tracewatt_trace::num_ranks(&resolved).map_err(|e| SimError::Trace {
            source_name: source.to_string(),
            job: i,
            message: e.to_string(),
        })?;
        job.insert("ranks".into(), Value::Integer(n.into()));
    }
    let per_node = match value.get("machine").and_then(|m| m.get("ranks_per_node")) {
        None => 1,
        Some(v) => match v.as_integer() {
            Some(n) if n >= 1 => n,
            _ => return Ok(()),
        },
    };
    let Some(needed) = nodes_of_jobs(value, per_node) else {
        return Ok(());
    };
    if let Some(topo) = value
        .get_mut("machine")
        .and_then(|m| m.get_mut("topology"))
        .and_then(Value::as_table_mut)
    {
        if topo.get("kind").and_then(Value::as_str) == Some("single_switch")
            && !topo.contains_key("nodes")
        {
            topo.insert("nodes".into(), Value::Integer(needed));
        }
    }
    Ok(())
}

/// The nodes every job takes (`node_list` with `allocation = "list"`, else `nodes`, else
/// ranks / ranks_per_node rounded up), summed; `None` when a value is not a count.
fn nodes_of_jobs(value: &Value, per_node: i64) -> Option<i64> {
    let count = |v: Option<&Value>| v.and_then(Value::as_integer).filter(|n| *n >= 0);
    value
        .get("jobs")?
        .as_array()?
        .iter()
        .map(|job| {
            if job.get("allocation").and_then(Value::as_str) == Some("list") {
                return Some(job.get("node_list")?.as_array()?.len() as i64);
            }
            count(job.get("nodes")).or_else(|| {
                let ranks = count(job.get("ranks"))?;
                Some((ranks + per_node - 1) / per_node)
            })
        })
        .sum()
}
