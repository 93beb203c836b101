//! SimGrid time-independent (TI) traces, as replayed by SimGrid's `smpi_replay`: one line per
//! action, `<rank> <action> <args...>`, either one file per rank listed (in rank order) by a list
//! file, or one file holding every rank's lines.
//!
//! Argument conventions follow SimGrid's replay parsers (src/smpi/internals/smpi_replay.cpp):
//! sizes are element counts, multiplied by the datatype size; the default datatype is MPI_BYTE,
//! or MPI_DOUBLE when `init` has an argument (SimGrid's MPE/TAU convention); datatype ids are
//! SimGrid's `Datatype::encode` ids. Point-to-point actions are `<peer> <tag> <count> [type]`, or
//! the pre-3.24 `<peer> <count>` (tag 0). `wait`/`test` name a request by `<src> <dst> <tag>`;
//! `wait` without arguments (old traces) waits for the latest request. `test` carries no
//! outcome in TI traces, so it is treated as unsuccessful (the later wait completes the
//! request). `reduce`, `allreduce`, `reducescatter` are followed by their `comp_size` flops as
//! compute, like SimGrid does. `comm_size`, `comm_split`, `comm_dup`, `location` change nothing
//! (SimGrid replays every collective on MPI_COMM_WORLD too).
//!
//! A file holding every rank's lines is indexed once when opened (where each rank's runs of
//! consecutive lines start and end), so reading a rank seeks to its own lines instead of
//! scanning the whole file: reading all ranks stays linear in the file's size.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use tracewatt_workload::{CollKind, Rank};

use crate::call::{Call, CallKind, VKind, WORLD_HANDLE};
use crate::error::{Location, TraceError};
use crate::funcs::{self, func_id, Func};
use crate::{stream_step, CallIter, CallSource, CallStream, Pos, TraceFormat};

const ACTIONS: &[&str] = &[
    "init",
    "finalize",
    "comm_size",
    "comm_split",
    "comm_dup",
    "send",
    "isend",
    "recv",
    "irecv",
    "test",
    "sendRecv",
    "wait",
    "waitall",
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "alltoall",
    "alltoallv",
    "gather",
    "scatter",
    "gatherv",
    "scatterv",
    "allgather",
    "allgatherv",
    "reducescatter",
    "scan",
    "exscan",
    "compute",
    "sleep",
    "location",
];

/// Size of SimGrid's datatype ids (`Datatype::encode`), LP64.
fn dt_size(id: u32) -> Option<u64> {
    const SIZES: [u64; 60] = [
        8, 4, 1, 2, 8, 4, 1, 8, 1, 1, 2, 4, 8, 8, 16, 4, 1, 1, 2, 4, 8, 1, 2, 4, 8, 8, 16, 32, 8,
        8, 8, 16, 16, 8, 8, 8, 16, 16, 4, 4, 8, 16, 8, 16, 16, 4, 2, 4, 8, 16, 32, 1, 8, 16, 32, 0,
        0, 1, 8, 8,
    ];
    SIZES.get(id as usize).copied().filter(|&s| s > 0)
}

/// First whitespace-separated tokens of the first non-blank line of `path`.
fn first_line(path: &Path) -> Option<Vec<String>> {
    let f = File::open(path).ok()?;
    let mut r = BufReader::new(f);
    let mut line = String::new();
    for _ in 0..64 {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let t: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if !t.is_empty() {
            return Some(t);
        }
    }
    None
}

fn is_action_file(path: &Path) -> bool {
    first_line(path).is_some_and(|t| {
        t.len() >= 2 && t[0].parse::<u32>().is_ok() && ACTIONS.contains(&t[1].as_str())
    })
}

/// A file whose first line names a file next to it (whose content the reader checks, naming
/// the line that is wrong).
fn is_list_file(path: &Path) -> bool {
    let dir = path.parent().unwrap_or(Path::new("."));
    first_line(path).is_some_and(|t| t.len() == 1 && dir.join(&t[0]).is_file())
}

