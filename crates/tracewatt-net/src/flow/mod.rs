//! The flow-level network model: each message is one flow on the route the machine's routing
//! gives it, and every link direction (channel) shares its bandwidth among the flows crossing it
//! by max-min fairness.
//!
//! A flow lives in two phases.
//!
//! - **Head.** Its head walks the path hop by hop as the first packet of the packet model does:
//!   it claims the injection channel when the message is sent, reaches the next switch one link
//!   latency and one switch latency after it started on a channel, is routed there (with the
//!   current load, see [`FlowFabric::send`]) and claims the next channel. A channel that no flow
//!   holds is asked [`LinkObserver::link_ready`] when the head reaches it: a sleeping link
//!   delays the head, and with it the whole flow, by its wake, one link after the other.
//! - **Rate.** Once its head holds the channel into the destination node, the flow joins the
//!   bandwidth sharing of every channel of its path, at the max-min fair rate (see `share`), until
//!   its bytes are through. It is delivered its last channel's latency plus its *residue* later:
//!   the part of the packet model's time for the message alone that neither latencies nor the
//!   bottleneck rate explain (per-packet rounding, the store-and-forward pipeline). So a message
//!   alone in the network is delivered exactly when the packet model delivers it (`timing`),
//!   with every link awake, and one wake later per sleeping link its head meets (the packet
//!   model can hide a wake behind the serialisation at a slower link upstream; a flow pays
//!   every wake in full, so the two agree whenever no link before a wake is slower than it).
//!
//! A short message ([`FlowFabric::short_bytes`]: one packet or half an input buffer; control
//! messages, small sends, the pieces of collectives) is the exception: sharing bandwidth would
//! cost two rate updates for a short transfer, and its packets go back to back through buffers
//! with room for them. It crosses each channel whole at the channel's rate, once its head is
//! there, the channel is free and the next switch's input buffer has room for it (credit flow
//! control, see [`Buf`]). Messages waiting for a port are served as the packet model's port
//! serves its packets: as it frees, the virtual channels in turn from the one after the last
//! served, first come first served within each, skipping a channel whose next message has no
//! room (`FlowFabric::serve`). It is delivered as a lone message would be from its start on
//! the last channel. It takes nothing from the flows that share the channel, and they
//! do not delay it.
//!
//! A mid-size message (more than `short_bytes`, at most `train_segments` segments of
//! [`FlowFabric::segment_bytes`]) is a train of short messages, its segments, which its NIC
//! sends one after another and each switch routes on its own, as the packet model does its
//! packets: so it fills input buffers and holds the ports behind it, which a flow sharing
//! bandwidth never does. It is delivered once every segment is; its last segment's tail is the
//! whole message's time alone less the segments before it at the bottleneck's rate, so a train
//! alone is delivered when the packet model delivers the message. With `short_unit_packets` set,
//! a short message of more packets is a train too, of units of that many packets
//! ([`FlowFabric::unit_bytes`]); with units of one packet, short messages move exactly as the
//! packet model's packets do.
//!
//! Power and statistics see a channel as busy while any flow holds it (from its head's claim to
//! the end of its transfer), or a short message crosses it: one busy stretch per such
//! period, reported through
//! [`LinkObserver::on_transmit`] in contiguous pieces, one as each flow leaves (with that flow's
//! bytes and source). A flow's own piece reaches back only to its claim plus its transfer time,
//! as its bytes cross that channel, not to the end of the transfer at the destination. Before a
//! channel is asked to wake, the stretch its reverse direction is in is reported up to that
//! instant, so a power model that pairs the two directions sees that direction busy.
//!
//! What a flow cannot represent, and so what this model leaves out: finite input buffers, credits
//! and back-pressure for flows that share bandwidth (such a flow is never held by a full buffer,
//! and the time of a message alone is the packet model's only when its buffers cover the credit
//! round trip; `credits` is ignored, and short messages' space comes back a link latency after it
//! frees, as with out-of-band credits); the order in which packets of different messages interleave
//! on a switch's link (flows share it evenly; a NIC, as the packet model's, sends its messages one
//! after another, see [`Nic`]); per-packet gaps on links faster than the path's bottleneck (such a
//! link is busy for the whole transfer, and cannot sleep between packets); and link-level control
//! frames. `packet_bytes` and `switching` matter only through the residue (and `packet_bytes`
//! through the short messages' buffers, [`Buf`]), `switch_latency_ps` through the head. There are no packets: an observer counting `on_transmit` calls counts pieces
//! of busy stretches (one per flow per channel), and [`LinkObserver::on_packet`] is called once per
//! channel of a flow's path (the flow's slot as the packet, its first channel as the first hop)
//! when its transfer ends, after every piece of it has been reported.

mod share;
mod timing;

use crate::fabric::{FabricParams, FabricStats, LinkObserver, Notice};
use crate::routing::{QueueView, RouteState, Router};
use crate::topology::{ChannelId, Device, NodeId, SwitchId, Topology};
use tracewatt_core::time::PS_PER_S;
use tracewatt_core::{Ps, Rng, Schedule, Slab};

/// Events the flow model schedules for itself. Each carries only the flow's slot, so the layer
/// above can keep its events as small as it does for the packet model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowEvent {
    /// The flow's head may leave the switch it reached (or, once it holds its last channel, may
    /// start its transfer).
    Head { flow: u32 },
    /// The NIC of `node` may start the next message waiting there.
    Nic { node: NodeId },
    /// The flow's transfer may be complete. Its rate may have changed since the event was
    /// scheduled and the queue cannot cancel events, so a flow keeps one such event in force
    /// (see `Flow::alarm`): when it comes before the completion, it is moved to the completion
    /// then; any other is stale and ignored.
    Done { flow: u32 },
    /// The flow's tail reaches its destination node: it is delivered.
    Deliver { flow: u32 },
    /// The port of channel `ch` may start a short message waiting for it (see
    /// `FlowFabric::serve`). A channel keeps at most two such events in force, as the packet
    /// model keeps a port's `LinkFree` and `Credit` (`Chan::free_turn`, `Chan::port_at`); any
    /// other is stale and ignored.
    Port { ch: ChannelId },
    /// Rates are recomputed for the flows that started or ended at this instant, all at once.
    Update,
}

