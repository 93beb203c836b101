//! The simulation loop: rank programs execute MPI operations; messages go through the MPI
//! protocol (eager, or rendezvous with request-to-send / clear-to-send) and then the fabric or,
//! between ranks of one node, through memory. One event queue, integer picoseconds.
//!
//! By concern: this module holds the event loop and what a run hands back; [`ranks`] executes
//! the ranks' programs; [`mpi`] the point-to-point protocol; [`collectives`] expands collective
//! operations; [`network`] is the one place that talks to the network model; [`window`] where a
//! run stops; [`deadlock`] explains a run that cannot go on.
//!
//! The engine is generic over the network model ([`Network`]: the packet-level `Fabric` or the
//! flow-level `FlowFabric`), chosen once when a run is assembled: the model's calls in the
//! packet path are then direct, as if it were the only one.

mod collectives;
mod deadlock;
mod mpi;
mod network;
mod ranks;
mod window;

pub(crate) use mpi::{Comm, MpiCosts};
pub(crate) use window::Stop;

use crate::error::SimError;
use crate::stats::{LatencyHist, LinkStats};
use collectives::Nbcs;
use mpi::{Msg, Req};
use ranks::RankRt;
use std::marker::PhantomData;
use tracewatt_core::time::{to_seconds, MAX_SIMULATED_PS};
use tracewatt_core::{EventQueue, Ps, Rng, Slab};
use tracewatt_net::fabric::Notice;
use tracewatt_net::{Network, NodeId};
use tracewatt_power::Power;
use tracewatt_workload::{Op, Program, Rank};
use window::WindowRt;

/// An event of the run. The network model's events are spelled out here as their kind and
/// argument ([`Network::split`]) rather than wrapped, which keeps an event in 8 bytes (16 with its
/// time; the queue moves every event a few times) and dispatches a network event in this one
/// `match`, as the engine's own. It names the model `N` (in `PowerDue`, as no data) only so that
/// each engine's queue is a type of its own: LLVM then inlines the queue's `pop` into each
/// engine's loop, as it does for a function with one caller.
#[derive(Debug)]
pub(crate) enum Ev<N> {
    /// The network model's event of kind 0, 1, 2 or 3, with its argument.
    Net0 {
        arg: u32,
    },
    Net1 {
        arg: u32,
    },
    Net2 {
        arg: u32,
    },
    Net3 {
        arg: u32,
    },
    /// A rank finished computing, starting its job or waiting, and continues.
    Wake {
        rank: u32,
    },
    /// A message leaves the MPI layer of its sender; with `wake`, the sender, busy issuing it,
    /// continues (one event instead of two at the same instant).
    Issue {
        msg: u32,
        wake: bool,
    },
    /// An intra-node message has been copied.
    LocalArrive {
        msg: u32,
    },
    /// A power model may release messages it holds (a NIC's interrupt).
    PowerDue(PhantomData<N>),
    /// A non-blocking collective's wait is over and it goes on (named by the slot of the
    /// request it completes; see [`collectives`]).
    NbcWake {
        done: u32,
    },
}

impl<N> Clone for Ev<N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<N> Copy for Ev<N> {}

const _: () = assert!(std::mem::size_of::<Ev<tracewatt_net::fabric::Fabric>>() == 8);
const _: () = assert!(tracewatt_net::network::EVENT_KINDS == 4);

/// A job as the engine runs it: its name, its ranks' global numbers (`first_rank` onwards),
/// when it starts and its communicators (the first is all its ranks).
#[derive(Debug)]
pub(crate) struct JobState {
    pub name: String,
    pub first_rank: u32,
    pub ranks: u32,
    pub start_ps: Ps,
    pub comms: Vec<Comm>,
}

/// One rank to run: its job, its rank in the job, its node and its program. Ranks are numbered
/// globally in the order given, job after job.
pub(crate) struct RankProgram {
    pub job: u32,
    pub rank: Rank,
    pub node: NodeId,
    pub program: Program,
}

/// What the engine needs from the configuration besides the network, the observers and the
/// programs.
#[derive(Debug, Clone)]
pub(crate) struct EngineParams {
    pub mpi: MpiCosts,
    /// Keep a record of every message (`[output] messages`).
    pub keep_messages: bool,
    /// Where the run ends.
    pub stop: Stop,
    /// The configuration's name, for errors.
    pub source: String,
}

