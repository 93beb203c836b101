//! Benchmark fixtures shared by the criterion benches: the configurations they run.

/// The standard synthetic dragonfly load, scaled by `messages` per node.
pub fn dragonfly_uniform(messages: u32) -> String {
    format!(
        r#"
seed = 1
[machine]
preset = "bench-dragonfly-1056"
[[jobs]]
ranks = 1056
[jobs.workload]
kind = "uniform_random"
messages = {messages}
bytes = 2048
interval_us = 1.0
"#
    )
}