const NIL: u32 = u32::MAX;
const NEVER: Ps = Ps::MAX;
/// A flow's remaining work is counted in bits times 10^12, so a rate in bits per second moves it
/// by `rate * dt` per `dt` picoseconds: integer and exact.
const WORK_PER_BYTE: i128 = 8 * PS_PER_S as i128;
/// A rate update may leave up to `1 / SLACK_DIVISOR` of a saturated link's capacity unused,
/// rather than raise the flows bottlenecked there by that little: this is what keeps one start or
/// end from rippling through every saturated link of a busy network. Its effect on accuracy and
/// cost, measured against the exact filling on the flow bench, is in the `share` module's
/// documentation.
pub const SLACK_DIVISOR: u64 = 64;
/// The default of [`FabricParams::train_segments`], the most segments a message is sent as
/// ([`FlowFabric::segment_bytes`]): 512 KiB with the defaults. The number is an assumption,
/// measured in docs/fast-mode.md ("Trains up to 512 KiB"): trains bring the torus permutation
/// of up to 512 KiB closer to the packet model at 2-4 times less CPU than its packets, and leave
/// 1 MiB and larger messages flows, whose cost does not grow with their size.
pub const TRAIN_SEGMENTS: u32 = 32;
/// The default of [`FabricParams::short_unit_packets`]: a short message moves packet by packet,
/// exactly as the packet model moves it. An assumption, measured in docs/fast-mode.md ("Short
/// messages packet by packet"): the study's benchmarks of short messages then end at the packet
/// model's picosecond, for little more CPU where the MPI layer's work per message dominates;
/// where the network's does (an all-to-all of 32 KiB messages), whole messages (0) cost a third.
pub const SHORT_UNIT_PACKETS: u32 = 1;
/// The default of [`FabricParams::segment_packets`]: a train's segment is 4 packets (16 KiB,
/// a quarter of a buffer, with the defaults). An assumption, measured in docs/fast-mode.md
/// ("Segments of 4 packets"): closer to the packet model than segments of half a buffer, at
/// twice their events, and no further than smaller ones.
pub const SEGMENT_PACKETS: u32 = 4;

/// One channel of a flow's path.
#[derive(Debug, Clone, Copy)]
struct Hop {
    ch: ChannelId,
    /// When the head started on it (after any wake).
    start: Ps,
    /// Index of this flow in the channel's `flows` while the flow shares bandwidth.
    slot: u32,
}

#[derive(Debug, Default)]
struct Flow {
    token: u32,
    src: NodeId,
    dst: NodeId,
    bytes: u64,
    /// A short message (see [`FlowFabric::short_bytes`]) does not share bandwidth: it crosses
    /// each link whole at the link's rate, after the short messages the link is still sending,
    /// and only once the next switch's input buffer has room for it (see `claim` and [`Buf`]).
    short: bool,
    /// The NIC's current message: its start on the injection channel frees the NIC (see [`Nic`]).
    from_nic: bool,
    /// The input buffer a short message is in (`channel * vcs + vc`), or `NIL`.
    buf: u32,
    /// The earliest its tail can leave that buffer's switch: the tail's arrival plus the switch
    /// latency.
    tail_out: Ps,
    notify_injected: bool,
    /// The message this flow is a segment of (`trains`), or `NIL`.
    train: u32,
    /// The last segment of its message.
    last: bool,
    route: RouteState,
    path: Vec<Hop>,
    /// The switch the head is at, waiting for its `Head` event; `NIL` once it holds its last
    /// channel.
    at: SwitchId,
    /// When the head started on the injection channel.
    born: Ps,
    /// When the transfer started.
    since: Ps,
    /// The flow shares bandwidth (its transfer is under way).
    sharing: bool,
    /// Bits per second while sharing.
    rate: u64,
    /// Work left at `t`, in [`WORK_PER_BYTE`] units.
    rem: i128,
    t: Ps,
    /// When the transfer completes at the current rate (`NEVER` when not sharing).
    due: Ps,
    /// Work left (in [`WORK_PER_BYTE`] units) at `due`: 0, or while the flow holds its NIC, the
    /// bytes its NIC lets go ahead of the next message (see [`Nic`]).
    due_rem: i128,
    /// The time of the `Done` event in force, never after `due` (`NEVER` if none). A rate that
    /// falls moves `due` later and leaves the event where it is, to be moved when it comes: most
    /// rate changes of a busy network then schedule nothing.
    alarm: Ps,
    /// The channel whose saturation fixed the rate, or `NIL`.
    bottleneck: ChannelId,
    /// Index of this flow in its bottleneck's `held`.
    held_slot: u32,
    /// From the end of the transfer to delivery.
    tail_ps: Ps,
    /// Its `Done` events still to come, any of which may be stale: its slot is
    /// reused only once none is left, so that a stale one never reaches another flow.
    pending: u32,
    /// Delivered: the slot waits for its `pending` events.
    ended: bool,
    /// Solver scratch: the recomputation that included the flow, frozen in it, its new rate.
    mark: u64,
    frozen: bool,
    new_rate: u64,
    new_bottleneck: ChannelId,
}

impl Flow {
    /// Schedules its `Done` event (it is `flow`) at `due`, counted in `pending`.
    fn book_done<S: Schedule<FlowEvent>>(&mut self, flow: u32, q: &mut S) {
        self.pending += 1;
        q.schedule(self.due, FlowEvent::Done { flow });
    }
}

#[derive(Debug, Clone, Default)]
struct Chan {
    bits_per_s: u64,
    latency_ps: Ps,
    to_node: bool,
    reverse: ChannelId,
    /// Flows holding the channel (head claimed it, transfer not over).
    holders: u32,
    /// Until when the current busy stretch has been reported.
    reported: Ps,
    /// A source node of the stretch (its first flow's), named in pieces that carry no bytes.
    stretch_src: NodeId,
    /// Bit `v` set while short messages wait for the port on virtual channel `v` ([`Buf`]).
    waiting: u16,
    /// The virtual channel the port served last.
    rr: u8,
    /// The time of the `Port` event in force for when a waiting message has room (`NEVER` if
    /// none).
    port_at: Ps,
    /// The time of the `Port` event in force for when the port frees, booked while it is busy
    /// for a message that will have room then (`NEVER` if none).
    free_turn: Ps,
    /// Messages wait for the port and none had room when it last looked: space coming back
    /// books a turn ([`FlowFabric::room_filed`]).
    blocked: bool,
    /// Flows sharing the channel's bandwidth, with the index of this channel in their path.
    flows: Vec<(u32, u32)>,
    /// Sum of their rates.
    used: u64,
    /// Flows whose bottleneck this channel is: some exactly when it is saturated.
    held: Vec<u32>,
    /// No flow sharing the channel is faster: an upper bound that rises with its flows' rates
    /// and is brought down to the fastest when an update scans them all.
    peak: u64,
    /// Sum over holders of `rem + rate * t`, and over the short messages waiting to start on
    /// it or in the buffer it feeds of their `rem` (into a node: until they start on it), as the
    /// packet model counts a port's queue and the buffer it feeds: what adaptive routing sees at
    /// time `now` is `work - used * now`.
    work: i128,
    /// Solver scratch: the filling that touched it and its index among that filling's channels,
    /// its capacity left to the flows still rising and their number; the total of the set's rates
    /// here before and after, its fastest flow after, and the level at which the set filled it
    /// (`u64::MAX` if it did not).
    mark: u64,
    local: u32,
    residual: u64,
    unfrozen: u32,
    set_old: u64,
    set_new: u64,
    set_max: u64,
    stop_level: u64,
    /// Flows of the set bottlenecked here before the update.
    set_bottlenecked: u32,
    /// The update that last scanned its flows for ones to join the set, and the outcome it saw
    /// (stop level, fastest flow of the set, capacity freed).
    scanned: u64,
    scan_outcome: (u64, u64, bool),
    /// The batch of starts and ends (numbered from 1) whose update has this channel's held flows
    /// among its seeds.
    seeded: u64,
}

