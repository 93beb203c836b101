//! Configured times to integer picoseconds, and their range check.

use crate::error::SimError;
use tracewatt_core::time::{self, Unit, NS, US};
use tracewatt_core::Ps;

/// Nanoseconds to picoseconds, for a field `Config::parse` has checked with [`time_field`].
pub(crate) fn ns_to_ps(ns: f64) -> Ps {
    time::saturating_duration(ns, NS)
}

/// Microseconds to picoseconds, for a field `Config::parse` has checked with [`time_field`].
pub(crate) fn us_to_ps(us: f64) -> Ps {
    time::saturating_duration(us, US)
}

/// Checks a time field written in `unit`: non-negative and at most
/// [`MAX_DURATION_PS`](tracewatt_core::time::MAX_DURATION_PS).
pub(crate) fn time_field(source: &str, field: &str, v: f64, unit: Unit) -> Result<Ps, SimError> {
    time::duration(v, unit).map_err(|e| SimError::config(source, field, e.to_string(), None))
}
