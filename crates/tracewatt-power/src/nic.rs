//! NICs with interrupt coalescing (docs/references.md section 3, Kodama et al.): per node, frames
//! received wait for an interrupt, which fires when no frame has arrived for `rx_usecs` (the timer
//! restarts at each frame) or when `rx_max_frames` frames are pending. The NIC has one coalescing
//! timer: a transmit completion starts it at `tx_usecs` when no received frame is pending, and a
//! frame received meanwhile restarts it at `rx_usecs`, so completions ride on receive interrupts
//! while frames keep coming. One interrupt services everything pending, received and transmitted
//! alike, as one NAPI poll of a single-vector NIC does.
//!
//! A message reaches MPI only at the interrupt that services its last frame, so coalescing
//! delays receives. Power above the node's idle power is the paper's regression,
//! `w_per_mbps x Mb/s + w_per_interrupt_per_s x interrupts/s`, integrated exactly: every bit
//! moved costs `w_per_mbps / 1e6` J and every interrupt `w_per_interrupt_per_s` J.
//!
//! Frames are the machine's packets. The model learns of each frame when its transmission
//! starts (the fabric reports start and end), so at simulated time `now` every frame arriving
//! or completing by `now` is known, and whether an interrupt fired by `now` is decided exactly.

use crate::model::{Account, EnergyRow, PowerModel, Signals};
use crate::timeline::Timeline;
use std::collections::{BTreeSet, VecDeque};
use tracewatt_core::time::to_seconds;
use tracewatt_core::{Column, Ps, Table};
use tracewatt_net::ChannelId;

/// Coalescing and power parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NicParams {
    pub rx_usecs_ps: Ps,
    /// At least 1.
    pub rx_max_frames: u32,
    pub tx_usecs_ps: Ps,
    pub w_per_mbps: f64,
    pub w_per_interrupt_per_s: f64,
}

/// How a channel touches a NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicPort {
    /// Not a node link.
    None,
    /// Into `node`; a frame's tail arrives `latency_ps` after its transmission ends.
    Rx { node: u32, latency_ps: Ps },
    /// Out of `node`: a frame's transmission completes when it ends.
    Tx { node: u32 },
}

const NO_DUE: Ps = Ps::MAX;

#[derive(Debug, Default)]
struct Node {
    /// Frames known but not yet reached: (time, received?), sorted by time.
    known: VecDeque<(Ps, bool)>,
    /// Received frames pending, and the arrival of the last one.
    rx_n: u32,
    rx_last: Ps,
    /// Transmit completions pending, and the first one's time.
    tx_n: u32,
    tx_first: Ps,
    /// Received frames reached, and serviced by an interrupt.
    rx_seen: u64,
    rx_served: u64,
    /// Messages held for an interrupt: (index of their last frame, token, arrival).
    held: VecDeque<(u64, u32, Ps)>,
    /// When this node's held messages may next be released (`NO_DUE`: none held).
    due: Ps,
    interrupts: u64,
    rx_frames: u64,
    tx_frames: u64,
    rx_bytes: u64,
    tx_bytes: u64,
    delay_ps: Ps,
    delivered: u64,
}

impl Node {
    /// The one coalescing timer: every received frame restarts it at `rx_usecs`; a transmit
    /// completion starts it at `tx_usecs` only while no received frame is pending.
    fn deadline(&self, p: &NicParams) -> Option<Ps> {
        if self.rx_n > 0 {
            Some(self.rx_last + p.rx_usecs_ps)
        } else if self.tx_n > 0 {
            Some(self.tx_first + p.tx_usecs_ps)
        } else {
            None
        }
    }

    fn fire(&mut self, at: Ps, p: &NicParams, timeline: &mut Timeline, series: usize) {
        self.interrupts += 1;
        self.rx_served = self.rx_seen;
        self.rx_n = 0;
        self.tx_n = 0;
        timeline.add_energy(series, at, p.w_per_interrupt_per_s);
    }

