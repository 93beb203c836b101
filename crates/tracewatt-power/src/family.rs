//! The family of power models a run prices: the engine holds one [`Power`] and emits its signals
//! into it, naming no model; each signal goes to the models that subscribed to it.

use crate::link::LinkPower;
use crate::model::{Account, Activity, PowerModel};
use crate::predict::MpiCall;
use crate::timeline::Timeline;
use tracewatt_core::Ps;
use tracewatt_net::fabric::LinkObserver;
use tracewatt_net::{ChannelId, NodeId};

/// Every power model of a run. The link state machines sit in the packet path (every hop asks
/// them when it may start), so they are held by value and called without indirection; every
/// other model is reached through the [`PowerModel`] interface.
#[derive(Debug)]
pub struct Power {
    link_power: Option<LinkPower>,
    models: Vec<Box<dyn PowerModel>>,
    /// Indices of the other models that observe links, ranks, deliveries.
    links: Vec<usize>,
    ranks: Vec<usize>,
    wakes: Vec<usize>,
    computes: Vec<usize>,
    delivers: Option<usize>,
    /// Whether a link follows the ranks' MPI calls (a `predictive` node link).
    calls: bool,
    timeline_bin_ps: Ps,
    max_bins: usize,
    series: Vec<&'static str>,
}

/// Two models both want to hold deliveries: their answers cannot be composed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwoDelayingModels;

impl Power {
    /// The family of the link state machines (if any) and `models`, whose power timeline has bins
    /// `timeline_bin_ps` wide (0: at most `max_bins` bins, coarsened as the run goes; each model
    /// draws its own with the same parameters and they are merged at the end). At most one model
    /// may hold deliveries.
    pub fn new(
        mut link_power: Option<LinkPower>,
        mut models: Vec<Box<dyn PowerModel>>,
        timeline_bin_ps: Ps,
        max_bins: usize,
    ) -> Result<Self, TwoDelayingModels> {
        let mut series = Vec::new();
        if let Some(l) = &mut link_power {
            l.set_series(0);
            series.extend_from_slice(l.series());
        }
        for m in &mut models {
            m.set_series(series.len());
            series.extend_from_slice(m.series());
        }
        let with = |f: fn(&crate::model::Signals) -> bool| -> Vec<usize> {
            (0..models.len())
                .filter(|i| f(&models[*i].signals()))
                .collect()
        };
        let links = with(|s| s.links);
        let ranks = with(|s| s.ranks);
        let wakes = with(|s| s.wakes);
        let computes = with(|s| s.computes);
        let delivers = with(|s| s.deliveries);
        if delivers.len() > 1 {
            return Err(TwoDelayingModels);
        }
        Ok(Self {
            calls: link_power.as_ref().is_some_and(LinkPower::forecasts),
            link_power,
            links,
            ranks,
            wakes,
            computes,
            delivers: delivers.first().copied(),
            timeline_bin_ps,
            max_bins,
            series,
            models,
        })
    }

    /// Whether any model observes rank activity (the engine skips the bookkeeping otherwise).
    #[inline]
    pub fn observes_ranks(&self) -> bool {
        !self.ranks.is_empty()
    }

    /// Rank `rank` on `node` starts `activity` at `at`.
    pub fn on_rank(&mut self, rank: u32, node: u32, activity: Activity, at: Ps) {
        for &i in &self.ranks {
            self.models[i].on_rank(rank, node, activity, at);
        }
    }

    /// Whether a link follows the ranks' MPI calls (the engine signals none otherwise).
    #[inline]
    pub fn observes_calls(&self) -> bool {
        self.calls
    }

    /// Rank `rank` enters `call` at `now`.
    pub fn on_call(&mut self, rank: u32, call: MpiCall, now: Ps) {
        if let Some(l) = &mut self.link_power {
            l.on_call(rank, call, now);
        }
    }

    /// Rank `rank` leaves MPI at `now`: it computes, or sleeps on a timer.
    pub fn on_leave(&mut self, rank: u32, now: Ps) {
        if let Some(l) = &mut self.link_power {
            l.on_leave(rank, now);
        }
    }

