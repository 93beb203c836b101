//! The simulation loop: rank programs execute MPI operations; messages go through the MPI
//! protocol (eager, or rendezvous with request-to-send / clear-to-send) and then the fabric or,
//! between ranks of one node, through memory. One event queue, integer picoseconds.

use crate::config::Config;
use crate::error::SimError;
use crate::stats::{LatencyHist, LinkStats};
use crate::units::{ns_to_ps, us_to_ps};
use std::collections::VecDeque;
use tracewatt_core::time::{serialization_ps, to_seconds, MAX_SIMULATED_PS};
use tracewatt_core::{EventQueue, FlatMap, Ps, Rng, Schedule, Slab};
use tracewatt_net::fabric::LinkObserver;
use tracewatt_net::fabric::{Fabric, NetEvent, Notice};
use tracewatt_net::NodeId;
use tracewatt_power::{Activity, Power};
use tracewatt_workload::collectives::Expansion;
use tracewatt_workload::matching::{Envelope, Matcher};
use tracewatt_workload::op::RESERVED_REQ_BASE;
use tracewatt_workload::{CommId, Op, Program, Rank, ReqId, SrcSel, Tag, TagSel};

/// Request id used for the implicit request of a blocking send or receive.
const BLOCKING_REQ: ReqId = u32::MAX;

/// The fabric's events are spelled out here rather than wrapped, which keeps an event in
/// 8 bytes (16 with its time): the queue moves every event a few times.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ev {
    NetArrive {
        pkt: u32,
    },
    NetLinkFree {
        ch: tracewatt_net::ChannelId,
    },
    NetCredit {
        ch: tracewatt_net::ChannelId,
    },
    NetCreditOut {
        id: u32,
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
    PowerDue,
}

const _: () = assert!(std::mem::size_of::<Ev>() == 8);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RankState {
    NotStarted,
    Running,
    Busy,
    /// In a timer sleep (`WaitUntil`): neither computing nor waiting in MPI.
    Sleeping,
    Blocked,
    /// About to continue, held by a power model (a core leaving a low-power wait, DIMMs coming
    /// online); `blocked`: it was waiting in MPI.
    Waking {
        blocked: bool,
    },
    Done,
}

/// A communicator of a job: its members' job ranks, and the inverse.
#[derive(Debug)]
pub(crate) struct Comm {
    pub members: Vec<Rank>,
    /// (job rank, comm rank), sorted by job rank.
    index: Vec<(Rank, Rank)>,
}

impl Comm {
    pub fn new(members: Vec<Rank>) -> Self {
        let mut index: Vec<(Rank, Rank)> = members
            .iter()
            .enumerate()
            .map(|(i, r)| (*r, i as Rank))
            .collect();
        index.sort_unstable();
        Self { members, index }
    }
    fn rank_of(&self, job_rank: Rank) -> Option<Rank> {
        self.index
            .binary_search_by_key(&job_rank, |(j, _)| *j)
            .ok()
            .map(|i| self.index[i].1)
    }
}

#[derive(Debug)]
pub(crate) struct JobState {
    pub name: String,
    pub first_rank: u32,
    pub ranks: u32,
    pub start_ps: Ps,
    pub comms: Vec<Comm>,
}

struct RankRt {
    job: u32,
    job_rank: Rank,
    node: NodeId,
    program: Program,
    /// Operations queued ahead of the program (the current piece of a collective, implicit
    /// waits).
    pending: VecDeque<Op>,
    /// The collective in progress, generated piece by piece into `pending`.
    coll: Option<Box<Expansion>>,
    state: RankState,
    /// What the rank's core is doing, as power models see it.
    activity: Activity,
    /// Sends not yet complete (a low-power wait would stall them).
    open_sends: u32,
    /// Outstanding requests: program id -> request slot.
    reqs: FlatMap<ReqId, u32>,
    matcher: Matcher<u32, u32>,
    /// Requests being waited for, how many of them have no completion time yet, and the latest
    /// completion time of the others: the wait ends at that time once none remains.
    waiting: Vec<u32>,
    wait_remaining: u32,
    resume_ps: Ps,
    /// When the wait's last request came (a receive's message arrived, a send completed), or
    /// the wait's start if earlier: a receive completes `recv_ps` of processing after that.
    ready_ps: Ps,
    blocked_since: Ps,
    finish_ps: Ps,
    compute_ps: Ps,
    wait_ps: Ps,
    /// Held by a power model outside a wait (a DIMM onlining stall after a compute phase).
    held_ps: Ps,
    sends: u64,
    bytes_sent: u64,
    /// The operation the rank is blocked in, for deadlock reports.
    blocked_in: &'static str,
}

impl std::fmt::Debug for RankRt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankRt")
            .field("job", &self.job)
            .field("job_rank", &self.job_rank)
            .finish()
    }
}

