//! `[power]`: the link low-power policy and timing per link class, switch, NIC, core, node and
//! DIMM power, resolved in place.

use super::{time_field, us_to_ps, ConfigError};
use crate::dimm::{
    DIMM_GIB_RANGE, MAX_CHANNELS, MAX_DIMMS_PER_CHANNEL, MAX_DIMM_GIB, MIN_DIMM_GIB,
};
use crate::phy;
use crate::sleep::{DEFAULT_DELAY_SHARE, DEFAULT_SLOWDOWN_BOUND, DEFAULT_WINDOW};
use crate::{
    Depth, FastWake, LinkControl, LinkPolicy, LinkSetup, PhyTiming, PolicySettings, PortPower,
};
use serde::{Deserialize, Serialize};
use tracewatt_core::time::{S, US};
use tracewatt_core::Ps;
use tracewatt_net::{Channel, Device, LinkClass};

/// The most any power figure may be, W (or W per Mb/s, J per interrupt): a megawatt per
/// component is beyond any part of a machine, and energies stay finite.
const MAX_POWER_W: f64 = 1e6;
/// The most compute may slow per share of channels off.
const MAX_BANDWIDTH_SLOWDOWN: f64 = 1000.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// `paired`: a link sleeps only when both directions are idle and wakes both (symmetric LPI
    /// of 1000BASE-T and 10GBASE-T); `independent`: each direction alone (TraceRP and backplane
    /// PHYs). The default for every link power table that does not set its own.
    #[serde(default = "default_control")]
    pub control: LinkControl,
    /// The low-power policy and timing of every link, unless a class overrides it.
    #[serde(default)]
    pub links: LinkPowerSpec,
    /// Overrides for node-to-switch links.
    #[serde(default)]
    pub node: Option<LinkPowerSpec>,
    #[serde(default)]
    pub local: Option<LinkPowerSpec>,
    #[serde(default)]
    pub global: Option<LinkPowerSpec>,
    /// Overrides per fat-tree level (`tree[0]`: between levels 1 and 2).
    #[serde(default)]
    pub tree: Vec<LinkPowerSpec>,
    /// Overrides per torus dimension.
    #[serde(default)]
    pub torus: Vec<LinkPowerSpec>,
    /// Overrides for the links of particular nodes (both directions of each listed node's link),
    /// applied after the class overrides; e.g. EEE on one node's link only.
    #[serde(default)]
    pub node_links: Vec<NodeLinkOverride>,
    #[serde(default)]
    pub switch: SwitchPowerSpec,
    #[serde(default)]
    pub nic: NicPowerSpec,
    /// Each rank's core, by what it does.
    #[serde(default)]
    pub cores: CoresSpec,
    /// Each node's base power.
    #[serde(default)]
    pub nodes: NodesSpec,
    /// Each node's DIMMs and the memory-hotplug policy.
    #[serde(default)]
    pub dimms: DimmsSpec,
    /// Power timeline bin width, us; 0 chooses it so the run fits in at most 2,048 bins.
    #[serde(default)]
    pub timeline_bin_us: f64,
}

impl Default for PowerSpec {
    fn default() -> Self {
        Self {
            control: default_control(),
            links: LinkPowerSpec::default(),
            node: None,
            local: None,
            global: None,
            tree: Vec::new(),
            torus: Vec::new(),
            node_links: Vec::new(),
            switch: SwitchPowerSpec::default(),
            nic: NicPowerSpec::default(),
            cores: CoresSpec::default(),
            nodes: NodesSpec::default(),
            dimms: DimmsSpec::default(),
            timeline_bin_us: 0.0,
        }
    }
}

/// A link class's policy and timing. A named `phy` gives the table's unset `sleep_time_us` and
/// `wake_time_us`; an override's other unset fields come from the base `[power.links]` table, and
/// the base's from the paper's measured switch (10GBASE-T, `idle_timeout_us` 600 and, when no PHY
/// is named, `wake_time_us` 17).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkPowerSpec {
    /// `timeout` (default), `always_on`, `adaptive`, `perfbound`, `oracle` or `predictive`.
    #[serde(default)]
    pub policy: Option<LinkPolicy>,
    /// `paired` or `independent` for these links (default: `[power].control`).
    #[serde(default)]
    pub control: Option<LinkControl>,
    /// PHY timing preset, one of `tracewatt_power::phy::PHYS` (default `10gbase-t`).
    #[serde(default)]
    pub phy: Option<String>,
    #[serde(default)]
    pub idle_timeout_us: Option<f64>,
    #[serde(default)]
    pub sleep_time_us: Option<f64>,
    #[serde(default)]
    pub wake_time_us: Option<f64>,
    /// 0 disables refresh (the default: measured LPI power already includes it).
    #[serde(default)]
    pub refresh_period_us: Option<f64>,
    #[serde(default)]
    pub refresh_time_us: Option<f64>,
    /// The depth of the policies that do not choose one per gap: `deep_sleep` (default: the
    /// sleep and wake times above) or `fast_wake`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<Depth>,
    /// Fast wake's sleep and wake times (default: the named PHY's, if it has fast wake).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_wake_sleep_time_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_wake_time_us: Option<f64>,
    /// The share of the port's LPI saving fast wake keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_wake_saving: Option<f64>,
    /// `perfbound`: the most delay a port's wakes may add, as a share of the elapsed time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown_bound: Option<f64>,
    /// `adaptive`: the share of the elapsed time a port tunes its wakes' delay to ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_delay_share: Option<f64>,
    /// ... judged over epochs of this many gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_window: Option<u32>,
    /// `predictive` (base table only: one MPI layer per rank forecasts for all its node's
    /// links): the calls of a context ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predictive_ngram: Option<u32>,
    /// ... and the repetitions of one successor that make it confident.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predictive_confidence: Option<u32>,
}

