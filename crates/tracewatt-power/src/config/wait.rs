//! `[mpi.wait]`: how a rank waits for MPI, and the C-states a low-power wait sleeps in.

use super::{time_field, us_to_ps, ConfigError};
use crate::C_STATES;
use serde::{Deserialize, Serialize};
use tracewatt_core::time::US;
use tracewatt_core::Ps;

/// `[mpi.wait]`: how a rank waits for MPI (docs/references.md section 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitSpec {
    /// `spin` (the baseline), `block`, `mwait` or `oracle` (the bound).
    #[serde(default)]
    pub policy: WaitPolicyName,
    /// Spin this long before a low-power wait; or give it in iterations.
    #[serde(default)]
    pub spin_threshold_us: Option<f64>,
    #[serde(default)]
    pub spin_threshold_iterations: Option<f64>,
    /// Time of one polling iteration.
    #[serde(default)]
    pub spin_iteration_ns: Option<f64>,
    /// Entering the low-power wait (at active power).
    #[serde(default)]
    pub enter_overhead_us: Option<f64>,
    /// Leaving it (at active power), delaying the rank, besides the C-state's exit latency.
    #[serde(default)]
    pub wake_overhead_us: Option<f64>,
    /// How `block` picks the C-state: Linux's `menu` governor, or always C3.
    #[serde(default)]
    pub governor: GovernorName,
    /// What a sender pays per message to a rank on its node so that a low-power waiter
    /// notices it (`block`: a write() of one byte to the receiver's pipe), at active power.
    #[serde(default)]
    pub notify_overhead_us: Option<f64>,
}

/// `[mpi.wait] policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitPolicyName {
    #[default]
    Spin,
    Block,
    Mwait,
    Oracle,
}

/// `[mpi.wait] governor`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GovernorName {
    #[default]
    Menu,
    Fixed,
}

/// Nehalem's C1, C1E, C3 and C6 in Linux's `intel_idle` (`nehalem_cstates`): exit latency and
/// target residency, us.
pub(super) const NEHALEM_CSTATES_US: [(f64, f64); C_STATES] =
    [(3.0, 6.0), (10.0, 20.0), (20.0, 80.0), (200.0, 800.0)];
/// Indices into those: MWAIT's C1, and C3 for `block` under the fixed governor.
pub(super) const C1: usize = 0;
pub(super) const C3: usize = 2;

impl Default for WaitSpec {
    fn default() -> Self {
        Self {
            policy: WaitPolicyName::Spin,
            spin_threshold_us: None,
            spin_threshold_iterations: None,
            spin_iteration_ns: None,
            enter_overhead_us: None,
            wake_overhead_us: None,
            governor: GovernorName::Menu,
            notify_overhead_us: None,
        }
    }
}

/// The paper's recommended threshold (10^6 iterations) and an assumed 10 ns per polling
/// iteration (a load of an L1-resident word and a branch, ~30 cycles at 2.8 GHz).
const SPIN_THRESHOLD_ITERATIONS: f64 = 1e6;
const SPIN_ITERATION_NS: f64 = 10.0;

impl WaitSpec {
    /// Fills the policy's defaults (docs/config.md has their sources) and checks ranges.
    pub fn resolve(&mut self) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| Err(ConfigError::new(field, msg));
        if self.spin_threshold_us.is_some() && self.spin_threshold_iterations.is_some() {
            return err(
                "mpi.wait.spin_threshold_us",
                "give the threshold in us or in iterations, not both".into(),
            );
        }
        if self.spin_threshold_us.is_none() {
            self.spin_threshold_iterations
                .get_or_insert(SPIN_THRESHOLD_ITERATIONS);
            self.spin_iteration_ns.get_or_insert(SPIN_ITERATION_NS);
        }
        // docs/config.md breaks these down and gives their sources.
        let (enter, wake, notify) = match self.policy {
            WaitPolicyName::Spin => (0.0, 0.0, 0.0),
            // select() on the peers' pipes and the switch to the idle task; the interrupt, the
            // switch back and select()'s return; the sender's write() to the pipe.
            WaitPolicyName::Block => (5.0, 10.0, 1.0),
            // MONITOR/MWAIT from user level; MWAIT returns by itself; the doorbell is a store.
            WaitPolicyName::Mwait => (0.2, 0.0, 0.0),
            // The bound: the transitions cost only the C-state's exit.
            WaitPolicyName::Oracle => (0.0, 0.0, 0.0),
        };
        self.enter_overhead_us.get_or_insert(enter);
        self.wake_overhead_us.get_or_insert(wake);
        self.notify_overhead_us.get_or_insert(notify);
        for (field, v) in [
            ("mpi.wait.spin_threshold_us", self.spin_threshold_us),
            ("mpi.wait.enter_overhead_us", self.enter_overhead_us),
            ("mpi.wait.wake_overhead_us", self.wake_overhead_us),
            ("mpi.wait.notify_overhead_us", self.notify_overhead_us),
        ] {
            if let Some(v) = v {
                time_field(field, v, US)?;
            }
        }
        for (field, v) in [
            (
                "mpi.wait.spin_threshold_iterations",
                self.spin_threshold_iterations,
            ),
            ("mpi.wait.spin_iteration_ns", self.spin_iteration_ns),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return err(field, format!("must be a non-negative number, got {v}"));
                }
            }
        }
        if self.spin_threshold_us.is_none() {
            let iterations = self.spin_threshold_iterations.unwrap_or(0.0);
            let ns = self.spin_iteration_ns.unwrap_or(0.0);
            // The threshold is their product: say which two values make it too long.
            time_field(
                "mpi.wait.spin_threshold_iterations",
                iterations * ns / 1e3,
                US,
            )
            .map_err(|e| ConfigError {
                message: format!(
                    "with spin_iteration_ns = {ns}, {iterations} iterations are a threshold of {} \
                     us: {}",
                    iterations * ns / 1e3,
                    e.message
                ),
                ..e
            })?;
        }
        Ok(())
    }

    pub(super) fn threshold_ps(&self) -> Ps {
        match self.spin_threshold_us {
            Some(us) => us_to_ps(us),
            None => us_to_ps(
                self.spin_threshold_iterations
                    .unwrap_or(SPIN_THRESHOLD_ITERATIONS)
                    * self.spin_iteration_ns.unwrap_or(SPIN_ITERATION_NS)
                    / 1e3,
            ),
        }
    }
}