/// A message sent as a train of segments ([`FlowFabric::segment_bytes`]), each a short message of
/// its own: the message is delivered once all of them are.
#[derive(Debug, Clone, Copy)]
struct Train {
    /// The whole message's bytes, the size of its segments and their number.
    bytes: u64,
    segment: u64,
    segments: u64,
    /// Segments made so far: its NIC makes each as the one before starts, so a long train
    /// holds memory for the segments in flight, not for its bytes.
    made: u64,
    /// Segments not yet delivered.
    left: u64,
    notify_injected: bool,
    /// When its first segment started on the injection channel.
    born: Ps,
}

/// The flow-level network state of one simulation: the same interface as
/// [`crate::fabric::Fabric`], so the layer above drives either the same way.
#[derive(Debug)]
pub struct FlowFabric {
    topo: Topology,
    router: Box<dyn Router>,
    params: FabricParams,
    ch: Vec<Chan>,
    flows: Slab<Flow>,
    trains: Slab<Train>,
    /// Path vectors of delivered flows, kept for reuse.
    spare_paths: Vec<Vec<Hop>>,
    /// Delivered flows whose slots wait for events still to come (`Flow::pending`).
    ended: usize,
    /// The bandwidths along the path of a flow starting its transfer, kept for reuse.
    path_bps: Vec<u64>,
    notices: Vec<Notice>,
    stats: FabricStats,
    /// Rate recomputations and the flows they covered, for the locality of updates.
    reshares: u64,
    reshared_flows: u64,
    /// Flows sharing bandwidth.
    sharing_flows: usize,
    /// The instant an `Update` is scheduled for, or `NEVER`.
    update_at: Ps,
    solver: share::Scratch,
    nics: Vec<Nic>,
    /// Virtual channels per channel (the router's).
    vcs: usize,
    /// Input buffers, `channel * vcs + vc`; only those of channels into a switch are used.
    bufs: Vec<Buf>,
}

/// A switch's input buffer for one virtual channel of one channel, as short messages use it.
/// A short message takes `bytes` of it from when it starts on the channel until its tail has left
/// the switch on the next channel; the space is back at the sender a link latency later, as the
/// packet model's credits are. It may start on the channel only when the buffer has room for it
/// (or, larger than the buffer, when the buffer is empty); until then it waits in `waiting`, and
/// with it every message after it for that virtual channel, and the NIC or the input buffer it
/// is in stays held: full buffers push back hop by hop to the source NIC. Channels into a node
/// have no such buffer (a NIC takes what arrives at line rate), so every wait ends once the
/// messages ahead move on, as routing's channel dependencies have no cycle. Flows that share
/// bandwidth neither take space nor wait: sharing already slows them where links are contended.
#[derive(Debug, Clone, Default)]
struct Buf {
    /// Bytes taken, including those whose return is known but not yet due.
    used: u64,
    /// The space of the messages that have moved on as it comes back to the sender, packet by
    /// packet: `(when, bytes)` in time order, so that finding room reads it from the front.
    back: std::collections::VecDeque<(Ps, u64)>,
    /// Short messages waiting to start on the channel on this virtual channel, in order: for the
    /// port to free and come to them, or for room here. Kept for channels into a node too, which
    /// have no room to wait for.
    waiting: std::collections::VecDeque<u32>,
}

/// A message waiting at its source's NIC, made a flow when the NIC comes to it: so messages
/// queued there cost memory for what they are, not for a flow each.
#[derive(Debug, Clone, Copy)]
struct Message {
    token: u32,
    dst: NodeId,
    bytes: u64,
    notify_injected: bool,
    /// The message it is a segment of (`trains`), or `NIL`; the last segment of it.
    train: u32,
    last: bool,
}

/// A node's NIC. It sends one message at a time, in order, as the packet model's does; the next
/// one starts when the bytes of the one before have left it: its last bytes may then still be in
/// the first switch's input buffer, `buffer_bytes` of them at most. So a message of up to
/// `buffer_bytes` leaves the NIC at its injection channel's rate from its head's start, and a
/// larger one once all but `buffer_bytes` of its bytes are through (the flow's `due_rem`).
/// Control messages (`urgent`) do not wait: the packet model sends them ahead of the queue.
#[derive(Debug, Clone, Default)]
struct Nic {
    /// Messages waiting, in order.
    queue: std::collections::VecDeque<Message>,
    /// When the message being sent has left the NIC; `NEVER` while that depends on the rate its
    /// transfer gets (its flow's `due_rem` is then not 0).
    free_at: Ps,
    /// When its `Nic` event in force is due, `NEVER` for none: the others are stale.
    turn: Ps,
}

/// What adaptive routing compares in flow mode: the bytes still to cross a channel, summed over
/// the flows that hold it (those in their head phase count whole), and the short messages
/// waiting to start on it or in the input buffer it feeds, as the packet model counts the packets
/// queued for a port and those in the buffer it feeds (`Chan::work`).
struct Remaining<'a> {
    ch: &'a [Chan],
    now: Ps,
}

impl QueueView for Remaining<'_> {
    fn queued_bytes(&self, ch: ChannelId) -> u64 {
        let c = &self.ch[ch as usize];
        let left = c.work - i128::from(c.used) * i128::from(self.now);
        (left.max(0) / WORK_PER_BYTE) as u64
    }
}

impl FlowFabric {
    /// The bytes adaptive routing sees queued for channel `ch` at `now` ([`QueueView`]).
    pub fn queued_bytes(&self, ch: ChannelId, now: Ps) -> u64 {
        Remaining { ch: &self.ch, now }.queued_bytes(ch)
    }

