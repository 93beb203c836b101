//! Frame streams between two ranks (research.md section 3, the node-power paper's iperf runs):
//! rank 0 sends frames of `frame_bytes` to rank 1 at an average of `rate_mbps`, either evenly
//! paced (`paced_stream`: PSPacer's gap packets, GtrcNET-1 "ifg") or in token-bucket bursts
//! (`shaped_stream`: Linux HTB, GtrcNET-1 "shape"). Rank 1 receives every frame and, standing
//! in for TCP's acknowledgements, sends an ACK of `ack_bytes` back after every `ack_every`
//! frames. Frames leave at absolute times ([`Op::WaitUntil`]), so the MPI send overhead never
//! stretches the period.

use std::collections::VecDeque;

use tracewatt_core::time::{self, PS_PER_MS};
use tracewatt_core::Ps;

use super::{generated, invalid, us_field, Workload, WorkloadError};
use crate::op::{Op, Program, ProgramError, ReqId, SrcSel, Tag, TagSel, WORLD};

const DATA: Tag = 0;
const ACK: Tag = 1;

/// The sender's request ids: frame k's send is `k`, ACK j's receive `ACK_REQ_BASE + j`; with at
/// most `MAX_FRAMES` frames both stay below the ids reserved for collectives.
const ACK_REQ_BASE: ReqId = 1 << 30;
const MAX_FRAMES: u64 = ACK_REQ_BASE as u64;

/// Receives rank 1 keeps posted ahead of the frames, as a NIC's receive ring does (an
/// assumption; also osu_bw's window). The receive overheads of the frames in the window
/// overlap, so the receiver keeps up even when frames come closer than that overhead.
const RX_WINDOW: u64 = 64;

/// Age at which the sender waits for a request of its own (see [`Sender`]).
const SETTLE_PS: Ps = 10 * PS_PER_MS;

/// The fields both stream kinds share, as configured.
#[derive(Debug, Clone, Copy)]
pub(super) struct Params {
    pub rate_mbps: f64,
    pub duration_s: f64,
    pub frame_bytes: u64,
    pub ack_every: u32,
    pub ack_bytes: u64,
}

/// When frames leave: in groups (a paced frame alone, a shaped burst); group g leaves at
/// `time(g)` and holds frames `first(g)..first(g + 1)`.
#[derive(Debug, Clone, Copy)]
enum Schedule {
    /// Frame k alone at round(k x frame_bits / rate), each k computed afresh so rounding never
    /// accumulates.
    Paced { frame_bits: f64, rate_mbps: f64 },
    /// Burst j at j x period, bringing the frames sent so far to the number earned by the end
    /// of period j: floor((j + 1) x period x rate / frame_bits). The average is the rate exactly.
    Shaped {
        period_ps: Ps,
        frame_bits: f64,
        rate_mbps: f64,
    },
}

impl Schedule {
    fn time(self, g: u64) -> Ps {
        match self {
            // bits / (Mb/s) = us.
            Schedule::Paced {
                frame_bits,
                rate_mbps,
            } => (g as f64 * frame_bits * 1e6 / rate_mbps).round() as Ps,
            Schedule::Shaped { period_ps, .. } => g * period_ps,
        }
    }