fn find_list(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.into_iter().find(|p| is_list_file(p))
}

pub(crate) fn detect(path: &Path) -> bool {
    if path.is_dir() {
        return find_list(path).is_some();
    }
    is_action_file(path) || is_list_file(path)
}

/// Why a text file whose first line is one word is not a list file (for the "not a trace"
/// error: a list file whose first name is corrupt).
pub(crate) fn not_a_list(path: &Path) -> Option<String> {
    match first_line(path)?.as_slice() {
        [name] => Some(format!(
            "line 1 (`{name}`) names no file next to it, as a SimGrid list file would"
        )),
        _ => None,
    }
}

/// Consecutive lines of one rank in a shared file: bytes `start..end`, the first being line
/// `first_line` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: u64,
    end: u64,
    first_line: u64,
}

#[derive(Debug)]
pub struct SimgridTrace {
    /// Per-rank files, or one shared file.
    files: Vec<PathBuf>,
    /// For a shared file: each rank's runs of lines, in file order.
    runs: Option<BTreeMap<Rank, Vec<Run>>>,
    num_ranks: u32,
    flops_per_s: f64,
}

impl SimgridTrace {
    pub fn open(path: &Path, flops_per_s: f64) -> Result<Self, TraceError> {
        if !(flops_per_s > 0.0 && flops_per_s.is_finite()) {
            return Err(TraceError::format(
                Location::file(path),
                "a positive finite flops_per_s",
            ));
        }
        let list = if path.is_dir() {
            find_list(path)
        } else {
            Some(path.to_path_buf()).filter(|p| is_list_file(p))
        };
        if let Some(list) = list {
            let dir = list.parent().unwrap_or(Path::new(".")).to_path_buf();
            let f = File::open(&list).map_err(|e| TraceError::io(&list, e))?;
            let mut files = Vec::new();
            for (i, line) in BufReader::new(f).lines().enumerate() {
                let line = line.map_err(|_| {
                    TraceError::format(
                        Location::line(&list, None, i as u64 + 1),
                        "a UTF-8 file name",
                    )
                })?;
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                let file = dir.join(line);
                if line.split_whitespace().count() > 1 || !file.is_file() {
                    return Err(TraceError::format(
                        Location::line(&list, None, i as u64 + 1),
                        format!(
                            "a SimGrid action line, or in a list file the name of an action file \
                             next to it, got `{line}`"
                        ),
                    ));
                }
                files.push(file);
            }
            let n = files.len() as u32;
            return Ok(SimgridTrace {
                files,
                runs: None,
                num_ranks: n,
                flops_per_s,
            });
        }
        // One file for all ranks: the highest rank id decides the job size.
        let f = File::open(path).map_err(|e| TraceError::io(path, e))?;
        let mut r = BufReader::new(f);
        let mut runs: BTreeMap<Rank, Vec<Run>> = BTreeMap::new();
        let (mut line, mut off, mut line_no) = (String::new(), 0u64, 0u64);
        // The rank of the previous line when it was an action line (runs end at other lines).
        let mut last: Option<Rank> = None;
        loop {
            line.clear();
            line_no += 1;
            let at = |l| Location::line(path, None, l);
            let len = r
                .read_line(&mut line)
                .map_err(|_| TraceError::format(at(line_no), "a UTF-8 text line"))?
                as u64;
            if len == 0 {
                break;
            }
            let rank = match line.split_whitespace().next() {
                Some(tok) if !tok.starts_with('#') => {
                    let rank: u32 =
                        tok.parse().ok().filter(|&r| r < 1 << 24).ok_or_else(|| {
                            TraceError::format(at(line_no), "a rank number first")
                        })?;
                    Some(rank)
                }
                _ => None,
            };
            if let Some(rank) = rank {
                let v = runs.entry(rank).or_default();
                match v.last_mut() {
                    Some(run) if last == Some(rank) => run.end = off + len,
                    _ => v.push(Run {
                        start: off,
                        end: off + len,
                        first_line: line_no,
                    }),
                }
            }
            last = rank;
            off += len;
        }
        let n = runs.keys().next_back().map_or(0, |m| m + 1);
        if n == 0 {
            return Err(TraceError::format(
                Location::file(path),
                "at least one action line",
            ));
        }
        Ok(SimgridTrace {
            files: vec![path.to_path_buf()],
            runs: Some(runs),
            num_ranks: n,
            flops_per_s,
        })
    }
}

