//! A location's event file (`traces/<location>.evt`), decoded record by record.
//!
//! Each event is preceded by the time it happened: a timestamp record (`05`, full u64 ticks)
//! sets the time for the events after it, so events at the same tick share one. Attribute lists
//! (`06`) attach to the next event and are skipped. The ten "singleton" events of OTF2 1.0/1.1
//! (Enter, Leave, MpiIsendComplete, MpiIrecvRequest, MpiRequestTest, MpiRequestCancelled and
//! four OpenMP events) carry one compressed integer and no length; every other event carries its
//! length, so unknown events are skipped.
//!
//! Times are corrected with the location's clock offsets (linear interpolation between
//! consecutive offsets, extrapolation past the last, as OTF2 does; a single offset changes
//! nothing) and ids are translated with its mapping tables.

use std::ops::Range;
use std::path::Path;

use tracewatt_workload::Rank;

use super::buffer::ChunkReader;
use super::defs::{IdMap, LocalDefs};
use crate::error::TraceError;

const TIMESTAMP: u8 = 5;
const ATTRIBUTE_LIST: u8 = 6;
const MEASUREMENT_ON_OFF: u8 = 11;
const ENTER: u8 = 12;
const LEAVE: u8 = 13;
const MPI_SEND: u8 = 14;
const MPI_ISEND: u8 = 15;
const MPI_ISEND_COMPLETE: u8 = 16;
const MPI_IRECV_REQUEST: u8 = 17;
const MPI_RECV: u8 = 18;
const MPI_IRECV: u8 = 19;
const MPI_REQUEST_TEST: u8 = 20;
const MPI_REQUEST_CANCELLED: u8 = 21;
const MPI_COLLECTIVE_END: u8 = 23;
const OMP_FORK: u8 = 24;
const OMP_TASK_CREATE: u8 = 28;
const OMP_TASK_SWITCH: u8 = 29;
const OMP_TASK_COMPLETE: u8 = 30;
const NBC_REQUEST: u8 = 85;
const NBC_COMPLETE: u8 = 86;
const MEASUREMENT_ON: u8 = 1;
const MEASUREMENT_OFF: u8 = 2;

/// A point-to-point message as a record describes it (peer is communicator-local).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Msg {
    pub peer: u32,
    pub comm: u32,
    pub tag: u32,
    pub bytes: u64,
}

/// A collective's record (MpiCollectiveEnd, NonBlockingCollectiveComplete).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Coll {
    pub op: u8,
    pub comm: u32,
    pub root: u32,
    pub sent: u64,
    pub received: u64,
}

/// The events the reader uses; everything else is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev {
    Enter(u32),
    Leave(u32),
    Measurement { on: bool },
    Send(Msg),
    Isend(Msg, u64),
    IsendComplete(u64),
    IrecvRequest(u64),
    Recv(Msg),
    Irecv(Msg, u64),
    RequestTest(u64),
    RequestCancelled(u64),
    CollEnd(Coll),
    NbcRequest(u64),
    NbcComplete(Coll, u64),
    Other,
}

/// Clock correction intervals: (begin, end, offset at begin, slope).
#[derive(Debug, Clone, Default)]
struct Clock {
    intervals: Vec<(u64, u64, i64, f64)>,
    at: usize,
}

impl Clock {
    fn new(offsets: &[(u64, i64)]) -> Self {
        let intervals = offsets
            .windows(2)
            .filter(|w| w[1].0 > w[0].0)
            .map(|w| {
                let slope = w[1].1.saturating_sub(w[0].1) as f64 / (w[1].0 - w[0].0) as f64;
                (w[0].0, w[1].0, w[0].1, slope)
            })
            .collect();
        Clock { intervals, at: 0 }
    }

    /// Times increase, so the search goes forward from the last interval used.
    fn correct(&mut self, t: u64) -> u64 {
        if self.intervals.is_empty() {
            return t;
        }
        while self.at + 1 < self.intervals.len() && t > self.intervals[self.at].1 {
            self.at += 1;
        }
        let (begin, _, offset, slope) = self.intervals[self.at];
        let diff = if t >= begin {
            (t - begin) as f64
        } else {
            -((begin - t) as f64)
        };
        let off = offset.saturating_add((slope * diff).round() as i64);
        t.wrapping_add(off as u64)
    }
}

