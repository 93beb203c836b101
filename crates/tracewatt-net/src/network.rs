//! The one interface the layer above drives a network model through: the packet-level
//! [`Fabric`] (exact: packets, buffers, credits) or the flow-level [`FlowFabric`] (faster: one
//! max-min shared flow per message). Both take messages, schedule their own events on the
//! caller's queue, report link activity to a [`LinkObserver`] and tell the caller, by
//! [`Notice`]s, when a message has left its source and when it has arrived.
//!
//! The caller is meant to be generic over the model (static dispatch): the packet path is the
//! simulator's innermost loop, and a call through a vtable per hop would cost it.

use crate::fabric::{Fabric, FabricParams, FabricStats, LinkObserver, NetEvent, Notice};
use crate::flow::{FlowEvent, FlowFabric};
use crate::routing::Router;
use crate::topology::{NodeId, Topology};
use tracewatt_core::{Ps, Rng, Schedule};

/// How many kinds of events a model may have ([`Network::split`]).
pub const EVENT_KINDS: u8 = 4;

/// A network model, as the simulation engine uses it.
pub trait Network {
    /// The model's own events, which it schedules on the caller's queue and the caller hands
    /// back to [`Network::handle`] when their time comes.
    type Event: Copy + std::fmt::Debug;
    /// An event as a kind (below [`EVENT_KINDS`]) and one `u32`, and back ([`Network::join`]):
    /// the caller keeps every event of its own queue in one small enum and dispatches a model's
    /// event in the same `match` as its own (a kind known at the call folds `join` and the
    /// model's own `match` away).
    fn split(ev: Self::Event) -> (u8, u32);
    fn join(kind: u8, arg: u32) -> Self::Event;
    /// The model's name in the configuration (`[machine] network`).
    const MODEL: &'static str;
    /// What the model moves through the network, plural, for reports ("packets", "flows").
    const UNIT: &'static str;

    /// The model of `topo`, its routes chosen by `router`.
    fn build(topo: Topology, router: Box<dyn Router>, params: FabricParams) -> Self;

    /// Hands message `token` of `bytes` from node `nodes.0` to node `nodes.1` to the source's
    /// NIC at `now`. `urgent`: a control message, ahead of bulk data where the model can tell
    /// them apart; `notify_injected`: a [`Notice::Injected`] when it has left the source.
    #[allow(clippy::too_many_arguments)]
    fn send<O: LinkObserver, S: Schedule<Self::Event>>(
        &mut self,
        now: Ps,
        token: u32,
        nodes: (NodeId, NodeId),
        bytes: u64,
        urgent: bool,
        notify_injected: bool,
        q: &mut S,
        obs: &mut O,
    );

    /// Handles one of the model's own events at `now`; `rng` drives its random choices
    /// (adaptive routing).
    fn handle<O: LinkObserver, S: Schedule<Self::Event>>(
        &mut self,
        now: Ps,
        ev: Self::Event,
        q: &mut S,
        obs: &mut O,
        rng: &mut Rng,
    );

    /// Notices are waiting for [`Network::drain_notices`].
    fn has_notices(&self) -> bool;

    /// Notices produced since the last call, oldest first.
    fn drain_notices(&mut self) -> std::vec::Drain<'_, Notice>;

    /// Totals over the run so far.
    fn stats(&self) -> FabricStats;

    fn topology(&self) -> &Topology;

    /// What is in the network now, in [`Network::UNIT`]s.
    fn in_flight(&self) -> usize;

    /// The run stops at `at` with traffic possibly under way: reports to `obs` every link's
    /// activity up to `at` that it has not been told yet.
    fn flush<O: LinkObserver>(&mut self, at: Ps, obs: &mut O);
}

impl Network for Fabric {
    type Event = NetEvent;
    const MODEL: &'static str = "packet";
    const UNIT: &'static str = "packets";

    fn build(topo: Topology, router: Box<dyn Router>, params: FabricParams) -> Self {
        Fabric::new(topo, router, params)
    }

    #[inline(always)]
    fn split(ev: NetEvent) -> (u8, u32) {
        match ev {
            NetEvent::Arrive { pkt } => (0, pkt),
            NetEvent::LinkFree { ch } => (1, ch),
            NetEvent::Credit { ch } => (2, ch),
            NetEvent::CreditOut { id } => (3, id),
        }
    }

    #[inline(always)]
    fn join(kind: u8, arg: u32) -> NetEvent {
        match kind {
            0 => NetEvent::Arrive { pkt: arg },
            1 => NetEvent::LinkFree { ch: arg },
            2 => NetEvent::Credit { ch: arg },
            _ => NetEvent::CreditOut { id: arg },
        }
    }

