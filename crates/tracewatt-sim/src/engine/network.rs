//! The engine's one contact with the network: it hands messages between nodes to the network
//! model ([`Network`]), lets the model handle its own events on the engine's queue, reports the
//! links' activity to the observers, and turns the model's notices (a message injected, a
//! message delivered) into MPI progress. Nothing else in the engine calls the model.

use super::{Engine, Ev, Observers};
use crate::error::SimError;
use tracewatt_core::{EventQueue, Ps, Schedule};
use tracewatt_net::fabric::{LinkObserver, Notice};
use tracewatt_net::{ChannelId, Network, NodeId};

/// Lets the network model `N` schedule its events on the simulation's queue.
struct NetQ<'q, N>(&'q mut EventQueue<Ev<N>>);
impl<N: Network> Schedule<N::Event> for NetQ<'_, N> {
    #[inline(always)]
    fn schedule(&mut self, time: Ps, event: N::Event) {
        let e = match N::split(event) {
            (0, arg) => Ev::Net0 { arg },
            (1, arg) => Ev::Net1 { arg },
            (2, arg) => Ev::Net2 { arg },
            (_, arg) => Ev::Net3 { arg },
        };
        self.0.push(time, e);
    }
}

// The packet path's hooks are always inlined: with the engine compiled for both network
// models they have callers in each, and LLVM's own choice then calls them out of line from the
// packet model's every hop (5 % more instructions on the dragonfly benchmark).
impl LinkObserver for Observers {
    #[inline(always)]
    fn link_ready(&mut self, ch: ChannelId, now: Ps) -> Ps {
        self.power.link_ready(ch, now)
    }
    #[inline(always)]
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32, src: NodeId) {
        self.stats.on_transmit(ch, start, end, bytes, src);
        self.power.on_transmit(ch, start, end, bytes, src);
    }
    #[inline(always)]
    fn on_packet(&mut self, ch: ChannelId, pkt: u32, token: u32, first_hop: bool) {
        self.stats.on_packet(ch, pkt, token, first_hop);
    }
    fn on_control(&mut self, ch: ChannelId, start: Ps, end: Ps) {
        self.stats.on_control(ch, start, end);
        self.power.on_control(ch, start, end);
    }
}

impl<N: Network> Engine<'_, N> {
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
        self.net.send(
            now,
            token,
            nodes,
            wire,
            urgent,
            notify_injected,
            &mut NetQ(&mut self.q),
            &mut self.observers,
        );
        self.after_network(now)
    }

    /// Lets the network model handle one of its events.
    pub(super) fn network_event(&mut self, now: Ps, ev: N::Event) -> Result<(), SimError> {
        self.net.handle(
            now,
            ev,
            &mut NetQ(&mut self.q),
            &mut self.observers,
            &mut self.rng,
        );
        self.after_network(now)
    }

    /// The run stops at `at` (a trace's window, or a set time) with traffic possibly under way:
    /// the observers hear of the links' activity up to then.
    pub(super) fn network_stop(&mut self, at: Ps) {
        self.net.flush(at, &mut self.observers);
    }

    /// Acts on the notices of the network model's last call.
    #[inline]
    fn after_network(&mut self, now: Ps) -> Result<(), SimError> {
        // Most network events (a hop) notify nothing: decided here, inlined into the hop.
        if !self.net.has_notices() {
            return Ok(());
        }
        self.take_notices(now)
    }

    #[inline(never)]
    fn take_notices(&mut self, now: Ps) -> Result<(), SimError> {
        let mut notices = std::mem::take(&mut self.notices);
        notices.extend(self.net.drain_notices());
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
