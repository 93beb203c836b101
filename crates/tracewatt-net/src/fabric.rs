//! The packet-level network model.
//!
//! Messages are cut into packets at the source NIC. Every link direction (channel) has one output
//! queue per virtual channel at its sending device, serialises one packet at a time at its
//! bandwidth, and may only start a packet when the downstream input buffer of that virtual channel
//! has room for it (credit flow control; credits come back one link latency after the packet's
//! tail leaves that buffer).
//!
//! Events are scheduled only where something must happen at a future time nobody else will
//! look: a packet's arrival; a link becoming free while a packet that can go waits behind the
//! current one; a blocked port's credit coming back. Whether a waiting packet can go when the
//! link frees is decided as soon as the link is taken, from the credits already on their way
//! back, so a port starved of credit wakes once, when enough have returned. Credits returning to
//! a port that is not blocked are applied when the port next looks at them, and a link that
//! nobody waits for simply records until when it is busy. That keeps the work per packet-hop
//! near one event. A packet holds its input-buffer space at a switch until its tail has left on
//! the next link, so full buffers push back hop by hop to the source NIC. Switching is
//! virtual cut-through (a packet may leave a switch once its head has arrived and the switch
//! latency has passed, and its tail leaves the switch latency after the tail arrived at the
//! soonest) or store-and-forward.
//!
//! Power and statistics observe channels through [`LinkObserver`]: they are told every
//! transmission interval, in order, and may postpone a transmission's start (a link waking up).
//! Nothing else in the packet path knows about power.

use crate::routing::{QueueView, RouteState, Router};
use crate::topology::{ChannelId, Device, NodeId, SwitchId, Topology};
use std::collections::VecDeque;
use tracewatt_core::time::serialization_ps;
use tracewatt_core::{Ps, Rng, Schedule, Slab};

/// How a switch forwards a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Switching {
    /// Forward as soon as the head has arrived (and the switch latency passed).
    CutThrough,
    /// Forward only once the whole packet has arrived.
    StoreAndForward,
}

/// Fabric parameters that are not per link.
#[derive(Debug, Clone, Copy)]
pub struct FabricParams {
    /// Maximum payload bytes per packet.
    pub packet_bytes: u32,
    /// Input buffer per port per virtual channel, bytes (>= packet_bytes).
    pub buffer_bytes: u32,
    /// Time from a packet's head arriving at a switch to it being able to leave.
    pub switch_latency_ps: Ps,
    pub switching: Switching,
    pub credits: Credits,
    /// The flow model's longest train of segments ([`crate::flow::FlowFabric::segment_bytes`]):
    /// a larger message is a flow that shares bandwidth, 0 makes every message above
    /// `short_bytes` one. The packet model ignores it.
    pub train_segments: u32,
    /// The flow model's segment of a train in packets, at most `short_bytes` of them
    /// ([`crate::flow::FlowFabric::segment_bytes`]). The packet model ignores it.
    pub segment_packets: u32,
    /// The flow model's unit of a short message in packets: a short message of more packets
    /// goes as a train of units of this many ([`crate::flow::FlowFabric::unit_bytes`]); 0 moves
    /// every short message whole. The packet model ignores it.
    pub short_unit_packets: u32,
}

/// How a switch's input buffer tells the sender upstream that space has freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Credits {
    /// The credit is back one link latency after the packet's tail left the buffer, whatever
    /// the state of the link direction it travels on.
    #[default]
    OutOfBand,
    /// The credit is a frame of [`CREDIT_FRAME_BYTES`] on the reverse direction of the link: a
    /// sleeping reverse direction wakes for it, and it counts as traffic there.
    ReverseLink,
}

/// Size of a credit frame on the wire (CODES' `credit_size`, 8 B).
pub const CREDIT_FRAME_BYTES: u64 = 8;

