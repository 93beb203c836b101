//! Switch backplanes: a constant power per switch while the machine runs (docs/references.md section
//! 1: ~96 W for the PowerConnect 8132, whatever the traffic). Their ports are link ports.

use crate::model::{Account, EnergyRow, PowerModel, Signals};
use crate::timeline::Timeline;
use tracewatt_core::time::to_seconds;
use tracewatt_core::Ps;

/// The backplanes of every switch.
#[derive(Debug)]
pub struct Backplanes {
    switches: u32,
    backplane_w: f64,
    timeline: Timeline,
    first_series: usize,
}

impl Backplanes {
    /// `switches` backplanes of `backplane_w` each; the timeline has one series.
    pub fn new(switches: u32, backplane_w: f64, timeline: Timeline) -> Self {
        Self {
            switches,
            backplane_w,
            timeline,
            first_series: 0,
        }
    }
}

impl PowerModel for Backplanes {
    fn signals(&self) -> Signals {
        Signals::default()
    }

    fn series(&self) -> &'static [&'static str] {
        &["switch_backplane_w"]
    }

    fn set_series(&mut self, first: usize) {
        self.first_series = first;
    }

    fn finish(mut self: Box<Self>, end: Ps, account: &mut Account) {
        let energy_j = self.backplane_w * to_seconds(end);
        for s in 0..self.switches {
            account.rows.push(EnergyRow {
                component: "switch_backplane",
                group: "switch_backplanes",
                id: s as u64,
                node: None,
                switch: Some(s),
                energy_j,
                states: vec![("on_s", end)],
            });
        }
        self.timeline
            .add(0, 0, end, self.backplane_w * self.switches as f64);
        account
            .timeline
            .absorb(self.first_series, self.timeline, end);
    }
}
