//! Simulated time: integer picoseconds. Never `f64` inside the engine, so event order is exact.

/// A point in, or span of, simulated time in picoseconds.
pub type Ps = u64;

pub const PS_PER_NS: Ps = 1_000;
pub const PS_PER_US: Ps = 1_000_000;
pub const PS_PER_MS: Ps = 1_000_000_000;
pub const PS_PER_S: Ps = 1_000_000_000_000;

/// A unit configuration writes times in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub ps: Ps,
    /// Suffix of the fields written in it (`ns` for `latency_ns`).
    pub name: &'static str,
}

pub const PS: Unit = Unit { ps: 1, name: "ps" };
pub const NS: Unit = Unit {
    ps: PS_PER_NS,
    name: "ns",
};
pub const US: Unit = Unit {
    ps: PS_PER_US,
    name: "us",
};
pub const S: Unit = Unit {
    ps: PS_PER_S,
    name: "s",
};

/// The longest time one configured value may give: 10^6 s (about 11.6 days).
pub const MAX_DURATION_PS: Ps = 1_000_000 * PS_PER_S;

/// The latest simulated time a run may reach: 8 x 10^6 s (about 93 days). With every configured
/// duration at most [`MAX_DURATION_PS`], a simulated time within it plus ten of them stays below
/// `u64::MAX` picoseconds (about 213 days), so the sums of times the engine forms cannot
/// overflow while the run keeps within it.
pub const MAX_SIMULATED_PS: Ps = 8 * MAX_DURATION_PS;

/// Why a value is not a valid duration.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum TimeError {
    #[error("must be a non-negative number, got {0}")]
    Invalid(f64),
    #[error(
        "must be at most {max:e} {} ({max_s:e} s, about 11.6 days: the longest time one value \
         may give, so that sums of simulated times fit in 64-bit picoseconds), got {value}",
        unit.name,
        max = MAX_DURATION_PS as f64 / unit.ps as f64,
        max_s = to_seconds(MAX_DURATION_PS)
    )]
    TooLong { value: f64, unit: Unit },
}

/// Converts a duration written in `unit` to picoseconds, rounding to the nearest picosecond: the
/// one check every configured time goes through. Negative, NaN and infinite values are errors,
/// and so is anything longer than [`MAX_DURATION_PS`].
pub fn duration(value: f64, unit: Unit) -> Result<Ps, TimeError> {
    if !value.is_finite() || value < 0.0 {
        return Err(TimeError::Invalid(value));
    }
    let ps = (value * unit.ps as f64).round();
    if ps > MAX_DURATION_PS as f64 {
        return Err(TimeError::TooLong { value, unit });
    }
    Ok(ps as Ps)
}

/// [`duration`] for a value that has already passed it (e.g. a field of a parsed
/// configuration): out-of-range values, possible only without that check, saturate to the
/// nearest bound instead of wrapping.
pub fn saturating_duration(value: f64, unit: Unit) -> Ps {
    match duration(value, unit) {
        Ok(ps) => ps,
        Err(TimeError::TooLong { .. }) => MAX_DURATION_PS,
        Err(TimeError::Invalid(_)) => 0,
    }
}

/// Picoseconds to seconds, for reporting only.
pub fn to_seconds(ps: Ps) -> f64 {
    ps as f64 / PS_PER_S as f64
}

/// Time to push `bytes` through a link of `bits_per_s`, rounded up to a whole picosecond so a
/// packet never finishes early.
pub fn serialization_ps(bytes: u64, bits_per_s: u64) -> Ps {
    // Up to about 2 MB the product fits in 64 bits, whose division is several times cheaper:
    // this runs once per packet and hop.
    match bytes.checked_mul(8 * PS_PER_S) {
        Some(num) => num.div_ceil(bits_per_s),
        None => (bytes as u128 * 8 * PS_PER_S as u128).div_ceil(bits_per_s as u128) as Ps,
    }
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
    fn serialization_is_exact_on_both_sides_of_64_bit_products() {
        // 2,305,843 bytes * 8 * 10^12 fits in 64 bits, one byte more does not; ceilings by hand.
        assert_eq!(serialization_ps(2_305_843, 7), 2_635_249_142_857_142_858);
        assert_eq!(serialization_ps(2_305_844, 7), 2_635_250_285_714_285_715);
        assert_eq!(serialization_ps(2_305_844, 10_000_000_000), 1_844_675_200);
        // 10 MiB at 10 Gb/s is 8.388608 ms.
        assert_eq!(serialization_ps(10 << 20, 10_000_000_000), 8_388_608_000);
    }

    #[test]
    fn duration_rejects_negative_nan_and_infinite() {
        for v in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(duration(v, US), Err(TimeError::Invalid(_))), "{v}");
        }
        assert_eq!(duration(1.5, US), Ok(1_500_000));
    }

    #[test]
    fn duration_stops_at_a_million_seconds() {
        // 10^12 us = 10^18 ps is the largest; one picosecond more is refused, in any unit.
        assert_eq!(duration(1e12, US), Ok(1_000_000_000_000_000_000));
        assert_eq!(duration(1e15, NS), Ok(MAX_DURATION_PS));
        let e = duration(1e14, US).unwrap_err();
        assert_eq!(
            e,
            TimeError::TooLong {
                value: 1e14,
                unit: US
            }
        );
        let msg = e.to_string();
        assert!(msg.starts_with("must be at most 1e12 us (1e6 s"), "{msg}");
        assert!(msg.ends_with("got 100000000000000"), "{msg}");
        // The values the issue reported as silently wrapping.
        assert!(duration(1.9e13, US).is_err());
        assert_eq!(saturating_duration(1e14, US), MAX_DURATION_PS);
        assert_eq!(saturating_duration(-1.0, US), 0);
    }

    #[test]
    fn a_simulated_time_plus_ten_durations_fits() {
        let sum = (MAX_SIMULATED_PS as u128) + 10 * (MAX_DURATION_PS as u128);
        assert!(sum <= u64::MAX as u128);
    }
}
