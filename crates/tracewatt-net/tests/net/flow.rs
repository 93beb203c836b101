//! The flow model: max-min shares worked out by hand, a lone message's time against the packet
//! model itself, short messages held back by full input buffers, wakes along the path, the busy
//! stretches power sees, determinism, and the max-min optimality conditions under random
//! traffic.

use crate::common::{dragonfly, fat_tree, torus, with_ft};
use proptest::prelude::*;
use tracewatt_core::{EventQueue, Ps, Rng, Schedule};
use tracewatt_net::fabric::{
    Credits, Fabric, FabricParams, LinkObserver, NetEvent, Notice, Switching,
};
use tracewatt_net::flow::{FlowEvent, FlowFabric, SEGMENT_PACKETS, SLACK_DIVISOR};
use tracewatt_net::topology::build;
use tracewatt_net::{
    make_router, ChannelId, DragonflyArrangement, LinkClass, LinkParams, NodeId, RoutingAlgorithm,
    RoutingSpec, Topology, TopologySpec,
};

const NS: Ps = 1_000;
/// The longest train in these tests: with [`params`]' buffers of two packets (segments of one),
/// a message of more than 16 packets is a flow that shares bandwidth.
const TRAINS: u32 = 16;
const US: Ps = 1_000_000;

/// A message to send: at, src, dst, bytes, notify_injected.
type Send = (Ps, NodeId, NodeId, u64, bool);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Send(u32),
    Flow(FlowEvent),
    Packet(NetEvent),
}

struct Q<'a>(&'a mut EventQueue<Ev>);
impl Schedule<FlowEvent> for Q<'_> {
    fn schedule(&mut self, time: Ps, event: FlowEvent) {
        self.0.push(time, Ev::Flow(event));
    }
}
impl Schedule<NetEvent> for Q<'_> {
    fn schedule(&mut self, time: Ps, event: NetEvent) {
        self.0.push(time, Ev::Packet(event));
    }
}

/// What a test observer saw: every call, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Ready {
        ch: ChannelId,
        at: Ps,
        start: Ps,
    },
    Transmit {
        ch: ChannelId,
        start: Ps,
        end: Ps,
        bytes: u32,
        src: NodeId,
    },
}

/// Records every call; a channel in `asleep` wakes (taking `wake`) the first time it is asked.
#[derive(Debug, Default)]
struct Recorder {
    asleep: Vec<ChannelId>,
    wake: Ps,
    calls: Vec<Call>,
}

impl LinkObserver for Recorder {
    fn link_ready(&mut self, ch: ChannelId, now: Ps) -> Ps {
        let start = if let Some(i) = self.asleep.iter().position(|&c| c == ch) {
            self.asleep.swap_remove(i);
            now + self.wake
        } else {
            now
        };
        self.calls.push(Call::Ready { ch, at: now, start });
        start
    }
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32, src: NodeId) {
        self.calls.push(Call::Transmit {
            ch,
            start,
            end,
            bytes,
            src,
        });
    }
}

fn params(packet_bytes: u32, switching: Switching) -> FabricParams {
    FabricParams {
        packet_bytes,
        // Two packets: a message of more than one packet is a flow that shares bandwidth.
        buffer_bytes: 2 * packet_bytes,
        switch_latency_ps: 50 * NS,
        switching,
        credits: Credits::OutOfBand,
        train_segments: TRAINS,
        segment_packets: SEGMENT_PACKETS,
        short_unit_packets: 0,
    }
}

/// `p` with buffers large enough that no lone message ever waits for credit in the packet
/// model, and every message is short in the flow model.
fn deep(p: FabricParams) -> FabricParams {
    FabricParams {
        buffer_bytes: 1 << 30,
        ..p
    }
}

fn topo_with(spec: &TopologySpec, link: &dyn Fn(LinkClass) -> LinkParams) -> Topology {
    build(spec, link).expect("valid topology")
}

/// Every link 8 Gbit/s (one byte per ns), 100 ns: times by hand in whole nanoseconds.
fn uniform(bits_per_s: u64) -> impl Fn(LinkClass) -> LinkParams {
    move |_| LinkParams {
        bandwidth_bps: bits_per_s,
        latency_ps: 100 * NS,
    }
}

fn flow_fabric(spec: &TopologySpec, topo: Topology, p: FabricParams) -> FlowFabric {
    let router = make_router(&RoutingSpec::default(), &topo).expect("router");
    let _ = spec;
    FlowFabric::new(topo, router, p)
}

/// Runs `sends` through the flow model until `until` (inclusive) or the end; returns the notices
/// with their times.
fn run_flows(
    f: &mut FlowFabric,
    sends: &[Send],
    obs: &mut Recorder,
    until: Ps,
) -> Vec<(Ps, Notice)> {
    run_sends(f, sends, &[], obs, until)
}

/// As [`run_flows`], the sends numbered in `urgent` sent as control messages, which skip their
/// NIC's queue.
fn run_sends(
    f: &mut FlowFabric,
    sends: &[Send],
    urgent: &[u32],
    obs: &mut Recorder,
    until: Ps,
) -> Vec<(Ps, Notice)> {
    let mut q = EventQueue::new();
    for (i, s) in sends.iter().enumerate() {
        q.push(s.0, Ev::Send(i as u32));
    }
    let mut rng = Rng::new(7);
    let mut out = Vec::new();
    while q.peek_time().is_some_and(|t| t <= until) {
        let Some((now, ev)) = q.pop() else { break };
        match ev {
            Ev::Send(i) => {
                let (_, src, dst, bytes, notify) = sends[i as usize];
                f.send(
                    now,
                    i,
                    (src, dst),
                    bytes,
                    urgent.contains(&i),
                    notify,
                    &mut Q(&mut q),
                    obs,
                );
            }
            Ev::Flow(e) => f.handle(now, e, &mut Q(&mut q), obs, &mut rng),
            Ev::Packet(_) => unreachable!(),
        }
        out.extend(f.drain_notices().map(|n| (now, n)));
    }
    out
}

/// Delivery time of one message alone in the packet model.
fn packet_delivery(topo: Topology, p: FabricParams, src: NodeId, dst: NodeId, bytes: u64) -> Ps {
    packet_delivery_with(topo, p, (src, dst), bytes, &mut Recorder::default())
}

/// As [`packet_delivery`], with the links `obs` keeps asleep.
fn packet_delivery_with(
    topo: Topology,
    p: FabricParams,
    (src, dst): (NodeId, NodeId),
    bytes: u64,
    obs: &mut Recorder,
) -> Ps {
    let router = make_router(&RoutingSpec::default(), &topo).expect("router");
    let mut fab = Fabric::new(topo, router, p);
    let mut q = EventQueue::new();
    let mut rng = Rng::new(7);
    fab.send(0, 0, (src, dst), bytes, false, false, &mut Q(&mut q), obs);
    while let Some((now, ev)) = q.pop() {
        let Ev::Packet(e) = ev else { unreachable!() };
        fab.handle(now, e, &mut Q(&mut q), obs, &mut rng);
        if fab
            .drain_notices()
            .any(|n| n == Notice::Delivered { token: 0 })
        {
            return now;
        }
    }
    panic!("message {src} -> {dst} of {bytes} B never delivered");
}

fn delivered(notices: &[(Ps, Notice)], token: u32) -> Ps {
    notices
        .iter()
        .find(|(_, n)| *n == Notice::Delivered { token })
        .map(|&(t, _)| t)
        .unwrap_or_else(|| panic!("token {token} not delivered: {notices:?}"))
}

fn single_switch(nodes: u32, bits_per_s: u64) -> (TopologySpec, Topology) {
    let spec = TopologySpec::SingleSwitch { nodes };
    let topo = topo_with(&spec, &uniform(bits_per_s));
    (spec, topo)
}

const GBPS_8: u64 = 8_000_000_000;