/// Streams one location's events.
#[derive(Debug)]
pub(crate) struct EvtStream {
    r: ChunkReader,
    time: u64,
    clock: Clock,
    regions: Option<IdMap>,
    comms: Option<IdMap>,
    /// The highest event record type the trace's OTF2 version defines.
    last_type: u8,
    done: bool,
    /// The byte offset of the record last read.
    at: u64,
}

impl EvtStream {
    pub fn open(
        path: &Path,
        rank: Rank,
        chunk_size: u64,
        last_type: u8,
        local: &LocalDefs,
    ) -> Result<Self, TraceError> {
        Ok(EvtStream {
            r: ChunkReader::open(path, Some(rank), chunk_size)?,
            time: 0,
            clock: Clock::new(&local.clock_offsets),
            regions: local.regions.clone(),
            comms: local.comms.clone(),
            last_type,
            done: false,
            at: 0,
        })
    }

    fn region(&self, id: u32) -> u32 {
        self.regions
            .as_ref()
            .map_or(id, |m| m.map(id as u64) as u32)
    }

    fn comm(&self, id: u32) -> u32 {
        self.comms.as_ref().map_or(id, |m| m.map(id as u64) as u32)
    }

    /// An error at the event last returned.
    pub fn error_at_event(&self, expected: &str) -> TraceError {
        self.r.error_at(self.at, expected)
    }

    /// The byte offset of the event last returned.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// The last event's time as recorded (before clock correction), in ticks.
    pub fn raw_time(&self) -> u64 {
        self.time
    }

    /// The next event and its corrected time in ticks; `None` at the end-of-file record.
    pub fn next_event(&mut self) -> Result<Option<(u64, Ev)>, TraceError> {
        if self.done {
            return Ok(None);
        }
        loop {
            let Some(t) = self.r.next_record_type()? else {
                self.done = true;
                return Ok(None);
            };
            self.at = self.r.offset() - 1;
            let ev = match t {
                TIMESTAMP => {
                    self.timestamp()?;
                    continue;
                }
                1 | 3 | 4 => {
                    let at = self.r.offset() - 1;
                    return Err(self
                        .r
                        .error_at(at, format!("an event record (got reserved type {t})")));
                }
                t if t > self.last_type => {
                    return Err(self.r.error_at(
                        self.at,
                        format!(
                            "an event record type the trace's OTF2 version defines (at most {}), \
                             got type {t}",
                            self.last_type
                        ),
                    ));
                }
                ENTER => Ev::Enter(self.r.read(|c| c.u32c("an Enter region"))?),
                LEAVE => Ev::Leave(self.r.read(|c| c.u32c("a Leave region"))?),
                MPI_ISEND_COMPLETE => Ev::IsendComplete(self.r.read(|c| c.u64c("a request id"))?),
                MPI_IRECV_REQUEST => Ev::IrecvRequest(self.r.read(|c| c.u64c("a request id"))?),
                MPI_REQUEST_TEST => Ev::RequestTest(self.r.read(|c| c.u64c("a request id"))?),
                MPI_REQUEST_CANCELLED => {
                    Ev::RequestCancelled(self.r.read(|c| c.u64c("a request id"))?)
                }
                OMP_FORK | OMP_TASK_CREATE | OMP_TASK_SWITCH | OMP_TASK_COMPLETE => {
                    self.r.read(|c| c.u64c("an OpenMP event attribute"))?;
                    Ev::Other
                }
                _ => match self.sized_event(t)? {
                    Some(ev) => ev,
                    None => continue,
                },
            };
            let ev = match ev {
                Ev::Enter(r) => Ev::Enter(self.region(r)),
                Ev::Leave(r) => Ev::Leave(self.region(r)),
                e => e,
            };
            return Ok(Some((self.clock.correct(self.time), ev)));
        }
    }

