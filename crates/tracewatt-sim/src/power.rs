//! `[power]`: the link low-power policy and the switch / NIC port power, resolved per link
//! direction into the state machines of `tracewatt-power`.

use crate::config::{us_to_ps, Config};
use crate::error::SimError;
use serde::{Deserialize, Serialize};
use tracewatt_net::{Device, LinkClass, Topology};
use tracewatt_power::phy;
use tracewatt_power::{Control, LinkPower, LinkTiming, Policy, PortPower, Timeline};

/// Timeline components: the ports of switches and of nodes.
pub const SWITCH_PORTS: usize = 0;
pub const NIC_PORTS: usize = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// `paired`: a link sleeps only when both directions are idle and wakes both (symmetric LPI
    /// of 1000BASE-T and 10GBASE-T); `independent`: each direction alone (TraceRP).
    #[serde(default = "default_control")]
    pub control: Control,
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
            timeline_bin_us: 0.0,
        }
    }
}

/// A link class's policy and timing. Unset fields come from the base `[power.links]` table and
/// from there from the PHY preset (`sleep_time_us`, `wake_time_us`) and the paper's measured
/// switch defaults (`idle_timeout_us` 600, `wake_time_us` 17).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkPowerSpec {
    /// `timeout` (default) or `always_on`.
    #[serde(default)]
    pub policy: Option<Policy>,
    /// PHY timing preset: `10gbase-t` (default), `1000base-t`, `100base-tx`.
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

/// The node-side port of each node link (default: the switch port's figures).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicPowerSpec {
    #[serde(default)]
    pub port_active_w: Option<f64>,
    #[serde(default)]
    pub port_lpi_w: Option<f64>,
}

fn default_control() -> Control {
    Control::Paired
}

const DEFAULT_PHY: &str = "10gbase-t";
const DEFAULT_SWITCH: &str = "powerconnect-8132";