    #[inline]
    fn send<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        now: Ps,
        token: u32,
        nodes: (NodeId, NodeId),
        bytes: u64,
        urgent: bool,
        notify_injected: bool,
        q: &mut S,
        obs: &mut O,
    ) {
        Fabric::send(
            self,
            now,
            token,
            nodes,
            bytes,
            urgent,
            notify_injected,
            q,
            obs,
        );
    }

    #[inline]
    fn handle<O: LinkObserver, S: Schedule<NetEvent>>(
        &mut self,
        now: Ps,
        ev: NetEvent,
        q: &mut S,
        obs: &mut O,
        rng: &mut Rng,
    ) {
        Fabric::handle(self, now, ev, q, obs, rng);
    }

    #[inline]
    fn has_notices(&self) -> bool {
        Fabric::has_notices(self)
    }

    fn drain_notices(&mut self) -> std::vec::Drain<'_, Notice> {
        Fabric::drain_notices(self)
    }

    fn stats(&self) -> FabricStats {
        Fabric::stats(self)
    }

    fn topology(&self) -> &Topology {
        Fabric::topology(self)
    }

    fn in_flight(&self) -> usize {
        self.packets_in_flight()
    }

    /// Nothing to do: a packet's transmission is reported when it starts.
    fn flush<O: LinkObserver>(&mut self, _at: Ps, _obs: &mut O) {}
}

/// Marks a flow-model event of kind 3 as a NIC's (see `split`).
const NIC_BIT: u32 = 1 << 31;

impl Network for FlowFabric {
    type Event = FlowEvent;
    const MODEL: &'static str = "flow";
    const UNIT: &'static str = "flows";

    fn build(topo: Topology, router: Box<dyn Router>, params: FabricParams) -> Self {
        FlowFabric::new(topo, router, params)
    }

    #[inline(always)]
    fn split(ev: FlowEvent) -> (u8, u32) {
        match ev {
            FlowEvent::Head { flow } => (0, flow),
            FlowEvent::Done { flow } => (1, flow),
            FlowEvent::Deliver { flow } => (2, flow),
            // Kind 3 carries three: a channel is below 2^31 and so is a node, so a NIC takes the
            // top bit and an update the one value left (which leaves a node 2^31 - 1 out: no
            // machine comes near it).
            FlowEvent::Port { ch } => {
                debug_assert!(ch < NIC_BIT);
                (3, ch)
            }
            FlowEvent::Nic { node } => {
                debug_assert!(node < NIC_BIT - 1);
                (3, node | NIC_BIT)
            }
            FlowEvent::Update => (3, u32::MAX),
        }
    }

    #[inline(always)]
    fn join(kind: u8, arg: u32) -> FlowEvent {
        match kind {
            0 => FlowEvent::Head { flow: arg },
            1 => FlowEvent::Done { flow: arg },
            2 => FlowEvent::Deliver { flow: arg },
            _ if arg == u32::MAX => FlowEvent::Update,
            _ if arg & NIC_BIT != 0 => FlowEvent::Nic {
                node: arg & !NIC_BIT,
            },
            _ => FlowEvent::Port { ch: arg },
        }
    }

    #[inline]
    fn send<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        now: Ps,
        token: u32,
        nodes: (NodeId, NodeId),
        bytes: u64,
        urgent: bool,
        notify_injected: bool,
        q: &mut S,
        obs: &mut O,
    ) {
        FlowFabric::send(
            self,
            now,
            token,
            nodes,
            bytes,
            urgent,
            notify_injected,
            q,
            obs,
        );
    }

    #[inline]
    fn handle<O: LinkObserver, S: Schedule<FlowEvent>>(
        &mut self,
        now: Ps,
        ev: FlowEvent,
        q: &mut S,
        obs: &mut O,
        rng: &mut Rng,
    ) {
        FlowFabric::handle(self, now, ev, q, obs, rng);
    }

    #[inline]
    fn has_notices(&self) -> bool {
        FlowFabric::has_notices(self)
    }

    fn drain_notices(&mut self) -> std::vec::Drain<'_, Notice> {
        FlowFabric::drain_notices(self)
    }

    fn stats(&self) -> FabricStats {
        FlowFabric::stats(self)
    }

    fn topology(&self) -> &Topology {
        FlowFabric::topology(self)
    }

    fn in_flight(&self) -> usize {
        self.flows_in_flight()
    }

    fn flush<O: LinkObserver>(&mut self, at: Ps, obs: &mut O) {
        self.report_busy_until(at, obs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flow_event_comes_back_from_its_packed_form() {
        // Kind 3 carries three events: channels below 2^31, nodes below 2^31 - 1.
        let largest = NIC_BIT - 1;
        for ev in [
            FlowEvent::Head { flow: 0 },
            FlowEvent::Head { flow: largest },
            FlowEvent::Done { flow: 7 },
            FlowEvent::Deliver { flow: largest },
            FlowEvent::Port { ch: 0 },
            FlowEvent::Port { ch: largest },
            FlowEvent::Nic { node: 0 },
            FlowEvent::Nic { node: largest - 1 },
            FlowEvent::Update,
        ] {
            let (kind, arg) = FlowFabric::split(ev);
            assert_eq!(FlowFabric::join(kind, arg), ev);
        }
    }
}
