//! Single switch: every destination is one hop away, on its ejection channel.

use super::{QueueView, RouteState, Router};
use crate::topology::{ChannelId, NodeId, SwitchId, Topology};
use tracewatt_core::Rng;

#[derive(Debug)]
pub(crate) struct Direct {
    ejection: Vec<ChannelId>,
}

impl Direct {
    pub(crate) fn new(topo: &Topology) -> Self {
        Self {
            ejection: topo.node_ejection.clone(),
        }
    }
}

impl Router for Direct {
    fn num_vcs(&self) -> u8 {
        1
    }

    fn route(
        &self,
        _sw: SwitchId,
        _src: NodeId,
        dst: NodeId,
        state: &mut RouteState,
        _view: &dyn QueueView,
        _rng: &mut Rng,
    ) -> (ChannelId, u8) {
        state.vc = 0;
        (self.ejection[dst as usize], 0)
    }
}
