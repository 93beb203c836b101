//! Simulated time: integer picoseconds. Never `f64` inside the engine, so event order is exact.

/// A point in, or span of, simulated time in picoseconds.
pub type Ps = u64;

pub const PS_PER_NS: Ps = 1_000;
pub const PS_PER_US: Ps = 1_000_000;
pub const PS_PER_MS: Ps = 1_000_000_000;
pub const PS_PER_S: Ps = 1_000_000_000_000;

/// Converts a non-negative duration in `unit_ps` units (e.g. `PS_PER_US`) to picoseconds,
/// rounding to the nearest picosecond. Returns `None` for negative, NaN or overflowing values.
pub fn from_units(value: f64, unit_ps: Ps) -> Option<Ps> {
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    let ps = (value * unit_ps as f64).round();
    if ps >= u64::MAX as f64 {
        None
    } else {
        Some(ps as Ps)
    }
}

/// Picoseconds to seconds, for reporting only.
pub fn to_seconds(ps: Ps) -> f64 {
    ps as f64 / PS_PER_S as f64
}

/// Time to push `bytes` through a link of `bits_per_s`, rounded up to a whole picosecond so a
/// packet never finishes early.
pub fn serialization_ps(bytes: u64, bits_per_s: u64) -> Ps {
    let num = bytes as u128 * 8 * PS_PER_S as u128;
    num.div_ceil(bits_per_s as u128) as Ps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_of_one_kib_at_10_gbps_is_819_2_ns() {
        assert_eq!(serialization_ps(1024, 10_000_000_000), 819_200);
    }

    #[test]
    fn serialization_rounds_up() {
        // 1 byte at 3 bit/s = 8/3 s.
        assert_eq!(serialization_ps(1, 3), 2_666_666_666_667);
    }

    #[test]
    fn from_units_rejects_negative_and_nan() {
        assert_eq!(from_units(-1.0, PS_PER_US), None);
        assert_eq!(from_units(f64::NAN, PS_PER_US), None);
        assert_eq!(from_units(1.5, PS_PER_US), Some(1_500_000));
    }
}
