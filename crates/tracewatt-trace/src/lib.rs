//! MPI traces as tracewatt workloads: readers for SST-DUMPI, OTF2, SimGrid time-independent
//! traces, tracewatt's native format (written by [`NativeWriter`] and the C tracer in `tracer/`), and
//! conversion of any of them to the native format.
//!
//! Every reader turns a rank's trace into a stream of [`Call`]s (the recorded MPI calls); a
//! shared builder turns calls into simulator ops (compute gaps from timestamps, request and
//! communicator tracking). [`open`] does one pre-pass over all ranks (bounded memory) to resolve
//! communicators and collect [`TraceInfo`]; `program(rank)` then streams the rank's file again.

pub mod builder;
pub mod call;
mod comms;
pub mod dumpi;
pub mod error;
pub mod funcs;
pub mod native;
pub mod otf2;
pub mod simgrid;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tracewatt_workload::collectives;
use tracewatt_workload::generators::Workload;
use tracewatt_workload::{CommId, Op, Program, Rank};

pub use call::{Call, CallKind};
pub use error::{Location, TraceError};
pub use native::{NativeWriter, NATIVE_VERSION};

use builder::{Gaps, OpBuilder};
use comms::{CommTable, Replay, Resolver};

/// How to read a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadOptions {
    /// Factor applied to every compute duration (1.0: as traced).
    pub compute_scale: f64,
    /// Flop rate turning SimGrid `compute <flops>` into time.
    pub flops_per_s: f64,
    /// Unsupported calls are errors instead of warnings.
    pub strict: bool,
    /// Which clock measures the compute between calls.
    pub compute_clock: ComputeClock,
    /// The timed region: each rank's program marks where it enters and leaves it
    /// (`Op::Window`); everything is still replayed.
    pub window: Option<Window>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            compute_clock: ComputeClock::Wall,
            compute_scale: 1.0,
            flops_per_s: 1e9,
            strict: false,
            window: None,
        }
    }
}

/// A timed region of a trace, the same rule on every rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start: WindowEdge,
    pub stop: WindowEdge,
}

/// Where a rank enters (`start`) or leaves (`stop`) the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WindowEdge {
    /// The rank's first call (start) or its last (stop).
    Trace,
    /// Start: at the first call starting at or after this many ns past the trace's first call
    /// (over all ranks). Stop: after the last call starting at or before it.
    Time { ns: u64 },
    /// Start: at the `occurrence`-th call (1-based) of `func`. Stop: after it.
    Call { func: funcs::Func, occurrence: u32 },
}

impl Window {
    fn timed(&self) -> bool {
        [self.start, self.stop]
            .iter()
            .any(|e| matches!(e, WindowEdge::Time { .. }))
    }
}

/// The clock measuring a rank's compute between MPI calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeClock {
    /// Wall-clock gaps: right when every rank had a core of its own.
    #[default]
    Wall,
    /// The process's CPU time between calls (formats recording it: DUMPI): right when ranks
    /// shared cores, whose wall-clock gaps include the time other ranks ran.
    Cpu,
}

/// A rank's wall-clock compute over its CPU-time compute above which the rank is taken to have
/// shared its core with others while traced (a warning: a wall-clock replay is too slow).
pub const TIMESHARED_RATIO: f64 = 1.5;

/// Where a rank's traced time went, from its timestamps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankTimes {
    pub rank: Rank,
    /// Time between calls on the wall clock (what `ComputeClock::Wall` replays as compute).
    pub compute_wall_s: f64,
    /// The same on the CPU clock, where every call of the rank records CPU times.
    pub compute_cpu_s: Option<f64>,
    /// Wall-clock time inside MPI calls (communication and waiting, which the replay simulates).
    pub mpi_s: f64,
}