    /// Plays every known frame and timer up to `now` (inclusive); a timer that expires at the
    /// instant a frame arrives fires first (no frame came for the whole timeout).
    fn advance(&mut self, now: Ps, p: &NicParams, timeline: &mut Timeline, series: usize) {
        loop {
            let next = self.known.front().map(|e| e.0);
            if let Some(d) = self.deadline(p) {
                if d <= now && next.is_none_or(|e| d <= e) {
                    self.fire(d, p, timeline, series);
                    continue;
                }
            }
            match self.known.front() {
                Some(&(t, rx)) if t <= now => {
                    self.known.pop_front();
                    if rx {
                        self.rx_seen += 1;
                        self.rx_n += 1;
                        self.rx_last = t;
                        if self.rx_n >= p.rx_max_frames {
                            self.fire(t, p, timeline, series);
                        }
                    } else {
                        if self.tx_n == 0 {
                            self.tx_first = t;
                        }
                        self.tx_n += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// The earliest time anything may fire (the next known frame or the pending deadline):
    /// waking then is never late, at worst early.
    fn next_change(&self, p: &NicParams) -> Ps {
        let next = self.known.front().map_or(NO_DUE, |e| e.0);
        self.deadline(p).map_or(next, |d| d.min(next))
    }

    fn learn(&mut self, at: Ps, rx: bool) {
        let i = self.known.partition_point(|e| e.0 <= at);
        self.known.insert(i, (at, rx));
    }
}

/// The NICs of every node.
#[derive(Debug)]
pub struct NicPower {
    params: NicParams,
    ports: Vec<NicPort>,
    nodes: Vec<Node>,
    /// (due, node) of every node holding messages.
    dues: BTreeSet<(Ps, u32)>,
    /// Simulated time: the latest `now` the fabric asked about.
    now: Ps,
    timeline: Timeline,
    first_series: usize,
}

impl NicPower {
    /// `ports[c]` says how channel `c` touches a NIC; `nodes` is the machine's node count. The
    /// timeline has one series (the NICs' power above idle).
    pub fn new(params: NicParams, ports: Vec<NicPort>, nodes: u32, timeline: Timeline) -> Self {
        Self {
            params,
            ports,
            nodes: (0..nodes).map(|_| Node::default()).collect(),
            dues: BTreeSet::new(),
            now: 0,
            timeline,
            first_series: 0,
        }
    }

    fn advance(&mut self, node: u32, now: Ps) {
        self.nodes[node as usize].advance(now, &self.params, &mut self.timeline, 0);
    }

    /// Re-files `node`'s due time after its state changed.
    fn refile(&mut self, node: u32) {
        let now = self.now;
        let n = &mut self.nodes[node as usize];
        let due = match n.held.front() {
            None => NO_DUE,
            // Serviced already (by an interrupt at `now`): hand it back at once.
            Some(h) if h.0 <= n.rx_served => now,
            Some(_) => n.next_change(&self.params),
        };
        if due != n.due {
            if n.due != NO_DUE {
                self.dues.remove(&(n.due, node));
            }
            if due != NO_DUE {
                self.dues.insert((due, node));
            }
            n.due = due;
        }
    }

    /// Hands back `node`'s held messages whose last frame has been serviced by `now`.
    fn release_node(&mut self, node: u32, now: Ps, out: &mut Vec<u32>) {
        self.advance(node, now);
        let n = &mut self.nodes[node as usize];
        while let Some(&(idx, token, arrived)) = n.held.front() {
            if idx > n.rx_served {
                break;
            }
            n.held.pop_front();
            n.delay_ps += now - arrived;
            n.delivered += 1;
            out.push(token);
        }
        self.refile(node);
    }
}

impl PowerModel for NicPower {
    fn signals(&self) -> Signals {
        Signals {
            links: true,
            deliveries: true,
            ..Signals::default()
        }
    }

    fn series(&self) -> &'static [&'static str] {
        &["nics_w"]
    }

    fn set_series(&mut self, first: usize) {
        self.first_series = first;
    }

    fn link_ready(&mut self, _ch: ChannelId, now: Ps) -> Ps {
        self.now = now;
        now
    }

    fn on_transmit(&mut self, ch: ChannelId, _start: Ps, end: Ps, bytes: u32) {
        let (node, at, rx) = match self.ports[ch as usize] {
            NicPort::None => return,
            NicPort::Rx { node, latency_ps } => (node, end + latency_ps, true),
            NicPort::Tx { node } => (node, end, false),
        };
        // Everything up to now is known: play it, so the queue holds only frames in flight.
        let now = self.now;
        self.advance(node, now);
        let p = self.params;
        let n = &mut self.nodes[node as usize];
        n.learn(at, rx);
        if rx {
            n.rx_frames += 1;
            n.rx_bytes += bytes as u64;
        } else {
            n.tx_frames += 1;
            n.tx_bytes += bytes as u64;
        }
        let joules = p.w_per_mbps * bytes as f64 * 8.0 / 1e6;
        self.timeline.add_energy(0, at, joules);
        if !self.nodes[node as usize].held.is_empty() {
            self.refile(node);
        }
    }

    fn deliver(&mut self, node: u32, token: u32, now: Ps) -> bool {
        self.now = self.now.max(now);
        self.advance(node, now);
        let n = &mut self.nodes[node as usize];
        // Serviced already, and no earlier message waits (messages reach MPI in order).
        if n.rx_served >= n.rx_seen && n.held.is_empty() {
            n.delivered += 1;
            return true;
        }
        let idx = n.rx_seen;
        n.held.push_back((idx, token, now));
        self.refile(node);
        false
    }

    fn due(&self) -> Option<Ps> {
        self.dues.first().map(|d| d.0)
    }

    fn release(&mut self, now: Ps, out: &mut Vec<u32>) {
        self.now = self.now.max(now);
        while let Some(&(due, node)) = self.dues.first() {
            if due > now {
                break;
            }
            self.release_node(node, now, out);
            // Everything up to `now` has been played, so the node's next change is later.
            debug_assert!(self.nodes[node as usize].due > now);
        }
    }

    fn finish(mut self: Box<Self>, end: Ps, account: &mut Account) {
        for node in 0..self.nodes.len() as u32 {
            self.advance(node, end);
        }
        let p = self.params;
        let end_s = to_seconds(end);
        let per_s = |v: u64| if end_s > 0.0 { v as f64 / end_s } else { 0.0 };
        let energy = |n: &Node| {
            p.w_per_mbps * (n.rx_bytes + n.tx_bytes) as f64 * 8.0 / 1e6
                + p.w_per_interrupt_per_s * n.interrupts as f64
        };
        for (i, n) in self.nodes.iter().enumerate() {
            account.rows.push(EnergyRow::of_node(
                "nic",
                "nics",
                i as u32,
                energy(n),
                Vec::new(),
            ));
        }
        let ns = &self.nodes;
        let col_u = |f: fn(&Node) -> u64| Column::U64(ns.iter().map(f).collect());
        account.tables.push(Table {
            name: "nics",
            columns: vec![
                ("node", Column::U64((0..ns.len() as u64).collect())),
                ("rx_frames", col_u(|n| n.rx_frames)),
                ("tx_frames", col_u(|n| n.tx_frames)),
                ("interrupts", col_u(|n| n.interrupts)),
                (
                    "interrupts_per_s",
                    Column::F64(ns.iter().map(|n| per_s(n.interrupts)).collect()),
                ),
                (
                    "frames_per_interrupt",
                    Column::F64(
                        ns.iter()
                            .map(|n| {
                                if n.interrupts > 0 {
                                    n.rx_frames as f64 / n.interrupts as f64
                                } else {
                                    0.0
                                }
                            })
                            .collect(),
                    ),
                ),
                ("rx_bytes", col_u(|n| n.rx_bytes)),
                ("tx_bytes", col_u(|n| n.tx_bytes)),
                (
                    "rx_mbps",
                    Column::F64(ns.iter().map(|n| per_s(n.rx_bytes * 8) / 1e6).collect()),
                ),
                ("messages", col_u(|n| n.delivered)),
                (
                    "coalescing_delay_s",
                    Column::F64(ns.iter().map(|n| to_seconds(n.delay_ps)).collect()),
                ),
                ("energy_j", Column::F64(ns.iter().map(energy).collect())),
                (
                    "avg_power_w",
                    Column::F64(
                        ns.iter()
                            .map(|n| if end_s > 0.0 { energy(n) / end_s } else { 0.0 })
                            .collect(),
                    ),
                ),
            ],
        });
        let first = self.first_series;
        account.timeline.absorb(first, self.timeline, end);
    }
}
