//! The family of power models a resolved configuration asks for on a topology.

use super::spec::{
    DEFAULT_CONFIDENCE, DEFAULT_NGRAM, NIC_RX_MAX_FRAMES, NIC_RX_USECS, NIC_TX_USECS,
    NIC_W_PER_INTERRUPT_PER_S, NIC_W_PER_MBPS,
};
use super::wait::{GovernorName, WaitPolicyName, C1, C3, NEHALEM_CSTATES_US};
use super::{us_to_ps, ConfigError, DimmPolicyName, PowerSpec, WaitSpec};
use crate::dimm::DimmLayout;
use crate::{
    Backplanes, CState, CoreOf, CoreParams, CorePower, DimmParams, DimmPolicy, DimmPower, Governor,
    LinkPower, NicParams, NicPort, NicPower, NodeBase, NodeJob, PortOwner, Power, PowerModel,
    Timeline, WaitPolicy,
};
use tracewatt_net::{Device, Topology};

/// Timeline bins when `timeline_bin_us` is 0: the run fits in at most this many.
const TIMELINE_MAX_BINS: usize = 2048;

/// What runs where, for the node models: each global rank's place, the jobs' names, and each
/// node's job (its start, memory profile and ranks there).
#[derive(Debug)]
pub struct Occupancy {
    pub ranks: Vec<CoreOf>,
    pub job_names: Vec<String>,
    pub node_jobs: Vec<Option<NodeJob>>,
}

