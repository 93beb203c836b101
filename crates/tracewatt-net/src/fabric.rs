//! The packet-level network model.
//!
//! Messages are cut into packets at the source NIC. Every link direction (channel) has one output
//! queue per virtual channel at its sending device, serialises one packet at a time at its
//! bandwidth, and may only start a packet when the downstream input buffer of that virtual channel
//! has room for it (credit flow control; credits come back one link latency after the packet's
//! tail leaves that buffer). A packet holds its input-buffer space at a switch until its tail has
//! left on the next link, so full buffers push back hop by hop to the source NIC. Switching is
//! virtual cut-through (a packet may leave a switch once its head has arrived and the switch
//! latency has passed, but never finishes before its tail has arrived) or store-and-forward.
//!
//! Power and statistics observe channels through [`LinkObserver`]: they are told every
//! transmission interval, in order, and may postpone a transmission's start (a link waking up).
//! Nothing else in the packet path knows about power.

use crate::routing::{QueueView, RouteState, Router};
use crate::topology::{ChannelId, Device, NodeId, Topology};
use std::collections::VecDeque;
use tracewatt_core::time::serialization_ps;
use tracewatt_core::{Ps, Rng, Schedule};

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
}

/// Observer of link-direction activity. Implementations must not assume anything about the
/// order of calls across channels, only that calls for one channel come in time order.
pub trait LinkObserver {
    /// A packet is ready to go on `ch` at `now`; return when it may actually start (>= `now`).
    /// This is the one hook a power model needs in the packet path: a sleeping link's wake-up.
    fn earliest_start(&mut self, _ch: ChannelId, now: Ps) -> Ps {
        now
    }
    /// `ch` transmits `bytes` from `start` to `end`. Successive calls for one channel never overlap.
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32);
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
    /// A channel finished serialising its current packet.
    LinkFree { ch: ChannelId },
    /// Buffer space freed downstream of `ch` reached `ch`'s sender.
    Credit { ch: ChannelId, vc: u8, bytes: u32 },
}

/// What the fabric tells the layer above (the MPI model) after handling an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// The last packet of message `token` left the source NIC.
    Injected { token: u64 },
    /// The last packet of message `token` arrived at its destination node.
    Delivered { token: u64 },
}

#[derive(Debug, Clone, Copy)]
struct Packet {
    msg: u32,
    bytes: u32,
    route: RouteState,
    /// Channel the packet was last sent on (its downstream buffer holds the packet) and the VC.
    ch: ChannelId,
    vc: u8,
    /// When the packet's tail reaches the downstream device of `ch`.
    tail_ps: Ps,
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    token: u64,
    src: NodeId,
    dst: NodeId,
    /// Payload bytes not yet cut into packets.
    unsent: u64,
    packets: u32,
    /// Packets that have fully left the source NIC.
    injected: u32,
    delivered: u32,
}

/// A slab: stable indices, freed slots reused, so no allocation per packet once warmed up.
#[derive(Debug)]
struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T: Copy> Slab<T> {
    fn new() -> Self {
        Self {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
    fn insert(&mut self, t: T) -> u32 {
        if let Some(i) = self.free.pop() {
            self.items[i as usize] = t;
            i
        } else {
            self.items.push(t);
            (self.items.len() - 1) as u32
        }
    }
    fn remove(&mut self, i: u32) {
        self.free.push(i);
    }
    fn live(&self) -> usize {
        self.items.len() - self.free.len()
    }
}

/// Per-channel state, struct-of-arrays.
#[derive(Debug)]
struct Channels {
    bits_per_s: Vec<u64>,
    latency_ps: Vec<Ps>,
    /// True if the channel leads into a switch (it then has finite credits).
    to_switch: Vec<bool>,
    from_node: Vec<Option<NodeId>>,
    /// Packet currently being serialised, if any.
    sending: Vec<Option<u32>>,
    /// Output queues, `ch * vcs + vc`.
    queue: Vec<VecDeque<u32>>,
    /// Free downstream buffer bytes, `ch * vcs + vc`.
    credits: Vec<u32>,
    /// Bytes queued at the output plus bytes held in the downstream buffer: what adaptive
    /// routing compares.
    occupancy: Vec<u64>,
    /// Round-robin pointer over virtual channels.
    rr: Vec<u8>,
}

struct Occupancy<'a>(&'a [u64]);
impl QueueView for Occupancy<'_> {
    fn queued_bytes(&self, ch: ChannelId) -> u64 {
        self.0[ch as usize]
    }
}

/// The network state of one simulation.
#[derive(Debug)]
pub struct Fabric {
    topo: Topology,
    router: Box<dyn Router>,
    params: FabricParams,
    vcs: usize,
    ch: Channels,
    packets: Slab<Packet>,
    msgs: Slab<Msg>,
    /// Per node: messages waiting to be cut into packets, in order.
    nic_queue: Vec<VecDeque<u32>>,
    notices: Vec<Notice>,
    packet_hops: u64,
    packets_delivered: u64,
    hops_delivered: u64,
    latency_sum_ps: u128,
    latency_max_ps: Ps,
    /// Per packet slot: when it left the source NIC, for packet latency statistics.
    born_ps: Vec<Ps>,
}