    /// Frames in the groups before group `g`.
    fn first(self, g: u64) -> u64 {
        match self {
            Schedule::Paced { .. } => g,
            Schedule::Shaped {
                period_ps,
                frame_bits,
                rate_mbps,
            } => (g as f64 * period_ps as f64 * rate_mbps / (frame_bits * 1e6)).floor() as u64,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Stream {
    schedule: Schedule,
    groups: u64,
    frames: u64,
    frame_bytes: u64,
    ack_every: u32,
    ack_bytes: u64,
}

impl Stream {
    /// Whether frame `k` is the last of an ACK's `ack_every` frames.
    fn acked_by(&self, k: u64) -> bool {
        let e = self.ack_every as u64;
        e > 0 && k % e == e - 1
    }
}

/// Builds a paced stream, or a shaped one with `bucket_period_us`.
pub(super) fn build(
    ranks: u32,
    p: Params,
    bucket_period_us: Option<f64>,
) -> Result<Box<dyn Workload>, WorkloadError> {
    let name = match bucket_period_us {
        None => "paced_stream",
        Some(_) => "shaped_stream",
    };
    if ranks < 2 {
        return Err(invalid(
            "ranks",
            format!("{name} needs at least 2 ranks, got {ranks}"),
        ));
    }
    if !(p.rate_mbps.is_finite() && p.rate_mbps > 0.0) {
        return Err(invalid(
            "rate_mbps",
            format!("must be a finite number > 0, got {}", p.rate_mbps),
        ));
    }
    let duration_ps = match time::duration(p.duration_s, time::S) {
        Ok(d) if d > 0 => d,
        Ok(_) => {
            return Err(invalid(
                "duration_s",
                "must be > 0 (no frame leaves otherwise), got 0",
            ))
        }
        Err(e) => return Err(invalid("duration_s", e.to_string())),
    };
    if p.frame_bytes == 0 {
        return Err(invalid("frame_bytes", "must be >= 1"));
    }
    let frame_bits = p.frame_bytes as f64 * 8.0;
    let too_many = |n: f64| {
        invalid(
            "duration_s",
            format!(
                "{} s at {} Mb/s is {n:.4e} frames of {} bytes; a stream has at most {MAX_FRAMES}",
                p.duration_s, p.rate_mbps, p.frame_bytes
            ),
        )
    };
    // The fluid frame count, checked first so that counting below takes a few steps only.
    let estimate = duration_ps as f64 * p.rate_mbps / (frame_bits * 1e6);
    if estimate > MAX_FRAMES as f64 {
        return Err(too_many(estimate));
    }
    let (schedule, groups) = match bucket_period_us {
        None => {
            let s = Schedule::Paced {
                frame_bits,
                rate_mbps: p.rate_mbps,
            };
            // Every frame k with time(k) < duration.
            let mut n = estimate.ceil() as u64;
            while n > 0 && s.time(n - 1) >= duration_ps {
                n -= 1;
            }
            while s.time(n) < duration_ps {
                n += 1;
            }
            (s, n)
        }
        Some(us) => {
            let period_ps = us_field("bucket_period_us", us)?;
            if period_ps == 0 {
                return Err(invalid("bucket_period_us", "must be > 0"));
            }
            let s = Schedule::Shaped {
                period_ps,
                frame_bits,
                rate_mbps: p.rate_mbps,
            };
            // Every burst j with j x period < duration. (A paced stream always has frame 0.)
            let groups = duration_ps.div_ceil(period_ps);
            if s.first(groups) == 0 {
                return Err(invalid(
                    "duration_s",
                    format!(
                        "{} s at {} Mb/s in bursts every {us} us carries no frame of {} bytes; \
                         expected a longer duration or a higher rate",
                        p.duration_s, p.rate_mbps, p.frame_bytes
                    ),
                ));
            }
            (s, groups)
        }
    };
    let frames = schedule.first(groups);
    if frames > MAX_FRAMES {
        return Err(too_many(frames as f64));
    }
    let s = Stream {
        schedule,
        groups,
        frames,
        frame_bytes: p.frame_bytes,
        ack_every: p.ack_every,
        ack_bytes: p.ack_bytes,
    };
    generated(name, ranks, Vec::new(), move |rank| match rank {
        0 => Box::new(Sender::new(s)),
        1 => receiver(s),
        _ => Box::new(std::iter::empty()),
    })
}

/// Rank 0's program, one operation at a time (a burst can hold many frames).
///
/// The ACKs: each ACK's receive is posted just before the frame that completes it is sent, so
/// it is always posted before the ACK can arrive. The sender waits for its requests (frame
/// sends and ACK receives) only once they are `SETTLE_PS` old, at the start of a later group,
/// and for the rest at the end. On a path that keeps up with the stream a request completes
/// within a round trip (microseconds; a few EEE wakes at worst), so these waits cost no time and
/// the pacing stays exact, while the sender never holds more than `SETTLE_PS` of requests however
/// long the stream. Receiving every ACK at the end instead would keep one unmatched message per
/// ACK for the whole run. A path that cannot keep up makes the sender stall on an old request,
/// as a TCP sender stalls on its window.
#[derive(Debug)]
struct Sender {
    s: Stream,
    /// The next group to start.
    group: u64,
    group_ps: Ps,
    /// The next frame to send, and the end of its group.
    frame: u64,
    group_end: u64,
    out: VecDeque<Op>,
    /// Requests not waited for yet, with the time they were issued, oldest first.
    unsettled: VecDeque<(Ps, ReqId)>,
}

impl Sender {
    fn new(s: Stream) -> Self {
        Self {
            s,
            group: 0,
            group_ps: 0,
            frame: 0,
            group_end: 0,
            out: VecDeque::new(),
            unsettled: VecDeque::new(),
        }
    }

    fn start_group(&mut self) {
        let g = self.group;
        self.group += 1;
        self.frame = self.s.schedule.first(g);
        self.group_end = self.s.schedule.first(g + 1);
        if self.frame == self.group_end {
            return;
        }
        self.group_ps = self.s.schedule.time(g);
        self.out.push_back(Op::WaitUntil { ps: self.group_ps });
        let mut settled = Vec::new();
        while let Some(&(at, req)) = self.unsettled.front() {
            if at + SETTLE_PS > self.group_ps {
                break;
            }
            settled.push(req);
            self.unsettled.pop_front();
        }
        if !settled.is_empty() {
            self.out.push_back(Op::Waitall {
                reqs: settled.into(),
            });
        }
    }

    fn send_frame(&mut self) {
        let k = self.frame;
        self.frame += 1;
        if self.s.acked_by(k) {
            let req = ACK_REQ_BASE + (k / self.s.ack_every as u64) as ReqId;
            self.out.push_back(Op::Irecv {
                comm: WORLD,
                src: SrcSel::Rank(1),
                tag: TagSel::Tag(ACK),
                bytes: self.s.ack_bytes,
                req,
            });
            self.unsettled.push_back((self.group_ps, req));
        }
        let req = k as ReqId;
        self.out.push_back(Op::Isend {
            comm: WORLD,
            dst: 1,
            tag: DATA,
            bytes: self.s.frame_bytes,
            req,
        });
        self.unsettled.push_back((self.group_ps, req));
    }
}

impl Iterator for Sender {
    type Item = Result<Op, ProgramError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(op) = self.out.pop_front() {
                return Some(Ok(op));
            }
            if self.frame < self.group_end {
                self.send_frame();
            } else if self.group < self.s.groups {
                self.start_group();
            } else if self.unsettled.is_empty() {
                return None;
            } else {
                let reqs = self.unsettled.drain(..).map(|(_, req)| req).collect();
                self.out.push_back(Op::Waitall { reqs });
            }
        }
    }
}

/// Rank 1's program: `RX_WINDOW` receives posted ahead; for each frame in turn, wait for it,
/// post the receive `RX_WINDOW` frames on, and send an ACK after every `ack_every` frames.
fn receiver(s: Stream) -> Program {
    let recv = move |k: u64| Op::Irecv {
        comm: WORLD,
        src: SrcSel::Rank(0),
        tag: TagSel::Tag(DATA),
        bytes: s.frame_bytes,
        req: k as ReqId,
    };
    let posts = (0..s.frames.min(RX_WINDOW)).map(recv);
    let frames = (0..s.frames).flat_map(move |k| {
        let mut v = vec![Op::Wait { req: k as ReqId }];
        if k + RX_WINDOW < s.frames {
            v.push(recv(k + RX_WINDOW));
        }
        if s.acked_by(k) {
            v.push(Op::Send {
                comm: WORLD,
                dst: 0,
                tag: ACK,
                bytes: s.ack_bytes,
            });
        }
        v
    });
    Box::new(posts.chain(frames).map(Ok))
}