impl RankTimes {
    /// Wall-clock over CPU compute, when both are known and the CPU compute is not zero.
    pub fn wall_over_cpu(&self) -> Option<f64> {
        self.compute_cpu_s
            .filter(|&c| c > 0.0)
            .map(|c| self.compute_wall_s / c)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    Dumpi,
    SimgridTi,
    Native,
    Otf2,
}

impl TraceFormat {
    /// Whether the format can record CPU times beside wall-clock times (`ComputeClock::Cpu`;
    /// native traces since version 3, checked per call when read).
    pub fn records_cpu_time(self) -> bool {
        matches!(self, TraceFormat::Dumpi | TraceFormat::Native)
    }
}

/// An unsupported call name and how often the trace uses it (summed over ranks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnsupportedCall {
    pub name: String,
    pub count: u64,
}

/// What a trace contains, from the pre-pass. Serialisable for `trace info --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceInfo {
    pub format: TraceFormat,
    pub path: String,
    pub ranks: u32,
    /// Communicators besides world.
    pub communicators: u32,
    /// MPI calls by lower-case name without `MPI_`, summed over ranks.
    pub calls: BTreeMap<String, u64>,
    /// Bytes sent point-to-point (send, isend, sendrecv; the bsend/ssend/rsend family).
    pub p2p_bytes: u64,
    /// The collective calls' size arguments (count x datatype size) summed over calls and ranks:
    /// the buffer for bcast, reduce, allreduce; one block for allgather, gather, scatter and one
    /// pair's share for alltoall; for v-collectives the sum of the rank's send sizes. Not what
    /// the collectives move: see `wire_bytes`.
    pub collective_bytes: u64,
    /// Bytes the replay sends from rank to rank: the point-to-point sends plus every message of
    /// the collectives as the simulator decomposes them with its default algorithms
    /// (`[mpi]` defaults; e.g. an alltoall on n ranks sends n - 1 blocks per rank). Computed by
    /// [`info`] (a second pass), `None` from [`open_trace`].
    pub wire_bytes: Option<u64>,
    /// Longest rank's span from its first call's start to its last call's end; `None` for
    /// formats without timestamps.
    pub duration_s: Option<f64>,
    pub unsupported: Vec<UnsupportedCall>,
    /// Per rank compute and MPI time (empty for formats without timestamps).
    pub rank_times: Vec<RankTimes>,
    /// Per rank (index) the floating-point operations the trace's compute is given in: SimGrid
    /// `compute` lines and the `comp_size` of reduce, allreduce and reducescatter. Empty for
    /// traces whose compute is time.
    pub rank_flops: Vec<f64>,
    /// What a user should know before replaying (ranks that shared cores while traced, when
    /// compute is measured on the wall clock).
    pub warnings: Vec<String>,
}

/// Where a call was read in its rank's file: its record's byte offset (binary formats) or its
/// line (text formats). What the cross-rank checks name in their errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pos {
    Offset(u64),
    Line(u64),
}

impl Pos {
    pub(crate) fn location(self, file: &Path, rank: Rank) -> Location {
        match self {
            Pos::Offset(o) => Location::at(file, Some(rank), o),
            Pos::Line(l) => Location::line(file, Some(rank), l),
        }
    }
}

/// A rank's calls, each with where it was read.
pub(crate) trait CallStream: Iterator<Item = Result<Call, TraceError>> + Send {
    /// Where the call last returned was read.
    fn pos(&self) -> Pos;
    /// The host the rank ran on, where the format records it: ranks with the same host read
    /// one clock, so their times compare (the cross-rank clock checks); `None`: unknown.
    fn host(&self) -> Option<String> {
        None
    }
    /// The last call's start and end (ns) on its host's clock, when that differs from the
    /// call's own times (OTF2: before clock correction and measurement-off cuts).
    fn host_times_ns(&self, call: &Call) -> (u64, u64) {
        (call.start_ns, call.end_ns)
    }
}

pub(crate) type CallIter = Box<dyn CallStream>;

/// One step of a stream that reads a call at a time and ends at its first error: sets `done`
/// at the end or at an error, so nothing is read past a corrupt spot.
pub(crate) fn stream_step(
    done: &mut bool,
    step: Result<Option<Call>, TraceError>,
) -> Option<Result<Call, TraceError>> {
    let next = step.transpose();
    *done = !matches!(next, Some(Ok(_)));
    next
}

