//! Presets from the papers (research.md sections 1 and 2): 802.3az minimum transition times per
//! PHY, the measured switch defaults, and measured switch power.

use tracewatt_core::time::PS_PER_US;
use tracewatt_core::Ps;

/// Timing of a PHY's low-power idle: (name, sleep_time, wake_time, refresh_period, refresh_time).
/// Sleep and wake are the 802.3az minima of research.md Table 1 (Ts, Tw). Refresh is zero by
/// default because the measured LPI port power already averages the refreshes in; set it only
/// with an LPI power measured without them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhyTiming {
    pub name: &'static str,
    pub sleep_time_ps: Ps,
    pub wake_time_ps: Ps,
}

const fn us(x: u64) -> Ps {
    x * PS_PER_US
}

pub const PHYS: &[PhyTiming] = &[
    PhyTiming {
        name: "10gbase-t",
        sleep_time_ps: 2_880_000,
        wake_time_ps: 4_480_000,
    },
    PhyTiming {
        name: "1000base-t",
        sleep_time_ps: us(182),
        wake_time_ps: us(16),
    },
    PhyTiming {
        name: "100base-tx",
        sleep_time_ps: us(200),
        wake_time_ps: us(30),
    },
];

pub fn phy(name: &str) -> Option<PhyTiming> {
    PHYS.iter().copied().find(|p| p.name == name)
}

/// The measured defaults of the paper's 10GBASE-T switches: idle timeout 600 us (PowerConnect
/// 8132 default) and an observed wake of 17 us (both switches).
pub const MEASURED_IDLE_TIMEOUT_PS: Ps = us(600);
pub const MEASURED_WAKE_TIME_PS: Ps = us(17);

/// Measured switch power (research.md section 1): backplane, and per linked port when active and
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