/// A request, in 32 bytes on a 32-byte boundary: a message's completion touches its receive
/// request in a cache line of its own, never two. A receive's selector (communicator, source,
/// tag) is in its rank's matcher while it waits for a match.
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
struct Req {
    done_ps: Ps,
    bytes: u64,
    rank: u32,
    /// For a send: its message (rendezvous sends wait for the clear-to-send).
    msg: u32,
    send: bool,
    /// The completion time is known: `done_ps`, possibly still in the future. A completion is
    /// recorded as soon as it is certain, not by an event at that time: only a rank's wait needs
    /// an event (one `Wake` per wait, not one per request).
    done: bool,
    waited: bool,
}

const _: () = assert!(std::mem::size_of::<Req>() == 32);

impl Req {
    /// When a completed request's rank had it: a receive `recv_ps` before it completes (its
    /// message was there; the rest is the receive's processing), a send when it completes.
    fn ready_ps(&self, recv_ps: Ps) -> Ps {
        if self.send {
            self.done_ps
        } else {
            self.done_ps.saturating_sub(recv_ps)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MsgKind {
    Eager,
    Rts,
    Cts,
    Data,
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    kind: MsgKind,
    /// Global ranks.
    src: u32,
    dst: u32,
    comm: CommId,
    /// Sender's rank in `comm`.
    src_in_comm: Rank,
    tag: Tag,
    bytes: u64,
    send_req: u32,
    recv_req: u32,
    /// For a clear-to-send: the request-to-send it answers.
    answers: u32,
    issued_ps: Ps,
}

/// Per-run MPI costs in picoseconds.
#[derive(Debug, Clone, Copy)]
struct MpiCosts {
    eager_limit: u64,
    alltoall_throttle: u32,
    send_ps: Ps,
    recv_ps: Ps,
    control_bytes: u64,
    control_priority: bool,
    intra_bits_per_s: u64,
    intra_latency_ps: Ps,
    /// A sender's notice to a receiver on its node (`[mpi.wait] notify_overhead_us`).
    notify_ps: Ps,
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

pub(crate) struct Engine<'a> {
    q: EventQueue<Ev>,
    pub fabric: Fabric,
    links: Observers,
    rng: Rng,
    costs: MpiCosts,
    jobs: &'a [JobState],
    ranks: Vec<RankRt>,
    reqs: Slab<Req>,
    msgs: Slab<Msg>,
    latency: LatencyHist,
    messages_bytes: u64,
    /// `Some` when every message is kept.
    messages: Option<Vec<MessageRecord>>,
    /// With the messages: per message (in their order), the hops on which it could meet a
    /// wake at each idle threshold.
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

/// Where a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Stop {
    /// When every rank has finished.
    #[default]
    Finished,
    /// When every rank has left its window (`Op::Window`) or finished.
    WindowEnd,
    /// At this simulated time: the state then is the run's end.
    At(Ps),
}

/// Ranks entering and leaving the timed region of their traces.
#[derive(Debug, Default)]
struct WindowRt {
    stop: Stop,
    /// The first entry.
    start_ps: Option<Ps>,
    /// Per rank: left the window (or finished).
    left: Vec<bool>,
    left_count: u64,
}

impl WindowRt {
    fn leave(&mut self, rank: u32) {
        if let Some(l) = self.left.get_mut(rank as usize).filter(|l| !**l) {
            *l = true;
            self.left_count += 1;
        }
    }
}

/// Everything that watches the links: statistics and the power models.
#[derive(Debug)]
pub(crate) struct Observers {
    pub stats: LinkStats,
    pub power: Power,
}

impl LinkObserver for Observers {
    #[inline]
    fn earliest_start(&mut self, ch: tracewatt_net::ChannelId, now: Ps) -> Ps {
        self.power.earliest_start(ch, now)
    }
    #[inline]
    fn on_transmit(
        &mut self,
        ch: tracewatt_net::ChannelId,
        start: Ps,
        end: Ps,
        bytes: u32,
        src: NodeId,
    ) {
        self.stats.on_transmit(ch, start, end, bytes, src);
        self.power.on_transmit(ch, start, end, bytes, src);
    }
    #[inline]
    fn on_packet(&mut self, ch: tracewatt_net::ChannelId, pkt: u32, token: u32, first_hop: bool) {
        self.stats.on_packet(ch, pkt, token, first_hop);
    }
    fn on_control(&mut self, ch: tracewatt_net::ChannelId, start: Ps, end: Ps) {
        self.stats.on_control(ch, start, end);
        self.power.on_control(ch, start, end);
    }
}

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

impl std::fmt::Debug for Engine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("ranks", &self.ranks.len())
            .finish()
    }
}

impl<'a> Engine<'a> {
    pub fn new(
        config: &Config,
        fabric: Fabric,
        links: Observers,
        rng: Rng,
        jobs: &'a [JobState],
        programs: Vec<(u32, Rank, NodeId, Program)>,
        source: &str,
    ) -> Self {
        let m = &config.machine;
        let costs = MpiCosts {
            eager_limit: config.mpi.eager_limit_bytes,
            alltoall_throttle: config.mpi.alltoall_throttle,
            send_ps: ns_to_ps(config.mpi.send_overhead_ns),
            recv_ps: ns_to_ps(config.mpi.recv_overhead_ns),
            control_bytes: config.mpi.control_bytes,
            control_priority: config.mpi.control_priority,
            intra_bits_per_s: (m.intra_node_bandwidth_gbps * 1e9).round() as u64,
            intra_latency_ps: ns_to_ps(m.intra_node_latency_ns),
            notify_ps: us_to_ps(config.mpi.wait.notify_overhead_us.unwrap_or(0.0)),
        };
        let ranks = programs
            .into_iter()
            .map(|(job, job_rank, node, program)| RankRt {
                job,
                job_rank,
                node,
                program,
                pending: VecDeque::new(),
                coll: None,
                state: RankState::NotStarted,
                activity: Activity::Idle,
                open_sends: 0,
                reqs: FlatMap::default(),
                matcher: Matcher::new(),
                waiting: Vec::new(),
                wait_remaining: 0,
                resume_ps: 0,
                ready_ps: 0,
                blocked_since: 0,
                finish_ps: 0,
                compute_ps: 0,
                wait_ps: 0,
                held_ps: 0,
                sends: 0,
                bytes_sent: 0,
                blocked_in: "",
            })
            .collect();
        Self {
            q: EventQueue::new(),
            fabric,
            links,
            rng,
            costs,
            jobs,
            ranks,
            reqs: Slab::default(),
            msgs: Slab::default(),
            latency: LatencyHist::default(),
            messages_bytes: 0,
            messages: config.output.messages.then(Vec::new),
            message_wake_hops: Vec::new(),
            done: 0,
            expand_buf: Vec::new(),
            notices: Vec::new(),
            power_due: Ps::MAX,
            released: Vec::new(),
            source: source.to_string(),
            window: WindowRt::default(),
        }
    }