/// The power models `spec` asks for on `topo` — link ports, switch backplanes and, with
/// `[power.nic] coalescing`, the NICs — followed by `extra` models of the caller's.
pub fn models(
    spec: &PowerSpec,
    wait: &WaitSpec,
    topo: &Topology,
    occupancy: Occupancy,
    extra: Vec<Box<dyn PowerModel>>,
) -> Result<Power, ConfigError> {
    let Occupancy {
        ranks,
        job_names,
        node_jobs,
    } = occupancy;
    let bin_ps = us_to_ps(spec.timeline_bin_us);
    let timeline = |series: usize| Timeline::new(series, bin_ps, TIMELINE_MAX_BINS);
    let ch = &topo.channels;
    let owner: Vec<PortOwner> = ch
        .iter()
        .map(|c| match c.src {
            Device::Switch(s) => PortOwner::Switch(s),
            Device::Node(n) => PortOwner::Node(n),
        })
        .collect();
    let (sw, nic) = (spec.switch_port(), spec.nic_port());
    let rank_node: Vec<u32> = ranks.iter().map(|r| r.node).collect();
    let links = LinkPower::new(
        &ch.iter()
            .map(|c| spec.channel_control(c))
            .collect::<Vec<_>>(),
        &ch.iter().map(|c| c.reverse).collect::<Vec<_>>(),
        ch.iter().map(|c| spec.channel_setup(c)).collect(),
        owner
            .iter()
            .map(|o| match o {
                PortOwner::Switch(_) => sw,
                PortOwner::Node(_) => nic,
            })
            .collect(),
        owner,
        timeline(2),
    )
    .with_forecasts(
        rank_node.clone(),
        topo.num_nodes as usize,
        spec.links.predictive_ngram.unwrap_or(DEFAULT_NGRAM),
        spec.links
            .predictive_confidence
            .unwrap_or(DEFAULT_CONFIDENCE),
    );
    let backplanes = Backplanes::new(
        topo.num_switches,
        spec.switch.backplane_w.unwrap_or(0.0),
        timeline(1),
    );
    let c = &spec.cores;
    let (policy, governor) = match (wait.policy, wait.governor) {
        (WaitPolicyName::Spin, _) => (WaitPolicy::Spin, Governor::Fixed(C1)),
        (WaitPolicyName::Mwait, _) => (WaitPolicy::Mwait, Governor::Fixed(C1)),
        // The oracle picks its state per wait; the governor is not asked.
        (WaitPolicyName::Oracle, _) => (WaitPolicy::Oracle, Governor::Fixed(C1)),
        (WaitPolicyName::Block, GovernorName::Menu) => (WaitPolicy::Block, Governor::Menu),
        (WaitPolicyName::Block, GovernorName::Fixed) => (WaitPolicy::Block, Governor::Fixed(C3)),
    };
    let powers = [c.c1_w, c.c1e_w, c.c3_w, c.c6_w];
    let states = std::array::from_fn(|s| CState {
        exit_ps: us_to_ps(NEHALEM_CSTATES_US[s].0),
        target_residency_ps: us_to_ps(NEHALEM_CSTATES_US[s].1),
        power_w: powers[s],
    });
    let cores = CorePower::new(
        CoreParams {
            policy,
            threshold_ps: wait.threshold_ps(),
            enter_ps: us_to_ps(wait.enter_overhead_us.unwrap_or(0.0)),
            wake_ps: us_to_ps(wait.wake_overhead_us.unwrap_or(0.0)),
            governor,
            states,
            compute_w: c.compute_w,
            spin_w: c.spin_w,
            idle_w: c.idle_w,
        },
        ranks,
        job_names,
        timeline(1),
    );
    let nodes = NodeBase::new(
        vec![spec.nodes.base_w; topo.num_nodes as usize],
        timeline(1),
    );
    let d = &spec.dimms;
    let dimms = DimmPower::new(
        DimmParams {
            policy: match d.policy {
                DimmPolicyName::AlwaysOn => DimmPolicy::AlwaysOn,
                DimmPolicyName::BandwidthPreserving => DimmPolicy::BandwidthPreserving,
                DimmPolicyName::Ideal => DimmPolicy::Ideal,
            },
            layout: DimmLayout {
                channels: d.channels,
                dimms_per_channel: d.dimms_per_channel,
                dimm_gib: d.dimm_gib,
            },
            standby_w: d.dimm_standby_w,
            online_threshold_gib: d.online_threshold_gib,
            offline_threshold_gib: d.offline_threshold_gib,
            transition_ps: us_to_ps(d.transition_s * 1e6),
            idle_gib: d.idle_gib,
            bandwidth_slowdown: d.bandwidth_slowdown,
        },
        node_jobs,
        &rank_node,
        timeline(1),
    );
    let mut models: Vec<Box<dyn PowerModel>> = vec![
        Box::new(backplanes),
        Box::new(cores),
        Box::new(nodes),
        Box::new(dimms),
    ];
    let n = &spec.nic;
    if n.coalescing {
        let ports = ch
            .iter()
            .map(|c| match (c.src, c.dst) {
                (_, Device::Node(node)) => NicPort::Rx {
                    node,
                    latency_ps: c.latency_ps,
                },
                (Device::Node(node), _) => NicPort::Tx { node },
                _ => NicPort::None,
            })
            .collect();
        let params = NicParams {
            rx_usecs_ps: us_to_ps(n.rx_usecs.unwrap_or(NIC_RX_USECS)),
            rx_max_frames: n.rx_max_frames.unwrap_or(NIC_RX_MAX_FRAMES).max(1),
            tx_usecs_ps: us_to_ps(n.tx_usecs.unwrap_or(NIC_TX_USECS)),
            w_per_mbps: n.w_per_mbps.unwrap_or(NIC_W_PER_MBPS),
            w_per_interrupt_per_s: n.w_per_interrupt_per_s.unwrap_or(NIC_W_PER_INTERRUPT_PER_S),
        };
        models.push(Box::new(NicPower::new(
            params,
            ports,
            topo.num_nodes,
            timeline(1),
        )));
    }
    models.extend(extra);
    Power::new(Some(links), models, bin_ps, TIMELINE_MAX_BINS).map_err(|_| {
        ConfigError::new(
            "power",
            "two power models would both hold received messages; enable one",
        )
    })
}