    /// A timestamp record: the time of the events after it.
    fn timestamp(&mut self) -> Result<(), TraceError> {
        let t = self.r.read(|c| c.u64_full("a timestamp"))?;
        // A location records its events in time order: an earlier time is corrupt (a call's
        // Leave before its Enter would otherwise read as a call of no duration).
        if t < self.time {
            return Err(self.r.error_at(
                self.at,
                format!(
                    "a timestamp not before the previous event's (time runs forward in a \
                     location; {} ticks earlier)",
                    self.time - t
                ),
            ));
        }
        self.time = t;
        Ok(())
    }

    /// An event record of type `t` that gives its length; `None` for an attribute list (not
    /// an event).
    fn sized_event(&mut self, t: u8) -> Result<Option<Ev>, TraceError> {
        let body = self.r.record("an event record")?;
        Ok(Some(match t {
            ATTRIBUTE_LIST => return Ok(None),
            MEASUREMENT_ON_OFF => {
                let m = self.r.body(body, |c| c.u8("a measurement mode"))?;
                if m != MEASUREMENT_ON && m != MEASUREMENT_OFF {
                    return Err(self.r.error_at(
                        self.at,
                        format!("a measurement mode, 1 (on) or 2 (off), got {m}"),
                    ));
                }
                Ev::Measurement {
                    on: m == MEASUREMENT_ON,
                }
            }
            MPI_SEND | MPI_RECV | MPI_ISEND | MPI_IRECV => self.message(t, body)?,
            MPI_COLLECTIVE_END | NBC_COMPLETE => self.collective(t, body)?,
            NBC_REQUEST => Ev::NbcRequest(self.r.body(body, |c| c.u64c("a request id"))?),
            _ => Ev::Other,
        }))
    }

    /// A message record of type `t` (send, receive, isend, irecv completion).
    fn message(&mut self, t: u8, body: Range<usize>) -> Result<Ev, TraceError> {
        let (m, req) = self.r.body(body, |c| {
            let m = Msg {
                peer: c.u32c("a peer rank")?,
                comm: c.u32c("a communicator")?,
                tag: c.u32c("a message tag")?,
                bytes: c.u64c("a message length")?,
            };
            let req = if t == MPI_ISEND || t == MPI_IRECV {
                c.u64c("a request id")?
            } else {
                0
            };
            Ok((m, req))
        })?;
        let m = Msg {
            comm: self.comm(m.comm),
            ..m
        };
        Ok(match t {
            MPI_SEND => Ev::Send(m),
            MPI_RECV => Ev::Recv(m),
            MPI_ISEND => Ev::Isend(m, req),
            _ => Ev::Irecv(m, req),
        })
    }

    /// A collective record of type `t` (a blocking collective's end, a non-blocking one's
    /// completion).
    fn collective(&mut self, t: u8, body: Range<usize>) -> Result<Ev, TraceError> {
        let (c, req) = self.r.body(body, |c| {
            let coll = Coll {
                op: c.u8("a collective operation")?,
                comm: c.u32c("a communicator")?,
                root: c.u32c("a root rank")?,
                sent: c.u64c("the bytes sent")?,
                received: c.u64c("the bytes received")?,
            };
            let req = if t == NBC_COMPLETE {
                c.u64c("a request id")?
            } else {
                0
            };
            Ok((coll, req))
        })?;
        let c = Coll {
            comm: self.comm(c.comm),
            ..c
        };
        Ok(if t == NBC_COMPLETE {
            Ev::NbcComplete(c, req)
        } else {
            Ev::CollEnd(c)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_offsets_interpolate_between_and_extrapolate_past() {
        let mut one = Clock::new(&[(100, 50)]);
        assert_eq!(one.correct(1000), 1000, "a single offset changes nothing");
        let mut c = Clock::new(&[(100, 0), (200, 100), (300, 100)]);
        assert_eq!(c.correct(50), 0, "before the first: first interval's line");
        assert_eq!(c.correct(150), 200);
        assert_eq!(c.correct(250), 350);
        assert_eq!(
            c.correct(400),
            500,
            "past the last: last interval (slope 0)"
        );
    }
}