/// An assumption (docs/config.md): fast wake keeps the PHY signalling, so it saves half what
/// deep sleep saves.
const DEFAULT_FAST_WAKE_SAVING: f64 = 0.5;
/// The longest `adaptive_window`, gaps.
const MAX_WINDOW: u32 = 4096;
/// `predictive`'s defaults (docs/config.md): contexts of 3 calls (Dickov et al. predict from the
/// calls before a phase; 3 is an assumption), confident after 2 repetitions (an assumption: one
/// repetition shows a pattern, the second confirms it).
pub(super) const DEFAULT_NGRAM: u32 = 3;
pub(super) const DEFAULT_CONFIDENCE: u32 = 2;
/// The longest `predictive_ngram` and highest `predictive_confidence`.
const MAX_NGRAM: u32 = 64;
const MAX_CONFIDENCE: u32 = 1_000_000;

impl LinkPowerSpec {
    /// Whether this table sets the fast wake of its links: it names a PHY or gives fast-wake
    /// times (otherwise an override's come from the base table).
    fn sets_fast_wake(&self) -> bool {
        self.phy.is_some()
            || self.fast_wake_time_us.is_some()
            || self.fast_wake_sleep_time_us.is_some()
    }

    /// The fast-wake (sleep, wake) times, us, this table sets: its own, else its PHY's.
    fn fast_wake_us(&self) -> Option<(f64, f64)> {
        let preset = self
            .phy
            .as_deref()
            .and_then(phy::phy)
            .and_then(|p| p.fast_wake)
            .map(|(s, w)| (ps_to_us(s), ps_to_us(w)));
        let wake = self.fast_wake_time_us.or(preset.map(|p| p.1))?;
        let sleep = self
            .fast_wake_sleep_time_us
            .or(preset.map(|p| p.0))
            .unwrap_or(0.0);
        Some((sleep, wake))
    }
}

/// `[[power.node_links]]`: a policy for the links of the listed nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeLinkOverride {
    pub nodes: Vec<u32>,
    pub link: LinkPowerSpec,
}

/// Switch power: backplane plus each linked port by state. `model` picks measured figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchPowerSpec {
    /// `powerconnect-8132` (default), `m7100`, `powerconnect-5548`.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub backplane_w: Option<f64>,
    #[serde(default)]
    pub port_active_w: Option<f64>,
    #[serde(default)]
    pub port_lpi_w: Option<f64>,
}

/// `[power.nic]`: the node-side port of each node link (default: the switch port's figures)
/// and, with `coalescing = true`, the NIC's receive path with interrupt coalescing and its power
/// (docs/references.md section 3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicPowerSpec {
    #[serde(default)]
    pub port_active_w: Option<f64>,
    #[serde(default)]
    pub port_lpi_w: Option<f64>,
    /// Wake time of the NIC's transmitter (its Tw_sys_tx), us: a wake its frame starts lasts
    /// this long. Unset: its link's `wake_time_us`.
    #[serde(default)]
    pub wake_time_us: Option<f64>,
    /// Model NIC interrupts (delaying receives) and NIC power; off by default.
    #[serde(default)]
    pub coalescing: bool,
    /// Receive interrupt timer, restarted at each frame (tg3's rx-usecs in the paper: 18 us).
    #[serde(default)]
    pub rx_usecs: Option<f64>,
    /// Frames pending that fire an interrupt at once (the paper: 6).
    #[serde(default)]
    pub rx_max_frames: Option<u32>,
    /// Coalescing timer a transmit completion starts when no received frame is pending.
    #[serde(default)]
    pub tx_usecs: Option<f64>,
    /// Power per Mb/s moved (received + sent), W (the paper's regression: 1.25e-2).
    #[serde(default)]
    pub w_per_mbps: Option<f64>,
    /// Power per interrupt per second, W (the paper's regression: 1.56e-4).
    #[serde(default)]
    pub w_per_interrupt_per_s: Option<f64>,
}

/// `[power.cores]`: the power of the core each rank runs on, W, by what the rank does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoresSpec {
    /// Computing, or working inside MPI (issuing sends, copying).
    #[serde(default = "default_compute_w")]
    pub compute_w: f64,
    /// Polling for a message.
    #[serde(default = "default_spin_w")]
    pub spin_w: f64,
    /// In each C-state a low-power wait can sleep in (`mwait`: C1; `block`: the governor's).
    #[serde(default = "default_c1_w")]
    pub c1_w: f64,
    #[serde(default = "default_c1e_w")]
    pub c1e_w: f64,
    #[serde(default = "default_c3_w")]
    pub c3_w: f64,
    #[serde(default = "default_c6_w")]
    pub c6_w: f64,
    /// No rank work: before its job starts, in a timer sleep, after it finished.
    #[serde(default = "default_idle_w")]
    pub idle_w: f64,
}