impl Fabric {
    pub fn new(topo: Topology, router: Box<dyn Router>, params: FabricParams) -> Self {
        let vcs = router.num_vcs().max(1) as usize;
        let n = topo.channels.len();
        let mut ch = Channels {
            bits_per_s: Vec::with_capacity(n),
            latency_ps: Vec::with_capacity(n),
            to_switch: Vec::with_capacity(n),
            from_node: Vec::with_capacity(n),
            sending: vec![None; n],
            queue: (0..n * vcs).map(|_| VecDeque::new()).collect(),
            credits: Vec::with_capacity(n * vcs),
            occupancy: vec![0; n],
            rr: vec![0; n],
        };
        for c in &topo.channels {
            ch.bits_per_s.push(c.bandwidth_bps);
            ch.latency_ps.push(c.latency_ps);
            let to_switch = matches!(c.dst, Device::Switch(_));
            ch.to_switch.push(to_switch);
            ch.from_node.push(match c.src {
                Device::Node(n) => Some(n),
                Device::Switch(_) => None,
            });
            for _ in 0..vcs {
                ch.credits.push(if to_switch {
                    params.buffer_bytes
                } else {
                    u32::MAX
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
            packets: Slab::new(),
            msgs: Slab::new(),
            nic_queue: vec![VecDeque::new(); nodes],
            notices: Vec::new(),
            packet_hops: 0,
            packets_delivered: 0,
            hops_delivered: 0,
            latency_sum_ps: 0,
            latency_max_ps: 0,
            born_ps: Vec::new(),
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
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

    /// Notices produced since the last call, oldest first.
    pub fn drain_notices(&mut self) -> std::vec::Drain<'_, Notice> {
        self.notices.drain(..)
    }

    /// Hands a message to `src`'s NIC at `now`. Zero-byte messages still travel as one
    /// header-only packet (MPI sends an envelope).
    #[allow(clippy::too_many_arguments)]
    pub fn send<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        now: Ps,
        token: u64,
        src: NodeId,
        dst: NodeId,
        bytes: u64,
        q: &mut S,
        obs: &mut O,
        rng: &mut Rng,
    ) {
        let pb = self.params.packet_bytes as u64;
        let m = self.msgs.insert(Msg {
            token,
            src,
            dst,
            unsent: bytes,
            packets: bytes.div_ceil(pb).max(1) as u32,
            injected: 0,
            delivered: 0,
        });
        self.nic_queue[src as usize].push_back(m);
        let inj = self.topo.node_injection[src as usize];
        let _ = rng;
        self.try_send(inj, now, q, obs);
    }

    /// Handles one of the fabric's own events.
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
            NetEvent::LinkFree { ch } => self.link_free(now, ch, q, obs),
            NetEvent::Credit { ch, vc, bytes } => {
                let i = ch as usize * self.vcs + vc as usize;
                self.ch.credits[i] += bytes;
                self.ch.occupancy[ch as usize] -= bytes as u64;
                self.try_send(ch, now, q, obs);
            }
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
        let p = self.packets.items[pkt as usize];
        match self.topo.channels[p.ch as usize].dst {
            Device::Node(_) => {
                // The tail is in: the packet is delivered. Its ejection-channel credit is
                // infinite, so nothing to return.
                let lat = now - self.born_ps[pkt as usize];
                self.latency_sum_ps += lat as u128;
                self.latency_max_ps = self.latency_max_ps.max(lat);
                self.packets_delivered += 1;
                self.hops_delivered += p.route.hops as u64;
                self.packets.remove(pkt);
                let m = &mut self.msgs.items[p.msg as usize];
                m.delivered += 1;
                if m.delivered == m.packets {
                    self.notices.push(Notice::Delivered { token: m.token });
                    if m.injected == m.packets {
                        self.msgs.remove(p.msg);
                    }
                }
            }
            Device::Switch(sw) => {
                let (src, dst) = {
                    let m = &self.msgs.items[p.msg as usize];
                    (m.src, m.dst)
                };
                let mut route = p.route;
                let (out, vc) = self.router.route(
                    sw,
                    src,
                    dst,
                    &mut route,
                    &Occupancy(&self.ch.occupancy),
                    rng,
                );
                debug_assert!((vc as usize) < self.vcs, "router returned vc out of range");
                // `route.vc` now names the VC the packet will occupy downstream of `out`.
                route.vc = vc;
                self.packets.items[pkt as usize].route = route;
                self.ch.queue[out as usize * self.vcs + vc as usize].push_back(pkt);
                self.ch.occupancy[out as usize] += p.bytes as u64;
                self.try_send(out, now, q, obs);
            }
        }
    }

    fn link_free<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        now: Ps,
        ch: ChannelId,
        q: &mut S,
        obs: &mut O,
    ) {
        let c = ch as usize;
        let pkt = self.ch.sending[c].take();
        if let (Some(pkt), Some(_)) = (pkt, self.ch.from_node[c]) {
            let mi = self.packets.items[pkt as usize].msg;
            let m = &mut self.msgs.items[mi as usize];
            m.injected += 1;
            if m.injected == m.packets {
                self.notices.push(Notice::Injected { token: m.token });
                if m.delivered == m.packets {
                    self.msgs.remove(mi);
                }
            }
        }
        self.try_send(ch, now, q, obs);
    }

    /// Starts the next packet on `ch` if the channel is free, something is queued and the
    /// downstream buffer has room.
    fn try_send<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        ch: ChannelId,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let c = ch as usize;
        if self.ch.sending[c].is_some() {
            return;
        }
        let pkt = match self.ch.from_node[c] {
            Some(node) => match self.next_nic_packet(node, ch) {
                Some(p) => p,
                None => return,
            },
            None => match self.next_queued_packet(ch) {
                Some(p) => p,
                None => return,
            },
        };
        self.transmit(ch, pkt, now, q, obs);
    }

