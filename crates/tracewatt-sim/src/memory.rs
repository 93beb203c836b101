//! The memory a run needs, estimated from the configuration before anything is built, so a
//! machine or workload too large for this computer is refused with an error instead of the
//! process being killed part-way (a million-node torus used to abort with "memory allocation
//! failed").
//!
//! What a run holds grows with the machine's link directions (the network's, statistics' and
//! power model's state per channel and the result tables' rows, one per channel and per channel
//! and idle threshold) and with its ranks (each rank's state and its row). Messages in flight
//! come on top and depend on the workload, so the estimate is a lower bound: a run it refuses
//! cannot fit, a run it accepts may still need more.

use crate::config::Config;
use crate::error::SimError;
use tracewatt_net::topology;

/// Bytes per item of what a run holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Costs {
    pub per_channel: u64,
    /// Per channel and idle threshold (`output.idle_thresholds_us`).
    pub per_channel_threshold: u64,
    pub per_rank: u64,
}

/// A run through [`simulate`](crate::simulate), results as Rust tables. Measured (peak resident
/// memory) on 3-D tori of 32,768 to 262,144 channels with 0, 12 and 48 thresholds, and on
/// 262,144 ranks that send nothing: 1.0 KB per channel, 44 B per channel and threshold, 380 B
/// per rank.
pub const NATIVE: Costs = Costs {
    per_channel: 1_000,
    per_channel_threshold: 44,
    per_rank: 380,
};

/// A run through tracewatt's Python API or command line, which also holds the result tables as
/// Python and pandas objects. Measured as [`NATIVE`], through `tracewatt.simulate`.
pub const THROUGH_PYTHON: Costs = Costs {
    per_channel: 1_900,
    per_channel_threshold: 120,
    per_rank: 900,
};

/// The estimate: bytes, and what they come from (for the error message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    pub bytes: u64,
    pub channels: u64,
    pub ranks: u64,
}

/// Estimates the memory `runs` simulations of `config` need at once, from the size of its
/// topology (worked out without building it) and its jobs' ranks.
pub fn estimate(
    config: &Config,
    source: &str,
    costs: &Costs,
    runs: u64,
) -> Result<Estimate, SimError> {
    let size = topology::size(&config.machine.topology).map_err(|error| SimError::Topology {
        source_name: source.to_string(),
        error,
    })?;
    let channels = 2 * size.links;
    let ranks: u64 = config.jobs.iter().map(|j| u64::from(j.ranks)).sum();
    let thresholds = config.output.idle_thresholds_us.len() as u64;
    let per_channel = costs.per_channel + thresholds * costs.per_channel_threshold;
    let bytes = runs.saturating_mul(
        channels
            .saturating_mul(per_channel)
            .saturating_add(ranks.saturating_mul(costs.per_rank)),
    );
    Ok(Estimate {
        bytes,
        channels,
        ranks,
    })
}

/// Refuses `config` (a [`SimError::Memory`]) if `runs` simulations of it at once would need
/// more memory than is available now; without a way to tell (not Linux), accepts it.
pub fn check(config: &Config, source: &str, costs: &Costs, runs: u64) -> Result<(), SimError> {
    let Some(available_bytes) = available_bytes() else {
        return Ok(());
    };
    let e = estimate(config, source, costs, runs)?;
    if e.bytes <= available_bytes {
        return Ok(());
    }
    let mut what = format!(
        "{} link directions and {} ranks",
        thousands(e.channels),
        thousands(e.ranks)
    );
    if runs > 1 {
        what.push_str(&format!(", {runs} runs at once"));
    }
    Err(SimError::Memory {
        source_name: source.to_string(),
        needed_bytes: e.bytes,
        available_bytes,
        what,
    })
}

/// `MemAvailable` of `/proc/meminfo`: what the kernel can give without swapping.
fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let groups: Vec<&str> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).unwrap_or_default())
        .collect();
    groups.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Format;

    fn torus(dims: &str, ranks: u32, thresholds: &str) -> Config {
        let text = format!(
            "[machine]\ntopology = {{ kind = \"torus\", dims = [{dims}] }}\n\
             links = {{ bandwidth_gbps = 10.0 }}\nranks_per_node = 64\n\
             [[jobs]]\nranks = {ranks}\nworkload = {{ kind = \"pingpong\" }}\n\
             [output]\nidle_thresholds_us = [{thresholds}]\n"
        );
        Config::parse(&text, Format::Toml, "t.toml").unwrap()
    }

    #[test]
    fn the_estimate_counts_channels_thresholds_and_ranks() {
        // A 4 x 4 torus: 16 node links and 2 x 16 torus links, 96 channels; 2 thresholds.
        let c = torus("4, 4", 100, "1.0, 2.0");
        let e = estimate(&c, "t.toml", &NATIVE, 1).unwrap();
        assert_eq!((e.channels, e.ranks), (96, 100));
        assert_eq!(e.bytes, 96 * (1_000 + 2 * 44) + 100 * 380);
        let twice = estimate(&c, "t.toml", &NATIVE, 2).unwrap();
        assert_eq!(twice.bytes, 2 * e.bytes);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }
}