/// A readable trace: one call stream per rank.
pub(crate) trait CallSource: std::fmt::Debug + Send + Sync {
    fn format(&self) -> TraceFormat;
    fn num_ranks(&self) -> u32;
    /// The file holding `rank`'s calls (for error messages).
    fn rank_file(&self, rank: Rank) -> PathBuf;
    fn calls(&self, rank: Rank) -> Result<CallIter, TraceError>;
    /// Whether `rank`'s calls carry timestamps (what `convert` stores).
    fn timed(&self, _rank: Rank) -> Result<bool, TraceError> {
        Ok(self.format() != TraceFormat::SimgridTi)
    }
}

/// A trace opened as a workload.
#[derive(Debug, Clone)]
pub struct TraceWorkload {
    source: Arc<dyn CallSource>,
    comms: Arc<CommTable>,
    info: TraceInfo,
    opts: ReadOptions,
    /// The trace's first call's start, ns: where window times count from.
    origin_ns: u64,
    /// Per rank, the calls posting requests the trace cancelled (dropped from the replay).
    cancelled: Arc<Vec<Vec<u64>>>,
}

impl TraceWorkload {
    pub fn info(&self) -> &TraceInfo {
        &self.info
    }
    /// Unsupported calls, once per name with counts (they are skipped unless `strict`).
    pub fn warnings(&self) -> &[UnsupportedCall] {
        &self.info.unsupported
    }
    /// Bytes every rank's replay sends (see [`TraceInfo::wire_bytes`]): the ops a run streams,
    /// collectives expanded as the engine expands them with their default algorithms.
    fn wire_bytes(&self) -> Result<u64, TraceError> {
        let mut total = 0u64;
        let mut scratch = Vec::new();
        for rank in 0..self.source.num_ranks() {
            let file = self.source.rank_file(rank);
            let mut b = OpBuilder::new(rank, self.source.num_ranks(), file.clone(), &self.opts)
                .dropping(&self.cancelled[rank as usize]);
            for call in self.source.calls(rank)? {
                b.feed(call?, &mut Replay(&self.comms))?;
                total = total.saturating_add(self.sent(rank, &file, &mut b.out, &mut scratch)?);
            }
            b.finish();
            total = total.saturating_add(self.sent(rank, &file, &mut b.out, &mut scratch)?);
        }
        Ok(total)
    }

    /// Bytes `rank` sends in `ops` (drained), collectives expanded into `scratch`.
    fn sent(
        &self,
        rank: Rank,
        file: &Path,
        ops: &mut std::collections::VecDeque<Op>,
        scratch: &mut Vec<Op>,
    ) -> Result<u64, TraceError> {
        let mut total = 0u64;
        for op in ops.drain(..) {
            let place = |c: CommId| {
                let size = self.comms.size(c).unwrap_or(0);
                (size, self.comms.rank_in(c, rank).unwrap_or(0))
            };
            scratch.clear();
            let expanded = match op {
                Op::Collective {
                    comm,
                    kind,
                    root,
                    bytes,
                    algo,
                }
                | Op::Icollective {
                    comm,
                    kind,
                    root,
                    bytes,
                    algo,
                    ..
                } => {
                    let (size, me) = place(comm);
                    collectives::expand(comm, kind, algo, size, me, root, bytes, scratch)
                }
                Op::Alltoallv {
                    comm,
                    send_bytes,
                    recv_bytes,
                    algo,
                } => {
                    let (size, me) = place(comm);
                    collectives::expand_alltoallv(
                        comm,
                        algo,
                        size,
                        me,
                        &send_bytes,
                        &recv_bytes,
                        scratch,
                    )
                }
                op => {
                    scratch.push(op);
                    Ok(())
                }
            };
            expanded.map_err(|e| {
                TraceError::format(
                    Location {
                        file: file.to_path_buf(),
                        rank: Some(rank),
                        ..Default::default()
                    },
                    format!("a collective the simulator can expand ({e})"),
                )
            })?;
            for op in scratch.iter() {
                if let Op::Send { bytes, .. } | Op::Isend { bytes, .. } = op {
                    total = total.saturating_add(*bytes);
                }
            }
        }
        Ok(total)
    }