impl PowerSpec {
    /// Fills every unset base field with its default, so the resolved configuration shows the
    /// values used; checks names and ranges.
    pub(crate) fn resolve(&mut self, source: &str) -> Result<(), SimError> {
        let err = |field: &str, msg: String| Err(SimError::config(source, field, msg, None));
        let l = &mut self.links;
        let phy_name = l.phy.get_or_insert_with(|| DEFAULT_PHY.to_string()).clone();
        let Some(p) = phy::phy(&phy_name) else {
            let names: Vec<&str> = phy::PHYS.iter().map(|p| p.name).collect();
            return err(
                "power.links.phy",
                format!(
                    "unknown PHY `{phy_name}`; expected one of: {}",
                    names.join(", ")
                ),
            );
        };
        l.policy.get_or_insert(Policy::Timeout);
        l.idle_timeout_us
            .get_or_insert(phy::MEASURED_IDLE_TIMEOUT_PS as f64 / 1e6);
        l.sleep_time_us.get_or_insert(p.sleep_time_ps as f64 / 1e6);
        l.wake_time_us
            .get_or_insert(phy::MEASURED_WAKE_TIME_PS as f64 / 1e6);
        l.refresh_period_us.get_or_insert(0.0);
        l.refresh_time_us.get_or_insert(0.0);
        let mut all: Vec<(String, &LinkPowerSpec)> = vec![("power.links".into(), &self.links)];
        for (name, o) in [
            ("node", &self.node),
            ("local", &self.local),
            ("global", &self.global),
        ] {
            if let Some(o) = o {
                all.push((format!("power.{name}"), o));
            }
        }
        for (i, o) in self.tree.iter().enumerate() {
            all.push((format!("power.tree[{i}]"), o));
        }
        for (i, o) in self.torus.iter().enumerate() {
            all.push((format!("power.torus[{i}]"), o));
        }
        for (i, o) in self.node_links.iter().enumerate() {
            all.push((format!("power.node_links[{i}].link"), &o.link));
        }
        for (field, s) in &all {
            if let Some(name) = &s.phy {
                if phy::phy(name).is_none() {
                    return err(&format!("{field}.phy"), format!("unknown PHY `{name}`"));
                }
            }
            for (k, v) in [
                ("idle_timeout_us", s.idle_timeout_us),
                ("sleep_time_us", s.sleep_time_us),
                ("wake_time_us", s.wake_time_us),
                ("refresh_period_us", s.refresh_period_us),
                ("refresh_time_us", s.refresh_time_us),
            ] {
                if let Some(v) = v {
                    if !(v.is_finite() && v >= 0.0) {
                        return err(
                            &format!("{field}.{k}"),
                            format!("must be a non-negative number, got {v}"),
                        );
                    }
                }
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
        self.nic.port_active_w.get_or_insert(sa);
        self.nic.port_lpi_w.get_or_insert(sl);
        for (field, v) in [
            ("power.switch.backplane_w", self.switch.backplane_w),
            ("power.switch.port_active_w", self.switch.port_active_w),
            ("power.switch.port_lpi_w", self.switch.port_lpi_w),
            ("power.nic.port_active_w", self.nic.port_active_w),
            ("power.nic.port_lpi_w", self.nic.port_lpi_w),
        ] {
            let v = v.unwrap_or(0.0);
            if !(v.is_finite() && v >= 0.0) {
                return err(
                    field,
                    format!("must be a non-negative number of watts, got {v}"),
                );
            }
        }
        if !(self.timeline_bin_us.is_finite() && self.timeline_bin_us >= 0.0) {
            return err(
                "power.timeline_bin_us",
                format!(
                    "must be a non-negative number, got {}",
                    self.timeline_bin_us
                ),
            );
        }
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

    /// The timing of a link of `class`, attached to `node` if it is a node link (after
    /// `resolve`). An override's `phy` changes its sleep and wake defaults to the PHY's minimum
    /// figures; a node override takes precedence over a class override.
    pub fn timing(&self, class: LinkClass, node: Option<u32>) -> LinkTiming {
        let b = &self.links;
        let by_node =
            node.and_then(|n| self.node_links.iter().rev().find(|o| o.nodes.contains(&n)));
        let o = by_node
            .map(|o| &o.link)
            .or_else(|| self.class_override(class));
        let pick = |f: fn(&LinkPowerSpec) -> Option<f64>, phy_default: Option<f64>| -> f64 {
            o.and_then(f).or(phy_default).or(f(b)).unwrap_or(0.0)
        };
        let phy = o.and_then(|o| o.phy.as_deref()).and_then(phy::phy);
        LinkTiming {
            policy: o
                .and_then(|o| o.policy)
                .or(b.policy)
                .unwrap_or(Policy::Timeout),
            idle_timeout_ps: us_to_ps(pick(|s| s.idle_timeout_us, None)),
            sleep_time_ps: us_to_ps(pick(
                |s| s.sleep_time_us,
                phy.map(|p| p.sleep_time_ps as f64 / 1e6),
            )),
            wake_time_ps: us_to_ps(pick(
                |s| s.wake_time_us,
                phy.map(|p| p.wake_time_ps as f64 / 1e6),
            )),
            refresh_period_ps: us_to_ps(pick(|s| s.refresh_period_us, None)),
            refresh_time_ps: us_to_ps(pick(|s| s.refresh_time_us, None)),
        }
    }

    /// Forces every link class to always-on: the baseline of a comparison.
    pub fn set_always_on(&mut self) {
        self.links.policy = Some(Policy::AlwaysOn);
        let classes = [&mut self.node, &mut self.local, &mut self.global];
        for o in classes.into_iter().flatten() {
            o.policy = Some(Policy::AlwaysOn);
        }
        for o in self.tree.iter_mut().chain(self.torus.iter_mut()) {
            o.policy = Some(Policy::AlwaysOn);
        }
        for o in &mut self.node_links {
            o.link.policy = Some(Policy::AlwaysOn);
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

/// The state machines of every link direction of `topo`.
pub(crate) fn link_power(config: &Config, topo: &Topology) -> LinkPower {
    let p = &config.power;
    let reverse: Vec<u32> = topo.channels.iter().map(|c| c.reverse).collect();
    let node_of = |d: Device| match d {
        Device::Node(n) => Some(n),
        Device::Switch(_) => None,
    };
    let timing = topo
        .channels
        .iter()
        .map(|c| p.timing(c.class, node_of(c.src).or(node_of(c.dst))))
        .collect();
    let (sw, nic) = (p.switch_port(), p.nic_port());
    let port = topo
        .channels
        .iter()
        .map(|c| {
            if matches!(c.src, Device::Switch(_)) {
                sw
            } else {
                nic
            }
        })
        .collect();
    let component = topo
        .channels
        .iter()
        .map(|c| {
            if matches!(c.src, Device::Switch(_)) {
                SWITCH_PORTS
            } else {
                NIC_PORTS
            }
        })
        .collect();
    let timeline = Timeline::new(2, us_to_ps(p.timeline_bin_us), 2048);
    LinkPower::new(p.control, &reverse, timing, port, component, timeline)
}