    /// Rank `rank` has finished at `now`.
    pub fn on_done(&mut self, rank: u32, now: Ps) {
        if let Some(l) = &mut self.link_power {
            l.on_done(rank, now);
        }
    }

    /// Whether a model may delay waiting ranks (then the engine asks `wake_at` as waits end).
    #[inline]
    pub fn delays_wakes(&self) -> bool {
        !self.wakes.is_empty()
    }

    /// Whether a model may lengthen compute (then the engine asks `compute_ps` for each).
    #[inline]
    pub fn stretches_compute(&self) -> bool {
        !self.computes.is_empty()
    }

    /// How long rank `rank`'s compute of `ps` starting at `now` takes: the longest answer.
    pub fn compute_ps(&mut self, rank: u32, now: Ps, ps: Ps) -> Ps {
        let mut t = ps;
        for &i in &self.computes {
            t = t.max(self.models[i].compute_ps(rank, now, ps));
        }
        t
    }

    /// Rank `rank` is about to continue at `now` (after a wait: it had what it waited for at
    /// `ready` and worked in MPI since): when does it go on?
    pub fn wake_at(&mut self, rank: u32, ready: Ps, now: Ps) -> Ps {
        let mut t = now;
        for &i in &self.wakes {
            t = t.max(self.models[i].wake_at(rank, ready, now));
        }
        t
    }

    /// Rank `rank`'s core copies an intra-node message over [start, end).
    pub fn on_copy(&mut self, rank: u32, start: Ps, end: Ps) {
        for &i in &self.ranks {
            self.models[i].on_copy(rank, start, end);
        }
    }

    /// The last frame of message `token` reached `node` at `now`: true if MPI may see it now,
    /// false if a model holds it (it comes back from `release`).
    #[inline]
    pub fn deliver(&mut self, node: u32, token: u32, now: Ps) -> bool {
        match self.delivers {
            Some(i) => self.models[i].deliver(node, token, now),
            None => true,
        }
    }

    /// Whether a model may hold deliveries (then the engine asks `due` after every event).
    #[inline]
    pub fn holds_deliveries(&self) -> bool {
        self.delivers.is_some()
    }

    /// When held messages may next be released.
    pub fn due(&self) -> Option<Ps> {
        self.delivers.and_then(|i| self.models[i].due())
    }

    /// Appends the messages released by `now` to `out`.
    pub fn release(&mut self, now: Ps, out: &mut Vec<u32>) {
        if let Some(i) = self.delivers {
            self.models[i].release(now, out);
        }
    }

    /// Closes every model at `end` and collects their reports.
    pub fn finish(self, end: Ps) -> Account {
        let timeline = Timeline::new(self.series.len(), self.timeline_bin_ps, self.max_bins);
        let mut account = Account::new(timeline, self.series);
        if let Some(l) = self.link_power {
            Box::new(l).finish(end, &mut account);
        }
        for m in self.models {
            m.finish(end, &mut account);
        }
        account
    }
}

// The hooks of the network models' every hop: always inlined there, as the engine compiles them
// into each model and LLVM would otherwise call them out of line from the packet path.
impl LinkObserver for Power {
    #[inline(always)]
    fn link_ready(&mut self, ch: ChannelId, now: Ps) -> Ps {
        // Each model answers for itself from the same `now`; the packet waits for the latest.
        let mut t = match &mut self.link_power {
            Some(l) => l.link_ready(ch, now),
            None => now,
        };
        for &i in &self.links {
            t = t.max(self.models[i].link_ready(ch, now));
        }
        t
    }

    #[inline(always)]
    fn on_transmit(&mut self, ch: ChannelId, start: Ps, end: Ps, bytes: u32, _src: NodeId) {
        if let Some(l) = &mut self.link_power {
            l.on_transmit(ch, start, end, bytes);
        }
        for &i in &self.links {
            self.models[i].on_transmit(ch, start, end, bytes);
        }
    }

    fn on_control(&mut self, ch: ChannelId, start: Ps, end: Ps) {
        if let Some(l) = &mut self.link_power {
            l.on_control(ch, start, end);
        }
        for &i in &self.links {
            self.models[i].on_control(ch, start, end);
        }
    }
}
