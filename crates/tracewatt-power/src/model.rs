//! The one interface every power model implements, and what a model reports.
//!
//! The engine emits signals with their timestamps — a link direction transmits, a rank changes
//! activity, a message's last frame reaches a node — to the [`Power`](crate::Power) family, which
//! hands each to the models that subscribed to it. A model integrates its energy exactly at its
//! own state changes and, at the end, writes its rows into the one [`Account`]. A model that can
//! delay the simulation answers through the same interface with the time the delay ends: a
//! sleeping link ([`PowerModel::link_ready`]), a NIC holding received frames for an interrupt
//! ([`PowerModel::deliver`], [`PowerModel::due`], [`PowerModel::release`]).

use crate::timeline::Timeline;
use tracewatt_core::{Column, Ps, Table};
use tracewatt_net::ChannelId;

/// The signals a model observes (it is called for these only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    /// `link_ready`, `on_transmit` and `on_control`: every packet (and credit frame) on every
    /// link direction.
    pub links: bool,
    /// `on_rank`: ranks changing activity.
    pub ranks: bool,
    /// `deliver` / `due` / `release`: the model may hold a message that reached a node's NIC.
    pub deliveries: bool,
    /// `wake_at`: the model may delay a rank's continuation.
    pub wakes: bool,
    /// `compute_ps`: the model may lengthen a rank's compute.
    pub computes: bool,
}

/// What a rank is doing, as its core's power sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Not started, or sleeping on a timer: nothing to do.
    Idle,
    /// Computing between MPI calls.
    Compute,
    /// Inside an MPI call doing work (the per-message send overhead).
    Mpi,
    /// Inside an MPI call waiting for a message or a request to complete; `sends_pending`: the
    /// rank has sends not yet complete (a low-power wait would stall them).
    Wait { sends_pending: bool },
    /// Finished (after finalize).
    Done,
}

/// One component instance's energy over the run: a row of `energy.parquet`.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyRow {
    /// Component kind: `link_port`, `switch_backplane`, `nic`, ...
    pub component: &'static str,
    /// The summary key it adds to (`switch_ports`, `nic_ports`, `switch_backplanes`, `nics`).
    pub group: &'static str,
    /// Instance id within its kind (link id, switch id, node id).
    pub id: u64,
    /// The node it belongs to, if any.
    pub node: Option<u32>,
    /// The switch it belongs to, if any.
    pub switch: Option<u32>,
    pub energy_j: f64,
    /// Time in each of the component's states, by column name (`lpi_s`, ...).
    pub states: Vec<(&'static str, Ps)>,
}

impl EnergyRow {
    /// The row of a component of node `node` (its id is the node's).
    pub fn of_node(
        component: &'static str,
        group: &'static str,
        node: u32,
        energy_j: f64,
        states: Vec<(&'static str, Ps)>,
    ) -> Self {
        Self {
            component,
            group,
            id: u64::from(node),
            node: Some(node),
            switch: None,
            energy_j,
            states,
        }
    }
}

/// A number for the summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    U64(u64),
    F64(f64),
}

/// Everything the models report at the end of a run.
#[derive(Debug)]
pub struct Account {
    pub rows: Vec<EnergyRow>,
    /// Tables a model adds (`nics`, ...).
    pub tables: Vec<Table>,
    /// Columns a model adds to the links table, one value per link direction.
    pub link_columns: Vec<(&'static str, Column)>,
    /// Summary entries: (section, key, value), e.g. (`links`, `wakes`, ...).
    pub summary: Vec<(&'static str, &'static str, Scalar)>,
    /// Power over time, one series per name in `series`.
    pub timeline: Timeline,
    series: Vec<&'static str>,
}

impl Account {
    pub fn new(timeline: Timeline, series: Vec<&'static str>) -> Self {
        Self {
            rows: Vec::new(),
            tables: Vec::new(),
            link_columns: Vec::new(),
            summary: Vec::new(),
            timeline,
            series,
        }
    }

    /// Names of the timeline series, in their index order.
    pub fn series(&self) -> &[&'static str] {
        &self.series
    }
}

/// A power model: one kind of component (link ports, switch backplanes, NICs, ...) for the whole
/// machine. Every signal method has a default that ignores the signal; a model overrides those it
/// subscribes to in [`signals`](PowerModel::signals).
pub trait PowerModel: std::fmt::Debug + Send {
    /// The signals this model needs.
    fn signals(&self) -> Signals;

    /// Timeline series this model draws (e.g. `switch_ports_w`); series `k` of the returned
    /// names gets timeline component `first + k`, given to the model before the run.
    fn series(&self) -> &'static [&'static str] {
        &[]
    }

    /// The timeline components this model draws into start at `first`.
    fn set_series(&mut self, _first: usize) {}

    /// A packet is ready to go on `ch` at `now`: when may it start (>= `now`)?
    fn link_ready(&mut self, _ch: ChannelId, now: Ps) -> Ps {
        now
    }

    /// `ch` transmits `bytes` from `start` to `end`; calls for one channel never overlap.
    fn on_transmit(&mut self, _ch: ChannelId, _start: Ps, _end: Ps, _bytes: u32) {}

    /// `ch` carries a link-level control frame (a credit) from `start` to `end`, never
    /// overlapping a transmission: traffic on the wire, but no data for the node behind it.
    fn on_control(&mut self, _ch: ChannelId, _start: Ps, _end: Ps) {}

    /// Rank `rank` on `node` starts `activity` at `at`.
    fn on_rank(&mut self, _rank: u32, _node: u32, _activity: Activity, _at: Ps) {}

    /// Rank `rank`'s core copies an intra-node message over [start, end) (it is active then,
    /// even inside a wait). Signalled with the rank signals.
    fn on_copy(&mut self, _rank: u32, _start: Ps, _end: Ps) {}

    /// Rank `rank` starts computing `ps` at `now`: how long does it take (e.g. longer with memory
    /// channels off)?
    fn compute_ps(&mut self, _rank: u32, _now: Ps, ps: Ps) -> Ps {
        ps
    }

    /// Rank `rank` is about to continue at `now` (its compute is done, or its wait is over):
    /// when does it go on (>= `now`)? After a wait, the rank had what it waited for at `ready`
    /// (<= `now`: its last message arrived, its last send completed) and worked in MPI from then
    /// to `now` (the receive's processing).
    fn wake_at(&mut self, _rank: u32, _ready: Ps, now: Ps) -> Ps {
        now
    }

    /// The last frame of message `token` reached `node` at `now`. Returns true if MPI may see
    /// it now; false if the model holds it, to hand it back through `release`.
    fn deliver(&mut self, _node: u32, _token: u32, _now: Ps) -> bool {
        true
    }

    /// The earliest time at which a held message may be released, if any is held. It may move
    /// as the model learns of more traffic but is never later than the actual release.
    fn due(&self) -> Option<Ps> {
        None
    }

    /// Appends to `out` the messages released at or before `now` (it is `due` or later).
    fn release(&mut self, _now: Ps, _out: &mut Vec<u32>) {}

    /// Closes the model at the end of the run (`end`) and reports into `account`.
    fn finish(self: Box<Self>, end: Ps, account: &mut Account);
}
