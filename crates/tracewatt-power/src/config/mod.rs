//! The power configuration as written in a run's TOML (`[power.*]` and `[mpi.wait]`), its
//! resolution (defaults, PHY presets, per-link-class overrides, range checks) and the building
//! of the family of power models a run observes.
//!
//! - `spec`: `[power]` and its tables, resolved in place so the resolved configuration shows
//!   every value used;
//! - `wait`: `[mpi.wait]`, how a rank waits for MPI;
//! - `build`: the models a resolved configuration asks for on a topology.
//!
//! Errors name the offending field; the caller adds the file.

mod build;
mod spec;
mod wait;

pub use build::{models, Occupancy};
pub use spec::{
    CoresSpec, DimmPolicyName, DimmsSpec, LinkPowerSpec, NicPowerSpec, NodeLinkOverride, NodesSpec,
    PowerSpec, SwitchPowerSpec,
};
pub use wait::{GovernorName, WaitPolicyName, WaitSpec};

use tracewatt_core::time::{self, Unit, US};
use tracewatt_core::Ps;

/// A configuration field that is malformed or out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted path of the field, e.g. `power.links.wake_time_us`.
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl ConfigError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Checks a time field written in `unit`: non-negative and at most
/// [`MAX_DURATION_PS`](tracewatt_core::time::MAX_DURATION_PS).
fn time_field(field: &str, v: f64, unit: Unit) -> Result<Ps, ConfigError> {
    time::duration(v, unit).map_err(|e| ConfigError::new(field, e.to_string()))
}

/// Microseconds to picoseconds, for a field [`time_field`] has checked.
fn us_to_ps(us: f64) -> Ps {
    time::saturating_duration(us, US)
}