#[test]
fn two_flows_on_one_link_get_half_its_bandwidth_each() {
    // Nodes 0 and 1 send 20,000 B (more than 16 packets: flows) to node 2 at t = 0 over
    // 8 Gbit/s (1 B/ns) links, 100 ns each, switch 50 ns. Heads reach node 2's link at
    // 100 + 50 = 150 ns; both transfers then share it at 4 Gbit/s (0.5 B/ns): 40,000 ns, ending
    // at 40,150 ns, delivered one link latency later, 40,250 ns. (Alone: 150 + 20,000 + 100 =
    // 20,250 ns.)
    let (spec, topo) = single_switch(3, GBPS_8);
    let mut f = flow_fabric(&spec, topo, params(1000, Switching::CutThrough));
    let mut obs = Recorder::default();
    let sends = [(0, 0, 2, 20_000, true), (0, 1, 2, 20_000, false)];
    let at_150 = run_flows(&mut f, &sends, &mut obs, 150 * NS);
    assert!(at_150.is_empty());
    let rates: Vec<u64> = f.rates().iter().map(|r| r.1).collect();
    assert_eq!(rates, vec![GBPS_8 / 2, GBPS_8 / 2]);
    let mut f2 = {
        let (spec, topo) = single_switch(3, GBPS_8);
        flow_fabric(&spec, topo, params(1000, Switching::CutThrough))
    };
    let mut obs = Recorder::default();
    let n = run_flows(&mut f2, &sends, &mut obs, Ps::MAX);
    assert_eq!(delivered(&n, 0), 40_250 * NS);
    assert_eq!(delivered(&n, 1), 40_250 * NS);
    assert!(n.contains(&(
        40_150 * NS,
        Notice::Injected {
            token: 0,
            at: 40_150 * NS
        }
    )));
    // Busy stretches. Node 0's link (channel 0) is held from 0 and its piece reaches 40,000 ns
    // (claim + transfer time). Node 2's ejection link (channel 5) is one stretch from 150 ns in
    // two contiguous pieces, one per flow, each with its bytes and source.
    let t = |ch| -> Vec<Call> {
        obs.calls
            .iter()
            .filter(|c| matches!(c, Call::Transmit { ch: x, .. } if *x == ch))
            .cloned()
            .collect()
    };
    assert_eq!(
        t(0),
        vec![Call::Transmit {
            ch: 0,
            start: 0,
            end: 40_000 * NS,
            bytes: 20_000,
            src: 0
        }]
    );
    // Both transfers end at 40,150 ns; whichever leaves first reports the piece.
    let pieces: Vec<(Ps, Ps, u32)> = t(5)
        .iter()
        .map(|c| match *c {
            Call::Transmit {
                start, end, bytes, ..
            } => (start, end, bytes),
            Call::Ready { .. } => unreachable!(),
        })
        .collect();
    assert_eq!(
        pieces,
        vec![
            (150 * NS, 40_150 * NS, 20_000),
            (40_150 * NS, 40_150 * NS, 20_000)
        ]
    );
    let mut sources: Vec<NodeId> = t(5)
        .iter()
        .map(|c| match *c {
            Call::Transmit { src, .. } => src,
            Call::Ready { .. } => unreachable!(),
        })
        .collect();
    sources.sort_unstable();
    assert_eq!(sources, vec![0, 1]);
    // Node 2's link was asked once, when the first head reached it idle.
    let asked: Vec<&Call> = obs
        .calls
        .iter()
        .filter(|c| matches!(c, Call::Ready { ch: 5, .. }))
        .collect();
    assert_eq!(asked.len(), 1);
}

#[test]
fn a_flow_ending_frees_its_bandwidth_at_that_instant() {
    // As above, but 20,000 B and 30,000 B. Both run at 0.5 B/ns from 150 ns; the first is
    // through at 150 + 40,000 = 40,150 ns (delivered 40,250 ns). The second has 10,000 B left
    // and from 40,150 ns the whole 1 B/ns: through at 50,150 ns, delivered 50,250 ns.
    let (spec, topo) = single_switch(3, GBPS_8);
    let sends = [(0, 0, 2, 20_000, false), (0, 1, 2, 30_000, false)];
    let mut f = flow_fabric(&spec, topo.clone(), params(1000, Switching::CutThrough));
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), 40_150 * NS);
    assert!(!n.iter().any(|(_, x)| *x == Notice::Delivered { token: 1 }));
    let rates: Vec<u64> = f.rates().iter().map(|r| r.1).collect();
    assert_eq!(rates, vec![GBPS_8]);
    let mut f = flow_fabric(&spec, topo, params(1000, Switching::CutThrough));
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(delivered(&n, 0), 40_250 * NS);
    assert_eq!(delivered(&n, 1), 50_250 * NS);
}