/// Per-core figures of paper 4's Xeon X5560 (4 cores, 95 W TDP per socket); sources and the
/// reasoning in docs/config.md.
fn default_compute_w() -> f64 {
    20.0
}
fn default_spin_w() -> f64 {
    20.0
}
fn default_c1_w() -> f64 {
    5.0
}
fn default_c1e_w() -> f64 {
    3.5
}
fn default_c3_w() -> f64 {
    2.0
}
fn default_c6_w() -> f64 {
    1.0
}
fn default_idle_w() -> f64 {
    1.0
}

impl Default for CoresSpec {
    fn default() -> Self {
        Self {
            compute_w: default_compute_w(),
            spin_w: default_spin_w(),
            c1_w: default_c1_w(),
            c1e_w: default_c1e_w(),
            c3_w: default_c3_w(),
            c6_w: default_c6_w(),
            idle_w: default_idle_w(),
        }
    }
}

/// `[power.nodes]`: each node's base power (everything but its cores and NIC), W.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodesSpec {
    #[serde(default = "default_base_w")]
    pub base_w: f64,
}

/// An assumption for a 2-socket Xeon 5500 server (docs/config.md).
fn default_base_w() -> f64 {
    90.0
}

impl Default for NodesSpec {
    fn default() -> Self {
        Self {
            base_w: default_base_w(),
        }
    }
}

/// `[power.dimms]`: each node's DIMMs (docs/references.md section 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DimmsSpec {
    /// `always_on` (the baseline), `bandwidth_preserving` or `ideal`.
    #[serde(default)]
    pub policy: DimmPolicyName,
    #[serde(default = "default_channels")]
    pub channels: u32,
    #[serde(default = "default_dimms_per_channel")]
    pub dimms_per_channel: u32,
    #[serde(default = "default_dimm_gib")]
    pub dimm_gib: f64,
    /// Standby power of one DIMM while on, W.
    #[serde(default = "default_dimm_standby_w")]
    pub dimm_standby_w: f64,
    /// `bandwidth_preserving`: the other DIMMs come on when the first DIMMs' free memory falls
    /// to this, GiB.
    #[serde(default = "default_online_threshold_gib")]
    pub online_threshold_gib: f64,
    /// ... and go off at the job's exit if the node's free memory is at least this, GiB.
    #[serde(default = "default_offline_threshold_gib")]
    pub offline_threshold_gib: f64,
    /// Time a job's ranks each lose when the other DIMMs come on, s.
    #[serde(default)]
    pub transition_s: f64,
    /// Memory in use on a node that runs no job, GiB.
    #[serde(default = "default_idle_gib")]
    pub idle_gib: f64,
    /// `ideal`: compute takes 1 + this x (share of channels off) times as long meanwhile.
    #[serde(default)]
    pub bandwidth_slowdown: f64,
}

/// `[power.dimms] policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DimmPolicyName {
    #[default]
    AlwaysOn,
    BandwidthPreserving,
    Ideal,
}

/// Ishihara et al.'s test machine (8 x 4 GB DDR3-1333 in 4 channels), their 0.9 W per idle DIMM (8 GB
/// DDR3-1600), their off threshold (24 GB) and on threshold (4 GB), and the job log's 2 GB per
/// idle node.
fn default_channels() -> u32 {
    4
}
fn default_dimms_per_channel() -> u32 {
    2
}
fn default_dimm_gib() -> f64 {
    4.0
}
fn default_dimm_standby_w() -> f64 {
    0.9
}
fn default_online_threshold_gib() -> f64 {
    4.0
}
fn default_offline_threshold_gib() -> f64 {
    24.0
}
fn default_idle_gib() -> f64 {
    2.0
}

impl Default for DimmsSpec {
    fn default() -> Self {
        Self {
            policy: DimmPolicyName::AlwaysOn,
            channels: default_channels(),
            dimms_per_channel: default_dimms_per_channel(),
            dimm_gib: default_dimm_gib(),
            dimm_standby_w: default_dimm_standby_w(),
            online_threshold_gib: default_online_threshold_gib(),
            offline_threshold_gib: default_offline_threshold_gib(),
            transition_s: 0.0,
            idle_gib: default_idle_gib(),
            bandwidth_slowdown: 0.0,
        }
    }
}

/// Kodama et al.'s NIC (docs/references.md section 3): tg3 driver, rx-usecs 18 us, at most 6 frames per
/// interrupt; node power increase = 1.25e-2 W per Mb/s + 1.56e-4 W per interrupt per second.
pub(super) const NIC_RX_USECS: f64 = 18.0;
pub(super) const NIC_RX_MAX_FRAMES: u32 = 6;
/// An assumption fitted to the paper's Table 1 and its 26 us measurement (docs/config.md): a
/// delayed ACK's completion rides on the next frame's interrupt at 400 Mb/s paced (the frame comes
/// 11.5 us after it) and takes its own at 300 Mb/s (21.5 us after), and with rx-usecs 26 at
/// 600 Mb/s the next frame comes 19.5 us after it and carries it.
pub(super) const NIC_TX_USECS: f64 = 20.0;
pub(super) const NIC_W_PER_MBPS: f64 = 1.25e-2;
pub(super) const NIC_W_PER_INTERRUPT_PER_S: f64 = 1.56e-4;