/// Observer of link-direction activity. Implementations must not assume anything about the
/// order of calls across channels, only that calls for one channel come in time order.
pub trait LinkObserver {
    /// A packet is ready to go on `ch` at `now`; return when the link direction is ready for it
    /// (>= `now`). This is the one hook a power model needs in the packet path: a sleeping
    /// link's wake-up.
    fn link_ready(&mut self, _ch: ChannelId, now: Ps) -> Ps {
        now
    }
    /// `ch` transmits `bytes` of a packet sent by node `src` from `start` to `end`. Successive
    /// calls for one channel never overlap.
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32, src: NodeId);
    /// The packet `on_transmit` just reported on `ch`: its slot `pkt` (reused once it is
    /// delivered), its message's `token`, and whether this is its first hop (it leaves its
    /// source node). Default: ignored.
    fn on_packet(&mut self, _ch: ChannelId, _pkt: u32, _token: u32, _first_hop: bool) {}
    /// `ch` carries a link-level control frame (a credit, with [`Credits::ReverseLink`]) from
    /// `start` to `end`, never overlapping a transmission. Default: ignored.
    fn on_control(&mut self, _ch: ChannelId, _start: Ps, _end: Ps) {}
}

/// Fabric-wide counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FabricStats {
    /// Packet transmissions over any channel (node links included).
    pub packet_hops: u64,
    pub packets_delivered: u64,
    /// Switch-to-switch hops summed over delivered packets.
    pub switch_hops_delivered: u64,
    /// From the start of a packet's injection to its tail's arrival, summed.
    pub packet_latency_sum_ps: u128,
    pub packet_latency_max_ps: Ps,
}

/// Events the fabric schedules for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetEvent {
    /// A packet reached the downstream device of the channel it was sent on (head at a switch,
    /// after the switch latency; the tail at a node).
    Arrive { pkt: u32 },
    /// A channel finished serialising its packet and another one waits.
    LinkFree { ch: ChannelId },
    /// A credit a blocked channel waits for has come back.
    Credit { ch: ChannelId },
    /// With [`Credits::ReverseLink`]: a packet's tail has left a switch's input buffer, and its
    /// credit (entry `id` of the pending credits) is to go back on the reverse link.
    CreditOut { id: u32 },
}

/// What the fabric tells the layer above (the MPI model) after handling an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The last packet of message `token`, sent with `notify_injected`, leaves the source NIC
    /// at `at` (now or later).
    Injected { token: u32, at: Ps },
    /// The last packet of message `token` arrived at its destination node.
    Delivered { token: u32 },
}

/// No packet / no node.
const NIL: u32 = u32::MAX;

/// One cache line, aligned: a hop reads and writes most of it, and a record straddling two lines
/// costs two misses where it misses.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Packet {
    /// The message's record in `msgs` if it has several packets, else `NIL`: a one-packet
    /// message is delivered with its packet and needs no record.
    msg: u32,
    /// The layer above's name of the message.
    token: u32,
    bytes: u32,
    /// Source and destination node (copied from the message so routing needs no other record).
    src: NodeId,
    dst: NodeId,
    route: RouteState,
    /// Channel the packet was last sent on (its downstream buffer holds the packet) and the VC.
    ch: ChannelId,
    vc: u8,
    /// The switch at the far end of `ch`, or `NIL` for a node (copied so an arrival needs no
    /// read of the channel).
    at: SwitchId,
    /// Next packet in the same output queue, or `NIL`, and its size: a queue's head size is
    /// then known without reading the head packet's record.
    next: u32,
    next_bytes: u32,
    /// When the packet's tail reaches the downstream device of `ch`.
    tail_ps: Ps,
    /// When the packet left the source NIC, for packet latency statistics.
    born_ps: Ps,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 64);

/// A message of several packets in the network: counted until its last packet is delivered.
#[derive(Debug, Clone, Copy)]
struct Msg {
    packets: u32,
    delivered: u32,
}

/// A message waiting at its source NIC to be cut into packets, with what cutting needs (the
/// NIC queue is read on every wake-up decision; the message record only at delivery).
#[derive(Debug, Clone, Copy)]
struct NicMsg {
    /// Payload bytes not yet cut into packets.
    unsent: u64,
    token: u32,
    /// As [`Packet::msg`].
    msg: u32,
    dst: NodeId,
    /// A control message: it goes ahead of bulk data.
    urgent: bool,
    /// The layer above wants `Notice::Injected` for it.
    notify_injected: bool,
}

const NEVER: Ps = Ps::MAX;