    /// Cuts the next packet of the NIC's head message if the first switch has room for it.
    fn next_nic_packet(&mut self, node: NodeId, ch: ChannelId) -> Option<u32> {
        let &m = self.nic_queue[node as usize].front()?;
        let msg = &mut self.msgs.items[m as usize];
        let bytes = msg.unsent.min(self.params.packet_bytes as u64) as u32;
        if self.ch.credits[ch as usize * self.vcs] < bytes.max(1) {
            return None;
        }
        msg.unsent -= bytes as u64;
        if msg.unsent == 0 {
            self.nic_queue[node as usize].pop_front();
        }
        let pkt = self.packets.insert(Packet {
            msg: m,
            bytes,
            route: RouteState::new(),
            ch,
            vc: 0,
            tail_ps: 0,
        });
        if self.born_ps.len() <= pkt as usize {
            self.born_ps.resize(pkt as usize + 1, 0);
        }
        Some(pkt)
    }

    /// Round-robin over virtual channels: the first VC after the last served one whose head
    /// packet fits in the downstream buffer.
    fn next_queued_packet(&mut self, ch: ChannelId) -> Option<u32> {
        let c = ch as usize;
        let base = c * self.vcs;
        for k in 0..self.vcs {
            let vc = (self.ch.rr[c] as usize + 1 + k) % self.vcs;
            let Some(&pkt) = self.ch.queue[base + vc].front() else {
                continue;
            };
            let bytes = self.packets.items[pkt as usize].bytes;
            if self.ch.credits[base + vc] >= bytes.max(1) {
                self.ch.queue[base + vc].pop_front();
                self.ch.rr[c] = vc as u8;
                self.ch.occupancy[c] -= bytes as u64;
                return Some(pkt);
            }
        }
        None
    }

    fn transmit<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        ch: ChannelId,
        pkt: u32,
        now: Ps,
        q: &mut S,
        obs: &mut O,
    ) {
        let c = ch as usize;
        let p = self.packets.items[pkt as usize];
        let start = obs.earliest_start(ch, now).max(now);
        let ser = serialization_ps(p.bytes as u64, self.ch.bits_per_s[c]);
        let from_node = self.ch.from_node[c].is_some();
        // Cut-through: the tail cannot leave before it has arrived.
        let end = if from_node {
            start + ser
        } else {
            (start + ser).max(p.tail_ps)
        };
        obs.on_transmit(ch, start, end, p.bytes);
        self.packet_hops += 1;
        if from_node {
            self.born_ps[pkt as usize] = start;
        }
        let vc = if from_node { 0 } else { p.route.vc };
        let lat = self.ch.latency_ps[c];
        // Reserve the downstream buffer.
        if self.ch.to_switch[c] {
            let i = c * self.vcs + vc as usize;
            self.ch.credits[i] -= p.bytes.max(1);
            self.ch.occupancy[c] += p.bytes.max(1) as u64;
        }
        // The buffer the packet leaves frees when its tail has gone; the credit travels back.
        if !from_node {
            let held = p.ch;
            let back = self.ch.latency_ps[held as usize];
            q.schedule(
                end + back,
                NetEvent::Credit {
                    ch: held,
                    vc: p.vc,
                    bytes: p.bytes.max(1),
                },
            );
        }
        let arrive = if self.ch.to_switch[c] {
            match self.params.switching {
                Switching::CutThrough => start + lat + self.params.switch_latency_ps,
                Switching::StoreAndForward => end + lat + self.params.switch_latency_ps,
            }
        } else {
            end + lat
        };
        {
            let pk = &mut self.packets.items[pkt as usize];
            pk.ch = ch;
            pk.vc = vc;
            pk.tail_ps = end + lat;
        }
        self.ch.sending[c] = Some(pkt);
        q.schedule(end, NetEvent::LinkFree { ch });
        q.schedule(arrive, NetEvent::Arrive { pkt });
    }
}