    /// The raw recorded calls of a rank (what `convert` writes).
    pub fn calls(
        &self,
        rank: Rank,
    ) -> Result<impl Iterator<Item = Result<Call, TraceError>>, TraceError> {
        self.source.calls(rank)
    }
}

impl Workload for TraceWorkload {
    fn num_ranks(&self) -> u32 {
        self.source.num_ranks()
    }
    fn comms(&self) -> Vec<Vec<Rank>> {
        self.comms.members.iter().skip(1).cloned().collect()
    }
    fn program(&self, rank: Rank) -> Program {
        Box::new(RankProgram {
            rank,
            calls: None,
            source: self.source.clone(),
            builder: builder_for(
                self.source.as_ref(),
                rank,
                &self.opts,
                self.origin_ns,
                &self.cancelled[rank as usize],
            ),
            comms: self.comms.clone(),
            done: false,
        })
    }
}

struct RankProgram {
    rank: Rank,
    calls: Option<CallIter>,
    source: Arc<dyn CallSource>,
    builder: OpBuilder,
    comms: Arc<CommTable>,
    done: bool,
}

impl Iterator for RankProgram {
    type Item = Result<tracewatt_workload::Op, tracewatt_workload::ProgramError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(op) = self.builder.out.pop_front() {
                return Some(Ok(op));
            }
            if self.done {
                return None;
            }
            if self.calls.is_none() {
                match self.source.calls(self.rank) {
                    Ok(c) => self.calls = Some(c),
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e.to_program_error(self.rank)));
                    }
                }
            }
            let next = self.calls.as_mut().and_then(|c| c.next());
            match next {
                Some(Ok(call)) => {
                    let mut hook = Replay(&self.comms);
                    if let Err(e) = self.builder.feed(call, &mut hook) {
                        self.done = true;
                        return Some(Err(e.to_program_error(self.rank)));
                    }
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(e.to_program_error(self.rank)));
                }
                None => {
                    self.builder.finish();
                    self.done = true;
                }
            }
        }
    }
}

/// Opens a trace of any supported format (see [`detect`]) as a workload.
pub fn open(path: &Path, opts: &ReadOptions) -> Result<Box<dyn Workload>, TraceError> {
    Ok(Box::new(open_trace(path, opts)?))
}

/// Like [`open`], keeping the concrete type (for `info()`, `warnings()`, `calls()`).
pub fn open_trace(path: &Path, opts: &ReadOptions) -> Result<TraceWorkload, TraceError> {
    let source = open_source(path, opts)?;
    prescan(path, source, opts)
}

/// The trace's rank count, from its index or meta data (no pass over the calls).
pub fn num_ranks(path: &Path) -> Result<u32, TraceError> {
    Ok(open_source(path, &ReadOptions::default())?.num_ranks())
}

/// Format, ranks, calls, bytes (with [`TraceInfo::wire_bytes`]) and duration of a trace (two
/// passes over it).
pub fn info(path: &Path, opts: &ReadOptions) -> Result<TraceInfo, TraceError> {
    let t = open_trace(path, opts)?;
    let wire = t.wire_bytes()?;
    Ok(TraceInfo {
        wire_bytes: Some(wire),
        ..t.info
    })
}

/// Converts any readable trace to the native format in `out_dir` (created if missing).
pub fn convert(path: &Path, out_dir: &Path, opts: &ReadOptions) -> Result<TraceInfo, TraceError> {
    let source = open_source(path, opts)?;
    native::write_all(source.as_ref(), out_dir)?;
    info(out_dir, opts)
}

/// Which format `path` is in.
pub fn detect(path: &Path) -> Result<TraceFormat, TraceError> {
    if let Some(f) = native::detect(path) {
        return Ok(f);
    }
    if dumpi::detect(path) {
        return Ok(TraceFormat::Dumpi);
    }
    if otf2::find_anchor(path).is_some() {
        return Ok(TraceFormat::Otf2);
    }
    if simgrid::detect(path) {
        return Ok(TraceFormat::SimgridTi);
    }
    Err(TraceError::UnknownFormat {
        path: path.to_path_buf(),
        why: format!(
            "no DUMPI .meta, native index, OTF2 anchor or SimGrid action lines; {}{}",
            simgrid::not_a_list(path).map_or(String::new(), |why| why + "; "),
            what_is_there(path)
        ),
    })
}