/// Everything that watches the run: statistics of the links, and the power models (of links,
/// switches, NICs, cores, DIMMs and nodes).
#[derive(Debug)]
pub(crate) struct Observers {
    pub stats: LinkStats,
    pub power: Power,
}

/// What a finished run hands to the results stage.
#[derive(Debug)]
pub(crate) struct RunOutput {
    pub makespan_ps: Ps,
    pub ranks: Vec<RankSummary>,
    pub latency: LatencyHist,
    /// With `[output] messages`: every message, in the order they were received.
    pub messages: Vec<MessageRecord>,
    /// Row `i`: the hops on which message `i` could meet a wake at each idle threshold, then
    /// its route's hops per link class (see `stats::MessageHops`).
    pub message_wake_hops: Vec<u16>,
    pub messages_bytes: u64,
    pub events: u64,
    /// When the first rank entered its trace's window, if any did.
    pub window_start_ps: Option<Ps>,
}

/// One message: its global source and destination ranks, size, when its send was posted and
/// when it reached its receiver.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MessageRecord {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub start_ps: Ps,
    pub end_ps: Ps,
}

#[derive(Debug, Clone)]
pub(crate) struct RankSummary {
    pub job: u32,
    pub rank: Rank,
    pub node: NodeId,
    pub finish_ps: Ps,
    pub compute_ps: Ps,
    pub wait_ps: Ps,
    pub held_ps: Ps,
    pub sends: u64,
    pub bytes_sent: u64,
}

/// Progress report handed to the caller's callback.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub sim_time_s: f64,
    pub events: u64,
    pub ranks_done: u64,
    pub ranks_total: u64,
}

/// One run in progress: the event queue, the ranks and their requests and messages in flight,
/// the network and what observes it.
pub(crate) struct Engine<'a, N: Network> {
    q: EventQueue<Ev<N>>,
    net: N,
    observers: Observers,
    rng: Rng,
    costs: MpiCosts,
    jobs: &'a [JobState],
    ranks: Vec<RankRt>,
    /// The non-blocking collectives in flight, apart from the ranks' state that every event
    /// touches.
    nbcs: Nbcs,
    reqs: Slab<Req>,
    msgs: Slab<Msg>,
    latency: LatencyHist,
    messages_bytes: u64,
    /// `Some` when every message is kept.
    messages: Option<Vec<MessageRecord>>,
    /// With the messages: per message (in their order), the hops on which it could meet a
    /// wake at each idle threshold, then its route's hops per link class.
    message_wake_hops: Vec<u16>,
    done: u64,
    expand_buf: Vec<Op>,
    notices: Vec<Notice>,
    /// When a `PowerDue` event is queued (`Ps::MAX`: none), and the messages it released.
    power_due: Ps,
    released: Vec<u32>,
    source: String,
    window: WindowRt,
}

impl<N: Network> std::fmt::Debug for Engine<'_, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("ranks", &self.ranks.len())
            .finish()
    }
}

impl<'a, N: Network> Engine<'a, N> {
    /// A run of `programs` (one per rank, job after job) of `jobs` on `net`, watched by
    /// `observers`; `rng` drives the network's random choices (adaptive routing).
    pub fn new(
        params: EngineParams,
        net: N,
        observers: Observers,
        rng: Rng,
        jobs: &'a [JobState],
        programs: Vec<RankProgram>,
    ) -> Self {
        let ranks: Vec<RankRt> = programs.into_iter().map(RankRt::new).collect();
        let window = WindowRt::new(params.stop, ranks.len());
        let nbcs = Nbcs::new(ranks.len());
        Self {
            q: EventQueue::new(),
            net,
            observers,
            rng,
            costs: params.mpi,
            jobs,
            ranks,
            nbcs,
            reqs: Slab::default(),
            msgs: Slab::default(),
            latency: LatencyHist::default(),
            messages_bytes: 0,
            messages: params.keep_messages.then(Vec::new),
            message_wake_hops: Vec::new(),
            done: 0,
            expand_buf: Vec::new(),
            notices: Vec::new(),
            power_due: Ps::MAX,
            released: Vec::new(),
            source: params.source,
            window,
        }
    }

