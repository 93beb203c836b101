//! The MPI layer's point-to-point protocol: requests, eager and rendezvous messages
//! (request-to-send, clear-to-send, data), matching receives with arrivals, waits, and the
//! costs of each step. A message between nodes goes to the network ([`super::network`]),
//! between ranks of one node through memory.

use super::ranks::RankState;
use super::{Engine, Ev, MessageRecord};
use crate::error::SimError;
use tracewatt_core::time::serialization_ps;
use tracewatt_core::Ps;
use tracewatt_net::Network;
use tracewatt_power::Activity;
use tracewatt_workload::matching::Envelope;
use tracewatt_workload::op::RESERVED_REQ_BASE;
use tracewatt_workload::{CommId, Rank, ReqId, SrcSel, Tag, TagSel};

/// Request id used for the implicit request of a blocking send or receive.
pub(super) const BLOCKING_REQ: ReqId = u32::MAX;

/// The owner of a request its rank's program waits for (others belong to a non-blocking
/// collective: their owner is the slot of the request that collective completes).
pub(super) const RANK_OWNED: u32 = u32::MAX;

/// A communicator of a job: its members' job ranks, and the inverse.
#[derive(Debug)]
pub(crate) struct Comm {
    pub members: Vec<Rank>,
    /// (job rank, comm rank), sorted by job rank.
    index: Vec<(Rank, Rank)>,
    /// Members per node where every node holds the same number of them in consecutive comm
    /// ranks (a full-lane alltoall's lanes), else 1.
    pub node_ranks: u32,
}

impl Comm {
    /// `rank_node` gives each job rank's node.
    pub fn new(members: Vec<Rank>, rank_node: &[u32]) -> Self {
        let mut index: Vec<(Rank, Rank)> = members
            .iter()
            .enumerate()
            .map(|(i, r)| (*r, i as Rank))
            .collect();
        index.sort_unstable();
        let node_ranks = node_blocks(&members, rank_node);
        Self {
            members,
            index,
            node_ranks,
        }
    }
    fn rank_of(&self, job_rank: Rank) -> Option<Rank> {
        self.index
            .binary_search_by_key(&job_rank, |(j, _)| *j)
            .ok()
            .map(|i| self.index[i].1)
    }
}

/// The size of the equal blocks of consecutive members that share a node, each node holding one
/// block; 1 if the members are not laid out so.
fn node_blocks(members: &[Rank], rank_node: &[u32]) -> u32 {
    let node = |i: usize| rank_node[members[i] as usize];
    let Some(&first) = members.first() else {
        return 1;
    };
    let k = members
        .iter()
        .take_while(|&&m| rank_node[m as usize] == rank_node[first as usize])
        .count();
    if !members.len().is_multiple_of(k) {
        return 1;
    }
    let mut seen = std::collections::BTreeSet::new();
    for start in (0..members.len()).step_by(k) {
        let n = node(start);
        if !seen.insert(n) || (start..start + k).any(|i| node(i) != n) {
            return 1;
        }
    }
    k as u32
}

/// A request, in 32 bytes on a 32-byte boundary: a message's completion touches its receive
/// request in a cache line of its own, never two. A receive's selector (communicator, source,
/// tag) is in its rank's matcher while it waits for a match.
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
pub(super) struct Req {
    pub done_ps: Ps,
    pub bytes: u64,
    pub rank: u32,
    /// For a send: its message (rendezvous sends wait for the clear-to-send).
    pub msg: u32,
    /// [`RANK_OWNED`], or the non-blocking collective whose step waits for it.
    pub owner: u32,
    pub send: bool,
    /// The completion time is known: `done_ps`, possibly still in the future. A completion is
    /// recorded as soon as it is certain, not by an event at that time: only a rank's wait needs
    /// an event (one `Wake` per wait, not one per request).
    pub done: bool,
    pub waited: bool,
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
pub(super) enum MsgKind {
    Eager,
    Rts,
    Cts,
    Data,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Msg {
    kind: MsgKind,
    /// Global ranks.
    pub src: u32,
    pub dst: u32,
    comm: CommId,
    /// Sender's rank in `comm`.
    src_in_comm: Rank,
    pub tag: Tag,
    bytes: u64,
    send_req: u32,
    recv_req: u32,
    /// For a clear-to-send: the request-to-send it answers.
    answers: u32,
    issued_ps: Ps,
}

/// Per-run MPI costs in picoseconds (from `[mpi]`, and the machine's intra-node copies).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MpiCosts {
    /// Messages up to this size are sent eagerly, larger ones by rendezvous.
    pub eager_limit: u64,
    pub alltoall_throttle: u32,
    pub send_ps: Ps,
    pub recv_ps: Ps,
    /// Size of a rendezvous control message on the wire.
    pub control_bytes: u64,
    /// Rendezvous control messages go ahead of bulk data at the NIC.
    pub control_priority: bool,
    pub intra_bits_per_s: u64,
    pub intra_latency_ps: Ps,
    /// A sender's notice to a receiver on its node (`[mpi.wait] notify_overhead_us`).
    pub notify_ps: Ps,
}

impl<'a, N: Network> Engine<'a, N> {
    pub(super) fn comm(&self, rank: u32, comm: CommId) -> Result<&'a Comm, SimError> {
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

