//! Conversions of configured times (validated non-negative) to integer picoseconds.

use tracewatt_core::time::{from_units, PS_PER_NS, PS_PER_US};
use tracewatt_core::Ps;

/// Nanoseconds (validated non-negative) to picoseconds.
pub(crate) fn ns_to_ps(ns: f64) -> Ps {
    from_units(ns, PS_PER_NS).unwrap_or(0)
}

/// Microseconds (validated non-negative) to picoseconds.
pub(crate) fn us_to_ps(us: f64) -> Ps {
    from_units(us, PS_PER_US).unwrap_or(0)
}