/// The per-hop state of one channel, in one cache line: a hop reads and writes most of it.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Chan {
    /// End of the current (or last) transmission.
    busy_until: Ps,
    /// Time of the scheduled `Credit` wake-up, or `NEVER`.
    credit_event: Ps,
    latency_ps: Ps,
    bits_per_s: u64,
    /// Serialisation time of a full-size packet (the common case; saves a 128-bit division).
    full_packet_ps: Ps,
    /// Bytes queued at the output plus bytes held in the downstream buffer: what adaptive
    /// routing compares.
    occupancy: u64,
    /// Sending node, or `NIL` for a switch.
    from_node: NodeId,
    /// Receiving switch, or `NIL` for a node (the channel then has infinite credits).
    to_switch: SwitchId,
    /// Bit v set when VC v's queue is non-empty.
    waiting: u16,
    /// Round-robin pointer over virtual channels.
    rr: u8,
    /// A `LinkFree` event is scheduled at `busy_until`.
    free_event: bool,
    /// Packets wait but none fits its downstream buffer.
    blocked: bool,
}

/// One virtual channel of a channel: its output queue (a list threaded through the packets, with
/// the head packet's size), the free space of its downstream buffer, and the credits on their way
/// back to it, sorted by time. Those are an array, not a list through shared nodes: collecting
/// them, often a dozen at once, then reads consecutive memory instead of chasing a cache miss
/// per node.
#[derive(Debug, Clone)]
#[repr(align(64))]
struct Vc {
    head: u32,
    tail: u32,
    head_bytes: u32,
    credits: u32,
    returns: VecDeque<Return>,
    /// When the last of `returns` comes back: filing a credit after it (the rule) reads no
    /// element of the array.
    last_return_at: Ps,
}

/// Credits coming back to a VC: usable from `at`.
#[derive(Debug, Clone, Copy)]
struct Return {
    at: Ps,
    bytes: u32,
}

struct Occupancy<'a>(&'a [Chan]);
impl QueueView for Occupancy<'_> {
    fn queued_bytes(&self, ch: ChannelId) -> u64 {
        self.0[ch as usize].occupancy
    }
}

/// The network state of one simulation.
#[derive(Debug)]
pub struct Fabric {
    topo: Topology,
    router: Box<dyn Router>,
    params: FabricParams,
    vcs: usize,
    ch: Vec<Chan>,
    /// `ch * vcs + vc`.
    vc: Vec<Vc>,
    packets: Slab<Packet>,
    msgs: Slab<Msg>,
    /// Per node: messages waiting to be cut into packets, in order.
    nic_queue: Vec<VecDeque<NicMsg>>,
    notices: Vec<Notice>,
    packet_hops: u64,
    packets_delivered: u64,
    hops_delivered: u64,
    latency_sum_ps: u128,
    latency_max_ps: Ps,
    /// Credits waiting for their `CreditOut` (only with [`Credits::ReverseLink`]).
    credits_out: Slab<CreditOut>,
}

/// A credit to send back: `bytes` of VC `vc` of channel `held`'s downstream buffer.
#[derive(Debug, Clone, Copy)]
struct CreditOut {
    held: ChannelId,
    vc: u8,
    bytes: u32,
}