    pub fn new(topo: Topology, router: Box<dyn Router>, params: FabricParams) -> Self {
        let nodes = topo.node_injection.len();
        let vcs = usize::from(router.num_vcs().max(1));
        let bufs = vec![Buf::default(); topo.channels.len() * vcs];
        let ch = topo
            .channels
            .iter()
            .map(|c| Chan {
                bits_per_s: c.bandwidth_bps,
                latency_ps: c.latency_ps,
                to_node: matches!(c.dst, Device::Node(_)),
                reverse: c.reverse,
                port_at: NEVER,
                free_turn: NEVER,
                ..Chan::default()
            })
            .collect();
        Self {
            topo,
            router,
            params,
            ch,
            flows: Slab::new(),
            trains: Slab::new(),
            spare_paths: Vec::new(),
            ended: 0,
            path_bps: Vec::new(),
            notices: Vec::new(),
            stats: FabricStats::default(),
            reshares: 0,
            reshared_flows: 0,
            sharing_flows: 0,
            update_at: NEVER,
            solver: share::Scratch::default(),
            nics: vec![
                Nic {
                    turn: NEVER,
                    ..Nic::default()
                };
                nodes
            ],
            vcs,
            bufs,
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Messages and segments in the network, from their start at their NIC (at once, for a
    /// control message) to delivery; not those waiting at their NIC.
    pub fn flows_in_flight(&self) -> usize {
        self.flows.live() - self.ended
    }

    /// Totals over the run so far, in the packet model's terms: `packet_hops` counts channels
    /// claimed by the heads of flows and segments, `packets_delivered` messages delivered,
    /// `switch_hops_delivered` their switch-to-switch hops (a train's, its segment delivered last),
    /// and the latency runs from the head's (a train's first segment's) start on the injection
    /// channel to delivery.
    pub fn stats(&self) -> FabricStats {
        self.stats
    }

    /// Rate recomputations so far and the flows they covered in all (their mean is the locality
    /// of an update: how many flows one start or end of a flow touches).
    pub fn reshare_counts(&self) -> (u64, u64) {
        (self.reshares, self.reshared_flows)
    }

    /// Every flow sharing bandwidth, in slot order, with its rate in bits per second and its
    /// path: what the max-min allocation is at the moment (for tests and inspection).
    pub fn rates(&self) -> Vec<(u32, u64, Vec<ChannelId>)> {
        let mut ids: Vec<u32> = self
            .ch
            .iter()
            .flat_map(|c| c.flows.iter().map(|&(f, _)| f))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .map(|f| {
                let fl = &self.flows[f];
                (f, fl.rate, fl.path.iter().map(|h| h.ch).collect())
            })
            .collect()
    }

    pub fn has_notices(&self) -> bool {
        !self.notices.is_empty()
    }

    /// Notices produced since the last call, oldest first.
    pub fn drain_notices(&mut self) -> std::vec::Drain<'_, Notice> {
        self.notices.drain(..)
    }

    /// The size up to which a message is short, not a flow that shares bandwidth: one packet, or
    /// half a switch's input buffer if that is more. Such a message moves as the packet model's
    /// packets do: back to back, at each link's rate, one message after another, each once the
    /// next switch's buffer has room for it ([`Buf`]). Larger messages are flows that share
    /// bandwidth, which approximates how they fill buffers better. (The half is an assumption,
    /// measured in docs/fast-mode.md.)
    pub fn short_bytes(&self) -> u64 {
        u64::from(self.params.packet_bytes.max(self.params.buffer_bytes / 2))
    }

    /// The size of the segments a mid-size message is sent as: `segment_packets` packets, at
    /// most `short_bytes` in whole packets, at least one packet. A message larger than
    /// `short_bytes` and of at most `train_segments` segments is a train of short messages of
    /// this size (the last one the remainder), one after another from the NIC, each routed,
    /// buffered and held back as the packet model's packets are; so such messages fill the input
    /// buffers and feel head-of-line blocking, which a flow that shares bandwidth does not.
    pub fn segment_bytes(&self) -> u64 {
        let packet = u64::from(self.params.packet_bytes).max(1);
        let most = (self.short_bytes() / packet).max(1);
        u64::from(self.params.segment_packets).clamp(1, most) * packet
    }

    /// The size of the units a short message moves as: `short_unit_packets` packets, or the
    /// whole of `short_bytes` if that is 0. A short message of more is a train of units of this
    /// size, one after another from the NIC as [`FlowFabric::segment_bytes`]'s are; with units of
    /// one packet, short messages move exactly as the packet model's packets do, at the cost of
    /// an event per packet and hop.
    pub fn unit_bytes(&self) -> u64 {
        let packet = u64::from(self.params.packet_bytes).max(1);
        match u64::from(self.params.short_unit_packets) {
            0 => self.short_bytes(),
            n => (n * packet).min(self.short_bytes()),
        }
    }

    /// Hands a message to `src`'s NIC at `now`, as [`crate::fabric::Fabric::send`] does: its
    /// head claims the injection channel when the NIC comes to it ([`Nic`]), at once if it is
    /// `urgent`. A zero-byte message still sends its head. Routing happens at each switch its head
    /// reaches, with [`QueueView::queued_bytes`] the bytes still to cross a channel: so the
    /// whole message takes one route, chosen from the load when its head passes (once, at the
    /// source router, for UGAL). A mid-size message goes as a train of segments
    /// ([`FlowFabric::segment_bytes`]), each routed on its own; so does a short one of more
    /// than a unit ([`FlowFabric::unit_bytes`]), in units.
    #[allow(clippy::too_many_arguments)]
    pub fn send<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        now: Ps,
        token: u32,
        (src, dst): (NodeId, NodeId),
        bytes: u64,
        urgent: bool,
        notify_injected: bool,
        q: &mut S,
        obs: &mut O,
    ) {
        let segment = if bytes <= self.short_bytes() {
            self.unit_bytes()
        } else {
            self.segment_bytes()
        };
        let segments = bytes.div_ceil(segment);
        if segments <= 1
            || bytes > self.short_bytes() && segments > u64::from(self.params.train_segments)
        {
            let message = Message {
                token,
                dst,
                bytes,
                notify_injected,
                train: NIL,
                last: false,
            };
            self.queue(src, message, now, urgent, q, obs);
            return;
        }
        let train = self.trains.insert(Train {
            bytes,
            segment,
            segments,
            made: 0,
            left: segments,
            notify_injected,
            born: NEVER,
        });
        if urgent {
            // A control message does not queue at its NIC: every segment starts at once.
            while let Some(segment) = self.next_segment(train, token, dst) {
                self.queue(src, segment, now, true, q, obs);
            }
        } else if let Some(first) = self.next_segment(train, token, dst) {
            self.queue(src, first, now, false, q, obs);
        }
    }

    /// `train`'s next segment to `dst`, if it has one left.
    fn next_segment(&mut self, train: u32, token: u32, dst: NodeId) -> Option<Message> {
        let t = &mut self.trains[train];
        if t.made == t.segments {
            return None;
        }
        let bytes = t.segment.min(t.bytes - t.made * t.segment);
        t.made += 1;
        Some(Message {
            token,
            dst,
            bytes,
            notify_injected: false,
            train,
            last: t.made == t.segments,
        })
    }

    /// The flow of `message` from `src`.
    fn new_flow(&mut self, src: NodeId, message: Message) -> u32 {
        let Message {
            token,
            dst,
            bytes,
            notify_injected,
            train,
            last,
        } = message;
        let mut path = self.spare_paths.pop().unwrap_or_default();
        path.clear();
        self.flows.insert(Flow {
            token,
            src,
            dst,
            bytes,
            notify_injected,
            train,
            last,
            route: RouteState::new(),
            path,
            at: NIL,
            rem: i128::from(bytes) * WORK_PER_BYTE,
            short: bytes <= self.short_bytes(),
            buf: NIL,
            due: NEVER,
            alarm: NEVER,
            bottleneck: NIL,
            ..Flow::default()
        })
    }

    /// Starts `message`'s head at `now` if it is `urgent`, or hands it to the queue of `src`'s
    /// NIC.
    fn queue<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        src: NodeId,
        message: Message,
        now: Ps,
        urgent: bool,
        q: &mut S,
        obs: &mut O,
    ) {
        if urgent {
            let flow = self.new_flow(src, message);
            self.start_head(flow, now, q, obs);
            return;
        }
        let nic = &mut self.nics[src as usize];
        if nic.free_at <= now && (nic.queue.is_empty() || nic.turn == now) {
            // A free NIC sends its oldest message on the spot, as the packet model's does, even
            // when the `Nic` event that would start it is still due at `now` (it is then stale).
            let next = match nic.queue.pop_front() {
                Some(oldest) => {
                    nic.queue.push_back(message);
                    oldest
                }
                None => message,
            };
            self.nic_start(src, next, now, q, obs);
        } else {
            nic.queue.push_back(message);
            if nic.queue.len() == 1 {
                self.book_nic(src, now, q);
            }
        }
    }