/// What a path that is not a trace holds, for the error: file kinds by extension (with what
/// each lacks when it belongs to a known format), or the first bytes of a file.
fn what_is_there(path: &Path) -> String {
    if !path.is_dir() {
        let mut head = [0u8; 8];
        let n = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .unwrap_or(0);
        let shown: String = head[..n]
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    (b as char).to_string()
                } else {
                    format!("\\x{b:02x}")
                }
            })
            .collect();
        return format!("the file starts with \"{shown}\"");
    }
    // Keyed by extension ("" for none, "/" for subdirectories).
    let mut by_ext: BTreeMap<String, u32> = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(path) {
        for e in rd.flatten() {
            let p = e.path();
            let ext = if p.is_dir() {
                "/".to_string()
            } else {
                p.extension()
                    .map_or(String::new(), |e| e.to_string_lossy().into_owned())
            };
            *by_ext.entry(ext).or_insert(0) += 1;
        }
    }
    if by_ext.is_empty() {
        return "the directory is empty".into();
    }
    let found: Vec<String> = by_ext
        .iter()
        .map(|(ext, &n)| {
            let s = if n == 1 { "" } else { "s" };
            match ext.as_str() {
                "/" => format!("{n} subdirector{}", if n == 1 { "y" } else { "ies" }),
                "" => format!("{n} file{s} without an extension"),
                "bin" => format!("{n} .bin file{s} (DUMPI rank files need the .meta naming them)"),
                "twr" => format!("{n} .twr file{s} (native rank files need their trace.twi)"),
                "evt" | "def" => format!("{n} .{ext} file{s} (OTF2 needs its .otf2 anchor)"),
                _ => format!("{n} .{ext} file{s}"),
            }
        })
        .collect();
    format!("found {}", found.join(", "))
}

fn open_source(path: &Path, opts: &ReadOptions) -> Result<Arc<dyn CallSource>, TraceError> {
    Ok(match detect(path)? {
        TraceFormat::Dumpi => Arc::new(dumpi::DumpiTrace::open(path)?),
        TraceFormat::SimgridTi => Arc::new(simgrid::SimgridTrace::open(path, opts.flops_per_s)?),
        TraceFormat::Native => Arc::new(native::NativeTrace::open(path)?),
        TraceFormat::Otf2 => Arc::new(otf2::Otf2Trace::open(path)?),
    })
}

/// A rank's op builder, marking the window if there is one and dropping the posts of
/// `cancelled` requests.
fn builder_for(
    source: &dyn CallSource,
    rank: Rank,
    opts: &ReadOptions,
    origin_ns: u64,
    cancelled: &[u64],
) -> OpBuilder {
    let b =
        OpBuilder::new(rank, source.num_ranks(), source.rank_file(rank), opts).dropping(cancelled);
    match opts.window {
        Some(w) => b.windowed(w, origin_ns),
        None => b,
    }
}

/// Where a window's times count from: the earliest first call's start over the ranks. A trace
/// without timestamps has no times to count.
fn window_origin(source: &dyn CallSource, window: &Window) -> Result<u64, TraceError> {
    if !window.timed() {
        return Ok(0);
    }
    let mut origin = None::<u64>;
    for rank in 0..source.num_ranks() {
        if !source.timed(rank)? {
            return Err(TraceError::format(
                Location {
                    file: source.rank_file(rank),
                    rank: Some(rank),
                    ..Default::default()
                },
                "timestamps for a window given in seconds (this trace has none: give the \
                 window as calls, `from` / `to`)",
            ));
        }
        if let Some(call) = source.calls(rank)?.next() {
            let s = call?.start_ns;
            origin = Some(origin.map_or(s, |o| o.min(s)));
        }
    }
    Ok(origin.unwrap_or(0))
}