impl Fabric {
    pub fn new(topo: Topology, router: Box<dyn Router>, params: FabricParams) -> Self {
        let vcs = router.num_vcs().max(1) as usize;
        assert!(vcs <= 16, "at most 16 virtual channels");
        let n = topo.channels.len();
        let mut ch = Vec::with_capacity(n);
        let mut vc = Vec::with_capacity(n * vcs);
        for c in &topo.channels {
            let to_switch = match c.dst {
                Device::Switch(s) => s,
                Device::Node(_) => NIL,
            };
            ch.push(Chan {
                busy_until: 0,
                credit_event: NEVER,
                latency_ps: c.latency_ps,
                bits_per_s: c.bandwidth_bps,
                full_packet_ps: serialization_ps(params.packet_bytes as u64, c.bandwidth_bps),
                occupancy: 0,
                from_node: match c.src {
                    Device::Node(n) => n,
                    Device::Switch(_) => NIL,
                },
                to_switch,
                waiting: 0,
                rr: 0,
                free_event: false,
                blocked: false,
            });
            for _ in 0..vcs {
                vc.push(Vc {
                    head: NIL,
                    tail: NIL,
                    head_bytes: 0,
                    returns: VecDeque::new(),
                    last_return_at: 0,
                    credits: if to_switch != NIL {
                        params.buffer_bytes
                    } else {
                        u32::MAX
                    },
                });
            }
        }
        let nodes = topo.num_nodes as usize;
        Self {
            topo,
            router,
            params,
            vcs,
            ch,
            vc,
            packets: Slab::new(),
            msgs: Slab::new(),
            nic_queue: vec![VecDeque::new(); nodes],
            notices: Vec::new(),
            packet_hops: 0,
            packets_delivered: 0,
            hops_delivered: 0,
            latency_sum_ps: 0,
            latency_max_ps: 0,
            credits_out: Slab::new(),
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The bytes adaptive routing sees on channel `ch` ([`QueueView`]): the packets queued for it
    /// and those held in the input buffer it feeds.
    pub fn queued_bytes(&self, ch: ChannelId) -> u64 {
        self.ch[ch as usize].occupancy
    }

    /// Packets in the network or being serialised.
    pub fn packets_in_flight(&self) -> usize {
        self.packets.live()
    }

    /// Totals over the run so far.
    pub fn stats(&self) -> FabricStats {
        FabricStats {
            packet_hops: self.packet_hops,
            packets_delivered: self.packets_delivered,
            switch_hops_delivered: self.hops_delivered,
            packet_latency_sum_ps: self.latency_sum_ps,
            packet_latency_max_ps: self.latency_max_ps,
        }
    }

    pub fn has_notices(&self) -> bool {
        !self.notices.is_empty()
    }

    /// Notices produced since the last call, oldest first.
    pub fn drain_notices(&mut self) -> std::vec::Drain<'_, Notice> {
        self.notices.drain(..)
    }

    /// Hands a message to `src`'s NIC at `now`. Zero-byte messages still travel as one
    /// header-only packet (MPI sends an envelope).
    ///
    /// An `urgent` message (a protocol's control message) is queued at its NIC ahead of every
    /// message that is not, as a NIC's separate control queue does: it waits for the packet on
    /// the wire, not for a bulk message's remaining packets.
    ///
    /// With `notify_injected`, [`Notice::Injected`] reports when the message's last packet has
    /// left the NIC. Only a sender that waits for that asks: the notice of every other message
    /// would cost the layer above a look-up of a record long out of cache, for nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn send<O: LinkObserver, S: Schedule<NetEvent>>(
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
        let packets = bytes.div_ceil(self.params.packet_bytes as u64).max(1) as u32;
        let msg = if packets == 1 {
            NIL
        } else {
            self.msgs.insert(Msg {
                packets,
                delivered: 0,
            })
        };
        let m = NicMsg {
            token,
            unsent: bytes,
            msg,
            dst,
            urgent,
            notify_injected,
        };
        let queue = &mut self.nic_queue[src as usize];
        if urgent {
            let at = queue.iter().position(|q| !q.urgent).unwrap_or(queue.len());
            queue.insert(at, m);
        } else {
            queue.push_back(m);
        }
        let inj = self.topo.node_injection[src as usize];
        self.try_send(inj, now, q, obs);
    }