    /// Where the run ends (default: when every rank has finished).
    pub fn stop(mut self, stop: Stop) -> Self {
        self.window = WindowRt {
            stop,
            left: vec![false; self.ranks.len()],
            ..WindowRt::default()
        };
        self
    }

    /// Runs to completion. `progress` is called now and then; returning `false` stops the run.
    pub fn run(
        mut self,
        progress: &mut dyn FnMut(Progress) -> bool,
    ) -> Result<(RunOutput, Fabric, Observers), SimError> {
        for job in self.jobs {
            for r in job.first_rank..job.first_rank + job.ranks {
                self.q.push(job.start_ps, Ev::Wake { rank: r });
            }
        }
        let total = self.ranks.len() as u64;
        let mut next_report = 0u64;
        let mut stopped = None;
        while let Some((now, ev)) = self.q.pop() {
            if let Stop::At(at) = self.window.stop {
                if now > at {
                    stopped = Some(at);
                    break;
                }
            }
            // Past this, sums of times could overflow (docs/config.md, Limits).
            if now > MAX_SIMULATED_PS {
                return Err(SimError::TimeLimit {
                    source_name: self.source.clone(),
                    time_s: to_seconds(now),
                    limit_s: to_seconds(MAX_SIMULATED_PS),
                });
            }
            match ev {
                Ev::NetArrive { pkt } => self.net(now, NetEvent::Arrive { pkt })?,
                Ev::NetLinkFree { ch } => self.net(now, NetEvent::LinkFree { ch })?,
                Ev::NetCredit { ch } => self.net(now, NetEvent::Credit { ch })?,
                Ev::NetCreditOut { id } => self.net(now, NetEvent::CreditOut { id })?,
                Ev::Wake { rank } => self.resume(rank, now)?,
                Ev::Issue { msg, wake } => {
                    let rank = self.msgs[msg].src;
                    self.issue(msg, now)?;
                    if wake {
                        self.resume(rank, now)?;
                    }
                }
                Ev::LocalArrive { msg } => self.arrive(msg, now)?,
                Ev::PowerDue => self.power_due(now)?,
            }
            if self.links.power.holds_deliveries() {
                self.schedule_power_due(now);
            }
            if self.window.stop == Stop::WindowEnd && self.window.left_count == total {
                stopped = Some(now);
                break;
            }
            if self.q.events_processed() >= next_report {
                next_report = self.q.events_processed() + (1 << 16);
                let p = Progress {
                    sim_time_s: to_seconds(now),
                    events: self.q.events_processed(),
                    ranks_done: self.done,
                    ranks_total: total,
                };
                if !progress(p) {
                    return Err(SimError::Interrupted {
                        time_s: to_seconds(now),
                    });
                }
            }
        }
        if stopped.is_none() && self.done < total {
            return Err(self.deadlock());
        }
        let makespan_ps =
            stopped.unwrap_or_else(|| self.ranks.iter().map(|r| r.finish_ps).max().unwrap_or(0));
        self.links.stats.finish(makespan_ps);
        progress(Progress {
            sim_time_s: to_seconds(makespan_ps),
            events: self.q.events_processed(),
            ranks_done: self.done,
            ranks_total: total,
        });
        let ranks = self
            .ranks
            .iter()
            .map(|r| RankSummary {
                job: r.job,
                rank: r.job_rank,
                node: r.node,
                finish_ps: r.finish_ps,
                compute_ps: r.compute_ps,
                wait_ps: r.wait_ps,
                held_ps: r.held_ps,
                sends: r.sends,
                bytes_sent: r.bytes_sent,
            })
            .collect();
        let out = RunOutput {
            makespan_ps,
            ranks,
            latency: self.latency,
            messages: self.messages.take().unwrap_or_default(),
            message_wake_hops: std::mem::take(&mut self.message_wake_hops),
            messages_bytes: self.messages_bytes,
            events: self.q.events_processed(),
            window_start_ps: self.window.start_ps,
        };
        Ok((out, self.fabric, self.links))
    }