fn prescan(
    path: &Path,
    source: Arc<dyn CallSource>,
    opts: &ReadOptions,
) -> Result<TraceWorkload, TraceError> {
    let n = source.num_ranks();
    let origin_ns = match &opts.window {
        Some(w) => window_origin(source.as_ref(), w)?,
        None => 0,
    };
    let mut resolver = Resolver::new(n);
    let mut tally = Tally {
        rank_flops: vec![0.0; n as usize],
        ..Tally::default()
    };
    // Where each rank's communicator creations are (named if their callers disagree).
    let mut creations: Vec<Vec<Pos>> = Vec::with_capacity(n as usize);
    let mut cancelled = Vec::with_capacity(n as usize);
    for rank in 0..n {
        let (created, posts) = scan_rank(
            source.as_ref(),
            rank,
            opts,
            origin_ns,
            &mut resolver,
            &mut tally,
        )?;
        creations.push(created);
        cancelled.push(posts);
    }
    if let Some((rank, k, what)) = resolver.disagreement() {
        let file = source.rank_file(rank);
        let at = match creations[rank as usize].get(k) {
            Some(pos) => pos.location(&file, rank),
            None => Location::file(&file),
        };
        return Err(TraceError::Inconsistent { at, what });
    }
    if tally.inferred_nbcs > 0 {
        tally.warnings.push(format!(
            "{} non-blocking collectives carry no request or size in the trace (Score-P before \
             OTF2 3.0): each takes communicator, root and size from its rank's latest blocking \
             collective of the same operation and completes at the rank's next wait without \
             completion records (docs/replaying-traces.md)",
            tally.inferred_nbcs
        ));
    }
    let comms = resolver.finish();
    validate::check(source.as_ref(), &comms, opts, &cancelled)?;
    let info = TraceInfo {
        format: source.format(),
        path: path.display().to_string(),
        ranks: n,
        communicators: comms.members.len().saturating_sub(1) as u32,
        calls: tally.calls,
        p2p_bytes: tally.p2p,
        collective_bytes: tally.coll,
        duration_s: tally.duration,
        unsupported: tally
            .unsupported
            .into_iter()
            .map(|(name, count)| UnsupportedCall { name, count })
            .collect(),
        rank_times: tally.rank_times,
        rank_flops: if source.format() == TraceFormat::SimgridTi {
            tally.rank_flops
        } else {
            Vec::new()
        },
        wire_bytes: None,
        warnings: tally.warnings,
    };
    Ok(TraceWorkload {
        source,
        comms: Arc::new(comms),
        info,
        opts: *opts,
        origin_ns,
        cancelled: Arc::new(cancelled),
    })
}

/// What the pre-pass counts over every rank's calls for [`TraceInfo`].
#[derive(Debug, Default)]
struct Tally {
    calls: BTreeMap<String, u64>,
    unsupported: BTreeMap<String, u64>,
    p2p: u64,
    coll: u64,
    /// The longest rank's span from its first call's start to its last call's end, s.
    duration: Option<f64>,
    rank_times: Vec<RankTimes>,
    warnings: Vec<String>,
    rank_flops: Vec<f64>,
    /// Non-blocking collectives recorded without their request or sizes (inferred).
    inferred_nbcs: u64,
}

impl Tally {
    fn call(&mut self, rank: Rank, call: &Call) {
        let name = match &call.kind {
            CallKind::Unsupported { name } if call.func == funcs::F_UNKNOWN => name.as_str(),
            _ => funcs::func_name(call.func),
        };
        if !funcs::is_pseudo(call.func) {
            *self.calls.entry(name.to_string()).or_insert(0) += 1;
        }
        if let CallKind::Compute { flops: Some(f), .. } = call.kind {
            self.rank_flops[rank as usize] += f;
        }
        if matches!(call.kind, CallKind::Icoll { req, .. } if req >= call::MADE_UP_REQS) {
            self.inferred_nbcs += 1;
        }
        self.p2p = self.p2p.saturating_add(call.p2p_bytes());
        self.coll = self.coll.saturating_add(call.coll_bytes());
    }

