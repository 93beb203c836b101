//! The `Network` trait: either model driven by one generic loop, and what `flush` reports when a
//! run stops with traffic under way.

use tracewatt_core::{EventQueue, Ps, Rng, Schedule};
use tracewatt_net::fabric::{Credits, Fabric, FabricParams, LinkObserver, Switching};
use tracewatt_net::flow::FlowFabric;
use tracewatt_net::topology::build;
use tracewatt_net::{
    make_router, ChannelId, LinkParams, Network, NodeId, RoutingSpec, TopologySpec,
};

const NS: Ps = 1_000;

struct Q<'a, E>(&'a mut EventQueue<E>);
impl<E: Copy> Schedule<E> for Q<'_, E> {
    fn schedule(&mut self, time: Ps, event: E) {
        self.0.push(time, event);
    }
}

/// Every `on_transmit` call: channel, start, end, bytes.
#[derive(Default)]
struct Pieces(Vec<(ChannelId, Ps, Ps, u32)>);
impl LinkObserver for Pieces {
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32, _src: NodeId) {
        self.0.push((ch, start, end, bytes));
    }
}

/// Two nodes on one switch, 8 Gb/s links (1 ns a byte) of 100 ns, a 50 ns switch.
fn network<N: Network>() -> N {
    let topo = build(&TopologySpec::SingleSwitch { nodes: 2 }, &|_| LinkParams {
        bandwidth_bps: 8_000_000_000,
        latency_ps: 100 * NS,
    })
    .expect("topology");
    let router = make_router(&RoutingSpec::default(), &topo).expect("router");
    N::build(
        topo,
        router,
        FabricParams {
            packet_bytes: 1000,
            // Two packets: enough that the packet model never waits for credit here (a packet
            // takes 1 us a link, a credit 0.1 us to come back), few enough that a message of
            // more than 16 packets is a flow in the flow model.
            buffer_bytes: 2_000,
            switch_latency_ps: 50 * NS,
            switching: Switching::CutThrough,
            credits: Credits::OutOfBand,
            train_segments: 16,
            segment_packets: tracewatt_net::flow::SEGMENT_PACKETS,
            short_unit_packets: 0,
        },
    )
}

/// Node 0 sends `bytes` to node 1 at 0; the run stops at `stop` and flushes: every piece of
/// link activity reported, and what is still in the network.
fn stop_at<N: Network>(bytes: u64, stop: Ps) -> (Vec<(ChannelId, Ps, Ps, u32)>, usize) {
    let mut net: N = network();
    let (mut q, mut obs, mut rng) = (EventQueue::new(), Pieces::default(), Rng::new(1));
    net.send(0, 7, (0, 1), bytes, false, false, &mut Q(&mut q), &mut obs);
    while let Some((now, ev)) = q.pop() {
        if now > stop {
            break;
        }
        net.handle(now, ev, &mut Q(&mut q), &mut obs, &mut rng);
        net.drain_notices().for_each(drop);
    }
    net.flush(stop, &mut obs);
    (obs.0, net.in_flight())
}

#[test]
fn a_flow_under_way_at_the_stop_keeps_its_links_busy_until_then() {
    // The head claims node 0's link at 0 and the switch's link to node 1 at 100 + 50 ns; the
    // 20,000 bytes then flow until 20,150 ns. Stopped at 5 us, both links are busy until then,
    // and the flow's bytes are not through.
    let (pieces, left) = stop_at::<FlowFabric>(20_000, 5_000 * NS);
    let inj = 0; // the channels of node 0's link come first: node 0 -> switch, then back
    let down = pieces.iter().find(|p| p.0 != inj).expect("the link down").0;
    assert_eq!(
        pieces,
        vec![(inj, 0, 5_000 * NS, 0), (down, 150 * NS, 5_000 * NS, 0)]
    );
    assert_eq!(left, 1);
    // Past the end nothing is left to report: the flow's own pieces carry its bytes.
    let (done, left) = stop_at::<FlowFabric>(20_000, 30_000 * NS);
    let bytes: u32 = done.iter().map(|p| p.3).sum();
    assert_eq!((bytes, left), (2 * 20_000, 0));
}

#[test]
fn the_packet_model_has_nothing_to_flush() {
    // Each packet's transmission is reported when it starts. Packet k (1000 B, 1 us a link)
    // leaves node 0 over [k, k + 1] us, leaves the switch over [k + 0.15, k + 1.15] us and is in
    // at k + 1.25 us: at 5.5 us packets 0-5 have started on both links, 0-4 are delivered, and
    // packet 5 is the one in the network (the NIC cuts the next one when its link frees).
    let (pieces, left) = stop_at::<Fabric>(10_000, 5_500 * NS);
    let on = |ch: ChannelId| pieces.iter().filter(|p| p.0 == ch).count();
    let down = pieces.iter().find(|p| p.0 != 0).expect("the link down").0;
    assert_eq!((on(0), on(down), pieces.len()), (6, 6, 12));
    assert_eq!(left, 1);
}