    /// Handles one of the fabric's own events.
    #[inline]
    pub fn handle<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        now: Ps,
        ev: NetEvent,
        q: &mut S,
        obs: &mut O,
        rng: &mut Rng,
    ) {
        match ev {
            NetEvent::Arrive { pkt } => self.arrive(now, pkt, q, obs, rng),
            // An event a newer one superseded (the channel sent meanwhile, or an earlier credit
            // woke it) has nothing left to do: the newer one covers it.
            NetEvent::LinkFree { ch } => {
                let c = &mut self.ch[ch as usize];
                if c.free_event && c.busy_until <= now {
                    c.free_event = false;
                    self.try_send(ch, now, q, obs);
                }
            }
            NetEvent::Credit { ch } => {
                let c = &mut self.ch[ch as usize];
                if c.credit_event == now {
                    c.credit_event = NEVER;
                    self.try_send(ch, now, q, obs);
                }
            }
            NetEvent::CreditOut { id } => self.credit_out(now, id, q, obs),
        }
    }

    /// Sends a credit back on the reverse direction of the link it is for. The frame goes as
    /// soon as that direction is awake: at once if it is transmitting (the frame slips in
    /// between packets, its own time neglected), after a wake if it sleeps. On an idle direction
    /// the frame takes the wire, so the power models see it as traffic.
    fn credit_out<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        now: Ps,
        id: u32,
        q: &mut S,
        obs: &mut O,
    ) {
        let c = self.credits_out[id];
        self.credits_out.remove(id);
        let rev = self.topo.channels[c.held as usize].reverse;
        let start = obs.link_ready(rev, now).max(now);
        let r = &mut self.ch[rev as usize];
        let end = start + serialization_ps(CREDIT_FRAME_BYTES, r.bits_per_s);
        if r.busy_until <= start {
            obs.on_control(rev, start, end);
            r.busy_until = end;
            if r.free_event {
                // The `LinkFree` already scheduled finds the link busy and does nothing.
                q.schedule(end, NetEvent::LinkFree { ch: rev });
            }
        }
        let back = end + r.latency_ps;
        self.file_credit(c.held, c.vc, back, c.bytes, q);
    }

    /// Files `bytes` of credit for VC `vc` of channel `held`, usable from `back`, and wakes the
    /// channel if it is blocked waiting for credit it can now have sooner.
    fn file_credit<S: Schedule<NetEvent>>(
        &mut self,
        held: ChannelId,
        vc: u8,
        back: Ps,
        bytes: u32,
        q: &mut S,
    ) {
        let h = &mut self.ch[held as usize];
        // A blocked channel may be mid-transmission: it can use the credit once free.
        let at = back.max(h.busy_until);
        let wake = h.blocked && at < h.credit_event;
        if wake {
            h.credit_event = at;
        }
        self.push_return(held as usize * self.vcs + vc as usize, back, bytes);
        if wake {
            q.schedule(at, NetEvent::Credit { ch: held });
        }
    }

    fn arrive<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        now: Ps,
        pkt: u32,
        q: &mut S,
        obs: &mut O,
        rng: &mut Rng,
    ) {
        let p = self.packets[pkt];
        let sw = p.at;
        if sw == NIL {
            // The tail is in: the packet is delivered. Its ejection-channel credit is
            // infinite, so nothing to return.
            let lat = now - p.born_ps;
            self.latency_sum_ps += lat as u128;
            self.latency_max_ps = self.latency_max_ps.max(lat);
            self.packets_delivered += 1;
            self.hops_delivered += p.route.hops as u64;
            self.packets.remove(pkt);
            let whole = p.msg == NIL || {
                let m = &mut self.msgs[p.msg];
                m.delivered += 1;
                m.delivered == m.packets
            };
            if whole {
                self.notices.push(Notice::Delivered { token: p.token });
                if p.msg != NIL {
                    self.msgs.remove(p.msg);
                }
            }
            return;
        }
        let mut route = p.route;
        let (out, vc) = self
            .router
            .route(sw, p.src, p.dst, &mut route, &Occupancy(&self.ch), rng);
        debug_assert!((vc as usize) < self.vcs, "router returned vc out of range");
        // `route.vc` now names the VC the packet will occupy downstream of `out`.
        route.vc = vc;
        {
            let pk = &mut self.packets[pkt];
            pk.route = route;
            pk.next = NIL;
        }
        // Append to the output queue.
        let i = out as usize * self.vcs + vc as usize;
        let v = &mut self.vc[i];
        if v.tail == NIL {
            v.head = pkt;
            v.head_bytes = p.bytes;
        } else {
            let t = &mut self.packets[v.tail];
            t.next = pkt;
            t.next_bytes = p.bytes;
        }
        v.tail = pkt;
        let o = &mut self.ch[out as usize];
        o.waiting |= 1 << vc;
        o.occupancy += p.bytes as u64;
        self.try_send(out, now, q, obs);
    }

    fn has_waiting(&self, c: usize) -> bool {
        let node = self.ch[c].from_node;
        if node != NIL {
            !self.nic_queue[node as usize].is_empty()
        } else {
            self.ch[c].waiting != 0
        }
    }

    /// Moves credits of `ch * vcs + vc = i` whose return time has come into the available pool.
    fn collect_credits(&mut self, i: usize, now: Ps) {
        let v = &mut self.vc[i];
        while let Some(r) = v.returns.front() {
            if r.at > now {
                break;
            }
            v.credits += r.bytes;
            v.returns.pop_front();
        }
    }

    /// Files `bytes` of credit coming back to VC `i` at `at`, keeping them sorted by time
    /// (almost always an append: departures from one buffer rarely end out of order).
    fn push_return(&mut self, i: usize, at: Ps, bytes: u32) {
        let v = &mut self.vc[i];
        let r = Return { at, bytes };
        if v.returns.is_empty() || v.last_return_at <= at {
            v.returns.push_back(r);
            v.last_return_at = at;
        } else {
            let k = v.returns.partition_point(|x| x.at <= at);
            v.returns.insert(k, r);
        }
    }

    /// Starts the next packet on `ch` if the channel is free, something is queued and the
    /// downstream buffer has room; otherwise makes sure an event will retry when that changes.
    fn try_send<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        ch: ChannelId,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let c = ch as usize;
        let busy_until = self.ch[c].busy_until;
        if busy_until > now {
            if !self.ch[c].free_event && self.has_waiting(c) {
                self.wake_when_ready(ch, busy_until, q);
            }
            return;
        }
        let node = self.ch[c].from_node;
        let pkt = if node != NIL {
            self.next_nic_packet(node, ch, now)
        } else {
            self.next_queued_packet(ch, now).map(|p| (p, None))
        };
        let Some((pkt, last_of)) = pkt else {
            if self.has_waiting(c) {
                self.wake_when_ready(ch, now, q);
            }
            return;
        };
        self.ch[c].blocked = false;
        self.transmit(ch, pkt, last_of, now, q, obs);
    }

    /// Packets wait on `ch`, which is free from `from` on: wakes it at the first moment from
    /// then on when the credits known to be coming back let one of them go — with `LinkFree` at
    /// `from` itself, else marked blocked with `Credit` then. Credits filed later wake a
    /// blocked channel earlier if they can ([`Self::transmit`]). Deciding this when a
    /// transmission starts, not when it ends, spares the event a congested channel would spend
    /// finding out at the end that it cannot send.
    fn wake_when_ready<S: Schedule<NetEvent>>(&mut self, ch: ChannelId, from: Ps, q: &mut S) {
        let c = ch as usize;
        let base = c * self.vcs;
        let node = self.ch[c].from_node;
        let mut t = NEVER;
        if node != NIL {
            if let Some(m) = self.nic_queue[node as usize].front() {
                let need = m.unsent.min(self.params.packet_bytes as u64).max(1) as u32;
                t = self.ready_at(base, need, from);
            }
        } else {
            let mut m = self.ch[c].waiting;
            while m != 0 {
                let vc = m.trailing_zeros() as usize;
                m &= m - 1;
                let need = self.vc[base + vc].head_bytes.max(1);
                t = t.min(self.ready_at(base + vc, need, from));
            }
        }
        let o = &mut self.ch[c];
        if t == from {
            o.free_event = true;
            q.schedule(from, NetEvent::LinkFree { ch });
            return;
        }
        o.blocked = true;
        if t < o.credit_event {
            o.credit_event = t;
            q.schedule(t, NetEvent::Credit { ch });
        }
    }

    /// The first moment from `from` on when VC `i` has `need` bytes of credit, counting the
    /// credits known to be on their way back; `NEVER` if those are not enough.
    fn ready_at(&self, i: usize, need: u32, from: Ps) -> Ps {
        let v = &self.vc[i];
        let mut credits = v.credits;
        if credits >= need {
            return from;
        }
        for r in &v.returns {
            credits += r.bytes;
            if credits >= need {
                return r.at.max(from);
            }
        }
        NEVER
    }

    /// Cuts the next packet of the NIC's head message if the first switch has room for it; with
    /// the message's token if that was its last packet and its injection is to be notified.
    fn next_nic_packet(
        &mut self,
        node: NodeId,
        ch: ChannelId,
        now: Ps,
    ) -> Option<(u32, Option<u32>)> {
        let m = *self.nic_queue[node as usize].front()?;
        let i = ch as usize * self.vcs;
        let bytes = m.unsent.min(self.params.packet_bytes as u64) as u32;
        if self.vc[i].credits < bytes.max(1) {
            self.collect_credits(i, now);
            if self.vc[i].credits < bytes.max(1) {
                return None;
            }
        }
        let queue = &mut self.nic_queue[node as usize];
        let last = m.unsent == bytes as u64;
        if last {
            queue.pop_front();
        } else {
            queue[0].unsent -= bytes as u64;
        }
        let pkt = self.packets.insert(Packet {
            msg: m.msg,
            token: m.token,
            bytes,
            src: node,
            dst: m.dst,
            route: RouteState::new(),
            ch,
            vc: 0,
            at: NIL,
            next: NIL,
            next_bytes: 0,
            tail_ps: 0,
            born_ps: 0,
        });
        Some((pkt, (last && m.notify_injected).then_some(m.token)))
    }

    /// Round-robin over virtual channels: the first VC after the last served one whose head
    /// packet fits in the downstream buffer.
    fn next_queued_packet(&mut self, ch: ChannelId, now: Ps) -> Option<u32> {
        let c = ch as usize;
        let base = c * self.vcs;
        let waiting = self.ch[c].waiting as u32;
        // Waiting VCs after the last served one, then the rest from VC 0 on.
        let after = !((2u32 << self.ch[c].rr) - 1);
        for part in [waiting & after, waiting & !after] {
            let mut m = part;
            while m != 0 {
                let vc = m.trailing_zeros() as usize;
                m &= m - 1;
                let i = base + vc;
                let bytes = self.vc[i].head_bytes;
                let need = bytes.max(1);
                if self.vc[i].credits < need {
                    self.collect_credits(i, now);
                    if self.vc[i].credits < need {
                        continue;
                    }
                }
                let pkt = self.vc[i].head;
                let p = &self.packets[pkt];
                let v = &mut self.vc[i];
                v.head = p.next;
                v.head_bytes = p.next_bytes;
                if p.next == NIL {
                    v.tail = NIL;
                    self.ch[c].waiting &= !(1 << vc);
                }
                let o = &mut self.ch[c];
                o.rr = vc as u8;
                o.occupancy -= bytes as u64;
                return Some(pkt);
            }
        }
        None
    }

    /// Sends `pkt` on `ch`; `last_of` is the message's token when this is its last packet to
    /// leave the source NIC and its injection is to be notified.
    fn transmit<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        ch: ChannelId,
        pkt: u32,
        last_of: Option<u32>,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let c = ch as usize;
        let p = self.packets[pkt];
        let start = obs.link_ready(ch, now).max(now);
        let o = self.ch[c];
        let ser = if p.bytes == self.params.packet_bytes {
            o.full_packet_ps
        } else {
            serialization_ps(p.bytes as u64, o.bits_per_s)
        };
        let from_node = o.from_node != NIL;
        let to_switch = o.to_switch != NIL;
        let at = o.to_switch;
        // Cut-through: the tail, like the head, leaves the switch no sooner than the switch
        // latency after it arrived (a slower link in holds a faster link out until then).
        let end = if from_node {
            start + ser
        } else {
            (start + ser).max(p.tail_ps + self.params.switch_latency_ps)
        };
        obs.on_transmit(ch, start, end, p.bytes, p.src);
        obs.on_packet(ch, pkt, p.token, from_node);
        self.packet_hops += 1;
        let vc = if from_node { 0 } else { p.route.vc };
        let lat = o.latency_ps;
        let need = p.bytes.max(1);
        if to_switch {
            // Reserve the downstream buffer.
            self.vc[c * self.vcs + vc as usize].credits -= need;
            self.ch[c].occupancy += need as u64;
        }
        let mut born_ps = p.born_ps;
        if from_node {
            born_ps = start;
            if let Some(token) = last_of {
                self.notices.push(Notice::Injected { token, at: end });
            }
        } else {
            // The buffer the packet leaves frees when its tail has gone; the credit travels back.
            let h = &mut self.ch[p.ch as usize];
            h.occupancy -= need as u64;
            match self.params.credits {
                Credits::OutOfBand => {
                    let back = end + h.latency_ps;
                    self.file_credit(p.ch, p.vc, back, need, q);
                }
                Credits::ReverseLink => {
                    let id = self.credits_out.insert(CreditOut {
                        held: p.ch,
                        vc: p.vc,
                        bytes: need,
                    });
                    q.schedule(end, NetEvent::CreditOut { id });
                }
            }
        }
        let arrive = if to_switch {
            match self.params.switching {
                Switching::CutThrough => start + lat + self.params.switch_latency_ps,
                Switching::StoreAndForward => end + lat + self.params.switch_latency_ps,
            }
        } else {
            end + lat
        };
        {
            let pk = &mut self.packets[pkt];
            pk.ch = ch;
            pk.vc = vc;
            pk.at = at;
            pk.tail_ps = end + lat;
            pk.born_ps = born_ps;
        }
        self.ch[c].busy_until = end;
        self.ch[c].free_event = false;
        q.schedule(arrive, NetEvent::Arrive { pkt });
        if self.has_waiting(c) {
            self.wake_when_ready(ch, end, q);
        }
    }
}