    /// Books the `Nic` event that starts the next message waiting at `node`'s NIC, if it is
    /// sooner than the one in force: when the NIC is free and, for a short message, the first
    /// switch has room for it. None while that room needs messages still to move on: the space
    /// they free books it ([`Self::room_filed`]). So the NIC's next start is booked as soon as
    /// it is known, as the packet model's NIC books its next packet for when its credit is back.
    fn book_nic<S: Schedule<FlowEvent>>(&mut self, node: NodeId, now: Ps, q: &mut S) {
        let nic = &self.nics[node as usize];
        let (Some(next), free_at) = (nic.queue.front(), nic.free_at) else {
            return;
        };
        if free_at == NEVER {
            return;
        }
        let mut at = free_at;
        if next.bytes <= self.short_bytes() {
            let b = self.topo.node_injection[node as usize] as usize * self.vcs;
            match self.room_at(b, next.bytes, now) {
                Some(room) => at = at.max(room),
                None => return,
            }
        }
        let nic = &mut self.nics[node as usize];
        if at < nic.turn {
            nic.turn = at;
            q.schedule(at, FlowEvent::Nic { node });
        }
    }

    /// The NIC of `src` starts sending `message` at `now` as a flow, and books when it is free
    /// again.
    fn nic_start<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        src: NodeId,
        message: Message,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let flow = self.new_flow(src, message);
        self.flows[flow].from_nic = true;
        // Until its head starts on the injection channel (it may wait for room downstream).
        let nic = &mut self.nics[src as usize];
        nic.free_at = NEVER;
        nic.turn = NEVER;
        // A train's next segment goes right behind this one.
        if message.train != NIL {
            if let Some(next) = self.next_segment(message.train, message.token, message.dst) {
                self.nics[src as usize].queue.push_front(next);
            }
        }
        self.start_head(flow, now, q, obs);
    }

    /// The NIC's current message `flow` started on the injection channel at `start`: books when
    /// the NIC is free again, and when the next message waiting there is to start.
    fn nic_started<S: Schedule<FlowEvent>>(&mut self, flow: u32, start: Ps, now: Ps, q: &mut S) {
        let f = &mut self.flows[flow];
        let ahead = u64::from(self.params.buffer_bytes);
        // A short message crosses the injection channel at its rate, whatever its size.
        let free_at = if f.short || f.bytes <= ahead {
            let inj = self.topo.node_injection[f.src as usize];
            start
                + tracewatt_core::time::serialization_ps(f.bytes, self.ch[inj as usize].bits_per_s)
        } else {
            f.due_rem = i128::from(ahead) * WORK_PER_BYTE;
            NEVER
        };
        let node = f.src;
        let nic = &mut self.nics[node as usize];
        nic.free_at = free_at;
        self.book_nic(node, now, q);
    }

    /// The NIC of `node` has sent its message at `now`: it starts the next one waiting, if any.
    fn nic_next<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        node: NodeId,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let nic = &mut self.nics[node as usize];
        nic.free_at = now;
        let Some(next) = nic.queue.pop_front() else {
            return;
        };
        self.nic_start(node, next, now, q, obs);
    }

    /// `flow`'s head claims its injection channel at `now`, or waits for room behind it.
    fn start_head<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let inj = self.topo.node_injection[self.flows[flow].src as usize];
        if let Some(start) = self.enter(flow, inj, now, q, obs) {
            self.started(flow, inj, start, now, q, obs);
        }
    }

    /// The head of `flow` started on `ch` at `start` (`now` or later).
    fn started<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        ch: ChannelId,
        start: Ps,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let f = &mut self.flows[flow];
        if f.path.len() == 1 {
            f.born = start;
            let (token, bytes, src) = (f.token, f.bytes, f.src);
            let notify = if f.train != NIL {
                let (last, t) = (f.last, &mut self.trains[f.train]);
                t.born = t.born.min(start);
                last && t.notify_injected
            } else {
                f.short && f.notify_injected
            };
            if notify {
                // A short message, or a train's last segment, is through the injection channel
                // at its rate.
                let inj = self.topo.node_injection[src as usize];
                let at = start
                    + tracewatt_core::time::serialization_ps(
                        bytes,
                        self.ch[inj as usize].bits_per_s,
                    );
                self.notices.push(Notice::Injected { token, at });
            }
            let f = &self.flows[flow];
            if f.from_nic {
                self.nic_started(flow, start, now, q);
            }
        }
        self.advance_head(flow, ch, start, now, q, obs);
    }

    /// The head of `flow` is ready to take `ch` at `now`. A short message takes it only if the
    /// channel is free, no message waits for it, and (into a switch) the switch's input buffer has
    /// room for it ([`Buf`]); otherwise it waits for the port to serve it ([`Self::serve`]), and
    /// `None` is returned. Returns when the head starts on it.
    fn enter<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        ch: ChannelId,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) -> Option<Ps> {
        let c = &self.ch[ch as usize];
        let f = &self.flows[flow];
        if f.short {
            let b = ch as usize * self.vcs + usize::from(f.route.vc);
            let free = c.reported <= now && c.waiting == 0;
            if !(free && (c.to_node || self.room_at(b, f.bytes, now).is_some_and(|t| t <= now))) {
                self.wait(flow, b);
                self.serve(ch, now, q, obs);
                return None;
            }
            // Served at once, it is the port's last turn all the same.
            self.ch[ch as usize].rr = self.flows[flow].route.vc;
        }
        Some(self.claim(flow, ch, now, q, obs))
    }

    /// Short message `flow` waits at buffer `b`'s channel for the port to serve it: behind the
    /// messages waiting for the same virtual channel, but a control message ahead of its NIC's
    /// messages, as the packet model's NIC queues it ahead of them.
    fn wait(&mut self, flow: u32, b: usize) {
        let f = &self.flows[flow];
        let waiting = &self.bufs[b].waiting;
        let at = if f.path.is_empty() && !f.from_nic {
            let flows = &self.flows;
            waiting
                .iter()
                .position(|&w| flows[w].from_nic)
                .unwrap_or(waiting.len())
        } else {
            waiting.len()
        };
        let rem = f.rem;
        self.bufs[b].waiting.insert(at, flow);
        let c = &mut self.ch[b / self.vcs];
        c.waiting |= 1 << (b % self.vcs);
        c.work += rem;
    }

    /// The earliest start on buffer `b`'s channel at which `b` has room for a short message of
    /// `bytes`, from the space known to come back: room for its first packet as it starts, and
    /// for all of it by the time its last packet starts, as the packet model's credits let its
    /// packets go one by one. `None` while that needs messages still to move on.
    fn room_at(&mut self, b: usize, bytes: u64, now: Ps) -> Option<Ps> {
        let cap = u64::from(self.params.buffer_bytes);
        let first = bytes.min(u64::from(self.params.packet_bytes));
        // Room for `need` bytes: at most `cap - need` taken, or none at all for a message larger
        // than the buffer.
        let (first_left, all_left) = (cap.saturating_sub(first), cap.saturating_sub(bytes));
        let buf = &mut self.bufs[b];
        if buf.used <= all_left {
            return Some(now);
        }
        while let Some(&(t, by)) = buf.back.front() {
            if t > now {
                break;
            }
            buf.used -= by;
            buf.back.pop_front();
        }
        let mut used = buf.used;
        let mut first_at = (used <= first_left).then_some(now);
        let mut all_at = (used <= all_left).then_some(now);
        if all_at.is_none() {
            for &(t, by) in &buf.back {
                used -= by;
                if first_at.is_none() && used <= first_left {
                    first_at = Some(t);
                }
                if used <= all_left {
                    all_at = Some(t);
                    break;
                }
            }
        }
        let (first_at, all_at) = (first_at?, all_at?);
        let bps = self.ch[b / self.vcs].bits_per_s;
        let lead = tracewatt_core::time::serialization_ps(bytes - first, bps);
        Some(first_at.max(all_at.saturating_sub(lead)))
    }

    /// Space of buffer `b` is known to come back, from `back` on. If messages wait for its port
    /// and none had room, the port looks again then, whatever their virtual channel, as the
    /// packet model's returning credit wakes a port blocked for want of it ([`Self::serve`] books
    /// the turn after that if they still have no room). With none waiting, its NIC's next start
    /// is booked (none while that needs messages still to move on: each calls this again as it
    /// does).
    fn room_filed<S: Schedule<FlowEvent>>(&mut self, b: usize, back: Ps, now: Ps, q: &mut S) {
        let ch = b / self.vcs;
        if self.ch[ch].waiting != 0 {
            if self.ch[ch].blocked {
                let at = back.max(self.ch[ch].reported);
                self.turn_at(ch as ChannelId, at, q);
            }
        } else if let Device::Node(node) = self.topo.channels[ch].src {
            self.book_nic(node, now, q);
        }
    }

    /// Books a `Port` event for `ch` at `at`, unless one as soon is in force.
    fn turn_at<S: Schedule<FlowEvent>>(&mut self, ch: ChannelId, at: Ps, q: &mut S) {
        let c = &mut self.ch[ch as usize];
        if at < c.port_at {
            c.port_at = at;
            q.schedule(at, FlowEvent::Port { ch });
        }
    }

    /// The port of `ch` starts the short messages waiting for it, one after another as it frees,
    /// taking the virtual channels in turn from the one after the last served, and skipping one
    /// whose next message has no room in the buffer it feeds, as the packet model's port serves
    /// its packets (`next_queued_packet`). Books its next turn when it is busy or no waiting
    /// message has room, as that model's port books its `LinkFree` or `Credit`.
    fn serve<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        ch: ChannelId,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let c = ch as usize;
        // A turn booked for `now` is this one: its event, still to come, is then stale, and the
        // port books its next turn as it serves, as the packet model's port does.
        let o = &mut self.ch[c];
        if o.port_at <= now {
            o.port_at = NEVER;
        }
        if o.free_turn <= now {
            o.free_turn = NEVER;
        }
        if o.free_turn != NEVER {
            // Busy, with its turn booked for when it frees: a message arriving meanwhile waits
            // for that turn.
            return;
        }
        loop {
            let (waiting, reported, rr, to_node) = {
                let o = &self.ch[c];
                (u32::from(o.waiting), o.reported, o.rr, o.to_node)
            };
            if waiting == 0 {
                return;
            }
            // A busy port books its next turn for when it is free and a message has room.
            let from = reported.max(now);
            let after = !((2u32 << rr) - 1);
            let mut pick = None;
            let mut soonest = NEVER;
            'turns: for part in [waiting & after, waiting & !after] {
                let mut m = part;
                while m != 0 {
                    let vc = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let b = c * self.vcs + vc;
                    let flow = self.bufs[b].waiting[0];
                    match if to_node {
                        Some(now)
                    } else {
                        self.room_at(b, self.flows[flow].bytes, now)
                    } {
                        Some(t) if t.max(from) <= now => {
                            pick = Some((vc, b, flow));
                            break 'turns;
                        }
                        Some(t) => soonest = soonest.min(t.max(from)),
                        None => {}
                    }
                }
            }
            let Some((vc, b, flow)) = pick else {
                if soonest == from && from > now {
                    self.ch[c].free_turn = from;
                    q.schedule(from, FlowEvent::Port { ch });
                } else {
                    self.ch[c].blocked = true;
                    if soonest != NEVER {
                        self.turn_at(ch, soonest, q);
                    }
                }
                return;
            };
            self.bufs[b].waiting.pop_front();
            let o = &mut self.ch[c];
            o.blocked = false;
            if self.bufs[b].waiting.is_empty() {
                o.waiting &= !(1 << vc);
            }
            o.rr = vc as u8;
            // Its claim counts it on the channel again.
            o.work -= self.flows[flow].rem;
            let start = self.claim(flow, ch, now, q, obs);
            self.started(flow, ch, start, now, q, obs);
        }
    }

    /// Handles one of the flow model's own events.
    pub fn handle<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        now: Ps,
        ev: FlowEvent,
        q: &mut S,
        obs: &mut O,
        rng: &mut Rng,
    ) {
        match ev {
            FlowEvent::Nic { node } => {
                let nic = &mut self.nics[node as usize];
                if nic.turn == now {
                    nic.turn = NEVER;
                    self.nic_next(node, now, q, obs);
                }
            }
            FlowEvent::Head { flow } => {
                if self.flows[flow].at == NIL {
                    self.begin_transfer(flow, now, q, obs);
                } else {
                    self.route_head(flow, now, q, obs, rng);
                }
            }
            FlowEvent::Done { flow } => {
                if self.came_after_end(flow) {
                    return;
                }
                let f = &mut self.flows[flow];
                if f.due == now && f.due_rem > 0 {
                    // The rest fits in the first switch's buffer: the NIC moves on.
                    f.rem -= i128::from(f.rate) * i128::from(now - f.t);
                    f.t = now;
                    f.due_rem = 0;
                    let r = i128::from(f.rate);
                    f.due = now + ((f.rem.max(0) + r - 1) / r) as Ps;
                    f.alarm = f.due;
                    f.book_done(flow, q);
                    let src = f.src;
                    self.nic_next(src, now, q, obs);
                } else if f.due == now {
                    f.alarm = NEVER;
                    self.end_transfer(flow, now, q, obs);
                } else if f.alarm == now {
                    f.alarm = f.due;
                    if f.due != NEVER {
                        f.book_done(flow, q);
                    }
                }
            }
            FlowEvent::Deliver { flow } => self.deliver(flow, now),
            FlowEvent::Port { ch } => {
                let c = &self.ch[ch as usize];
                if c.port_at == now || c.free_turn == now {
                    self.serve(ch, now, q, obs);
                }
            }
            FlowEvent::Update => {
                self.update_at = NEVER;
                self.solver.batch += 1;
                let mut seeds = std::mem::take(&mut self.solver.seeds);
                // A flow held back by one that ended may itself have ended since.
                seeds.retain(|&f| self.flows[f].sharing);
                if !seeds.is_empty() {
                    self.reshare(&seeds, now, q);
                }
                seeds.clear();
                self.solver.seeds = seeds;
            }
        }
    }

    /// Asks for the rates to be recomputed at `now`, once for every start and end at `now`: the
    /// flows of a collective or of a bulk-synchronous exchange start together and share one
    /// update. Until it runs (within the same instant), rates are those before.
    fn update_soon<S: Schedule<FlowEvent>>(&mut self, now: Ps, q: &mut S) {
        if self.update_at != now {
            self.update_at = now;
            q.schedule(now, FlowEvent::Update);
        }
    }

    /// The head is at a switch: routes it and claims the channel it takes.
    fn route_head<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        now: Ps,
        q: &mut S,
        obs: &mut O,
        rng: &mut Rng,
    ) {
        let (sw, src, dst, mut route) = {
            let f = &self.flows[flow];
            (f.at, f.src, f.dst, f.route)
        };
        let view = Remaining { ch: &self.ch, now };
        let (out, vc) = self.router.route(sw, src, dst, &mut route, &view, rng);
        route.vc = vc;
        self.flows[flow].route = route;
        if let Some(start) = self.enter(flow, out, now, q, obs) {
            self.advance_head(flow, out, start, now, q, obs);
        }
    }

    /// The head started on `ch` at `start` (`now` or later): schedules its arrival at the next
    /// switch, or, on the last channel, the start of the transfer. A transfer that starts `now`
    /// begins at once, so that messages whose last channels a port serves one after another
    /// end in that order, as the packet model's packets arrive in the order they were sent.
    fn advance_head<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        ch: ChannelId,
        start: Ps,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let c = &self.ch[ch as usize];
        let f = &mut self.flows[flow];
        if c.to_node {
            f.at = NIL;
            if start == now {
                self.begin_transfer(flow, now, q, obs);
            } else {
                q.schedule(start, FlowEvent::Head { flow });
            }
        } else {
            f.at = match self.topo.channels[ch as usize].dst {
                Device::Switch(s) => s,
                Device::Node(_) => NIL,
            };
            q.schedule(
                start + c.latency_ps + self.params.switch_latency_ps,
                FlowEvent::Head { flow },
            );
        }
    }

    /// The head of `flow` reaches `ch` at `now`: it joins the busy stretch under way there, or
    /// opens one, after the link's wake if it sleeps. Returns when the head starts on it.
    ///
    /// A flow that shares bandwidth holds the channel busy until its transfer ends. A short
    /// message instead starts after the short messages the channel is still sending, is through
    /// it at the channel's rate, and reports that piece at once: the channel may then be idle,
    /// and sleep, while the message goes on.
    fn claim<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        ch: ChannelId,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) -> Ps {
        let c = ch as usize;
        let reported = self.ch[c].reported;
        let start = if reported > now {
            if self.flows[flow].short {
                reported
            } else {
                now
            }
        } else if self.ch[c].holders > 0 {
            now
        } else {
            let rev = self.ch[c].reverse as usize;
            let r = &mut self.ch[rev];
            if r.holders > 0 && r.reported < now {
                obs.on_transmit(rev as ChannelId, r.reported, now, 0, r.stretch_src);
                r.reported = now;
            }
            let start = obs.link_ready(ch, now).max(now);
            let o = &mut self.ch[c];
            o.reported = start;
            o.stretch_src = self.flows[flow].src;
            start
        };
        let f = &mut self.flows[flow];
        f.path.push(Hop {
            ch,
            start,
            slot: NIL,
        });
        let o = &mut self.ch[c];
        o.work += f.rem;
        self.stats.packet_hops += 1;
        if f.short {
            let end = start.max(o.reported)
                + tracewatt_core::time::serialization_ps(f.bytes, o.bits_per_s);
            obs.on_transmit(ch, o.reported, end, f.bytes as u32, f.src);
            o.reported = end;
            obs.on_packet(ch, flow, f.token, f.path.len() == 1);
            self.move_buffers(flow, ch, end, now, q);
        } else {
            o.holders += 1;
        }
        start
    }

    /// Short message `flow`, claiming `ch` at `now`, is through it at `end`: its tail leaves the
    /// buffer it was in, whose space is back at the sender a link latency later, and it takes its
    /// place in `ch`'s.
    fn move_buffers<S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        ch: ChannelId,
        end: Ps,
        now: Ps,
        q: &mut S,
    ) {
        let (bytes, vc, held, tail_out, rem) = {
            let f = &self.flows[flow];
            (f.bytes, f.route.vc, f.buf, f.tail_out, f.rem)
        };
        let (bps, to_node) = (
            self.ch[ch as usize].bits_per_s,
            self.ch[ch as usize].to_node,
        );
        if held != NIL && bytes > 0 {
            let b = held as usize;
            let h = &mut self.ch[b / self.vcs];
            if !to_node {
                // Its head has left the buffer (on the last channel, once it starts there:
                // `begin_transfer`).
                h.work -= rem;
            }
            let lat = h.latency_ps;
            let first = bytes.min(u64::from(self.params.packet_bytes));
            let serial = tracewatt_core::time::serialization_ps(bytes, bps);
            let to = end.max(tail_out) + lat;
            let from =
                (end - serial + tracewatt_core::time::serialization_ps(first, bps) + lat).min(to);
            // Its first packet's space is back at `from`, the others' evenly spaced until `to`.
            let packet = u64::from(self.params.packet_bytes);
            let n = (bytes - first).div_ceil(packet);
            let back = &mut self.bufs[b].back;
            let mut put = |t: Ps, by: u64| match back.back() {
                Some(&(last, _)) if last > t => {
                    let at = back.partition_point(|&(u, _)| u <= t);
                    back.insert(at, (t, by));
                }
                _ => back.push_back((t, by)),
            };
            put(from, first);
            for k in 1..=n {
                // A message's span is its serialisation: far from overflowing.
                put(
                    from + (to - from) * k / n,
                    packet.min(bytes - first - (k - 1) * packet),
                );
            }
            self.room_filed(b, from, now, q);
        }
        let c = &self.ch[ch as usize];
        let f = &mut self.flows[flow];
        if c.to_node {
            f.buf = NIL;
        } else {
            let b = ch as usize * self.vcs + usize::from(vc);
            f.buf = b as u32;
            f.tail_out = end + c.latency_ps + self.params.switch_latency_ps;
            self.bufs[b].used += bytes;
        }
    }

    /// The head holds the whole path: the flow's bytes start to flow at the max-min rate.
    fn begin_transfer<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let mut bps = std::mem::take(&mut self.path_bps);
        bps.clear();
        bps.extend(
            self.flows[flow]
                .path
                .iter()
                .map(|h| self.ch[h.ch as usize].bits_per_s),
        );
        let f = &mut self.flows[flow];
        let bottleneck = bps.iter().copied().min().unwrap_or(1);
        let mut lone = timing::lone_serialisation_ps(&self.params, &bps, f.bytes);
        if f.last {
            // Alone, a train's segments follow one another at the bottleneck's rate: the whole
            // message's time alone, less the segments before this one, is the packet model's,
            // rounding and pipeline included.
            let t = &self.trains[f.train];
            let ahead =
                (t.segments - 1) * tracewatt_core::time::serialization_ps(t.segment, bottleneck);
            lone = lone.max(
                timing::lone_serialisation_ps(&self.params, &bps, t.bytes).saturating_sub(ahead),
            );
        }
        self.path_bps = bps;
        let last = f
            .path
            .last()
            .map_or(0, |h| self.ch[h.ch as usize].latency_ps);
        let at_rate = tracewatt_core::time::serialization_ps(f.bytes, bottleneck);
        f.tail_ps = last + (lone - at_rate);
        f.since = now;
        f.t = now;
        if f.bytes == 0 {
            // Nothing to share: the transfer is over as it starts.
            f.due = now;
            self.end_transfer(flow, now, q, obs);
            return;
        }
        if f.short {
            // It starts on its last channel: it no longer waits for it, nor fills the buffer
            // before it (`Chan::work`).
            let rem = f.rem;
            for h in f.path.iter().rev().take(2) {
                self.ch[h.ch as usize].work -= rem;
            }
            f.due = now + at_rate;
            f.alarm = f.due;
            f.book_done(flow, q);
            return;
        }
        for i in 0..f.path.len() {
            let ch = f.path[i].ch as usize;
            let c = &mut self.ch[ch];
            f.path[i].slot = c.flows.len() as u32;
            c.flows.push((flow, i as u32));
        }
        f.sharing = true;
        self.sharing_flows += 1;
        self.solver.seeds.push(flow);
        self.update_soon(now, q);
    }

    /// The flow's bytes are through: it leaves every channel and the others share what it held.
    fn end_transfer<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        flow: u32,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let seeded = self.solver.seeds.len();
        let (rate, bottleneck, since, src, bytes, sharing, short) = {
            let f = &self.flows[flow];
            (
                f.rate,
                f.bottleneck,
                f.since,
                f.src,
                f.bytes,
                f.sharing,
                f.short,
            )
        };
        if bottleneck != NIL {
            self.release(flow);
        }
        if sharing {
            self.sharing_flows -= 1;
        }
        let elapsed = now - since;
        let contribution = {
            let f = &self.flows[flow];
            f.rem + i128::from(f.rate) * i128::from(f.t)
        };
        for i in 0..self.flows[flow].path.len() {
            let h = self.flows[flow].path[i];
            let c = h.ch as usize;
            if sharing {
                let o = &mut self.ch[c];
                o.flows.swap_remove(h.slot as usize);
                o.used -= rate;
                if let Some(&(moved, at)) = o.flows.get(h.slot as usize) {
                    self.flows[moved].path[at as usize].slot = h.slot;
                }
                // The flows this one held back at a saturated channel may take what it frees.
                let (o, batch) = (&mut self.ch[c], self.solver.batch + 1);
                if o.seeded != batch {
                    o.seeded = batch;
                    self.solver.seeds.extend_from_slice(&o.held);
                }
            }
            if short {
                // Its pieces, and what it did on each channel, were reported as it crossed.
                continue;
            }
            let o = &mut self.ch[c];
            o.work -= contribution;
            o.holders -= 1;
            let end = (h.start + elapsed).max(o.reported);
            // A piece carries at most `u32::MAX` bytes; a larger message ends its piece with
            // empty ones carrying the rest.
            let (mut from, mut left) = (o.reported, bytes);
            loop {
                let part = left.min(u64::from(u32::MAX));
                obs.on_transmit(h.ch, from, end, part as u32, src);
                left -= part;
                from = end;
                if left == 0 {
                    break;
                }
            }
            o.reported = end;
        }
        // What a packet of the message would have reported on each channel, now that every
        // channel's piece is: the statistics read each hop's idle gap from the stretch it joined.
        let token = self.flows[flow].token;
        if !short {
            for (i, h) in self.flows[flow].path.iter().enumerate() {
                obs.on_packet(h.ch, flow, token, i == 0);
            }
        }
        {
            let f = &mut self.flows[flow];
            f.due = NEVER;
            f.sharing = false;
            f.rate = 0;
            f.bottleneck = NIL;
            if f.notify_injected && !short {
                self.notices.push(Notice::Injected {
                    token: f.token,
                    at: now,
                });
            }
        }
        if self.solver.seeds.len() > seeded {
            self.update_soon(now, q);
        }
        let tail = self.flows[flow].tail_ps;
        if tail == 0 {
            self.deliver(flow, now);
        } else {
            q.schedule(now + tail, FlowEvent::Deliver { flow });
        }
    }

    fn deliver(&mut self, flow: u32, now: Ps) {
        let f = &mut self.flows[flow];
        let mut born = f.born;
        if f.train != NIL {
            let t = &mut self.trains[f.train];
            t.left -= 1;
            if t.left > 0 {
                self.retire(flow);
                return;
            }
            born = t.born;
            self.trains.remove(f.train);
        }
        let lat = now - born;
        self.stats.packets_delivered += 1;
        self.stats.switch_hops_delivered += u64::from(f.route.hops);
        self.stats.packet_latency_sum_ps += u128::from(lat);
        self.stats.packet_latency_max_ps = self.stats.packet_latency_max_ps.max(lat);
        self.notices.push(Notice::Delivered { token: f.token });
        self.retire(flow);
    }

    /// Frees delivered `flow`'s slot, or, with events of it still to come, marks it ended until
    /// they have.
    fn retire(&mut self, flow: u32) {
        let f = &mut self.flows[flow];
        self.spare_paths.push(std::mem::take(&mut f.path));
        if f.pending == 0 {
            self.flows.remove(flow);
        } else {
            f.ended = true;
            self.ended += 1;
        }
    }

    /// Counts a `Done` event of `flow` as come: true if the flow has ended (the event
    /// is stale), whose slot is then freed with its last such event.
    fn came_after_end(&mut self, flow: u32) -> bool {
        let f = &mut self.flows[flow];
        f.pending -= 1;
        if !f.ended {
            return false;
        }
        if f.pending == 0 {
            self.flows.remove(flow);
            self.ended -= 1;
        }
        true
    }

    /// Reports every busy stretch still under way up to `at`, where a run stops with flows in
    /// the network: the channels they hold are busy until then. Their bytes are reported only as
    /// the flows finish, so the pieces carry none.
    pub fn report_busy_until<O: LinkObserver>(&mut self, at: Ps, obs: &mut O) {
        for (ch, c) in self.ch.iter_mut().enumerate() {
            if c.holders > 0 && c.reported < at {
                obs.on_transmit(ch as ChannelId, c.reported, at, 0, c.stretch_src);
                c.reported = at;
            }
        }
    }
}
