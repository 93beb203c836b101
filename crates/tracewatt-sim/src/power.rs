//! `[power]`: the link low-power policy and the switch / NIC port power, resolved per link
//! direction into the state machines of `tracewatt-power`.

use crate::config::{time_field, us_to_ps, Config};
use crate::error::SimError;
use serde::{Deserialize, Serialize};
use tracewatt_core::time::US;
use tracewatt_core::Ps;
use tracewatt_net::{Channel, Device, LinkClass, Topology};
use tracewatt_power::phy;
use tracewatt_power::{Control, LinkPower, LinkTiming, Policy, PortPower, Timeline};

/// Timeline components: the ports of switches and of nodes.
pub const SWITCH_PORTS: usize = 0;
pub const NIC_PORTS: usize = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// `paired`: a link sleeps only when both directions are idle and wakes both (symmetric LPI
    /// of 1000BASE-T and 10GBASE-T); `independent`: each direction alone (TraceRP and backplane
    /// PHYs). The default for every link power table that does not set its own.
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

/// A link class's policy and timing. A named `phy` gives the table's unset `sleep_time_us` and
/// `wake_time_us`; an override's other unset fields come from the base `[power.links]` table, and
/// the base's from the paper's measured switch (10GBASE-T, `idle_timeout_us` 600 and, when no PHY
/// is named, `wake_time_us` 17).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkPowerSpec {
    /// `timeout` (default) or `always_on`.
    #[serde(default)]
    pub policy: Option<Policy>,
    /// `paired` or `independent` for these links (default: `[power].control`).
    #[serde(default)]
    pub control: Option<Control>,
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

fn ps_to_us(ps: Ps) -> f64 {
    ps as f64 / 1e6
}

impl PowerSpec {
    /// Fills every unset base field with its default, and every table's unset sleep and wake
    /// with its named PHY's, so the resolved configuration shows the values used; checks names
    /// and ranges.
    pub(crate) fn resolve(&mut self, source: &str) -> Result<(), SimError> {
        let err = |field: &str, msg: String| Err(SimError::config(source, field, msg, None));
        // Naming a PHY gives its minimum sleep and wake; leaving it unset gives the paper's
        // measured switch: 10GBASE-T with the 17 us wake it measured.
        let l = &mut self.links;
        if l.phy.is_none() {
            l.phy = Some(DEFAULT_PHY.to_string());
            l.wake_time_us
                .get_or_insert(ps_to_us(phy::MEASURED_WAKE_TIME_PS));
        }
        l.policy.get_or_insert(Policy::Timeout);
        l.idle_timeout_us
            .get_or_insert(ps_to_us(phy::MEASURED_IDLE_TIMEOUT_PS));
        l.refresh_period_us.get_or_insert(0.0);
        l.refresh_time_us.get_or_insert(0.0);
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
            ] {
                if let Some(v) = v {
                    time_field(source, &format!("{field}.{k}"), v, US)?;
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
        time_field(source, "power.timeline_bin_us", self.timeline_bin_us, US)?;
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
    pub fn control(&self, class: LinkClass, node: Option<u32>) -> Control {
        self.override_for(class, node)
            .and_then(|o| o.control)
            .or(self.links.control)
            .unwrap_or(self.control)
    }

    /// The timing of a link of `class` (at `node`), after `resolve`, which has put each named
    /// PHY's sleep and wake into its table; an override's unset fields come from the base.
    pub fn timing(&self, class: LinkClass, node: Option<u32>) -> LinkTiming {
        let b = &self.links;
        let o = self.override_for(class, node);
        let pick = |f: fn(&LinkPowerSpec) -> Option<f64>| -> Ps {
            us_to_ps(o.and_then(f).or(f(b)).unwrap_or(0.0))
        };
        LinkTiming {
            policy: o
                .and_then(|o| o.policy)
                .or(b.policy)
                .unwrap_or(Policy::Timeout),
            idle_timeout_ps: pick(|s| s.idle_timeout_us),
            sleep_time_ps: pick(|s| s.sleep_time_us),
            wake_time_ps: pick(|s| s.wake_time_us),
            refresh_period_ps: pick(|s| s.refresh_period_us),
            refresh_time_ps: pick(|s| s.refresh_time_us),
        }
    }

    /// The control of channel `c`'s link.
    fn channel_control(&self, c: &Channel) -> Control {
        self.control(c.class, node_of(c))
    }

    /// The timing of channel `c`'s state machine.
    pub(crate) fn channel_timing(&self, c: &Channel) -> LinkTiming {
        self.timing(c.class, node_of(c))
    }

    /// Forces every link class to always-on: the baseline of a comparison.
    pub fn set_always_on(&mut self) {
        for (_, s) in self.link_specs_mut() {
            s.policy = Some(Policy::AlwaysOn);
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

/// The state machines of every link direction of `topo`.
pub(crate) fn link_power(config: &Config, topo: &Topology) -> LinkPower {
    let p = &config.power;
    let reverse: Vec<u32> = topo.channels.iter().map(|c| c.reverse).collect();
    let control: Vec<Control> = topo.channels.iter().map(|c| p.channel_control(c)).collect();
    let timing = topo.channels.iter().map(|c| p.channel_timing(c)).collect();
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
    LinkPower::new(&control, &reverse, timing, port, component, timeline)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(text: &str) -> Result<PowerSpec, SimError> {
        let mut p: PowerSpec = toml::from_str(text).expect("valid TOML");
        p.resolve("t.toml")?;
        Ok(p)
    }

    fn sleep_wake_us(p: &PowerSpec, class: LinkClass, node: Option<u32>) -> (f64, f64) {
        let t = p.timing(class, node);
        (ps_to_us(t.sleep_time_ps), ps_to_us(t.wake_time_ps))
    }

    #[test]
    fn without_a_phy_the_links_are_the_papers_measured_switch() {
        let p = resolved("").unwrap();
        let t = p.timing(LinkClass::Node, None);
        assert_eq!(t.idle_timeout_ps, 600_000_000);
        assert_eq!((t.sleep_time_ps, t.wake_time_ps), (2_880_000, 17_000_000));
        assert_eq!(p.links.phy.as_deref(), Some("10gbase-t"));
    }

    /// Ts (min) and Tw_sys_tx (min) of IEEE Std 802.3 Tables 78-2 and 78-4, and research.md
    /// Table 1 for the twisted-pair PHYs.
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
        again.resolve("t.toml").unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn a_tables_control_overrides_the_default() {
        let p = resolved(
            "control = \"paired\"\n[global]\ncontrol = \"independent\"\n\
             [[node_links]]\nnodes = [1]\nlink = { control = \"independent\" }",
        )
        .unwrap();
        assert_eq!(p.control(LinkClass::Global, None), Control::Independent);
        assert_eq!(p.control(LinkClass::Local, None), Control::Paired);
        assert_eq!(p.control(LinkClass::Node, Some(1)), Control::Independent);
        assert_eq!(p.control(LinkClass::Node, Some(0)), Control::Paired);
        let p = resolved("control = \"independent\"\n[links]\ncontrol = \"paired\"").unwrap();
        assert_eq!(p.control(LinkClass::Global, None), Control::Paired);
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
}
