//! Shared plumbing for the family builders: allocates channel pairs, records ports and checks that
//! every port got wired, so each family module only states its wiring rule.

use super::{
    Channel, ChannelId, Device, LinkClass, LinkParams, NodeId, Shape, Size, SwitchId, Topology,
    TopologyError, MAX_DEVICES,
};

const UNSET: ChannelId = ChannelId::MAX;

/// Most channels (link directions) a topology may have; keeps channel ids far below `u32::MAX`
/// and memory bounded.
const MAX_CHANNELS: u64 = 1 << 26;

pub(crate) struct Builder<'a> {
    link: &'a dyn Fn(LinkClass) -> LinkParams,
    channels: Vec<Channel>,
    node_injection: Vec<ChannelId>,
    node_ejection: Vec<ChannelId>,
    switch_out: Vec<Vec<ChannelId>>,
}

/// Checks a device count against [`MAX_DEVICES`]; `what` names the spec field(s) responsible.
pub(crate) fn check_count(count: u64, field: &str, what: &str) -> Result<u32, TopologyError> {
    if count == 0 {
        return Err(TopologyError::new(
            field,
            format!("the machine has no {what}"),
        ));
    }
    if count > MAX_DEVICES {
        return Err(TopologyError::new(
            field,
            format!("{count} {what} is more than the supported {MAX_DEVICES}"),
        ));
    }
    Ok(count as u32)
}

/// Checks a per-switch port count fits the `u16` port indices.
pub(crate) fn check_ports(ports: u64, field: &str) -> Result<u16, TopologyError> {
    u16::try_from(ports).map_err(|_| {
        TopologyError::new(
            field,
            format!(
                "{ports} ports per switch is more than the supported {}",
                u16::MAX
            ),
        )
    })
}

/// A topology's nodes and each switch's port count: what a family works out (and checks) from
/// its spec before any channel exists, so that its size is known without building it.
#[derive(Debug)]
pub(crate) struct Layout {
    pub nodes: u32,
    /// `ports[s]` is the number of ports switch `s` has; every one must be wired.
    pub ports: Vec<u16>,
}

impl Layout {
    pub(crate) fn new(nodes: u32, ports: Vec<u16>) -> Result<Self, TopologyError> {
        let layout = Layout { nodes, ports };
        let links = layout.size().links;
        if 2 * links > MAX_CHANNELS {
            return Err(TopologyError::new(
                "machine.topology",
                format!(
                    "{links} links is more than the supported {}",
                    MAX_CHANNELS / 2
                ),
            ));
        }
        Ok(layout)
    }

    pub(crate) fn size(&self) -> Size {
        // Every node link takes one switch port, every switch-to-switch link two.
        let switch_ports: u64 = self.ports.iter().map(|&p| u64::from(p)).sum();
        Size {
            nodes: self.nodes,
            switches: self.ports.len() as u32,
            links: (switch_ports + u64::from(self.nodes)) / 2,
        }
    }
}

impl<'a> Builder<'a> {
    pub(crate) fn new(layout: &Layout, link: &'a dyn Fn(LinkClass) -> LinkParams) -> Self {
        let nodes = layout.nodes as usize;
        Self {
            link,
            channels: Vec::with_capacity(2 * layout.size().links as usize),
            node_injection: vec![UNSET; nodes],
            node_ejection: vec![UNSET; nodes],
            switch_out: layout
                .ports
                .iter()
                .map(|&p| vec![UNSET; p as usize])
                .collect(),
        }
    }

    fn push_pair(
        &mut self,
        a: Device,
        a_port: u16,
        b: Device,
        b_port: u16,
        class: LinkClass,
    ) -> (ChannelId, ChannelId) {
        let params = (self.link)(class);
        let ab = self.channels.len() as ChannelId;
        let ba = ab + 1;
        for (src, src_port, dst, dst_port, reverse) in
            [(a, a_port, b, b_port, ba), (b, b_port, a, a_port, ab)]
        {
            self.channels.push(Channel {
                src,
                dst,
                src_port,
                dst_port,
                class,
                bandwidth_bps: params.bandwidth_bps,
                latency_ps: params.latency_ps,
                reverse,
            });
        }
        (ab, ba)
    }

    /// Links `node` to port `port` of `switch` (injection channel first, then ejection).
    pub(crate) fn node_link(&mut self, node: NodeId, switch: SwitchId, port: u16) {
        let (inj, ej) = self.push_pair(
            Device::Node(node),
            0,
            Device::Switch(switch),
            port,
            LinkClass::Node,
        );
        self.node_injection[node as usize] = inj;
        self.node_ejection[node as usize] = ej;
        self.set_out(switch, port, ej);
    }

    /// Links port `a_port` of switch `a` to port `b_port` of switch `b` (channel a->b first).
    pub(crate) fn switch_link(
        &mut self,
        a: SwitchId,
        a_port: u16,
        b: SwitchId,
        b_port: u16,
        class: LinkClass,
    ) {
        let (ab, ba) = self.push_pair(Device::Switch(a), a_port, Device::Switch(b), b_port, class);
        self.set_out(a, a_port, ab);
        self.set_out(b, b_port, ba);
    }

    fn set_out(&mut self, switch: SwitchId, port: u16, ch: ChannelId) {
        let slot = &mut self.switch_out[switch as usize][port as usize];
        debug_assert_eq!(*slot, UNSET, "port {port} of switch {switch} wired twice");
        *slot = ch;
    }

    pub(crate) fn finish(self, shape: Shape) -> Result<Topology, TopologyError> {
        let internal = |what: String| {
            TopologyError::new("machine.topology", format!("internal wiring error: {what}"))
        };
        if let Some(n) = self.node_injection.iter().position(|&c| c == UNSET) {
            return Err(internal(format!("node {n} is not connected")));
        }
        for (s, outs) in self.switch_out.iter().enumerate() {
            if let Some(p) = outs.iter().position(|&c| c == UNSET) {
                return Err(internal(format!("port {p} of switch {s} is not connected")));
            }
        }
        let switch_ports = self.switch_out.iter().map(|o| o.len() as u16).collect();
        Ok(Topology {
            shape,
            num_nodes: self.node_injection.len() as u32,
            num_switches: self.switch_out.len() as u32,
            channels: self.channels,
            node_injection: self.node_injection,
            node_ejection: self.node_ejection,
            switch_out: self.switch_out,
            switch_ports,
        })
    }
}