    /// Lets the fabric handle one of its events.
    fn net(&mut self, now: Ps, ev: NetEvent) -> Result<(), SimError> {
        self.fabric.handle(
            now,
            ev,
            &mut NetQ(&mut self.q),
            &mut self.links,
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
                    if self.links.power.deliver(node, token, now) {
                        self.arrive(token, now)?;
                    }
                }
            }
        }
        self.notices = notices;
        Ok(())
    }

    /// Queues a `PowerDue` event for the earliest time a power model may release messages, unless
    /// one is queued for that time or earlier already.
    #[inline(never)]
    fn schedule_power_due(&mut self, now: Ps) {
        if let Some(t) = self.links.power.due() {
            if t < self.power_due {
                self.power_due = t.max(now);
                self.q.push(self.power_due, Ev::PowerDue);
            }
        }
    }

    /// Messages a power model held (a NIC waiting for its interrupt) reach MPI.
    #[inline(never)]
    fn power_due(&mut self, now: Ps) -> Result<(), SimError> {
        self.power_due = Ps::MAX;
        let mut released = std::mem::take(&mut self.released);
        self.links.power.release(now, &mut released);
        for msg in released.drain(..) {
            self.arrive(msg, now)?;
        }
        self.released = released;
        Ok(())
    }

    /// The rank's core starts `activity` (signalled to the power models that watch ranks).
    #[inline]
    fn set_activity(&mut self, rank: u32, activity: Activity, now: Ps) {
        if !self.links.power.observes_ranks() {
            return;
        }
        let r = &mut self.ranks[rank as usize];
        // Every wait is its own (its spin threshold starts afresh), even right after another.
        if r.activity != activity || matches!(activity, Activity::Wait { .. }) {
            r.activity = activity;
            let node = r.node;
            self.links.power.on_rank(rank, node, activity, now);
        }
    }

    fn comm(&self, rank: u32, comm: CommId) -> Result<&'a Comm, SimError> {
        let r = &self.ranks[rank as usize];
        let job = &self.jobs[r.job as usize];
        job.comms.get(comm as usize).ok_or_else(|| {
            self.program_error(
                rank,
                format!(
                    "communicator {comm} does not exist (the job has {})",
                    job.comms.len()
                ),
            )
        })
    }

    fn program_error(&self, rank: u32, message: String) -> SimError {
        let r = &self.ranks[rank as usize];
        SimError::Program(tracewatt_workload::ProgramError {
            source_name: format!("{}: job `{}`", self.source, self.jobs[r.job as usize].name),
            rank: r.job_rank,
            offset: None,
            message,
        })
    }

    fn global_rank(&self, rank: u32, comm: &Comm, comm_rank: Rank) -> Result<u32, SimError> {
        let job = &self.jobs[self.ranks[rank as usize].job as usize];
        match comm.members.get(comm_rank as usize) {
            Some(jr) => Ok(job.first_rank + jr),
            None => Err(self.program_error(
                rank,
                format!(
                    "peer rank {comm_rank} is outside its communicator of {} ranks",
                    comm.members.len()
                ),
            )),
        }
    }

    /// Executes the rank's operations until it blocks, computes or ends.
    fn advance(&mut self, rank: u32, now: Ps) -> Result<(), SimError> {
        loop {
            let ri = rank as usize;
            let op = match self.ranks[ri].pending.pop_front() {
                Some(op) => op,
                None if self.ranks[ri].coll.is_some() => {
                    self.next_piece(rank);
                    continue;
                }
                None => match self.ranks[ri].program.next() {
                    Some(Ok(op)) => op,
                    Some(Err(e)) => return Err(SimError::Program(e)),
                    None => {
                        let r = &mut self.ranks[ri];
                        r.state = RankState::Done;
                        r.finish_ps = now;
                        self.done += 1;
                        self.window.leave(rank);
                        self.set_activity(rank, Activity::Done, now);
                        return Ok(());
                    }
                },
            };
            match op {
                Op::Window { start: true } => {
                    self.window.start_ps.get_or_insert(now);
                }
                Op::Window { start: false } => self.window.leave(rank),
                Op::Compute { ps } => {
                    if ps > 0 {
                        let ps = if self.links.power.stretches_compute() {
                            self.links.power.compute_ps(rank, now, ps)
                        } else {
                            ps
                        };
                        self.ranks[ri].compute_ps += ps;
                        self.ranks[ri].state = RankState::Busy;
                        self.set_activity(rank, Activity::Compute, now);
                        self.q.push(now + ps, Ev::Wake { rank });
                        return Ok(());
                    }
                }
                Op::WaitUntil { ps } => {
                    let job = self.ranks[ri].job as usize;
                    let at = self.jobs[job].start_ps.saturating_add(ps);
                    if at > now {
                        self.ranks[ri].state = RankState::Sleeping;
                        self.set_activity(rank, Activity::Idle, now);
                        self.q.push(at, Ev::Wake { rank });
                        return Ok(());
                    }
                }
                Op::Send {
                    comm,
                    dst,
                    tag,
                    bytes,
                } => {
                    self.ranks[ri]
                        .pending
                        .push_front(Op::Wait { req: BLOCKING_REQ });
                    if self.isend(rank, comm, dst, tag, bytes, BLOCKING_REQ, now)? {
                        return Ok(());
                    }
                }
                Op::Isend {
                    comm,
                    dst,
                    tag,
                    bytes,
                    req,
                } => {
                    if self.isend(rank, comm, dst, tag, bytes, req, now)? {
                        return Ok(());
                    }
                }
                Op::Recv {
                    comm,
                    src,
                    tag,
                    bytes,
                } => {
                    self.irecv(rank, comm, src, tag, bytes, BLOCKING_REQ, now)?;
                    self.ranks[ri]
                        .pending
                        .push_front(Op::Wait { req: BLOCKING_REQ });
                }
                Op::Irecv {
                    comm,
                    src,
                    tag,
                    bytes,
                    req,
                } => self.irecv(rank, comm, src, tag, bytes, req, now)?,
                Op::Wait { req } => {
                    if self.wait(rank, std::slice::from_ref(&req), now, "wait") {
                        return Ok(());
                    }
                }
                Op::Waitall { reqs } => {
                    if self.wait(rank, &reqs, now, "waitall") {
                        return Ok(());
                    }
                }
                Op::Collective {
                    comm,
                    kind,
                    root,
                    bytes,
                    algo,
                } => {
                    let c = self.comm(rank, comm)?;
                    let me = self.comm_rank(rank, c)?;
                    let e = Expansion::collective(
                        comm,
                        kind,
                        algo,
                        c.members.len() as u32,
                        me,
                        root,
                        bytes,
                        self.costs.alltoall_throttle,
                    )
                    .map_err(|e| self.program_error(rank, e.to_string()))?;
                    self.ranks[ri].coll = Some(Box::new(e));
                }
                Op::Alltoallv {
                    comm,
                    send_bytes,
                    recv_bytes,
                    algo,
                } => {
                    let c = self.comm(rank, comm)?;
                    let me = self.comm_rank(rank, c)?;
                    let e = Expansion::alltoallv(
                        comm,
                        algo,
                        c.members.len() as u32,
                        me,
                        send_bytes,
                        recv_bytes,
                        self.costs.alltoall_throttle,
                    )
                    .map_err(|e| self.program_error(rank, e.to_string()))?;
                    self.ranks[ri].coll = Some(Box::new(e));
                }
            }
        }
    }

    /// Moves the next piece of the rank's collective into `pending`, or ends the collective.
    fn next_piece(&mut self, rank: u32) {
        // Enough phases per piece to amortise the call, few enough that 8,192 ranks in an
        // all-to-all hold only a few MB of operations.
        const PIECE_OPS: usize = 64;
        let r = &mut self.ranks[rank as usize];
        let buf = &mut self.expand_buf;
        buf.clear();
        if r.coll.as_mut().is_some_and(|e| e.fill(buf, PIECE_OPS)) {
            r.pending.extend(buf.drain(..));
        } else {
            r.coll = None;
        }
    }

    fn comm_rank(&self, rank: u32, comm: &Comm) -> Result<Rank, SimError> {
        let jr = self.ranks[rank as usize].job_rank;
        // Most communicators (the world above all) list job rank r at position r.
        if comm.members.get(jr as usize) == Some(&jr) {
            return Ok(jr);
        }
        comm.rank_of(jr).ok_or_else(|| {
            self.program_error(
                rank,
                "the rank is not a member of the communicator it uses".into(),
            )
        })
    }

    fn new_req(&mut self, rank: u32, id: ReqId, send: bool, bytes: u64) -> Result<u32, SimError> {
        let slot = self.reqs.insert(Req {
            done_ps: 0,
            bytes,
            rank,
            msg: u32::MAX,
            send,
            done: false,
            waited: false,
        });
        if !self.ranks[rank as usize].reqs.insert(id, slot) {
            let what = if id >= RESERVED_REQ_BASE {
                "an internal"
            } else {
                "a"
            };
            return Err(self.program_error(
                rank,
                format!("{what} request id {id} is reused while still outstanding"),
            ));
        }
        Ok(slot)
    }

    /// What notifying `dst` of a message from `src` costs the sender: only to another rank
    /// on its node (a message to itself needs no notice).
    fn local_notify_ps(&self, src: u32, dst: u32) -> Ps {
        let n = self.costs.notify_ps;
        if n > 0 && src != dst && self.ranks[src as usize].node == self.ranks[dst as usize].node {
            n
        } else {
            0
        }
    }

    /// Starts a send. Returns true if the rank is now busy (send overhead).
    #[allow(clippy::too_many_arguments)]
    fn isend(
        &mut self,
        rank: u32,
        comm: CommId,
        dst: Rank,
        tag: Tag,
        bytes: u64,
        id: ReqId,
        now: Ps,
    ) -> Result<bool, SimError> {
        let c = self.comm(rank, comm)?;
        let dst_g = self.global_rank(rank, c, dst)?;
        let me = self.comm_rank(rank, c)?;
        let req = self.new_req(rank, id, true, bytes)?;
        let kind = if bytes <= self.costs.eager_limit {
            MsgKind::Eager
        } else {
            MsgKind::Rts
        };
        let msg = self.msgs.insert(Msg {
            kind,
            src: rank,
            dst: dst_g,
            comm,
            src_in_comm: me,
            tag,
            bytes,
            send_req: req,
            recv_req: u32::MAX,
            answers: u32::MAX,
            issued_ps: now,
        });
        self.reqs[req].msg = msg;
        let r = &mut self.ranks[rank as usize];
        r.sends += 1;
        r.open_sends += 1;
        r.bytes_sent += bytes;
        // To a rank on its node, the sender also notifies the receiver before it goes on.
        let issue_ps = self.costs.send_ps + self.local_notify_ps(rank, dst_g);
        let r = &mut self.ranks[rank as usize];
        let wake = issue_ps > 0;
        if wake {
            r.state = RankState::Busy;
            self.set_activity(rank, Activity::Mpi, now);
        }
        self.q.push(now + issue_ps, Ev::Issue { msg, wake });
        Ok(wake)
    }

    #[allow(clippy::too_many_arguments)]
    fn irecv(
        &mut self,
        rank: u32,
        comm: CommId,
        src: SrcSel,
        tag: TagSel,
        bytes: u64,
        id: ReqId,
        now: Ps,
    ) -> Result<(), SimError> {
        let c = self.comm(rank, comm)?;
        if let SrcSel::Rank(s) = src {
            self.global_rank(rank, c, s)?;
        }
        let req = self.new_req(rank, id, false, bytes)?;
        if let Some((_env, msg)) = self.ranks[rank as usize].matcher.post(comm, src, tag, req) {
            self.matched(msg, req, now)?;
        }
        Ok(())
    }

    /// A receive and a message (eager data or request-to-send) have matched.
    fn matched(&mut self, msg: u32, req: u32, now: Ps) -> Result<(), SimError> {
        let m = self.msgs[msg];
        match m.kind {
            MsgKind::Eager => {
                self.msgs.remove(msg);
                self.finish_at(req, now + self.costs.recv_ps)
            }
            MsgKind::Rts => {
                self.msgs[msg].recv_req = req;
                let cts = self.msgs.insert(Msg {
                    kind: MsgKind::Cts,
                    src: m.dst,
                    dst: m.src,
                    comm: m.comm,
                    src_in_comm: 0,
                    tag: m.tag,
                    bytes: 0,
                    send_req: u32::MAX,
                    recv_req: u32::MAX,
                    answers: msg,
                    issued_ps: now,
                });
                self.issue(cts, now)
            }
            MsgKind::Cts | MsgKind::Data => unreachable!("only eager data and RTS are matched"),
        }
    }

    /// Request `req` completes at `t` (now or later). A rank whose wait it ends continues at
    /// the latest completion time of the requests it waited for.
    fn finish_at(&mut self, req: u32, t: Ps) -> Result<(), SimError> {
        let r = &mut self.reqs[req];
        r.done = true;
        r.done_ps = t;
        if r.send {
            self.ranks[r.rank as usize].open_sends -= 1;
        }
        let r = &self.reqs[req];
        if !r.waited {
            return Ok(());
        }
        let (rank, ready) = (r.rank, r.ready_ps(self.costs.recv_ps));
        let rr = &mut self.ranks[rank as usize];
        rr.wait_remaining -= 1;
        rr.resume_ps = rr.resume_ps.max(t);
        rr.ready_ps = rr.ready_ps.max(ready);
        if rr.wait_remaining == 0 {
            debug_assert_eq!(rr.state, RankState::Blocked);
            let now = self.q.now();
            if rr.resume_ps > now {
                self.q.push(rr.resume_ps, Ev::Wake { rank });
            } else {
                self.resume(rank, now)?;
            }
        }
        Ok(())
    }

    /// The rank continues at `now`: it has started, finished computing or issuing a send, or
    /// its wait is over (accounted, and its requests freed).
    fn resume(&mut self, rank: u32, now: Ps) -> Result<(), SimError> {
        let state = self.ranks[rank as usize].state;
        if !matches!(state, RankState::Waking { .. }) && self.links.power.delays_wakes() {
            let ready = self.ranks[rank as usize].ready_ps.min(now);
            let go_on = self.links.power.wake_at(rank, ready, now);
            if go_on > now {
                let blocked = state == RankState::Blocked;
                let rr = &mut self.ranks[rank as usize];
                rr.state = RankState::Waking { blocked };
                // A wait's hold is part of the wait (`wait_ps`, counted at its end).
                if !blocked {
                    rr.held_ps += go_on - now;
                }
                self.q.push(go_on, Ev::Wake { rank });
                return Ok(());
            }
        }
        let rr = &mut self.ranks[rank as usize];
        if matches!(
            rr.state,
            RankState::Blocked | RankState::Waking { blocked: true }
        ) {
            rr.wait_ps += now - rr.blocked_since;
            for slot in rr.waiting.drain(..) {
                self.reqs.remove(slot);
            }
        }
        rr.state = RankState::Running;
        self.advance(rank, now)
    }

    /// Waits for the requests `ids`. Returns true if the rank blocks.
    fn wait(&mut self, rank: u32, ids: &[ReqId], now: Ps, what: &'static str) -> bool {
        let mut waiting = std::mem::take(&mut self.ranks[rank as usize].waiting);
        waiting.clear();
        let mut remaining = 0;
        let (mut resume_ps, mut ready_ps) = (now, now);
        for id in ids {
            // Waiting on an unknown request is MPI_Wait on a null or already-completed request:
            // it returns at once.
            let Some(slot) = self.ranks[rank as usize].reqs.remove(id) else {
                continue;
            };
            let r = &mut self.reqs[slot];
            if r.done {
                resume_ps = resume_ps.max(r.done_ps);
                ready_ps = ready_ps.max(r.ready_ps(self.costs.recv_ps));
                self.reqs.remove(slot);
            } else {
                r.waited = true;
                remaining += 1;
                waiting.push(slot);
            }
        }
        let rr = &mut self.ranks[rank as usize];
        rr.waiting = waiting;
        if remaining == 0 && resume_ps == now {
            return false;
        }
        rr.wait_remaining = remaining;
        rr.resume_ps = resume_ps;
        rr.ready_ps = ready_ps;
        rr.state = RankState::Blocked;
        rr.blocked_since = now;
        rr.blocked_in = what;
        if remaining == 0 {
            self.q.push(resume_ps, Ev::Wake { rank });
        }
        let sends_pending = self.ranks[rank as usize].open_sends > 0;
        self.set_activity(rank, Activity::Wait { sends_pending }, now);
        true
    }

    /// A message leaves its sender's MPI layer: into the fabric, or a memory copy on one node.
    fn issue(&mut self, msg: u32, now: Ps) -> Result<(), SimError> {
        let m = self.msgs[msg];
        if m.kind != MsgKind::Data {
            // A rendezvous data message continues its request's count (see `arrive`).
            if let Some(w) = self.links.stats.wake_hops() {
                w.begin(msg);
            }
        }
        if m.kind == MsgKind::Eager {
            // Eager sends complete locally once the data is handed over (buffered).
            self.finish_at(m.send_req, now)?;
        }
        let wire = match m.kind {
            MsgKind::Eager | MsgKind::Data => m.bytes,
            MsgKind::Rts | MsgKind::Cts => self.costs.control_bytes,
        };
        let src_node = self.ranks[m.src as usize].node;
        let dst_node = self.ranks[m.dst as usize].node;
        if src_node == dst_node {
            // Eager sends and requests-to-send paid the notice when posted (`isend`); the MPI
            // layer sends clear-to-sends and rendezvous data, and notifies, as it progresses.
            let start = match m.kind {
                MsgKind::Eager | MsgKind::Rts => now,
                MsgKind::Cts | MsgKind::Data => now + self.local_notify_ps(m.src, m.dst),
            };
            let t = start
                + self.costs.intra_latency_ps
                + serialization_ps(wire, self.costs.intra_bits_per_s);
            self.q.push(t, Ev::LocalArrive { msg });
            if self.links.power.observes_ranks() && m.kind != MsgKind::Cts {
                // The receiving core copies the data (or a request) out of shared memory.
                self.links.power.on_copy(m.dst, start, t);
            }
        } else {
            // Rendezvous control messages do not queue behind bulk data at the NIC.
            let urgent =
                self.costs.control_priority && matches!(m.kind, MsgKind::Rts | MsgKind::Cts);
            // Only rendezvous data completes its send at injection (`injected`).
            let notify_injected = m.kind == MsgKind::Data;
            self.fabric.send(
                now,
                msg,
                (src_node, dst_node),
                wire,
                urgent,
                notify_injected,
                &mut NetQ(&mut self.q),
                &mut self.links,
            );
            self.after_fabric(now)?;
        }
        Ok(())
    }

    /// The last packet of rendezvous data leaves the source NIC at `at`: its send is done.
    fn injected(&mut self, msg: u32, at: Ps) -> Result<(), SimError> {
        let m = self.msgs[msg];
        debug_assert_eq!(
            m.kind,
            MsgKind::Data,
            "only rendezvous data asks to be notified"
        );
        self.finish_at(m.send_req, at)
    }

    /// A message arrived at its destination rank.
    fn arrive(&mut self, msg: u32, now: Ps) -> Result<(), SimError> {
        let m = self.msgs[msg];
        match m.kind {
            MsgKind::Eager | MsgKind::Rts => {
                if m.kind == MsgKind::Eager {
                    self.record_latency(msg, &m, now);
                }
                let env = Envelope {
                    comm: m.comm,
                    src: m.src_in_comm,
                    tag: m.tag,
                };
                if let Some(req) = self.ranks[m.dst as usize].matcher.arrive(env, msg) {
                    self.matched(msg, req, now)?;
                }
            }
            MsgKind::Cts => {
                // Clear to send: the data follows at once, from the original sender.
                self.msgs.remove(msg);
                let data = m.answers;
                if let Some(w) = self.links.stats.wake_hops() {
                    w.carry(data, msg);
                }
                self.msgs[data].kind = MsgKind::Data;
                self.issue(data, now)?;
            }
            MsgKind::Data => {
                self.record_latency(msg, &m, now);
                let local = self.ranks[m.src as usize].node == self.ranks[m.dst as usize].node;
                if local {
                    self.finish_at(m.send_req, now)?;
                }
                self.msgs.remove(msg);
                self.finish_at(m.recv_req, now + self.costs.recv_ps)?;
            }
        }
        Ok(())
    }

    fn record_latency(&mut self, msg: u32, m: &Msg, now: Ps) {
        self.latency.record(now - m.issued_ps);
        self.messages_bytes += m.bytes;
        if let Some(v) = &mut self.messages {
            v.push(MessageRecord {
                src: m.src,
                dst: m.dst,
                bytes: m.bytes,
                start_ps: m.issued_ps,
                end_ps: now,
            });
            if let Some(w) = self.links.stats.wake_hops() {
                self.message_wake_hops.extend(w.total(msg));
            }
        }
    }

    /// Describes every rank that has not finished, for the deadlock error.
    fn deadlock(&self) -> SimError {
        let mut lines = Vec::new();
        let mut blocked = 0;
        for (g, r) in self.ranks.iter().enumerate() {
            if r.state == RankState::Done {
                continue;
            }
            blocked += 1;
            if lines.len() >= 16 {
                continue;
            }
            let job = &self.jobs[r.job as usize];
            let mut what = Vec::new();
            for slot in &r.waiting {
                let q = &self.reqs[*slot];
                if q.done {
                    continue;
                }
                if q.send {
                    let m = &self.msgs[q.msg];
                    let peer = self.ranks[m.dst as usize].job_rank;
                    what.push(format!(
                        "a send of {} bytes to rank {peer} with tag {} that no receive matches (rendezvous)",
                        q.bytes, m.tag
                    ));
                    continue;
                }
                // A receive not done is still posted: nothing in flight is left to match it.
                let posted = r.matcher.posted().find(|(.., p)| **p == *slot);
                let Some((comm, src, tag, _)) = posted else {
                    what.push(format!("a receive of {} bytes", q.bytes));
                    continue;
                };
                let s = match src {
                    SrcSel::Rank(s) => format!("rank {s}"),
                    SrcSel::Any => "any source".into(),
                };
                let t = match tag {
                    TagSel::Tag(t) if t < 0 => "a collective message".to_string(),
                    TagSel::Tag(t) => format!("tag {t}"),
                    TagSel::Any => "any tag".into(),
                };
                what.push(format!(
                    "a receive from {s} with {t} on communicator {comm} ({} bytes)",
                    q.bytes
                ));
            }
            let _ = g;
            lines.push(format!(
                "  job `{}` rank {} (node {}) in {}: waits for {}",
                job.name,
                r.job_rank,
                r.node,
                if r.blocked_in.is_empty() {
                    "?"
                } else {
                    r.blocked_in
                },
                if what.is_empty() {
                    "nothing known".into()
                } else {
                    what.join("; ")
                }
            ));
        }
        if blocked > lines.len() {
            lines.push(format!("  ... and {} more", blocked - lines.len()));
        }
        SimError::Deadlock {
            time_s: to_seconds(self.q.now()),
            blocked,
            details: lines.join("\n"),
        }
    }
}