impl CallSource for SimgridTrace {
    fn format(&self) -> TraceFormat {
        TraceFormat::SimgridTi
    }
    fn num_ranks(&self) -> u32 {
        self.num_ranks
    }
    fn rank_file(&self, rank: Rank) -> PathBuf {
        let i = if self.runs.is_some() {
            0
        } else {
            rank as usize
        };
        self.files.get(i).cloned().unwrap_or_default()
    }
    fn calls(&self, rank: Rank) -> Result<CallIter, TraceError> {
        let path = self.rank_file(rank);
        let f = File::open(&path).map_err(|e| TraceError::io(&path, e))?;
        Ok(Box::new(TiCalls {
            r: BufReader::new(f),
            path,
            rank,
            runs: self.runs.as_ref().map(|m| {
                m.get(&rank)
                    .map_or_else(VecDeque::new, |v| v.iter().copied().collect())
            }),
            pos: 0,
            // A shared file starts by seeking to the rank's first run; a rank's own file is
            // one run, the whole file.
            run_end: if self.runs.is_some() { 0 } else { u64::MAX },
            n: self.num_ranks,
            flops_per_s: self.flops_per_s,
            line_no: 0,
            line: String::new(),
            default_dt: 1,
            next_req: 0,
            by_key: BTreeMap::new(),
            outstanding: BTreeMap::new(),
            queue: VecDeque::new(),
            done: false,
        }))
    }
}

struct TiCalls {
    r: BufReader<File>,
    path: PathBuf,
    rank: Rank,
    /// For a shared file: the rank's runs of lines still to read (`None`: the whole file).
    runs: Option<VecDeque<Run>>,
    /// Byte offset of the next line, and where the current run ends.
    pos: u64,
    run_end: u64,
    n: u32,
    flops_per_s: f64,
    line_no: u64,
    line: String,
    default_dt: u64,
    next_req: u64,
    /// Outstanding requests by (src, dst, tag), oldest first, as SimGrid's RequestStorage.
    by_key: BTreeMap<(i64, i64, i64), VecDeque<u64>>,
    outstanding: BTreeMap<u64, (i64, i64, i64)>,
    queue: VecDeque<Call>,
    done: bool,
}

impl TiCalls {
    fn err(&self, expected: impl Into<String>) -> TraceError {
        TraceError::format(
            Location::line(&self.path, Some(self.rank), self.line_no),
            expected,
        )
    }