fn default_control() -> LinkControl {
    LinkControl::Paired
}

const DEFAULT_PHY: &str = "10gbase-t";
const DEFAULT_SWITCH: &str = "powerconnect-8132";

fn ps_to_us(ps: Ps) -> f64 {
    ps as f64 / 1e6
}

impl PowerSpec {
    /// Fills every unset base field with its default, and every table's unset sleep and wake
    /// with its named PHY's, so the resolved configuration shows the values used; checks names
    /// and ranges.
    pub fn resolve(&mut self) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| Err(ConfigError::new(field, msg));
        // Naming a PHY gives its minimum sleep and wake; leaving it unset gives the paper's
        // measured switch: 10GBASE-T with the 17 us wake it measured.
        let l = &mut self.links;
        if l.phy.is_none() {
            l.phy = Some(DEFAULT_PHY.to_string());
            l.wake_time_us
                .get_or_insert(ps_to_us(phy::MEASURED_WAKE_TIME_PS));
        }
        l.policy.get_or_insert(LinkPolicy::Timeout);
        l.idle_timeout_us
            .get_or_insert(ps_to_us(phy::MEASURED_IDLE_TIMEOUT_PS));
        l.refresh_period_us.get_or_insert(0.0);
        l.refresh_time_us.get_or_insert(0.0);
        // A policy's parameters show in the resolved base table when it uses them.
        match l.policy {
            Some(LinkPolicy::PerfBound) => {
                l.slowdown_bound.get_or_insert(DEFAULT_SLOWDOWN_BOUND);
            }
            Some(LinkPolicy::Adaptive) => {
                l.adaptive_delay_share.get_or_insert(DEFAULT_DELAY_SHARE);
                l.adaptive_window.get_or_insert(DEFAULT_WINDOW);
            }
            _ => {}
        }
        // The MPI layer's learner serves every predictive link, whichever table names it.
        if self
            .link_specs_mut()
            .iter()
            .any(|(_, s)| s.policy == Some(LinkPolicy::Predictive))
        {
            let l = &mut self.links;
            l.predictive_ngram.get_or_insert(DEFAULT_NGRAM);
            l.predictive_confidence.get_or_insert(DEFAULT_CONFIDENCE);
        }
        let l = &mut self.links;
        if l.fast_wake_us().is_some()
            && (l.policy == Some(LinkPolicy::Oracle) || l.depth == Some(Depth::FastWake))
        {
            l.fast_wake_saving.get_or_insert(DEFAULT_FAST_WAKE_SAVING);
        }
        // The depth is a choice, and so shown, where the PHY has two and the policy uses one.
        if l.fast_wake_us().is_some()
            && !matches!(l.policy, Some(LinkPolicy::AlwaysOn | LinkPolicy::Oracle))
        {
            l.depth.get_or_insert(Depth::DeepSleep);
        }
        let (base_depth, base_fast) = (l.depth, l.fast_wake_us().is_some());
        for (field, s) in self.link_specs_mut() {
            if let Some(name) = &s.phy {
                let Some(p) = phy::phy(name) else {
                    let names: Vec<&str> = phy::PHYS.iter().map(|p| p.name).collect();
                    return err(
                        &format!("{field}.phy"),
                        format!(
                            "unknown PHY `{name}`; expected one of: {}",
                            names.join(", ")
                        ),
                    );
                };
                s.sleep_time_us.get_or_insert(ps_to_us(p.sleep_time_ps));
                s.wake_time_us.get_or_insert(ps_to_us(p.wake_time_ps));
            }
            for (k, v) in [
                ("idle_timeout_us", s.idle_timeout_us),
                ("sleep_time_us", s.sleep_time_us),
                ("wake_time_us", s.wake_time_us),
                ("refresh_period_us", s.refresh_period_us),
                ("refresh_time_us", s.refresh_time_us),
                ("fast_wake_sleep_time_us", s.fast_wake_sleep_time_us),
                ("fast_wake_time_us", s.fast_wake_time_us),
            ] {
                if let Some(v) = v {
                    time_field(&format!("{field}.{k}"), v, US)?;
                }
            }
            for (k, v) in [
                ("fast_wake_saving", s.fast_wake_saving),
                ("slowdown_bound", s.slowdown_bound),
                ("adaptive_delay_share", s.adaptive_delay_share),
            ] {
                if let Some(v) = v {
                    if !(0.0..=1.0).contains(&v) {
                        return err(
                            &format!("{field}.{k}"),
                            format!("must be a share from 0 to 1, got {v}"),
                        );
                    }
                }
            }
            for (k, v, max) in [
                ("predictive_ngram", s.predictive_ngram, MAX_NGRAM),
                (
                    "predictive_confidence",
                    s.predictive_confidence,
                    MAX_CONFIDENCE,
                ),
            ] {
                let Some(v) = v else { continue };
                if field != "power.links" {
                    return err(
                        &format!("{field}.{k}"),
                        "set it in [power.links]: each rank's MPI layer forecasts for all its \
                         node's links"
                            .into(),
                    );
                }
                if !(1..=max).contains(&v) {
                    return err(
                        &format!("{field}.{k}"),
                        format!("must be from 1 to {max}, got {v}"),
                    );
                }
            }
            if let Some(w) = s.adaptive_window {
                if !(1..=MAX_WINDOW).contains(&w) {
                    return err(
                        &format!("{field}.adaptive_window"),
                        format!("must be from 1 to {MAX_WINDOW} gaps, got {w}"),
                    );
                }
            }
            let fast = if s.sets_fast_wake() {
                s.fast_wake_us().is_some()
            } else {
                base_fast
            };
            if s.depth.or(base_depth) == Some(Depth::FastWake) && !fast {
                return err(
                    &format!("{field}.depth"),
                    "`fast_wake` needs a PHY with fast wake (40gbase-kr4, 40gbase-kr4-fec, \
                     100gbase-kr4) or fast_wake_time_us"
                        .into(),
                );
            }
        }
        let model = self
            .switch
            .model
            .get_or_insert_with(|| DEFAULT_SWITCH.to_string())
            .clone();
        let Some(m) = phy::switch_model(&model) else {
            let names: Vec<&str> = phy::SWITCHES.iter().map(|s| s.name).collect();
            return err(
                "power.switch.model",
                format!(
                    "unknown switch model `{model}`; expected one of: {}",
                    names.join(", ")
                ),
            );
        };
        let s = &mut self.switch;
        s.backplane_w.get_or_insert(m.backplane_w);
        s.port_active_w.get_or_insert(m.port_active_w);
        s.port_lpi_w.get_or_insert(m.port_lpi_w);
        let (sa, sl) = (s.port_active_w.unwrap_or(0.0), s.port_lpi_w.unwrap_or(0.0));
        let nic = &mut self.nic;
        nic.port_active_w.get_or_insert(sa);
        nic.port_lpi_w.get_or_insert(sl);
        if nic.coalescing {
            nic.rx_usecs.get_or_insert(NIC_RX_USECS);
            nic.rx_max_frames.get_or_insert(NIC_RX_MAX_FRAMES);
            nic.tx_usecs.get_or_insert(NIC_TX_USECS);
            nic.w_per_mbps.get_or_insert(NIC_W_PER_MBPS);
            nic.w_per_interrupt_per_s
                .get_or_insert(NIC_W_PER_INTERRUPT_PER_S);
            if nic.rx_max_frames == Some(0) {
                return err(
                    "power.nic.rx_max_frames",
                    "must be at least 1 (1: an interrupt per frame)".into(),
                );
            }
        }
        for (field, v) in [
            ("power.switch.backplane_w", self.switch.backplane_w),
            ("power.switch.port_active_w", self.switch.port_active_w),
            ("power.switch.port_lpi_w", self.switch.port_lpi_w),
            ("power.nic.port_active_w", self.nic.port_active_w),
            ("power.nic.port_lpi_w", self.nic.port_lpi_w),
            ("power.nic.w_per_mbps", self.nic.w_per_mbps),
            (
                "power.nic.w_per_interrupt_per_s",
                self.nic.w_per_interrupt_per_s,
            ),
        ] {
            let v = v.unwrap_or(0.0);
            if !(v.is_finite() && (0.0..=MAX_POWER_W).contains(&v)) {
                return err(
                    field,
                    format!("must be a non-negative number of at most {MAX_POWER_W:e}, got {v}"),
                );
            }
        }
        for (table, active, lpi) in [
            ("switch", self.switch.port_active_w, self.switch.port_lpi_w),
            ("nic", self.nic.port_active_w, self.nic.port_lpi_w),
        ] {
            if let (Some(a), Some(l)) = (active, lpi) {
                if l > a {
                    return err(
                        &format!("power.{table}.port_lpi_w"),
                        format!("{l} W in LPI is more than port_active_w = {a} W"),
                    );
                }
            }
        }
        let c = &self.cores;
        for (field, v) in [
            ("power.cores.compute_w", c.compute_w),
            ("power.cores.spin_w", c.spin_w),
            ("power.cores.c1_w", c.c1_w),
            ("power.cores.c1e_w", c.c1e_w),
            ("power.cores.c3_w", c.c3_w),
            ("power.cores.c6_w", c.c6_w),
            ("power.cores.idle_w", c.idle_w),
            ("power.nodes.base_w", self.nodes.base_w),
            ("power.dimms.dimm_standby_w", self.dimms.dimm_standby_w),
        ] {
            if !(v.is_finite() && (0.0..=MAX_POWER_W).contains(&v)) {
                return err(
                    field,
                    format!("must be a non-negative number of at most {MAX_POWER_W:e}, got {v}"),
                );
            }
        }
        for (field, v) in [
            ("power.dimms.dimm_gib", self.dimms.dimm_gib),
            (
                "power.dimms.online_threshold_gib",
                self.dimms.online_threshold_gib,
            ),
            (
                "power.dimms.offline_threshold_gib",
                self.dimms.offline_threshold_gib,
            ),
            ("power.dimms.idle_gib", self.dimms.idle_gib),
            (
                "power.dimms.bandwidth_slowdown",
                self.dimms.bandwidth_slowdown,
            ),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return err(field, format!("must be a non-negative number, got {v}"));
            }
        }
        if self.dimms.channels == 0
            || self.dimms.dimms_per_channel == 0
            || self.dimms.dimm_gib == 0.0
        {
            return err(
                "power.dimms",
                "channels, dimms_per_channel and dimm_gib must be positive".into(),
            );
        }
        for (field, v, max) in [
            ("power.dimms.channels", self.dimms.channels, MAX_CHANNELS),
            (
                "power.dimms.dimms_per_channel",
                self.dimms.dimms_per_channel,
                MAX_DIMMS_PER_CHANNEL,
            ),
        ] {
            if v > max {
                return err(field, format!("must be at most {max}, got {v}"));
            }
        }
        if !(MIN_DIMM_GIB..=MAX_DIMM_GIB).contains(&self.dimms.dimm_gib) {
            return err(
                "power.dimms.dimm_gib",
                format!("must be from {DIMM_GIB_RANGE}, got {}", self.dimms.dimm_gib),
            );
        }
        if self.dimms.bandwidth_slowdown > MAX_BANDWIDTH_SLOWDOWN {
            return err(
                "power.dimms.bandwidth_slowdown",
                format!(
                    "must be at most {MAX_BANDWIDTH_SLOWDOWN} (compute {}x as long with every \
                     channel but one off), got {}",
                    MAX_BANDWIDTH_SLOWDOWN + 1.0,
                    self.dimms.bandwidth_slowdown
                ),
            );
        }
        time_field("power.timeline_bin_us", self.timeline_bin_us, US)?;
        for (field, v) in [
            ("power.nic.wake_time_us", self.nic.wake_time_us),
            ("power.nic.rx_usecs", self.nic.rx_usecs),
            ("power.nic.tx_usecs", self.nic.tx_usecs),
        ] {
            if let Some(v) = v {
                time_field(field, v, US)?;
            }
        }
        time_field("power.dimms.transition_s", self.dimms.transition_s, S)?;
        Ok(())
    }

    fn class_override(&self, class: LinkClass) -> Option<&LinkPowerSpec> {
        match class {
            LinkClass::Node => self.node.as_ref(),
            LinkClass::Local => self.local.as_ref(),
            LinkClass::Global => self.global.as_ref(),
            LinkClass::Tree { level } => self.tree.get(level.saturating_sub(1) as usize),
            LinkClass::Torus { dim } => self.torus.get(dim as usize),
        }
    }

    /// Every link power table with its place in the configuration: the base `[power.links]`,
    /// then the class and node overrides.
    fn link_specs_mut(&mut self) -> Vec<(String, &mut LinkPowerSpec)> {
        let mut all: Vec<(String, &mut LinkPowerSpec)> =
            vec![("power.links".into(), &mut self.links)];
        for (name, o) in [
            ("node", &mut self.node),
            ("local", &mut self.local),
            ("global", &mut self.global),
        ] {
            if let Some(o) = o {
                all.push((format!("power.{name}"), o));
            }
        }
        for (i, o) in self.tree.iter_mut().enumerate() {
            all.push((format!("power.tree[{i}]"), o));
        }
        for (i, o) in self.torus.iter_mut().enumerate() {
            all.push((format!("power.torus[{i}]"), o));
        }
        for (i, o) in self.node_links.iter_mut().enumerate() {
            all.push((format!("power.node_links[{i}].link"), &mut o.link));
        }
        all
    }

    /// The override that applies to a link of `class`, attached to `node` if it is a node link:
    /// a node override takes precedence over a class override.
    fn override_for(&self, class: LinkClass, node: Option<u32>) -> Option<&LinkPowerSpec> {
        let by_node =
            node.and_then(|n| self.node_links.iter().rev().find(|o| o.nodes.contains(&n)));
        by_node
            .map(|o| &o.link)
            .or_else(|| self.class_override(class))
    }

    /// Whether a link of `class` (at `node`) sleeps per direction or as a whole.
    pub fn control(&self, class: LinkClass, node: Option<u32>) -> LinkControl {
        self.override_for(class, node)
            .and_then(|o| o.control)
            .or(self.links.control)
            .unwrap_or(self.control)
    }

    /// The PHY timing and policy of a link of `class` (at `node`), after `resolve`, which has
    /// put each named PHY's sleep and wake into its table; an override's unset fields come from
    /// the base.
    pub fn setup(&self, class: LinkClass, node: Option<u32>) -> LinkSetup {
        let b = &self.links;
        let o = self.override_for(class, node);
        let value = |f: fn(&LinkPowerSpec) -> Option<f64>, default: f64| -> f64 {
            o.and_then(f).or(f(b)).unwrap_or(default)
        };
        let pick = |f: fn(&LinkPowerSpec) -> Option<f64>| -> Ps { us_to_ps(value(f, 0.0)) };
        // An override that names a PHY or gives fast-wake times sets its fast wake; one that
        // does neither has the base table's.
        let fast_from = o.filter(|o| o.sets_fast_wake()).unwrap_or(b);
        let fast_wake = fast_from.fast_wake_us().map(|(sleep, wake)| FastWake {
            sleep_time_ps: us_to_ps(sleep),
            wake_time_ps: us_to_ps(wake),
            saving: value(|s| s.fast_wake_saving, DEFAULT_FAST_WAKE_SAVING),
        });
        LinkSetup {
            phy: PhyTiming {
                sleep_time_ps: pick(|s| s.sleep_time_us),
                wake_time_ps: pick(|s| s.wake_time_us),
                refresh_period_ps: pick(|s| s.refresh_period_us),
                refresh_time_ps: pick(|s| s.refresh_time_us),
                fast_wake,
            },
            policy: PolicySettings {
                policy: o
                    .and_then(|o| o.policy)
                    .or(b.policy)
                    .unwrap_or(LinkPolicy::Timeout),
                idle_timeout_ps: pick(|s| s.idle_timeout_us),
                depth: o.and_then(|o| o.depth).or(b.depth).unwrap_or_default(),
                slowdown_bound: value(|s| s.slowdown_bound, DEFAULT_SLOWDOWN_BOUND),
                delay_share: value(|s| s.adaptive_delay_share, DEFAULT_DELAY_SHARE),
                window: o
                    .and_then(|o| o.adaptive_window)
                    .or(b.adaptive_window)
                    .unwrap_or(DEFAULT_WINDOW),
            },
        }
    }

    /// The control of channel `c`'s link.
    pub(super) fn channel_control(&self, c: &Channel) -> LinkControl {
        self.control(c.class, node_of(c))
    }

    /// The PHY timing and policy of channel `c`, with the NIC's own wake time on a channel a
    /// node drives.
    pub fn channel_setup(&self, c: &Channel) -> LinkSetup {
        let mut t = self.setup(c.class, node_of(c));
        if let (Device::Node(_), Some(w)) = (c.src, self.nic.wake_time_us) {
            t.phy.wake_time_ps = us_to_ps(w);
        }
        t
    }

    /// Forces every link class and the DIMMs to always-on: the baseline of a comparison.
    pub fn set_always_on(&mut self) {
        self.dimms.policy = DimmPolicyName::AlwaysOn;
        for (_, s) in self.link_specs_mut() {
            s.policy = Some(LinkPolicy::AlwaysOn);
        }
    }

    pub fn switch_port(&self) -> PortPower {
        PortPower {
            active_w: self.switch.port_active_w.unwrap_or(0.0),
            lpi_w: self.switch.port_lpi_w.unwrap_or(0.0),
        }
    }

    pub fn nic_port(&self) -> PortPower {
        PortPower {
            active_w: self.nic.port_active_w.unwrap_or(0.0),
            lpi_w: self.nic.port_lpi_w.unwrap_or(0.0),
        }
    }
}