#[test]
fn a_flow_slot_waits_for_the_stale_events_of_the_flow_before() {
    // As above: A (node 0, 20,000 B) and B (node 1, 30,000 B) share node 2's link at 0.5 B/ns
    // from 150 ns, so B's `Done` is booked for 150 + 60,000 = 60,150 ns. A is through at
    // 40,150 ns; B's rate doubles, its `Done` is booked again for 50,150 ns, and the one at
    // 60,150 ns is stale. B is delivered at 50,250 ns, after A (40,250 ns). C (node 0 to 2,
    // 20,000 B, sent at 50,300 ns) must not take B's slot, the last freed, while that stale
    // event is to come: it takes A's, and E (node 1 to 3, sent at 61,000 ns) B's. C alone: head
    // at node 2's link at 50,450 ns, through at 70,450 ns, delivered 70,550 ns; E: 61,150 +
    // 20,000 + 100 = 81,250 ns.
    let (spec, topo) = single_switch(4, GBPS_8);
    let sends = [
        (0, 0, 2, 20_000, false),
        (0, 1, 2, 30_000, false),
        (50_300 * NS, 0, 2, 20_000, false),
        (61_000 * NS, 1, 3, 20_000, false),
    ];
    let fabric = || flow_fabric(&spec, topo.clone(), params(1000, Switching::CutThrough));
    let rates_at = |t: Ps| {
        let mut f = fabric();
        run_flows(&mut f, &sends, &mut Recorder::default(), t);
        (f.rates(), f.flows_in_flight())
    };
    let (both, _) = rates_at(150 * NS);
    let (only_c, in_flight) = rates_at(51_000 * NS);
    assert_eq!(only_c.len(), 1);
    // B's slot waits for its stale event, and is not counted in flight.
    assert_eq!(in_flight, 1);
    let slot_of = |path: &Vec<ChannelId>| both.iter().find(|r| &r.2 == path).map(|r| r.0);
    let (a, c) = (slot_of(&only_c[0].2), only_c[0].0);
    let b = both.iter().map(|r| r.0).find(|&id| Some(id) != a);
    assert_eq!(Some(c), a, "C takes A's slot, not B's");
    let (c_and_e, _) = rates_at(61_400 * NS);
    let e = c_and_e.iter().find(|r| r.0 != c).map(|r| r.0);
    assert_eq!(e, b, "B's slot is free once its stale event has come");
    let n = run_flows(&mut fabric(), &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(delivered(&n, 1), 50_250 * NS);
    assert_eq!(delivered(&n, 2), 70_550 * NS);
    assert_eq!(delivered(&n, 3), 81_250 * NS);
}

#[test]
fn two_bottlenecks_get_their_max_min_shares() {
    // 12 Gbit/s links on one switch. A, B, E go to node 3 (A and E from node 0, B from node 1);
    // C goes from node 1 to node 2. Node 3's link is the first bottleneck: 3 flows, 4 Gbit/s
    // each. Node 1's link then has 12 - 4 = 8 Gbit/s left for C alone: the second bottleneck.
    // Node 0's link carries A and E at 8 of its 12 Gbit/s: not saturated.
    let gbps_12 = 12_000_000_000;
    let (spec, topo) = single_switch(4, gbps_12);
    let mut f = flow_fabric(&spec, topo, params(1000, Switching::CutThrough));
    let sends = [
        (0, 0, 3, 1_000_000, false), // A
        (0, 1, 3, 1_000_000, false), // B
        (0, 1, 2, 1_000_000, false), // C
        (0, 0, 3, 1_000_000, false), // E
    ];
    // Control messages skip their NIC's queue, so A and E (B and C) share their node's link.
    run_sends(
        &mut f,
        &sends,
        &[0, 1, 2, 3],
        &mut Recorder::default(),
        150 * NS,
    );
    let rates: Vec<u64> = f.rates().iter().map(|r| r.1).collect();
    let g = 1_000_000_000;
    assert_eq!(rates, vec![4 * g, 4 * g, 8 * g, 4 * g]);
}

#[test]
fn an_update_stays_with_the_flows_whose_share_can_change() {
    // 12 Gbit/s links on one switch: X from node 0 to node 1 starts at 0, Y from node 2 to node
    // 3 at 1 us; they share no channel. Each start recomputes its own flow alone, and an end on
    // links where no other flow is held back recomputes nothing: 2 updates, 1 flow each.
    let (spec, topo) = single_switch(4, 12_000_000_000);
    let mut f = flow_fabric(&spec, topo, params(1000, Switching::CutThrough));
    let sends = [(0, 0, 1, 1_000_000, false), (US, 2, 3, 1_000_000, false)];
    run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(f.stats().packets_delivered, 2);
    assert_eq!(f.reshare_counts(), (2, 2));
}

#[test]
fn an_update_reaches_flows_that_share_no_link_with_the_one_that_ends() {
    // The two-bottleneck case below with A of 50,000 B: A, B, E run at 4 Gbit/s (0.5 B/ns) into
    // node 3, C at 8 Gbit/s out of node 1. A is through at 150 + 100,000 ns. Node 3's link then
    // has B and E only: 6 Gbit/s each; B asks for 6 at node 1, where C must come down to
    // 12 - 6 = 6 Gbit/s although C crosses no link of A's. That update covers B, E and C.
    let g = 1_000_000_000;
    let (spec, topo) = single_switch(4, 12 * g);
    let sends = [
        (0, 0, 3, 50_000, false),    // A
        (0, 1, 3, 1_000_000, false), // B
        (0, 1, 2, 1_000_000, false), // C
        (0, 0, 3, 1_000_000, false), // E
    ];
    let p = params(1000, Switching::CutThrough);
    let mut f = flow_fabric(&spec, topo.clone(), p);
    let urgent = [0, 1, 2, 3];
    run_sends(
        &mut f,
        &sends,
        &urgent,
        &mut Recorder::default(),
        100_150 * NS - 1,
    );
    let rates: Vec<u64> = f.rates().iter().map(|r| r.1).collect();
    assert_eq!(rates, vec![4 * g, 4 * g, 8 * g, 4 * g]);
    assert_eq!(f.reshare_counts(), (1, 4));
    let mut f = flow_fabric(&spec, topo, p);
    run_sends(
        &mut f,
        &sends,
        &urgent,
        &mut Recorder::default(),
        100_150 * NS,
    );
    let rates: Vec<(u32, u64)> = f.rates().iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(rates, vec![(1, 6 * g), (2, 6 * g), (3, 6 * g)]);
    assert_eq!(f.reshare_counts(), (2, 7));
}

#[test]
fn a_flow_onto_two_sleeping_links_pays_two_wakes() {
    // 20,000 B from node 0 to node 1 as in the first test, both node links asleep, 17 us wakes.
    // Node 0's link is asked at 0 and wakes at 17 us; the head reaches node 1's link at
    // 17 us + 150 ns, which wakes at 34.15 us; the transfer (20,000 ns) ends at 54,150 ns and
    // the message is delivered at 54,250 ns: the lone 20,250 ns plus two wakes.
    let (spec, topo) = single_switch(2, GBPS_8);
    let (inj, ej) = (topo.node_injection[0], topo.node_ejection[1]);
    let mut f = flow_fabric(&spec, topo, params(1000, Switching::CutThrough));
    let mut obs = Recorder {
        asleep: vec![inj, ej],
        wake: 17 * US,
        calls: Vec::new(),
    };
    let n = run_flows(&mut f, &[(0, 0, 1, 20_000, false)], &mut obs, Ps::MAX);
    assert_eq!(delivered(&n, 0), 54_250 * NS);
    let asked: Vec<Call> = obs
        .calls
        .iter()
        .filter(|c| matches!(c, Call::Ready { .. }))
        .cloned()
        .collect();
    assert_eq!(
        asked,
        vec![
            Call::Ready {
                ch: inj,
                at: 0,
                start: 17 * US
            },
            Call::Ready {
                ch: ej,
                at: 17_150 * NS,
                start: 34_150 * NS
            },
        ]
    );
}

#[test]
fn before_a_link_wakes_its_reverse_direction_reports_its_stretch_so_far() {
    // Node 0 sends 100,000 B to node 1 at t = 0 (its transfer holds node 1's ejection link
    // from 150 ns to 100,150 ns). At 1 us node 1 sends to node 0: before node 1's injection
    // link (the ejection link's reverse) is asked, the ejection link's stretch is reported up
    // to 1 us, so a power model pairing the two directions sees the link busy.
    let (spec, topo) = single_switch(2, GBPS_8);
    let (ej1, inj1) = (topo.node_ejection[1], topo.node_injection[1]);
    let mut f = flow_fabric(&spec, topo, params(1000, Switching::CutThrough));
    let mut obs = Recorder::default();
    run_flows(
        &mut f,
        &[(0, 0, 1, 100_000, false), (US, 1, 0, 1, false)],
        &mut obs,
        US,
    );
    let i = obs
        .calls
        .iter()
        .position(|c| matches!(c, Call::Ready { ch, .. } if *ch == inj1))
        .expect("node 1's link asked");
    assert_eq!(
        obs.calls[i - 1],
        Call::Transmit {
            ch: ej1,
            start: 150 * NS,
            end: US,
            bytes: 0,
            src: 0
        }
    );
}

#[test]
fn a_nic_sends_the_next_message_once_the_rest_of_the_last_fits_in_the_first_buffer() {
    // 1 B/ns links, 100 ns, switch 50 ns, first-switch buffers of 4,000 B (messages of more
    // than 16 x 2,000 B are flows). Node 0 sends 40,000 B to node 1 (A) and 40,000 B to node 2
    // (B) at t = 0. A's head reaches node 1's link at 150 ns and its bytes flow at 1 B/ns;
    // 4,000 B are left at 36,150 ns, when the NIC starts on B. B's head reaches node 2's link at
    // 36,300 ns, A has 3,850 B left, and the two share node 0's link at 0.5 B/ns: A is through
    // at 36,300 + 7,700 = 44,000 ns (delivered 44,100 ns), then B alone has 40,000 - 3,850 =
    // 36,150 B left: through at 80,150 ns, delivered 80,250 ns. (Sharing from the start, both
    // would be delivered at 80,250 ns.)
    let (spec, topo) = single_switch(3, GBPS_8);
    let p = FabricParams {
        buffer_bytes: 4_000,
        ..params(1000, Switching::CutThrough)
    };
    let mut f = flow_fabric(&spec, topo, p);
    let sends = [(0, 0, 1, 40_000, false), (0, 0, 2, 40_000, false)];
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(delivered(&n, 0), 44_100 * NS);
    assert_eq!(delivered(&n, 1), 80_250 * NS);
}

#[test]
fn a_nic_sends_a_message_that_fits_in_the_first_buffer_at_its_link_rate() {
    // As above with 1,000 B each and large buffers: A leaves the NIC in 1,000 ns, so B's head
    // starts at 1,000 ns. A is through at 150 + 1,000 = 1,150 ns (delivered 1,250 ns); B's head
    // reaches node 2's link at 1,150 ns, as A leaves node 0's link, and has it alone: through
    // at 2,150 ns, delivered 2,250 ns. (Sharing, both would be delivered at 2,250 ns.)
    let (spec, topo) = single_switch(3, GBPS_8);
    let mut f = flow_fabric(&spec, topo, params(1000, Switching::CutThrough));
    let sends = [(0, 0, 1, 1_000, false), (0, 0, 2, 1_000, false)];
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(delivered(&n, 0), 1_250 * NS);
    assert_eq!(delivered(&n, 1), 2_250 * NS);
}

#[test]
fn a_control_message_does_not_wait_behind_bulk_data() {
    // Buffers of 4,000 B: node 0 sends 40,000 B (a flow) to node 1 at 0, and at 1 us an 8-byte
    // control message to node 2. It does not queue: its head reaches node 2's link at 1,150 ns,
    // it crosses at the link's rate as one packet (8 ns) and is delivered at 1,150 + 8 + 100 =
    // 1,258 ns. Queued, it would start only at 36,150 ns: delivered at 36,408 ns.
    let (spec, topo) = single_switch(3, GBPS_8);
    let p = FabricParams {
        buffer_bytes: 4_000,
        ..params(1000, Switching::CutThrough)
    };
    let sends = [(0, 0, 1, 40_000, false), (US, 0, 2, 8, false)];
    let mut f = flow_fabric(&spec, topo.clone(), p);
    let n = run_sends(&mut f, &sends, &[1], &mut Recorder::default(), Ps::MAX);
    assert_eq!(delivered(&n, 1), 1_258 * NS);
    let mut f = flow_fabric(&spec, topo, p);
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(delivered(&n, 1), 36_408 * NS);
}

#[test]
fn one_packet_messages_cross_a_link_one_after_the_other() {
    // Nodes 0 and 1 each send one packet of 1,000 B to node 2 at t = 0 (1 B/ns links, 100 ns,
    // switch 50 ns). Both heads reach node 2's link at 150 ns: the first crosses it from 150 to
    // 1,150 ns (delivered 1,250 ns), the second from 1,150 to 2,150 ns (delivered 2,250 ns),
    // as the packet model's two packets queued at one output port. (As flows sharing the link,
    // both would arrive at 2,250 ns.) Node 2's link reports the two pieces as they are sent.
    let (spec, topo) = single_switch(3, GBPS_8);
    let ej = topo.node_ejection[2];
    let mut f = flow_fabric(&spec, topo, params(1000, Switching::CutThrough));
    let mut obs = Recorder::default();
    let sends = [(0, 0, 2, 1_000, false), (0, 1, 2, 1_000, false)];
    let n = run_flows(&mut f, &sends, &mut obs, Ps::MAX);
    let mut times = [delivered(&n, 0), delivered(&n, 1)];
    times.sort_unstable();
    assert_eq!(times, [1_250 * NS, 2_250 * NS]);
    let pieces: Vec<(Ps, Ps, u32)> = obs
        .calls
        .iter()
        .filter_map(|c| match *c {
            Call::Transmit {
                ch,
                start,
                end,
                bytes,
                ..
            } if ch == ej => Some((start, end, bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(
        pieces,
        vec![
            (150 * NS, 1_150 * NS, 1_000),
            (1_150 * NS, 2_150 * NS, 1_000)
        ]
    );
}

#[test]
fn messages_of_up_to_half_a_buffer_cross_a_link_one_after_the_other() {
    // As above with 20,000 B messages (20 packets) and 1 GiB buffers, so they are short: the
    // first crosses node 2's link from 150 to 20,150 ns (delivered 20,250 ns), the second from
    // 20,150 to 40,150 ns (delivered 40,250 ns). With buffers of two packets they are flows (of
    // more than 16 packets), share the link, and both arrive at 40,250 ns.
    let (spec, topo) = single_switch(3, GBPS_8);
    let sends = [(0, 0, 2, 20_000, false), (0, 1, 2, 20_000, false)];
    let p = params(1000, Switching::CutThrough);
    for (fp, want) in [
        (deep(p), [20_250 * NS, 40_250 * NS]),
        (p, [40_250 * NS, 40_250 * NS]),
    ] {
        let mut f = flow_fabric(&spec, topo.clone(), fp);
        let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
        let mut times = [delivered(&n, 0), delivered(&n, 1)];
        times.sort_unstable();
        assert_eq!(times, want, "short up to {} B", f.short_bytes());
    }
}

/// Links of different bandwidths and latencies per class, so bottlenecks move along paths.
fn mixed(class: LinkClass) -> LinkParams {
    let (gbps, ns) = match class {
        LinkClass::Node => (100, 60),
        LinkClass::Tree { level } => (40 + 30 * u64::from(level), 150),
        LinkClass::Torus { dim } => (25 + 50 * u64::from(dim), 80),
        LinkClass::Local => (75, 40),
        LinkClass::Global => (30, 900),
    };
    LinkParams {
        bandwidth_bps: gbps * 1_000_000_000,
        latency_ps: ns * NS,
    }
}

#[test]
fn a_lone_message_takes_exactly_the_packet_models_time() {
    let specs = [
        TopologySpec::SingleSwitch { nodes: 4 },
        fat_tree(2, 4),
        with_ft(fat_tree(3, 4), None, 1.0, None, None, None, None),
        torus(&[5, 3], 1),
        dragonfly(5, 2, 2, 2, DragonflyArrangement::Absolute),
    ];
    let packet = 1000u32;
    let sizes = [0, 1, 999, 1000, 1001, 10_007, 100_000];
    for spec in &specs {
        let topo = topo_with(spec, &mixed);
        let n = topo.num_nodes;
        for switching in [Switching::CutThrough, Switching::StoreAndForward] {
            let p = params(packet, switching);
            let mut hops_seen = std::collections::BTreeSet::new();
            for dst in 1..n {
                for &bytes in &sizes {
                    let deep_time = packet_delivery(topo.clone(), deep(p), 0, dst, bytes);
                    // As a flow (over 16 packets), a train of one-packet segments (2 to 16
                    // packets, which fill the buffers of two packets as the packet model's
                    // packets do) and as a short message.
                    for fp in [p, deep(p)] {
                        let segments = if fp.buffer_bytes == p.buffer_bytes
                            && bytes > u64::from(packet)
                            && bytes <= 16 * u64::from(packet)
                        {
                            bytes.div_ceil(u64::from(packet))
                        } else {
                            1
                        };
                        let mut f = flow_fabric(spec, topo.clone(), fp);
                        let got = delivered(
                            &run_flows(
                                &mut f,
                                &[(0, 0, dst, bytes, false)],
                                &mut Recorder::default(),
                                Ps::MAX,
                            ),
                            0,
                        );
                        let at = format!(
                            "{spec:?} {switching:?}: 0 -> {dst}, {bytes} B, {segments} segments"
                        );
                        let packet_time = packet_delivery(topo.clone(), fp, 0, dst, bytes);
                        if segments == 1 || packet_time == deep_time {
                            assert_eq!(got, deep_time, "{at}");
                        } else {
                            // Buffers of two packets do not cover the credit round trip of
                            // every link: the packet model's packets wait for credit, and the
                            // segments wait for room, though not always as long (no longer than their packets).
                            assert!(deep_time <= got && got <= packet_time, "{at}: {got}");
                        }
                        assert_eq!(f.stats().packet_hops % segments, 0);
                        hops_seen.insert(f.stats().packet_hops / segments);
                    }
                }
            }
            // The longest paths of the topology were covered: as many channels as its diameter.
            let diameter = u64::from(topo.diameter_hops());
            assert_eq!(
                hops_seen.iter().copied().max(),
                Some(diameter),
                "{spec:?}: {hops_seen:?}"
            );
        }
    }
}

/// Packets of 1,000 B and buffers of 64,000 B: messages of more than 32,000 B go as trains of
/// 32,000 B segments, and the buffers cover every credit round trip of [`mixed`] links.
fn trains(switching: Switching) -> FabricParams {
    FabricParams {
        buffer_bytes: 64_000,
        segment_packets: 32,
        short_unit_packets: 0,
        ..params(1000, switching)
    }
}

#[test]
fn a_lone_segmented_message_takes_exactly_the_packet_models_time() {
    let specs = [
        TopologySpec::SingleSwitch { nodes: 4 },
        with_ft(fat_tree(3, 4), None, 1.0, None, None, None, None),
        torus(&[5, 3], 1),
        dragonfly(5, 2, 2, 2, DragonflyArrangement::Absolute),
    ];
    // Two, three and four segments, the last one a part of a packet in the first two.
    let sizes = [40_960, 65_536, 100_000];
    for spec in &specs {
        let topo = topo_with(spec, &mixed);
        for switching in [Switching::CutThrough, Switching::StoreAndForward] {
            let p = trains(switching);
            for dst in 1..topo.num_nodes {
                for &bytes in &sizes {
                    let want = packet_delivery(topo.clone(), p, 0, dst, bytes);
                    assert_eq!(want, packet_delivery(topo.clone(), deep(p), 0, dst, bytes));
                    let mut f = flow_fabric(spec, topo.clone(), p);
                    let n = run_flows(
                        &mut f,
                        &[(0, 0, dst, bytes, true)],
                        &mut Recorder::default(),
                        Ps::MAX,
                    );
                    assert_eq!(
                        delivered(&n, 0),
                        want,
                        "{spec:?} {switching:?}: 0 -> {dst}, {bytes} B"
                    );
                    let once: Vec<&Notice> = n.iter().map(|(_, n)| n).collect();
                    assert_eq!(once.len(), 2, "one injection, one delivery: {once:?}");
                    assert_eq!(f.stats().packets_delivered, 1);
                    assert_eq!(f.flows_in_flight(), 0);
                }
            }
        }
    }
}

#[test]
fn a_lone_segmented_message_pays_one_wake_per_sleeping_link() {
    // Every link asleep, 17 us wakes, links of 1 B/ns (a segment of 32,000 B takes 32 us, so no
    // wake hides behind another segment's serialisation): the first segment wakes each link of
    // the path as its head reaches it, the others follow it, and the message arrives one wake
    // per link later than with every link awake, as in the packet model.
    let wake = 17 * US;
    for spec in [
        with_ft(fat_tree(3, 4), None, 1.0, None, None, None, None),
        torus(&[5, 3], 1),
    ] {
        let topo = topo_with(&spec, &uniform(GBPS_8));
        let all: Vec<ChannelId> = (0..topo.channels.len() as ChannelId).collect();
        let p = trains(Switching::CutThrough);
        for dst in 1..topo.num_nodes {
            for bytes in [40_960, 65_536, 100_000] {
                let awake = packet_delivery(topo.clone(), p, 0, dst, bytes);
                let mut asleep = Recorder {
                    asleep: all.clone(),
                    wake,
                    calls: Vec::new(),
                };
                let want = packet_delivery_with(topo.clone(), p, (0, dst), bytes, &mut asleep);
                let mut f = flow_fabric(&spec, topo.clone(), p);
                let mut obs = Recorder {
                    asleep: all.clone(),
                    wake,
                    calls: Vec::new(),
                };
                let got = delivered(
                    &run_flows(&mut f, &[(0, 0, dst, bytes, false)], &mut obs, Ps::MAX),
                    0,
                );
                let woken = all.len() - obs.asleep.len();
                let hops = f.stats().packet_hops / bytes.div_ceil(32_000);
                assert_eq!(woken as u64, hops, "{spec:?}: 0 -> {dst}, {bytes} B");
                assert_eq!(got, awake + hops * wake, "{spec:?}: 0 -> {dst}, {bytes} B");
                assert_eq!(got, want, "{spec:?}: 0 -> {dst}, {bytes} B");
            }
        }
    }
}

#[test]
fn a_segment_is_its_packets_at_most_half_a_buffer() {
    // Segments of `segment_packets` packets, capped at half a buffer in whole packets (the
    // largest short message), and never less than one packet.
    let (spec, topo) = single_switch(2, GBPS_8);
    for (packet, buffer, packets, want) in [
        (4096, 65_536, SEGMENT_PACKETS, 16_384),
        (4096, 65_536, 8, 32_768),
        (4096, 65_536, 100, 32_768),
        (1000, 64_000, 3, 3_000),
        (1000, 2_000, SEGMENT_PACKETS, 1_000),
        (1000, 1_000, 2, 1_000),
    ] {
        let p = FabricParams {
            buffer_bytes: buffer,
            segment_packets: packets,
            short_unit_packets: 0,
            ..params(packet, Switching::CutThrough)
        };
        let f = flow_fabric(&spec, topo.clone(), p);
        assert_eq!(
            f.segment_bytes(),
            want,
            "{packets} of {packet} B, buffer {buffer} B"
        );
    }
}

#[test]
fn a_segment_waits_for_the_space_of_the_one_before() {
    // One switch, 1 B/ns links of 100 ns, switch 50 ns, packets and input buffers of 32,768 B:
    // node 0's 65,536 B go as two segments of one packet, and the switch's buffer holds one.
    // - The first: node 0's link 0-32,768 ns; node 1's link 150-32,918 ns; its space in the
    //   switch is back at node 0 a link latency after its tail has left, at 33,018 ns.
    // - The second: the NIC is free at 32,768 ns, the buffer at 33,018: node 0's link
    //   33,018-65,786 ns (it has left the NIC: injected at 65,786); node 1's link from
    //   33,168 ns; the message is delivered at 33,168 + 32,768 + 100 = 66,036 ns, as in the
    //   packet model. With room for both (or as one flow) it would arrive at
    //   150 + 65,536 + 100 = 65,786 ns.
    let (spec, topo) = single_switch(2, GBPS_8);
    let p = FabricParams {
        buffer_bytes: 32_768,
        ..params(32_768, Switching::CutThrough)
    };
    let sends = [(0, 0, 1, 65_536, true)];
    let mut f = flow_fabric(&spec, topo.clone(), p);
    assert_eq!(f.segment_bytes(), 32_768);
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(
        n,
        vec![
            (
                33_018 * NS,
                Notice::Injected {
                    token: 0,
                    at: 65_786 * NS
                }
            ),
            (66_036 * NS, Notice::Delivered { token: 0 }),
        ]
    );
    assert_eq!(packet_deliveries(topo.clone(), p, &sends), [66_036 * NS]);
    let s = f.stats();
    assert_eq!(
        (s.packets_delivered, s.packet_hops, s.packet_latency_sum_ps),
        (1, 4, u128::from(66_036 * NS))
    );
    let mut f = flow_fabric(&spec, topo, deep(p));
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(delivered(&n, 0), 65_786 * NS);
}

#[test]
fn a_segmented_message_behind_a_full_buffer_holds_back_its_nic() {
    // The full buffer of `a_full_input_buffer_holds_back_the_nics_that_feed_it`, with node 0's
    // and node 1's two messages to node 2 each one message of 2,000 B: two segments of one
    // packet, which move as the two messages did. Node 0's is delivered with its second
    // segment at 3,250 ns, node 1's at 4,250 ns; node 0's message to node 3, whose link is idle,
    // waits behind node 0's to node 2 for the switch's buffer and is delivered at 4,500 ns.
    // Each message is delivered once, as in the packet model.
    let (spec, topo) = single_switch(4, GBPS_8);
    let p = FabricParams {
        buffer_bytes: 1_000,
        ..params(1000, Switching::CutThrough)
    };
    let sends = [
        (0, 0, 2, 2_000, false),
        (0, 1, 2, 2_000, false),
        (0, 0, 3, 1_000, false),
    ];
    let mut f = flow_fabric(&spec, topo.clone(), p);
    let mut obs = Recorder::default();
    let n = run_flows(&mut f, &sends, &mut obs, Ps::MAX);
    let times: Vec<Ps> = (0..3).map(|t| delivered(&n, t) / NS).collect();
    assert_eq!(times, [3_250, 4_250, 4_500]);
    assert_eq!(n.len(), 3);
    let packet: Vec<Ps> = packet_deliveries(topo.clone(), p, &sends);
    assert_eq!(packet.iter().map(|t| t / NS).collect::<Vec<_>>(), times);
    assert_eq!(f.stats().packets_delivered, 3);
    let ns = |v: Vec<(Ps, Ps, u32)>| -> Vec<(Ps, Ps)> {
        v.into_iter().map(|(a, b, _)| (a / NS, b / NS)).collect()
    };
    assert_eq!(
        ns(pieces(&obs, topo.node_injection[0])),
        [(0, 1_000), (1_250, 2_250), (3_250, 4_250)]
    );
}

#[test]
fn up_to_the_longest_train_a_message_is_a_train_above_it_a_flow() {
    // Packets of 1,000 B, buffers of two, so segments of one packet. Nodes 0 and 1 send to
    // node 2 at t = 0 (1 B/ns links, 100 ns, switch 50 ns).
    // - 16,000 B each, trains of up to 16 (these tests'): 16 segments. They take node 2's link
    //   in turn from 150 ns, 1,000 ns each, node 0's first: node 0's last one ends at
    //   150 + 31 x 1,000 = 31,150 ns (delivered 31,250 ns), node 1's at 32,150 ns (delivered
    //   32,250 ns), as the packet model's packets do.
    // - 16,001 B each: two flows, which share node 2's link at 0.5 B/ns from 150 ns: both
    //   through at 150 + 32,002 = 32,152 ns, delivered at 32,252 ns.
    // - 2,000 B each, trains of up to 2: the four segments in turn, node 0's second ending at
    //   150 + 3 x 1,000 ns (delivered 3,250 ns), node 1's delivered at 4,250 ns, as packets.
    // - The same with trains of up to 1, or none: two flows, both through at 150 + 4,000 ns
    //   and delivered at 4,250 ns.
    let (spec, topo) = single_switch(3, GBPS_8);
    for (train_segments, bytes, want, as_packets) in [
        (TRAINS, 16_000, [31_250, 32_250], true),
        (TRAINS, 16_001, [32_252, 32_252], false),
        (2, 2_000, [3_250, 4_250], true),
        (1, 2_000, [4_250, 4_250], false),
        (0, 2_000, [4_250, 4_250], false),
    ] {
        let p = FabricParams {
            train_segments,
            ..params(1000, Switching::CutThrough)
        };
        let sends = [(0, 0, 2, bytes, false), (0, 1, 2, bytes, false)];
        let mut f = flow_fabric(&spec, topo.clone(), p);
        let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
        let times = [delivered(&n, 0) / NS, delivered(&n, 1) / NS];
        assert_eq!(times, want, "{bytes} B in trains of up to {train_segments}");
        if as_packets {
            let packet = packet_deliveries(topo.clone(), p, &sends);
            assert_eq!([packet[0] / NS, packet[1] / NS], want);
        }
    }
}

#[test]
fn messages_waiting_at_their_nic_are_not_flows() {
    // Node 0 hands its NIC 50 messages of 1,000 B (one packet each) for node 1 at t = 0, over
    // 1 B/ns links of 100 ns and a switch of 50 ns. The NIC sends them one after another:
    // message k starts at 1,000k ns and is delivered at 1,000k + 1,250 ns, as in the packet
    // model. Until its turn a message is no flow: one exists right after the sends, two at
    // 1,100 ns (messages 0 and 1), one again at 1,300 ns (message 0 delivered at 1,250 ns).
    let (spec, topo) = single_switch(2, GBPS_8);
    let p = params(1000, Switching::CutThrough);
    let sends: Vec<Send> = (0..50).map(|_| (0, 0, 1, 1_000, false)).collect();
    for (at, flows) in [(0, 1), (1_100, 2), (1_300, 1)] {
        let mut f = flow_fabric(&spec, topo.clone(), p);
        run_flows(&mut f, &sends, &mut Recorder::default(), at * NS);
        assert_eq!(f.flows_in_flight(), flows, "at {at} ns");
    }
    let mut f = flow_fabric(&spec, topo.clone(), p);
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    let times: Vec<Ps> = (0..50).map(|t| delivered(&n, t)).collect();
    let want: Vec<Ps> = (0..50).map(|k| (1_000 * k + 1_250) * NS).collect();
    assert_eq!(times, want);
    assert_eq!(packet_deliveries(topo, p, &sends), want);
    assert_eq!(f.flows_in_flight(), 0);
}

#[test]
fn a_long_train_holds_its_segments_in_flight_not_its_bytes() {
    // 100,000 B from node 0 to node 1 in trains of up to 1,000 segments: 100 segments of one
    // 1,000 B packet. Its NIC makes each segment a flow as it starts, the next waiting behind it
    // as a message: right after the send, one flow exists. Segment k starts at 1,000k ns and is
    // delivered at 1,000k + 1,250 ns, so at most two are flows at once. Alone, it is delivered when the
    // packet model's last packet is: 99 packets of 1,000 ns then the last, 100,000 ns, plus two
    // links of 100 ns and a switch of 50 ns: 100,250 ns.
    let (spec, topo) = single_switch(2, GBPS_8);
    let p = FabricParams {
        train_segments: 1_000,
        ..params(1000, Switching::CutThrough)
    };
    let mut f = flow_fabric(&spec, topo.clone(), p);
    let mut q = EventQueue::new();
    let mut obs = Recorder::default();
    f.send(
        0,
        0,
        (0, 1),
        100_000,
        false,
        false,
        &mut Q(&mut q),
        &mut obs,
    );
    assert_eq!(f.flows_in_flight(), 1);
    let mut rng = Rng::new(7);
    let (mut at, mut most) = (None, 0);
    while let Some((now, ev)) = q.pop() {
        let Ev::Flow(e) = ev else { unreachable!() };
        f.handle(now, e, &mut Q(&mut q), &mut obs, &mut rng);
        most = most.max(f.flows_in_flight());
        if f.drain_notices()
            .any(|n| n == Notice::Delivered { token: 0 })
        {
            at = Some(now);
        }
    }
    assert_eq!(at, Some(100_250 * NS));
    assert_eq!(at, Some(packet_delivery(topo, p, 0, 1, 100_000)));
    assert_eq!(most, 2);
    assert_eq!(f.flows_in_flight(), 0);
}

/// An all-to-all of `bytes` on a dragonfly with UGAL (random intermediate groups, load-based
/// choice), sends spread over time.
fn ugal_all_to_all(seed: u64) -> (Vec<(Ps, Notice)>, Vec<Call>) {
    let spec = dragonfly(5, 2, 2, 2, DragonflyArrangement::Absolute);
    let topo = topo_with(&spec, &mixed);
    let router = make_router(
        &RoutingSpec {
            algorithm: RoutingAlgorithm::Ugal,
            ugal_threshold_bytes: 0,
        },
        &topo,
    )
    .expect("router");
    let n = topo.num_nodes;
    let mut f = FlowFabric::new(topo, router, params(4096, Switching::CutThrough));
    let mut r = Rng::new(seed);
    let mut sends = Vec::new();
    for s in 0..n {
        for d in 0..n {
            if s != d {
                sends.push((r.below(5 * US), s, d, 1 + r.below(200_000), true));
            }
        }
    }
    let mut obs = Recorder::default();
    let notices = run_flows(&mut f, &sends, &mut obs, Ps::MAX);
    assert_eq!(f.stats().packets_delivered, u64::from(n) * u64::from(n - 1));
    (notices, obs.calls)
}

#[test]
fn the_same_inputs_give_the_same_events() {
    let a = ugal_all_to_all(3);
    let b = ugal_all_to_all(3);
    assert_eq!(a, b);
    assert_ne!(
        a.0,
        ugal_all_to_all(4).0,
        "a different load changes the run"
    );
}

/// The max-min conditions on the current allocation: no channel over capacity, and every flow
/// has a saturated channel on which no flow is faster. Within the model's tolerance: saturated
/// means less than one bit per second per flow left by rounding plus `1 / SLACK_DIVISOR` of the
/// capacity, and faster means by more than that fraction shared among the channel's flows.
fn check_max_min(f: &FlowFabric) -> Result<(), String> {
    let rates = f.rates();
    let topo = f.topology();
    let mut used = vec![0u64; topo.channels.len()];
    let mut count = vec![0u64; topo.channels.len()];
    let mut fastest = vec![0u64; topo.channels.len()];
    for (_, r, path) in &rates {
        for &c in path {
            used[c as usize] += r;
            count[c as usize] += 1;
            fastest[c as usize] = fastest[c as usize].max(*r);
        }
    }
    for (c, &u) in used.iter().enumerate() {
        let cap = topo.channels[c].bandwidth_bps;
        if u > cap {
            return Err(format!("channel {c}: {u} > {cap}"));
        }
    }
    for (id, r, path) in &rates {
        let ok = path.iter().any(|&c| {
            let cap = topo.channels[c as usize].bandwidth_bps;
            let near = cap / SLACK_DIVISOR / count[c as usize];
            cap - used[c as usize] < count[c as usize] + cap / SLACK_DIVISOR
                && *r + near >= fastest[c as usize]
        });
        if !ok {
            return Err(format!("flow {id} at {r} has no bottleneck on {path:?}"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn rates_are_always_max_min_fair(
        flows in prop::collection::vec((0u64..20_000, 0u32..16, 0u32..16, 1u64..3_000_000), 1..40),
        seed in 0u64..1000,
    ) {
        // A 16-node two-level fat-tree with adaptive up-ports: node links at 100 Gbit/s, leaf
        // uplinks slower, so bottlenecks sit at both levels.
        let spec = fat_tree(2, 8);
        let topo = topo_with(&spec, &mixed);
        let router = make_router(
            &RoutingSpec { algorithm: RoutingAlgorithm::Adaptive, ugal_threshold_bytes: 0 },
            &topo,
        ).expect("router");
        let mut f = FlowFabric::new(topo, router, params(4096, Switching::CutThrough));
        let sends: Vec<Send> = flows
            .iter()
            .filter(|(_, s, d, _)| s != d)
            .map(|&(t, s, d, b)| (t * NS, s, d, b, false))
            .collect();
        let mut q = EventQueue::new();
        for (i, s) in sends.iter().enumerate() {
            q.push(s.0, Ev::Send(i as u32));
        }
        let mut rng = Rng::new(seed);
        let mut obs = Recorder::default();
        let mut delivered = 0;
        while let Some((now, ev)) = q.pop() {
            match ev {
                Ev::Send(i) => {
                    let (_, src, dst, bytes, _) = sends[i as usize];
                    f.send(now, i, (src, dst), bytes, false, false, &mut Q(&mut q), &mut obs);
                }
                Ev::Flow(e) => f.handle(now, e, &mut Q(&mut q), &mut obs, &mut rng),
                Ev::Packet(_) => unreachable!(),
            }
            delivered += f.drain_notices().filter(|n| matches!(n, Notice::Delivered { .. })).count();
            if q.peek_time() != Some(now) {
                check_max_min(&f).map_err(TestCaseError::fail)?;
            }
        }
        prop_assert_eq!(delivered, sends.len());
        prop_assert_eq!(f.flows_in_flight(), 0);
    }
}

/// The transmissions reported on `ch`: (start, end, bytes).
fn pieces(obs: &Recorder, on: ChannelId) -> Vec<(Ps, Ps, u32)> {
    obs.calls
        .iter()
        .filter_map(|c| match *c {
            Call::Transmit {
                ch,
                start,
                end,
                bytes,
                ..
            } if ch == on => Some((start, end, bytes)),
            _ => None,
        })
        .collect()
}

/// One switch, 1 B/ns links of 100 ns, switch 50 ns, packets and input buffers of 1,000 B (one
/// message each); nodes 0 and 1 each send two 1,000 B messages to node 2 at t = 0, and node 0
/// then one to node 3.
fn full_buffer() -> (TopologySpec, Topology, FabricParams, [Send; 5]) {
    let (spec, topo) = single_switch(4, GBPS_8);
    let p = FabricParams {
        buffer_bytes: 1_000,
        ..params(1000, Switching::CutThrough)
    };
    let sends = [
        (0, 0, 2, 1_000, false),
        (0, 1, 2, 1_000, false),
        (0, 0, 2, 1_000, false),
        (0, 1, 2, 1_000, false),
        (0, 0, 3, 1_000, false),
    ];
    (spec, topo, p, sends)
}

#[test]
fn adaptive_routing_sees_the_messages_waiting_for_room() {
    // In `full_buffer` (the test below), messages reach the switch's port to node 2 at 150 ns
    // (0a, which starts at once, and 1a, which waits until 1,150 ns), 1,400 ns (0b, until
    // 2,150 ns) and 2,400 ns (1b, until 3,150 ns); 0a is in the buffer node 0's link feeds from
    // 0 to 150 ns, 0b from 1,250 ns (its start on node 0's link, after waiting at its NIC for
    // room) to 2,150 ns. Adaptive routing sees a message on a channel while it waits to start
    // on it and while it is in the buffer the channel feeds, as the packet model counts the
    // packets queued for a port and those in the buffer it feeds.
    let (spec, topo, p, sends) = full_buffer();
    let to_2 = topo.node_ejection[2];
    let inj0 = topo.node_injection[0];
    let port = [
        (100, 0),
        (500, 1_000),
        (1_100, 1_000),
        (1_300, 0),
        (1_500, 1_000),
        (2_100, 1_000),
        (2_200, 0),
        (2_500, 1_000),
    ];
    // A message waiting at its NIC for room counts on its node's link in flow mode, not in the
    // packet model, whose NIC holds it: routing never compares a node's own link, so the
    // instants here leave that wait (1,000 to 1,250 ns) out.
    let buffer = [
        (100, 1_000),
        (500, 0),
        (1_300, 1_000),
        (2_100, 1_000),
        (2_200, 0),
    ];
    for (ch, at, queued) in port
        .iter()
        .map(|&(at, b)| (to_2, at, b))
        .chain(buffer.iter().map(|&(at, b)| (inj0, at, b)))
    {
        let mut f = flow_fabric(&spec, topo.clone(), p);
        run_flows(&mut f, &sends, &mut Recorder::default(), at * NS);
        assert_eq!(
            f.queued_bytes(ch, at * NS),
            queued,
            "flows, channel {ch} at {at} ns"
        );
        let mut fab = packet_fabric(topo.clone(), p);
        run_packets(&mut fab, &sends, at * NS);
        assert_eq!(
            fab.queued_bytes(ch),
            queued,
            "packets, channel {ch} at {at} ns"
        );
    }
}

#[test]
fn a_short_message_is_injected_when_it_is_through_its_nic() {
    // One switch, 1 B/ns links of 100 ns, switch 50 ns, 1,000 B packets: node 0 sends 1,000 B
    // (a short message) to node 1 and asks to hear of its injection. Its one packet is through
    // node 0's link at 1,000 ns, as in the packet model; it is delivered at 150 + 1,000 + 100 =
    // 1,250 ns.
    let (spec, topo) = single_switch(2, GBPS_8);
    let p = params(1000, Switching::CutThrough);
    let sends = [(0, 0, 1, 1_000, true)];
    let injected = |n: &[(Ps, Notice)]| -> Vec<Ps> {
        n.iter()
            .filter_map(|&(_, n)| match n {
                Notice::Injected { token: 0, at } => Some(at),
                _ => None,
            })
            .collect()
    };
    let mut f = flow_fabric(&spec, topo.clone(), p);
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(injected(&n), [1_000 * NS]);
    assert_eq!(delivered(&n, 0), 1_250 * NS);
    let n = run_packets(&mut packet_fabric(topo, p), &sends, Ps::MAX);
    assert_eq!(injected(&n), [1_000 * NS]);
    assert_eq!(delivered(&n, 0), 1_250 * NS);
}

#[test]
fn a_full_input_buffer_holds_back_the_nics_that_feed_it() {
    // One switch, 1 B/ns links of 100 ns, switch 50 ns, packets and input buffers of 1,000 B
    // (one message each). Nodes 0 and 1 each send two 1,000 B messages to node 2 at t = 0, and
    // node 0 then one to node 3, whose link is idle. A message's space in the switch's buffer
    // is back at its NIC a link latency after its tail has left on node 2's link.
    //
    // - 0a: node 0's link 0-1,000; node 2's link 150-1,150; delivered 1,250; space back 1,250.
    // - 1a: node 1's link 0-1,000; node 2's link after 0a, 1,150-2,150; delivered 2,250; space
    //   back 2,250.
    // - 0b: node 0's NIC is free at 1,000, the buffer at 1,250: its link 1,250-2,250; head at
    //   the switch 1,400, node 2's link after 1a, 2,150-3,150; delivered 3,250; space back 3,250.
    // - 1b: buffer free at 2,250: its link 2,250-3,250; node 2's link 3,150-4,150; delivered
    //   4,250.
    // - 0c to node 3: the NIC is free at 2,250, the buffer at 3,250 (head-of-line blocking
    //   behind 0b): node 0's link 3,250-4,250, node 3's link 3,400-4,400, delivered 4,500.
    //
    // Without the buffer limit node 0 would send back to back (0-1,000, 1,000-2,000,
    // 2,000-3,000) and 0c would be delivered at 2,000 + 150 + 1,000 + 100 = 3,250. The packet
    // model, one packet per message, delivers each at the same time.
    let (spec, topo, p, sends) = full_buffer();
    let (inj0, inj1) = (topo.node_injection[0], topo.node_injection[1]);
    let mut f = flow_fabric(&spec, topo.clone(), p);
    let mut obs = Recorder::default();
    let n = run_flows(&mut f, &sends, &mut obs, Ps::MAX);
    let times: Vec<Ps> = (0..5).map(|t| delivered(&n, t) / NS).collect();
    assert_eq!(times, [1_250, 2_250, 3_250, 4_250, 4_500]);
    let packet: Vec<Ps> = packet_deliveries(topo, p, &sends);
    assert_eq!(packet.iter().map(|t| t / NS).collect::<Vec<_>>(), times);
    let ns = |v: Vec<(Ps, Ps, u32)>| -> Vec<(Ps, Ps)> {
        v.into_iter().map(|(a, b, _)| (a / NS, b / NS)).collect()
    };
    assert_eq!(
        ns(pieces(&obs, inj0)),
        [(0, 1_000), (1_250, 2_250), (3_250, 4_250)]
    );
    assert_eq!(ns(pieces(&obs, inj1)), [(0, 1_000), (2_250, 3_250)]);
}

#[test]
fn a_message_larger_than_the_input_buffer_passes_once_the_buffer_is_empty() {
    // A ring of four switches, one node each; 1 B/ns links of 100 ns, switch 50 ns, packets of
    // 1,000 B and buffers of 500 B, so a one-packet message is larger than every buffer. Node 0
    // sends two to node 1 at t = 0.
    // - a: node 0's link 0-1,000; switch 0 -> 1 150-1,150; node 1's link 300-1,300; delivered
    //   300 + 1,000 + 100 = 1,400, as alone. Its space at switch 0 is back at
    //   1,150 + 100 = 1,250, at switch 1 at 1,300 + 100 = 1,400.
    // - b: the NIC is free at 1,000, switch 0's buffer empty at 1,250: node 0's link
    //   1,250-2,250; at switch 0 at 1,400, when switch 1's buffer is empty: 1,400-2,400; node
    //   1's link from 1,550; delivered 2,650.
    let spec = torus(&[4], 1);
    let topo = topo_with(&spec, &uniform(GBPS_8));
    let p = FabricParams {
        buffer_bytes: 500,
        ..params(1000, Switching::CutThrough)
    };
    let mut f = flow_fabric(&spec, topo, p);
    assert_eq!(f.short_bytes(), 1_000);
    let sends = [(0, 0, 1, 1_000, false), (0, 0, 1, 1_000, false)];
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    assert_eq!(delivered(&n, 0), 1_400 * NS);
    assert_eq!(delivered(&n, 1), 2_650 * NS);
}

#[test]
fn full_buffers_around_a_torus_ring_do_not_deadlock() {
    // A ring of four switches, one node each, buffers of one packet: every node sends eight
    // one-packet messages two switches on, all at t = 0, so the switch-to-switch buffers fill
    // and wait on one another around the ring. The dateline's second virtual channel breaks the
    // cycle, as in the packet model: every message is delivered, each when the packet model
    // delivers it (one packet per message, so the two models move the same units).
    let spec = torus(&[4], 1);
    let topo = topo_with(&spec, &uniform(GBPS_8));
    let p = FabricParams {
        buffer_bytes: 1_000,
        ..params(1000, Switching::CutThrough)
    };
    let sends: Vec<Send> = (0..8)
        .flat_map(|_| (0..4).map(|i| (0, i, (i + 2) % 4, 1_000, false)))
        .collect();
    let mut f = flow_fabric(&spec, topo.clone(), p);
    let n = run_flows(&mut f, &sends, &mut Recorder::default(), Ps::MAX);
    let times: Vec<Ps> = (0..sends.len() as u32).map(|t| delivered(&n, t)).collect();
    assert_eq!(f.flows_in_flight(), 0);
    assert_eq!(times, packet_deliveries(topo, p, &sends));
}

/// Delivery times of `sends` in the packet model, by token.
fn packet_deliveries(topo: Topology, p: FabricParams, sends: &[Send]) -> Vec<Ps> {
    let n = run_packets(&mut packet_fabric(topo, p), sends, Ps::MAX);
    (0..sends.len() as u32).map(|t| delivered(&n, t)).collect()
}

fn packet_fabric(topo: Topology, p: FabricParams) -> Fabric {
    let router = make_router(&RoutingSpec::default(), &topo).expect("router");
    Fabric::new(topo, router, p)
}

/// Runs `sends` on the packet model `fab` up to `until`: its notices, as [`run_flows`] returns
/// them.
fn run_packets(fab: &mut Fabric, sends: &[Send], until: Ps) -> Vec<(Ps, Notice)> {
    let mut q = EventQueue::new();
    for (i, s) in sends.iter().enumerate() {
        q.push(s.0, Ev::Send(i as u32));
    }
    let mut rng = Rng::new(7);
    let mut obs = Recorder::default();
    let mut out = Vec::new();
    while q.peek_time().is_some_and(|t| t <= until) {
        let Some((now, ev)) = q.pop() else { break };
        match ev {
            Ev::Send(i) => {
                let (_, src, dst, bytes, notify) = sends[i as usize];
                fab.send(
                    now,
                    i,
                    (src, dst),
                    bytes,
                    false,
                    notify,
                    &mut Q(&mut q),
                    &mut obs,
                );
            }
            Ev::Packet(e) => fab.handle(now, e, &mut Q(&mut q), &mut obs, &mut rng),
            Ev::Flow(_) => unreachable!(),
        }
        out.extend(fab.drain_notices().map(|n| (now, n)));
    }
    out
}

/// TraceRP's links and switches on `spec`: 10 Gb/s links of 10 ns, switches of 100 ns, 4 KiB
/// packets, 64 KiB buffers.
fn tracerp_machine(spec: &TopologySpec) -> (Topology, FabricParams) {
    let topo = topo_with(spec, &|_| LinkParams {
        bandwidth_bps: 10_000_000_000,
        latency_ps: 10 * NS,
    });
    let p = FabricParams {
        buffer_bytes: 65536,
        switch_latency_ps: 100 * NS,
        ..params(4096, Switching::CutThrough)
    };
    (topo, p)
}

/// Delivery times of `sends` by token, in the flow model and in the packet model.
fn deliveries_in_both(
    spec: &TopologySpec,
    topo: Topology,
    p: FabricParams,
    sends: &[Send],
) -> (Vec<Ps>, Vec<Ps>) {
    let mut f = flow_fabric(spec, topo.clone(), p);
    let notices = run_flows(&mut f, sends, &mut Recorder::default(), Ps::MAX);
    let flow = (0..sends.len() as u32)
        .map(|t| delivered(&notices, t))
        .collect();
    (flow, packet_deliveries(topo, p, sends))
}

#[test]
fn one_packet_messages_crowding_a_fat_tree_arrive_when_packets_do() {
    // TraceRP's fat-tree (10 Gb/s links of 10 ns, switches of 100 ns, 4 KiB packets, 64 KiB
    // buffers): 256 nodes each hand their NIC 63 messages of 1 KiB at once, to scattered
    // destinations, so NICs queue and messages meet at ports and fill buffers. A one-packet
    // message moves as the packet model's packet does.
    let spec = crate::common::tracerp_fattree_288();
    let (topo, p) = tracerp_machine(&spec);
    let n: u32 = 256;
    let sends: Vec<Send> = (1..64)
        .flat_map(|k| (0..n).map(move |i| (0, i, (i * 7 + k * 13) % n, 1024, false)))
        .filter(|&(_, src, dst, _, _)| src != dst)
        .collect();
    let (flow, packet) = deliveries_in_both(&spec, topo, p, &sends);
    assert_eq!(flow, packet);
    // The crowd is real: a node's 63 messages leave its NIC one after the other (819.2 ns
    // each), so the last is delivered no sooner than 62 x 819.2 ns plus its time alone
    // (5 links of 10 ns, 4 switches of 100 ns, 819.2 ns: 1,269.2 ns).
    assert!(*packet.iter().max().unwrap() >= 62 * 819_200 + 1_269_200);
}

#[test]
fn short_messages_in_one_packet_units_arrive_when_packets_do() {
    // TraceRP's fat-tree, 256 nodes each handing their NIC 15 messages of 10 KiB at once (two
    // and a half packets: short, at most half a 64 KiB buffer), to scattered destinations. With
    // units of one packet (`short_unit_packets = 1`) each message is a train of three units, the
    // last of 2 KiB, that move as the packet model's packets do: every message is delivered at
    // the packet model's picosecond. Moving whole (the default), a message crosses each port in
    // one piece, so messages that meet at a port do not interleave packet by packet, and
    // deliveries differ.
    let spec = crate::common::tracerp_fattree_288();
    let (topo, whole) = tracerp_machine(&spec);
    let n: u32 = 256;
    let sends: Vec<Send> = (1..16)
        .flat_map(|k| (0..n).map(move |i| (0, i, (i * 7 + k * 13) % n, 10 * 1024, false)))
        .filter(|&(_, src, dst, _, _)| src != dst)
        .collect();
    let units = FabricParams {
        short_unit_packets: 1,
        ..whole
    };
    let (flow, packet) = deliveries_in_both(&spec, topo.clone(), units, &sends);
    assert_eq!(flow, packet);
    let (flow_whole, _) = deliveries_in_both(&spec, topo, whole, &sends);
    assert_ne!(flow_whole, packet);
    // The crowd is real: a node's 15 messages leave its NIC one after the other (8,192 ns
    // each), so the last is delivered no sooner than 14 x 8,192 ns plus its time alone.
    assert!(*packet.iter().max().unwrap() >= 14 * 8_192_000 + 8_192_000);
}

#[test]
fn messages_reaching_nics_and_ports_as_they_free_go_when_packets_do() {
    // TraceRP's dragonfly (19 groups of 6 switches with 3 nodes each; 10 Gb/s links of 10 ns,
    // switches of 100 ns, 4 KiB packets, 64 KiB buffers): the 18 nodes of each group hand their
    // NICs a 1 KiB message (one packet, 819.2 ns on a link) every 409.6 ns, 60 in all, each time
    // all to one node. So half of them reach their NIC at the very picosecond it frees, heads
    // reach ports as they free, and ports wait for room downstream with messages of several
    // virtual channels. A NIC free at that instant sends at once, and a port books its next
    // turn when the packet model's port books its `LinkFree` or `Credit`: ties at one
    // picosecond fall the same way, and every message is delivered when its packet is. Were
    // the NIC to wait for its own event, or a busy port to look again only once free, or room
    // coming back to wake a port that is not waiting for it, some would not.
    let spec = crate::common::tracerp_dragonfly_342();
    let (topo, p) = tracerp_machine(&spec);
    let n: u32 = 342;
    let sends: Vec<Send> = (1..61)
        .flat_map(|k| {
            (0..n).map(move |i| {
                (
                    u64::from(k) * 409_600,
                    i,
                    (i / 18 * 18 + k) % n,
                    1024,
                    false,
                )
            })
        })
        .filter(|&(_, src, dst, _, _)| src != dst)
        .collect();
    let (flow, packet) = deliveries_in_both(&spec, topo, p, &sends);
    assert_eq!(flow, packet);
    // The crowd is real: 18 messages at a time into one node's link take 18 x 819.2 ns, so the
    // last of the 60 rounds, sent at 60 x 409.6 ns, ends well after its time alone (at most 3
    // switch-to-switch links: 5 links of 10 ns, 4 switches of 100 ns, 819.2 ns: 1,269.2 ns).
    assert!(*packet.iter().max().unwrap() > 60 * 409_600 + 17 * 819_200 + 1_269_200);
}

#[test]
fn a_busy_port_serves_the_virtual_channels_in_turn_as_packets_do() {
    // TraceRP's torus (4 x 8 x 8, one node per switch, 10 Gb/s links of 10 ns, switches of
    // 100 ns, 4 KiB packets, 64 KiB buffers; two virtual channels, the second past a dateline):
    // every node hands its NIC one 4 KiB message (one packet) for each of 31 others at once.
    // Messages meet at ports on both virtual channels. A port that frees serves the channel after
    // the one it served last, whatever order the heads arrived in, as the packet model's port
    // does: so every message is delivered when its packet is. Were the port taken in the order
    // the heads arrived, the first meeting of two channels would already differ.
    let spec = crate::common::tracerp_torus_4x8x8();
    let (topo, p) = tracerp_machine(&spec);
    let n: u32 = 256;
    let sends: Vec<Send> = (1..32)
        .flat_map(|k| (0..n).map(move |i| (0, i, (i + k * 37) % n, 4096, false)))
        .collect();
    let (flow, packet) = deliveries_in_both(&spec, topo, p, &sends);
    assert_eq!(flow, packet);
    // The crowd is real: some message waits behind others on its way, beyond its NIC's queue
    // (alone, a message crosses at most 2 + 4 + 4 switch-to-switch links: 12 links of 10 ns,
    // 11 switches of 100 ns and 3,276.8 ns of serialisation, 4,496.8 ns; 30 messages ahead of it
    // at its NIC take 98,304 ns).
    assert!(*packet.iter().max().unwrap() > 30 * 3_276_800 + 4_496_800);
}