    fn num(&self, t: &[&str], i: usize, what: &str) -> Result<f64, TraceError> {
        let s = t
            .get(i)
            .ok_or_else(|| self.err(format!("{what} (argument {i})")))?;
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.err(format!("{what}: a number, got `{s}`")))
    }
    fn int(&self, t: &[&str], i: usize, what: &str) -> Result<i64, TraceError> {
        let v = self.num(t, i, what)?.trunc();
        if v.abs() > 9e15 {
            return Err(self.err(format!("{what}: an integer in range")));
        }
        Ok(v as i64)
    }
    fn cnt(&self, t: &[&str], i: usize, what: &str) -> Result<u64, TraceError> {
        let v = self.int(t, i, what)?;
        u64::try_from(v).map_err(|_| self.err(format!("{what}: a count >= 0, got {v}")))
    }
    fn dt(&self, t: &[&str], i: usize) -> Result<u64, TraceError> {
        match t.get(i) {
            None => Ok(self.default_dt),
            Some(s) => s
                .parse::<u32>()
                .ok()
                .and_then(dt_size)
                .ok_or_else(|| self.err(format!("a SimGrid datatype id, got `{s}`"))),
        }
    }
    fn counts(&self, t: &[&str], from: usize, dt: u64, what: &str) -> Result<Vec<u64>, TraceError> {
        (0..self.n as usize)
            .map(|k| Ok(self.cnt(t, from + k, what)?.saturating_mul(dt)))
            .collect()
    }
    fn peer(&self, t: &[&str], i: usize) -> Result<i32, TraceError> {
        let p = self.int(t, i, "a peer rank")?;
        if p < 0 || p >= self.n as i64 {
            return Err(self.err(format!("a peer rank below {}", self.n)));
        }
        Ok(p as i32)
    }
    fn flops(&self, flops: f64) -> u64 {
        let ps = flops / self.flops_per_s * 1e12;
        if ps.is_finite() && ps > 0.0 {
            ps.round() as u64
        } else {
            0
        }
    }
    fn push(&mut self, func: Func, kind: CallKind) {
        self.queue.push_back(Call::untimed(func, kind));
    }
    fn compute(&mut self, flops: f64) {
        let ps = self.flops(flops);
        if ps > 0 {
            self.push(
                funcs::F_COMPUTE,
                CallKind::Compute {
                    ps,
                    flops: Some(flops),
                },
            );
        }
    }
    fn new_req(&mut self, key: (i64, i64, i64)) -> u64 {
        let h = self.next_req;
        self.next_req += 1;
        self.by_key.entry(key).or_default().push_back(h);
        self.outstanding.insert(h, key);
        h
    }
    fn take_req(&mut self, key: (i64, i64, i64)) -> Option<u64> {
        let q = self.by_key.get_mut(&key)?;
        let h = q.pop_front();
        if q.is_empty() {
            self.by_key.remove(&key);
        }
        if let Some(h) = h {
            self.outstanding.remove(&h);
        }
        h
    }
    /// The latest outstanding request (what `wait` without arguments waits for).
    fn take_latest_req(&mut self) -> Option<u64> {
        let h = self.outstanding.keys().next_back().copied()?;
        if let Some(k) = self.outstanding.remove(&h) {
            if let Some(q) = self.by_key.get_mut(&k) {
                q.retain(|&x| x != h);
                if q.is_empty() {
                    self.by_key.remove(&k);
                }
            }
        }
        Some(h)
    }
    /// An optional root at argument `i` (0 if the line ends before it).
    fn root(&self, t: &[&str], i: usize) -> Result<i64, TraceError> {
        if t.len() > i {
            self.int(t, i, "a root")
        } else {
            Ok(0)
        }
    }
    /// A collective on MPI_COMM_WORLD (every SimGrid collective is on it).
    fn coll(&mut self, func: Func, kind: CollKind, root: i64, bytes: u64) {
        let kind = CallKind::Coll {
            comm: WORLD_HANDLE,
            kind,
            root: root as i32,
            bytes,
        };
        self.push(func, kind);
    }
    /// A collective with per-rank sizes on MPI_COMM_WORLD.
    fn v_coll(&mut self, func: Func, kind: VKind, root: i64, send: Vec<u64>, recv: Vec<u64>) {
        let kind = CallKind::VColl {
            comm: WORLD_HANDLE,
            kind,
            root: root as i32,
            send,
            recv,
        };
        self.push(func, kind);
    }

    /// The calls of one line `t` (`<rank> <action> [args]`).
    fn action(&mut self, t: &[&str]) -> Result<(), TraceError> {
        let name = t[1];
        match name {
            "init" => {
                self.default_dt = if t.len() > 2 { 8 } else { 1 };
                self.push(funcs::F_INIT, CallKind::Init);
            }
            "finalize" => self.push(funcs::F_FINALIZE, CallKind::Finalize),
            "comm_size" | "comm_split" | "comm_dup" => self.push(func(name), CallKind::Local),
            "location" => {}
            "compute" => {
                let fl = self.num(t, 2, "flops")?;
                self.compute(fl);
            }
            "sleep" => self.sleep(t)?,
            "send" | "isend" | "recv" | "irecv" => self.message(name, t)?,
            "sendRecv" => self.sendrecv(t)?,
            "wait" => self.wait(t)?,
            "test" => self.push(
                funcs::F_TEST,
                CallKind::Test {
                    req: u64::MAX,
                    flag: false,
                },
            ),
            "waitall" => self.waitall(),
            "barrier" => self.coll(funcs::F_BARRIER, CollKind::Barrier, 0, 0),
            "bcast" => self.bcast(t)?,
            "reduce" | "allreduce" => self.reduce(name, t)?,
            "alltoall" | "allgather" => self.alltoall(name, t)?,
            "gather" | "scatter" => self.gather(name, t)?,
            "alltoallv" => self.alltoallv(t)?,
            "gatherv" | "allgatherv" => self.gatherv(name, t)?,
            "scatterv" => self.scatterv(t)?,
            "reducescatter" => self.reduce_scatter(t)?,
            "scan" | "exscan" => self.push(func(name), CallKind::Unsupported { name: name.into() }),
            other => return Err(self.err(format!("a SimGrid action, got `{other}`"))),
        }
        Ok(())
    }

    /// `sleep <seconds>`.
    fn sleep(&mut self, t: &[&str]) -> Result<(), TraceError> {
        let s = self.num(t, 2, "seconds")?;
        let ps = s * 1e12;
        if ps > 0.0 {
            self.push(
                funcs::F_COMPUTE,
                CallKind::Compute {
                    ps: ps.round() as u64,
                    flops: None,
                },
            );
        }
        Ok(())
    }

    /// `send`, `isend`, `recv`, `irecv`: `<peer> <tag> <count> [type]`, or `<peer> <count>`.
    fn message(&mut self, name: &str, t: &[&str]) -> Result<(), TraceError> {
        let me = self.rank as i64;
        let peer = self.peer(t, 2)?;
        let (tag, count, dt) = if t.len() == 4 {
            (0, self.cnt(t, 3, "a count")?, self.default_dt)
        } else {
            (
                self.int(t, 3, "a tag")? as i32,
                self.cnt(t, 4, "a count")?,
                self.dt(t, 5)?,
            )
        };
        let bytes = count.saturating_mul(dt);
        let comm = WORLD_HANDLE;
        let kind = match name {
            "send" => CallKind::Send {
                comm,
                peer,
                tag,
                bytes,
            },
            "recv" => CallKind::Recv {
                comm,
                peer,
                tag,
                bytes,
            },
            "isend" => {
                let req = self.new_req((me, peer as i64, tag as i64));
                CallKind::Isend {
                    comm,
                    peer,
                    tag,
                    bytes,
                    req,
                }
            }
            _ => {
                let req = self.new_req((peer as i64, me, tag as i64));
                CallKind::Irecv {
                    comm,
                    peer,
                    tag,
                    bytes,
                    req,
                }
            }
        };
        self.push(func(name), kind);
        Ok(())
    }

    /// `sendRecv <send count> <dst> <receive count> <src> [send type] [receive type]`.
    fn sendrecv(&mut self, t: &[&str]) -> Result<(), TraceError> {
        let sc = self.cnt(t, 2, "a send count")?;
        let dst = self.peer(t, 3)?;
        let rc = self.cnt(t, 4, "a receive count")?;
        let src = self.peer(t, 5)?;
        let (dt1, dt2) = (self.dt(t, 6)?, self.dt(t, 7)?);
        self.push(
            funcs::F_SENDRECV,
            CallKind::Sendrecv {
                comm: WORLD_HANDLE,
                dst,
                send_tag: 0,
                send_bytes: sc.saturating_mul(dt1),
                src,
                recv_tag: 0,
                recv_bytes: rc.saturating_mul(dt2),
            },
        );
        Ok(())
    }

    /// `wait <src> <dst> <tag>`, or `wait` alone for the latest request.
    fn wait(&mut self, t: &[&str]) -> Result<(), TraceError> {
        let h = if t.len() >= 5 {
            let key = (
                self.int(t, 2, "src")?,
                self.int(t, 3, "dst")?,
                self.int(t, 4, "tag")?,
            );
            self.take_req(key)
        } else {
            self.take_latest_req()
        };
        // A wait on a request a test already completed is a no-op in SimGrid too.
        self.push(
            funcs::F_WAIT,
            CallKind::Wait {
                req: h.unwrap_or(u64::MAX),
            },
        );
        Ok(())
    }

    fn waitall(&mut self) {
        let reqs: Vec<u64> = self.outstanding.keys().copied().collect();
        self.outstanding.clear();
        self.by_key.clear();
        self.push(funcs::F_WAITALL, CallKind::Waitall { reqs });
    }

    /// `bcast <count> [root] [type]`.
    fn bcast(&mut self, t: &[&str]) -> Result<(), TraceError> {
        let size = self.cnt(t, 2, "a count")?;
        let root = self.root(t, 3)?;
        let dt = self.dt(t, 4)?;
        self.coll(
            funcs::F_BCAST,
            CollKind::Bcast,
            root,
            size.saturating_mul(dt),
        );
        Ok(())
    }

    /// `reduce <count> <comp_size> [root] [type]`, `allreduce <count> <comp_size> [type]`; the
    /// reduction's `comp_size` flops follow as compute.
    fn reduce(&mut self, name: &str, t: &[&str]) -> Result<(), TraceError> {
        let size = self.cnt(t, 2, "a count")?;
        let comp = self.num(t, 3, "comp_size")?;
        let (kind, root, dt) = if name == "reduce" {
            (CollKind::Reduce, self.root(t, 4)?, self.dt(t, 5)?)
        } else {
            (CollKind::Allreduce, 0, self.dt(t, 4)?)
        };
        self.coll(func(name), kind, root, size.saturating_mul(dt));
        self.compute(comp);
        Ok(())
    }

    /// `alltoall`, `allgather`: `<send count> <receive count> [type]`.
    fn alltoall(&mut self, name: &str, t: &[&str]) -> Result<(), TraceError> {
        let send = self.cnt(t, 2, "a send count")?;
        self.cnt(t, 3, "a receive count")?;
        let dt = self.dt(t, 4)?;
        let kind = if name == "alltoall" {
            CollKind::Alltoall
        } else {
            CollKind::Allgather
        };
        self.coll(func(name), kind, 0, send.saturating_mul(dt));
        Ok(())
    }

    /// `gather`, `scatter`: `<send count> <receive count> [root] [send type] [receive type]`.
    fn gather(&mut self, name: &str, t: &[&str]) -> Result<(), TraceError> {
        let send = self.cnt(t, 2, "a send count")?;
        let recv = self.cnt(t, 3, "a receive count")?;
        let root = self.root(t, 4)?;
        let (dt1, dt2) = (self.dt(t, 5)?, self.dt(t, 6)?);
        let (kind, bytes) = if name == "gather" {
            (CollKind::Gather, send.saturating_mul(dt1))
        } else {
            (CollKind::Scatter, recv.saturating_mul(dt2))
        };
        self.coll(func(name), kind, root, bytes);
        Ok(())
    }

    /// `alltoallv <send buffer> <n send counts> <receive buffer> <n receive counts> [types]`.
    fn alltoallv(&mut self, t: &[&str]) -> Result<(), TraceError> {
        let n = self.n as usize;
        let dt1 = self.dt(t, 4 + 2 * n)?;
        let dt2 = self.dt(t, 5 + 2 * n)?;
        let send = self.counts(t, 3, dt1, "a send count")?;
        let recv = self.counts(t, 4 + n, dt2, "a receive count")?;
        self.v_coll(funcs::F_ALLTOALLV, VKind::Alltoallv, 0, send, recv);
        Ok(())
    }

    /// `gatherv <send count> <n receive counts> [root] [types]`, `allgatherv <send count>
    /// <n receive counts> [displacements] [types]`.
    fn gatherv(&mut self, name: &str, t: &[&str]) -> Result<(), TraceError> {
        let n = self.n as usize;
        let send = self.cnt(t, 2, "a send count")?;
        let (root, dt1, dt2) = if name == "gatherv" {
            let root = self.root(t, 3 + n)?;
            (root, self.dt(t, 4 + n)?, self.dt(t, 5 + n)?)
        } else if t.len() > 3 + 2 * n {
            (0, self.dt(t, 3 + n)?, self.dt(t, 4 + n)?)
        } else if t.len() > 3 + n + 2 {
            (0, self.default_dt, self.default_dt) // displacements, no types
        } else {
            (0, self.dt(t, 3 + n)?, self.dt(t, 4 + n)?)
        };
        let recv = self.counts(t, 3, dt2, "a receive count")?;
        let kind = if name == "gatherv" {
            VKind::Gatherv
        } else {
            VKind::Allgatherv
        };
        let send = vec![send.saturating_mul(dt1)];
        self.v_coll(func(name), kind, root, send, recv);
        Ok(())
    }

    /// `scatterv <n send counts> <receive count> [root] [types]`.
    fn scatterv(&mut self, t: &[&str]) -> Result<(), TraceError> {
        let n = self.n as usize;
        let recv = self.cnt(t, 2 + n, "a receive count")?;
        let root = self.root(t, 3 + n)?;
        let (dt1, dt2) = (self.dt(t, 4 + n)?, self.dt(t, 5 + n)?);
        let send = self.counts(t, 2, dt1, "a send count")?;
        let recv = vec![recv.saturating_mul(dt2)];
        self.v_coll(funcs::F_SCATTERV, VKind::Scatterv, root, send, recv);
        Ok(())
    }

    /// `reducescatter <n receive counts> <comp_size> [type]`; `comp_size` flops follow as
    /// compute.
    fn reduce_scatter(&mut self, t: &[&str]) -> Result<(), TraceError> {
        let n = self.n as usize;
        let comp = self.num(t, 2 + n, "comp_size")?;
        let dt = self.dt(t, 3 + n)?;
        let recv = self.counts(t, 2, dt, "a receive count")?;
        let send = recv.clone();
        self.v_coll(funcs::F_REDUCE_SCATTER, VKind::ReduceScatter, 0, send, recv);
        self.compute(comp);
        Ok(())
    }

    fn next_call(&mut self) -> Result<Option<Call>, TraceError> {
        loop {
            if let Some(c) = self.queue.pop_front() {
                return Ok(Some(c));
            }
            if self.pos >= self.run_end {
                let Some(run) = self.runs.as_mut().and_then(VecDeque::pop_front) else {
                    return Ok(None);
                };
                self.r
                    .seek(SeekFrom::Start(run.start))
                    .map_err(|e| TraceError::io(&self.path, e))?;
                (self.pos, self.run_end, self.line_no) = (run.start, run.end, run.first_line - 1);
            }
            self.line.clear();
            self.line_no += 1;
            let n = self
                .r
                .read_line(&mut self.line)
                .map_err(|_| self.err("a UTF-8 text line"))?;
            if n == 0 {
                return Ok(None);
            }
            self.pos += n as u64;
            let line = std::mem::take(&mut self.line);
            let t: Vec<&str> = line.split_whitespace().collect();
            if t.is_empty() || t[0].starts_with('#') {
                self.line = line;
                continue;
            }
            if t.len() < 2 {
                return Err(self.err("`<rank> <action> [args]`"));
            }
            let r = self.action(&t);
            self.line = line;
            r?;
        }
    }
}

/// The function id of a SimGrid action named as the MPI call.
fn func(name: &str) -> Func {
    func_id(name).unwrap_or(funcs::F_UNKNOWN)
}

impl CallStream for TiCalls {
    /// A line's calls are all returned before the next line is read.
    fn pos(&self) -> Pos {
        Pos::Line(self.line_no)
    }
}

impl Iterator for TiCalls {
    type Item = Result<Call, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.next_call();
        stream_step(&mut self.done, step)
    }
}