    /// A rank's times, once all its calls are read; warns if its compute on the wall clock
    /// is far above its CPU time and the replay uses the wall clock.
    fn rank_times(&mut self, rank: Rank, clock: &RankClock, opts: &ReadOptions) {
        if clock.first.is_some() {
            let t = RankTimes {
                rank,
                compute_wall_s: clock.wall_ns as f64 / 1e9,
                compute_cpu_s: clock.cpu_ns.map(|c| c as f64 / 1e9),
                mpi_s: clock.mpi_ns as f64 / 1e9,
            };
            let wall_replay = opts.compute_clock == ComputeClock::Wall;
            if let Some(r) = t
                .wall_over_cpu()
                .filter(|&r| wall_replay && r > TIMESHARED_RATIO)
            {
                self.warnings.push(format!(
                    "rank {rank}: compute on the wall clock is {r:.2}x its CPU time (ranks shared \
                     cores while traced); compute_clock = \"wall\" replays it too slowly, \
                     compute_clock = \"cpu\" replays the CPU time"
                ));
            }
            self.rank_times.push(t);
        }
        if let (Some(f), Some(l)) = (clock.first, clock.last) {
            let d = l.saturating_sub(f) as f64 / 1e9;
            self.duration = Some(self.duration.map_or(d, |x: f64| x.max(d)));
        }
    }
}

/// One rank's timestamps summed up: compute gaps on both clocks, time in MPI, and its span
/// (`first` is `None` while no call has times).
#[derive(Debug)]
struct RankClock {
    wall: Gaps,
    cpu: Gaps,
    wall_ns: u64,
    /// `None` once a timed call has no CPU times.
    cpu_ns: Option<u64>,
    mpi_ns: u64,
    first: Option<u64>,
    last: Option<u64>,
}

impl RankClock {
    fn new() -> Self {
        RankClock {
            wall: Gaps::default(),
            cpu: Gaps::default(),
            wall_ns: 0,
            cpu_ns: Some(0),
            mpi_ns: 0,
            first: None,
            last: None,
        }
    }

    fn add(&mut self, call: &Call) {
        if call.start_ns == 0 && call.end_ns == 0 {
            return;
        }
        self.wall_ns += self.wall.gap_ns(call.start_ns, call.end_ns);
        self.mpi_ns += call.end_ns.saturating_sub(call.start_ns);
        self.cpu_ns = match (self.cpu_ns, call.cpu_ns) {
            (Some(sum), Some((s, e))) => Some(sum + self.cpu.gap_ns(s, e)),
            _ => None,
        };
        self.first = Some(self.first.map_or(call.start_ns, |f| f.min(call.start_ns)));
        self.last = Some(self.last.map_or(call.end_ns, |l| l.max(call.end_ns)));
    }
}

/// The pre-pass over one rank: feeds its calls to an op builder (which names its communicators
/// to `resolver`) and counts them in `tally`. Returns where the rank creates communicators and
/// the calls that posted the requests it cancelled.
fn scan_rank(
    source: &dyn CallSource,
    rank: Rank,
    opts: &ReadOptions,
    origin_ns: u64,
    resolver: &mut Resolver,
    tally: &mut Tally,
) -> Result<(Vec<Pos>, Vec<u64>), TraceError> {
    let mut b = builder_for(source, rank, opts, origin_ns, &[]);
    let mut clock = RankClock::new();
    let mut creations = Vec::new();
    let mut stream = source.calls(rank)?;
    while let Some(call) = stream.next() {
        let call = call?;
        clock.add(&call);
        if matches!(
            call.kind,
            CallKind::CommSplit { .. } | CallKind::CommCreate { .. } | CallKind::CommDefine { .. }
        ) {
            creations.push(stream.pos());
        }
        tally.call(rank, &call);
        b.feed(call, resolver)
            .map_err(|e| e.located(&stream.pos().location(&source.rank_file(rank), rank)))?;
        b.out.clear();
    }
    b.finish();
    if let Some(problem) = b.window_problem() {
        return Err(TraceError::format(
            Location {
                file: source.rank_file(rank),
                rank: Some(rank),
                ..Default::default()
            },
            format!("a window every rank goes through: {problem}"),
        ));
    }
    for (k, v) in b.unsupported {
        *tally.unsupported.entry(k).or_insert(0) += v;
    }
    tally.rank_times(rank, &clock, opts);
    Ok((creations, b.cancelled))
}