    pub(super) fn comm_rank(&self, rank: u32, comm: &Comm) -> Result<Rank, SimError> {
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

    /// A new request of `rank`: its program's request `id` if `owner` is [`RANK_OWNED`], else
    /// one of the non-blocking collective `owner` (which keeps its slots itself).
    pub(super) fn new_req(
        &mut self,
        rank: u32,
        id: ReqId,
        send: bool,
        bytes: u64,
        owner: u32,
    ) -> Result<u32, SimError> {
        let slot = self.reqs.insert(Req {
            done_ps: 0,
            bytes,
            rank,
            msg: u32::MAX,
            owner,
            send,
            done: false,
            waited: false,
        });
        if owner == RANK_OWNED && !self.ranks[rank as usize].reqs.insert(id, slot) {
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
    pub(super) fn isend(
        &mut self,
        rank: u32,
        comm: CommId,
        dst: Rank,
        tag: Tag,
        bytes: u64,
        id: ReqId,
        now: Ps,
    ) -> Result<bool, SimError> {
        let (msg, _, issue_ps) =
            self.new_send(rank, (comm, dst, tag, bytes), id, RANK_OWNED, now)?;
        let r = &mut self.ranks[rank as usize];
        let wake = issue_ps > 0;
        if wake {
            r.state = RankState::Busy;
            self.set_activity(rank, Activity::Mpi, now);
        }
        self.q.push(now + issue_ps, Ev::Issue { msg, wake });
        Ok(wake)
    }

    /// A send's request (of `owner`, see [`Self::new_req`]) and message, posted at `now` to
    /// (`comm`, `dst`, `tag`, `bytes`). Returns the message, the request and the sender's
    /// overhead before the message leaves (the caller issues it then).
    pub(super) fn new_send(
        &mut self,
        rank: u32,
        (comm, dst, tag, bytes): (CommId, Rank, Tag, u64),
        id: ReqId,
        owner: u32,
        now: Ps,
    ) -> Result<(u32, u32, Ps), SimError> {
        let c = self.comm(rank, comm)?;
        let dst_g = self.global_rank(rank, c, dst)?;
        let me = self.comm_rank(rank, c)?;
        let req = self.new_req(rank, id, true, bytes, owner)?;
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
        Ok((msg, req, issue_ps))
    }

    /// Posts a receive (of `owner`, see [`Self::new_req`]); returns its request.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn irecv(
        &mut self,
        rank: u32,
        comm: CommId,
        src: SrcSel,
        tag: TagSel,
        bytes: u64,
        id: ReqId,
        owner: u32,
        now: Ps,
    ) -> Result<u32, SimError> {
        let c = self.comm(rank, comm)?;
        if let SrcSel::Rank(s) = src {
            self.global_rank(rank, c, s)?;
        }
        let req = self.new_req(rank, id, false, bytes, owner)?;
        if let Some((_env, msg)) = self.ranks[rank as usize].matcher.post(comm, src, tag, req) {
            self.matched(msg, req, now)?;
        }
        Ok(req)
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
    /// the latest completion time of the requests it waited for; so does a non-blocking
    /// collective's step.
    pub(super) fn finish_at(&mut self, req: u32, t: Ps) -> Result<(), SimError> {
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
        if r.owner != RANK_OWNED {
            return self.nbc_req_done(r.owner, t);
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

    /// Waits for the requests `ids`. Returns true if the rank blocks.
    pub(super) fn wait(&mut self, rank: u32, ids: &[ReqId], now: Ps, what: &'static str) -> bool {
        let mut waiting = std::mem::take(&mut self.ranks[rank as usize].waiting);
        waiting.clear();
        let mut remaining = 0;
        let (mut resume_ps, mut ready_ps) = (now, now);
        for id in ids {
            // Waiting on an unknown request is MPI_Wait on a null or already-completed request:
            // it returns at once.
            let Some(slot) = self.ranks[rank as usize].reqs.remove(*id) else {
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

    /// A message leaves its sender's MPI layer: into the network, or a memory copy on one node.
    pub(super) fn issue(&mut self, msg: u32, now: Ps) -> Result<(), SimError> {
        let m = self.msgs[msg];
        if m.kind != MsgKind::Data {
            // A rendezvous data message continues its request's count (see `arrive`).
            self.observers.stats.message_begins(msg);
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
            if self.observers.power.observes_ranks() && m.kind != MsgKind::Cts {
                // The receiving core copies the data (or a request) out of shared memory.
                self.observers.power.on_copy(m.dst, start, t);
            }
        } else {
            // Rendezvous control messages do not queue behind bulk data at the NIC.
            let urgent =
                self.costs.control_priority && matches!(m.kind, MsgKind::Rts | MsgKind::Cts);
            // Only rendezvous data completes its send at injection (`injected`).
            let notify_injected = m.kind == MsgKind::Data;
            self.network_send(
                now,
                msg,
                (src_node, dst_node),
                wire,
                urgent,
                notify_injected,
            )?;
        }
        Ok(())
    }

    /// The last packet of rendezvous data leaves the source NIC at `at`: its send is done.
    pub(super) fn injected(&mut self, msg: u32, at: Ps) -> Result<(), SimError> {
        let m = self.msgs[msg];
        debug_assert_eq!(
            m.kind,
            MsgKind::Data,
            "only rendezvous data asks to be notified"
        );
        self.finish_at(m.send_req, at)
    }

    /// A message arrived at its destination rank.
    pub(super) fn arrive(&mut self, msg: u32, now: Ps) -> Result<(), SimError> {
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
                self.observers.stats.message_continues(data, msg);
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
            self.observers
                .stats
                .message_wakes(msg, &mut self.message_wake_hops);
        }
    }
}
