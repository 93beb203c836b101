//! The engine's one contact with the network: it hands messages between nodes to the
//! [`Fabric`], lets the fabric handle its own events on the engine's queue, reports the links'
//! activity to the observers, and turns the fabric's notices (a message injected, a message
//! delivered) into MPI progress. Nothing else in the engine calls the fabric.

use super::{Engine, Ev, Observers};
use crate::error::SimError;
use tracewatt_core::{EventQueue, Ps, Schedule};
use tracewatt_net::fabric::{LinkObserver, NetEvent, Notice};
use tracewatt_net::{ChannelId, NodeId};

/// Lets the fabric schedule its events on the simulation's queue.
struct NetQ<'q>(&'q mut EventQueue<Ev>);
impl Schedule<NetEvent> for NetQ<'_> {
    fn schedule(&mut self, time: Ps, event: NetEvent) {
        let e = match event {
            NetEvent::Arrive { pkt } => Ev::NetArrive { pkt },
            NetEvent::LinkFree { ch } => Ev::NetLinkFree { ch },
            NetEvent::Credit { ch } => Ev::NetCredit { ch },
            NetEvent::CreditOut { id } => Ev::NetCreditOut { id },
        };
        self.0.push(time, e);
    }
}

impl LinkObserver for Observers {
    #[inline]
    fn link_ready(&mut self, ch: ChannelId, now: Ps) -> Ps {
        self.power.link_ready(ch, now)
    }
    #[inline]
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32, src: NodeId) {
        self.stats.on_transmit(ch, start, end, bytes, src);
        self.power.on_transmit(ch, start, end, bytes, src);
    }
    #[inline]
    fn on_packet(&mut self, ch: ChannelId, pkt: u32, token: u32, first_hop: bool) {
        self.stats.on_packet(ch, pkt, token, first_hop);
    }
    fn on_control(&mut self, ch: ChannelId, start: Ps, end: Ps) {
        self.stats.on_control(ch, start, end);
        self.power.on_control(ch, start, end);
    }
}

impl Engine<'_> {
    /// Message `token` enters the network at `now`: `wire` bytes from node `nodes.0` to node
    /// `nodes.1`; `urgent` ahead of bulk data at the NIC; with `notify_injected`, a notice when
    /// its last packet has left the source NIC.
    #[inline]
    pub(super) fn network_send(
        &mut self,
        now: Ps,
        token: u32,
        nodes: (NodeId, NodeId),
        wire: u64,
        urgent: bool,
        notify_injected: bool,
    ) -> Result<(), SimError> {
        self.fabric.send(
            now,
            token,
            nodes,
            wire,
            urgent,
            notify_injected,
            &mut NetQ(&mut self.q),
            &mut self.observers,
        );
        self.after_fabric(now)
    }

    /// Lets the fabric handle one of its events.
    pub(super) fn net(&mut self, now: Ps, ev: NetEvent) -> Result<(), SimError> {
        self.fabric.handle(
            now,
            ev,
            &mut NetQ(&mut self.q),
            &mut self.observers,
            &mut self.rng,
        );
        self.after_fabric(now)
    }

    /// Moves events the fabric scheduled into the main queue and acts on its notices.
    #[inline]
    fn after_fabric(&mut self, now: Ps) -> Result<(), SimError> {
        // Most fabric events (a hop) notify nothing: decided here, inlined into the hop.
        if !self.fabric.has_notices() {
            return Ok(());
        }
        self.take_notices(now)
    }

    #[inline(never)]
    fn take_notices(&mut self, now: Ps) -> Result<(), SimError> {
        let mut notices = std::mem::take(&mut self.notices);
        notices.extend(self.fabric.drain_notices());
        for n in notices.drain(..) {
            match n {
                Notice::Injected { token, at } => self.injected(token, at)?,
                Notice::Delivered { token } => {
                    let node = self.ranks[self.msgs[token].dst as usize].node;
                    if self.observers.power.deliver(node, token, now) {
                        self.arrive(token, now)?;
                    }
                }
            }
        }
        self.notices = notices;
        Ok(())
    }
}