    /// Runs to completion. `progress` is called now and then; returning `false` stops the run.
    pub fn run(
        mut self,
        progress: &mut dyn FnMut(Progress) -> bool,
    ) -> Result<(RunOutput, N, Observers), SimError> {
        for job in self.jobs {
            for r in job.first_rank..job.first_rank + job.ranks {
                self.q.push(job.start_ps, Ev::Wake { rank: r });
            }
        }
        let total = self.ranks.len() as u64;
        let mut next_report = 0u64;
        let mut stopped = None;
        // The last time the run may reach, and how many ranks out of their windows end it: each
        // event then checks one time and one count.
        let last = match self.window.stop {
            Stop::At(at) => at.min(MAX_SIMULATED_PS),
            _ => MAX_SIMULATED_PS,
        };
        let window_end = if self.window.stop == Stop::WindowEnd {
            total
        } else {
            u64::MAX
        };
        while let Some((now, ev)) = self.q.pop() {
            if now > last {
                if let Stop::At(at) = self.window.stop {
                    if now > at {
                        stopped = Some(at);
                        break;
                    }
                }
                // Past this, sums of times could overflow (docs/config.md, Limits).
                return Err(SimError::TimeLimit {
                    source_name: self.source.clone(),
                    time_s: to_seconds(now),
                    limit_s: to_seconds(MAX_SIMULATED_PS),
                });
            }
            match ev {
                Ev::Net0 { arg } => self.network_event(now, N::join(0, arg))?,
                Ev::Net1 { arg } => self.network_event(now, N::join(1, arg))?,
                Ev::Net2 { arg } => self.network_event(now, N::join(2, arg))?,
                Ev::Net3 { arg } => self.network_event(now, N::join(3, arg))?,
                Ev::Wake { rank } => self.resume(rank, now)?,
                Ev::Issue { msg, wake } => {
                    let rank = self.msgs[msg].src;
                    self.issue(msg, now)?;
                    if wake {
                        self.resume(rank, now)?;
                    }
                }
                Ev::LocalArrive { msg } => self.arrive(msg, now)?,
                Ev::PowerDue(_) => self.power_due(now)?,
                Ev::NbcWake { done } => self.progress_nbc(done, now)?,
            }
            if self.observers.power.holds_deliveries() {
                self.schedule_power_due(now);
            }
            if self.window.left_count == window_end {
                stopped = Some(now);
                break;
            }
            if self.q.events_processed() >= next_report {
                next_report = self.q.events_processed() + (1 << 16);
                if !progress(self.progress(now)) {
                    return Err(SimError::Interrupted {
                        time_s: to_seconds(now),
                    });
                }
            }
        }
        if stopped.is_none() && self.done < total {
            return Err(self.deadlock());
        }
        if let Some(at) = stopped {
            self.network_stop(at);
        }
        let makespan_ps =
            stopped.unwrap_or_else(|| self.ranks.iter().map(|r| r.finish_ps).max().unwrap_or(0));
        self.observers.stats.finish(makespan_ps);
        progress(self.progress(makespan_ps));
        Ok(self.output(makespan_ps))
    }

    /// Where the run is at simulated time `now`.
    fn progress(&self, now: Ps) -> Progress {
        Progress {
            sim_time_s: to_seconds(now),
            events: self.q.events_processed(),
            ranks_done: self.done,
            ranks_total: self.ranks.len() as u64,
        }
    }

    /// What the run hands to the results stage, once it ended at `makespan_ps`, with the network
    /// and the observers.
    fn output(self, makespan_ps: Ps) -> (RunOutput, N, Observers) {
        let out = RunOutput {
            makespan_ps,
            ranks: self.ranks.iter().map(RankRt::summary).collect(),
            latency: self.latency,
            messages: self.messages.unwrap_or_default(),
            message_wake_hops: self.message_wake_hops,
            messages_bytes: self.messages_bytes,
            events: self.q.events_processed(),
            window_start_ps: self.window.start_ps,
        };
        (out, self.net, self.observers)
    }

    /// Queues a `PowerDue` event for the earliest time a power model may release messages, unless
    /// one is queued for that time or earlier already.
    #[inline(never)]
    fn schedule_power_due(&mut self, now: Ps) {
        if let Some(t) = self.observers.power.due() {
            if t < self.power_due {
                self.power_due = t.max(now);
                self.q.push(self.power_due, Ev::PowerDue(PhantomData));
            }
        }
    }

    /// Messages a power model held (a NIC waiting for its interrupt) reach MPI.
    #[inline(never)]
    fn power_due(&mut self, now: Ps) -> Result<(), SimError> {
        self.power_due = Ps::MAX;
        let mut released = std::mem::take(&mut self.released);
        self.observers.power.release(now, &mut released);
        for msg in released.drain(..) {
            self.arrive(msg, now)?;
        }
        self.released = released;
        Ok(())
    }
}