/// The node a channel attaches to, if it is a node link.
fn node_of(c: &Channel) -> Option<u32> {
    match (c.src, c.dst) {
        (Device::Node(n), _) | (_, Device::Node(n)) => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(text: &str) -> Result<PowerSpec, ConfigError> {
        let mut p: PowerSpec = toml::from_str(text).expect("valid TOML");
        p.resolve()?;
        Ok(p)
    }

    fn sleep_wake_us(p: &PowerSpec, class: LinkClass, node: Option<u32>) -> (f64, f64) {
        let t = p.setup(class, node).phy;
        (ps_to_us(t.sleep_time_ps), ps_to_us(t.wake_time_ps))
    }

    #[test]
    fn without_a_phy_the_links_are_the_papers_measured_switch() {
        let p = resolved("").unwrap();
        let t = p.setup(LinkClass::Node, None);
        assert_eq!(t.policy.idle_timeout_ps, 600_000_000);
        assert_eq!(t.policy.policy, LinkPolicy::Timeout);
        assert_eq!(
            (t.phy.sleep_time_ps, t.phy.wake_time_ps),
            (2_880_000, 17_000_000)
        );
        assert_eq!(p.links.phy.as_deref(), Some("10gbase-t"));
    }

    /// Ts (min) and Tw_sys_tx (min) of IEEE Std 802.3 Tables 78-2 and 78-4, and
    /// docs/references.md section 1, Table 1 for the twisted-pair PHYs.
    #[test]
    fn the_presets_carry_the_standards_minimum_sleep_and_wake() {
        let want = [
            ("10gbase-t", 2.88, 4.48),
            ("1000base-t", 182.0, 16.0),
            ("100base-tx", 200.0, 30.0),
            ("1000base-kx", 19.9, 13.26),
            ("10gbase-kx4", 19.9, 12.38),
            ("10gbase-kr", 4.9, 15.38),
            ("10gbase-kr-fec", 4.9, 17.38),
            ("40gbase-kr4", 0.9, 5.5),
            ("40gbase-kr4-fec", 0.9, 6.5),
            ("100gbase-kr4", 0.9, 5.5),
            ("fast-wake", 0.0, 0.34),
        ];
        assert_eq!(phy::PHYS.len(), want.len());
        for (name, sleep_us, wake_us) in want {
            let p = resolved(&format!("[links]\nphy = \"{name}\"")).unwrap();
            let got = sleep_wake_us(&p, LinkClass::Local, None);
            assert!(
                (got.0 - sleep_us).abs() < 1e-9 && (got.1 - wake_us).abs() < 1e-9,
                "{name}: {got:?}"
            );
        }
    }

    #[test]
    fn an_overrides_phy_sets_only_its_class_and_explicit_times_win() {
        let p = resolved(
            "[global]\nphy = \"40gbase-kr4\"\n\
             [[tree]]\nphy = \"10gbase-kr\"\nwake_time_us = 20.0\n\
             [[node_links]]\nnodes = [3]\nlink = { phy = \"fast-wake\" }",
        )
        .unwrap();
        assert_eq!(sleep_wake_us(&p, LinkClass::Global, None), (0.9, 5.5));
        assert_eq!(sleep_wake_us(&p, LinkClass::Local, None), (2.88, 17.0));
        assert_eq!(
            sleep_wake_us(&p, LinkClass::Tree { level: 1 }, None),
            (4.9, 20.0)
        );
        assert_eq!(sleep_wake_us(&p, LinkClass::Node, Some(3)), (0.0, 0.34));
        assert_eq!(sleep_wake_us(&p, LinkClass::Node, Some(2)), (2.88, 17.0));
        // The resolved configuration shows the times each override uses.
        assert_eq!(p.global.as_ref().unwrap().wake_time_us, Some(5.5));
        // Resolving again changes nothing (the baseline of `compare` re-reads it).
        let mut again = p.clone();
        again.resolve().unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn a_tables_control_overrides_the_default() {
        let p = resolved(
            "control = \"paired\"\n[global]\ncontrol = \"independent\"\n\
             [[node_links]]\nnodes = [1]\nlink = { control = \"independent\" }",
        )
        .unwrap();
        assert_eq!(p.control(LinkClass::Global, None), LinkControl::Independent);
        assert_eq!(p.control(LinkClass::Local, None), LinkControl::Paired);
        assert_eq!(
            p.control(LinkClass::Node, Some(1)),
            LinkControl::Independent
        );
        assert_eq!(p.control(LinkClass::Node, Some(0)), LinkControl::Paired);
        let p = resolved("control = \"independent\"\n[links]\ncontrol = \"paired\"").unwrap();
        assert_eq!(p.control(LinkClass::Global, None), LinkControl::Paired);
    }

    #[test]
    fn the_policies_take_their_parameters_and_depths_from_their_tables() {
        let p = resolved(
            "[links]\npolicy = \"perfbound\"\nidle_timeout_us = 0.0\n\
             [global]\nphy = \"40gbase-kr4\"\npolicy = \"oracle\"\n\
             [local]\npolicy = \"adaptive\"\nadaptive_window = 8\n\
             [[node_links]]\nnodes = [2]\nlink = { phy = \"100gbase-kr4\", depth = \"fast_wake\" }",
        )
        .unwrap();
        let base = p.setup(LinkClass::Node, None);
        assert_eq!(base.policy.policy, LinkPolicy::PerfBound);
        assert_eq!(base.policy, {
            let mut want = PolicySettings::new(LinkPolicy::PerfBound, 0);
            want.slowdown_bound = 0.01;
            want
        });
        assert_eq!(p.links.slowdown_bound, Some(0.01), "shown where it is used");
        assert_eq!(base.phy.fast_wake, None, "10GBASE-T has one depth");
        // 40GBASE-KR4: deep sleep 0.9 / 5.5 us, fast wake 0 / 0.34 us keeping half the saving.
        let g = p.setup(LinkClass::Global, None);
        assert_eq!(g.policy.policy, LinkPolicy::Oracle);
        assert_eq!(
            g.phy.fast_wake,
            Some(FastWake {
                sleep_time_ps: 0,
                wake_time_ps: 340_000,
                saving: 0.5
            })
        );
        let l = p.setup(LinkClass::Local, None);
        assert_eq!(l.policy, {
            // Its start timeout is the base table's.
            let mut want = PolicySettings::new(LinkPolicy::Adaptive, 0);
            (want.window, want.delay_share) = (8, 0.01);
            want
        });
        let n = p.setup(LinkClass::Node, Some(2));
        assert_eq!(
            (n.policy.policy, n.policy.depth),
            (LinkPolicy::PerfBound, Depth::FastWake)
        );
        // Fast wake on a PHY without it is an error naming the table.
        let e = resolved("[node]\ndepth = \"fast_wake\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("power.node.depth") && e.contains("fast wake"),
            "{e}"
        );
        let e = resolved("[links]\nslowdown_bound = 2.0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("power.links.slowdown_bound"), "{e}");
    }

    #[test]
    fn an_unknown_phy_names_its_place_and_the_presets() {
        let e = resolved("[[torus]]\n[[torus]]\nphy = \"10gbase-lr\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("power.torus[1].phy"), "{e}");
        assert!(e.contains("unknown PHY `10gbase-lr`"), "{e}");
        assert!(e.contains("10gbase-kr, 10gbase-kr-fec"), "{e}");
    }

    #[test]
    fn predictives_learner_is_set_in_the_base_table_only() {
        // Named by an override, its defaults show in the base table: 3 calls, 2 repetitions.
        let p = resolved("[node]\npolicy = \"predictive\"").unwrap();
        assert_eq!(
            (p.links.predictive_ngram, p.links.predictive_confidence),
            (Some(3), Some(2))
        );
        assert_eq!(resolved("").unwrap().links.predictive_ngram, None);
        let e = resolved("[node]\npolicy = \"predictive\"\npredictive_ngram = 2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("power.node.predictive_ngram"), "{e}");
        assert!(e.contains("set it in [power.links]"), "{e}");
        let e = resolved("[links]\npolicy = \"predictive\"\npredictive_confidence = 0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("power.links.predictive_confidence"), "{e}");
        assert!(e.contains("must be from 1 to 1000000, got 0"), "{e}");
    }
}
