//! Presets: minimum transition times per PHY (docs/references.md section 1 and IEEE Std 802.3
//! Clause 78), the paper's measured switch defaults, and measured switch power.

use tracewatt_core::time::{PS_PER_NS, PS_PER_US};
use tracewatt_core::Ps;

/// Timing of a PHY's low-power idle: its minimum `sleep_time` (Ts) and `wake_time` (Tw). Refresh
/// is not part of a preset: the measured LPI port power already averages the refreshes in, so
/// `refresh_period` stays zero unless a user pairs it with an LPI power measured without them.
/// The times are the PHY's (deep sleep) LPI; `fast_wake` its 802.3bj fast-wake sleep and wake,
/// if it has that second depth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhyTiming {
    pub name: &'static str,
    pub sleep_time_ps: Ps,
    pub wake_time_ps: Ps,
    pub fast_wake: Option<(Ps, Ps)>,
}

const fn us(x: u64) -> Ps {
    x * PS_PER_US
}

const fn ns(x: u64) -> Ps {
    x * PS_PER_NS
}

const fn preset(name: &'static str, sleep_time_ps: Ps, wake_time_ps: Ps) -> PhyTiming {
    PhyTiming {
        name,
        sleep_time_ps,
        wake_time_ps,
        fast_wake: None,
    }
}

/// Fast wake of IEEE 802.3bj: Ts none, Tw_sys_tx (min) 0.34 us (Table 78-4).
const FAST_WAKE: (Ps, Ps) = (0, ns(340));

/// A PHY with 802.3bj's two depths: deep sleep as given, and fast wake.
const fn two_depths(name: &'static str, sleep_time_ps: Ps, wake_time_ps: Ps) -> PhyTiming {
    PhyTiming {
        fast_wake: Some(FAST_WAKE),
        ..preset(name, sleep_time_ps, wake_time_ps)
    }
}

/// The first three are docs/references.md section 1, Table 1 (the EEE paper's Table 1). The backplane and fast-wake
/// PHYs are IEEE Std 802.3 Clause 78: Ts (min) from Table 78-2 and Tw_sys_tx (min) from Table
/// 78-4. Fast wake keeps the PHY signalling (no quiet period, no refresh), so it has no Ts.
pub const PHYS: &[PhyTiming] = &[
    preset("10gbase-t", ns(2_880), ns(4_480)),
    preset("1000base-t", us(182), us(16)),
    preset("100base-tx", us(200), us(30)),
    preset("1000base-kx", ns(19_900), ns(13_260)),
    preset("10gbase-kx4", ns(19_900), ns(12_380)),
    // Case-1 of Table 78-4: without FEC; `-fec` is Case-2.
    preset("10gbase-kr", ns(4_900), ns(15_380)),
    preset("10gbase-kr-fec", ns(4_900), ns(17_380)),
    // Deep sleep, and 802.3bj's fast wake; the same figures hold for 40GBASE-CR4.
    two_depths("40gbase-kr4", ns(900), ns(5_500)),
    two_depths("40gbase-kr4-fec", ns(900), ns(6_500)),
    // The same figures hold for 100GBASE-KP4 and 100GBASE-CR4.
    two_depths("100gbase-kr4", ns(900), ns(5_500)),
    // 25G to 400GBASE-R with fast wake only.
    preset("fast-wake", FAST_WAKE.0, FAST_WAKE.1),
];

pub fn phy(name: &str) -> Option<PhyTiming> {
    PHYS.iter().copied().find(|p| p.name == name)
}

/// The measured defaults of the paper's 10GBASE-T switches: idle timeout 600 us (PowerConnect
/// 8132 default) and an observed wake of 17 us (both switches).
pub const MEASURED_IDLE_TIMEOUT_PS: Ps = us(600);
pub const MEASURED_WAKE_TIME_PS: Ps = us(17);

/// Measured switch power (docs/references.md section 1): backplane, and per linked port when active and
/// in LPI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SwitchModel {
    pub name: &'static str,
    pub backplane_w: f64,
    pub port_active_w: f64,
    pub port_lpi_w: f64,
}

pub const SWITCHES: &[SwitchModel] = &[
    // 3.44 W per active port, 1.36 W (39.8 %) saved in LPI.
    SwitchModel {
        name: "powerconnect-8132",
        backplane_w: 96.0,
        port_active_w: 3.44,
        port_lpi_w: 2.08,
    },
    // 3.59 W per active port, 1.37 W (38.2 %) saved.
    SwitchModel {
        name: "m7100",
        backplane_w: 83.0,
        port_active_w: 3.59,
        port_lpi_w: 2.22,
    },
    // 1000BASE-T PowerConnect 5548: 0.53 W per port, 0.42 W (79.2 %) saved; backplane not reported.
    SwitchModel {
        name: "powerconnect-5548",
        backplane_w: 0.0,
        port_active_w: 0.53,
        port_lpi_w: 0.11,
    },
];

pub fn switch_model(name: &str) -> Option<SwitchModel> {
    SWITCHES.iter().copied().find(|s| s.name == name)
}
