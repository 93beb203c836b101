//! OTF2 archives (as written by Score-P): an anchor file `<name>.otf2`, global definitions
//! `<name>.def` and a directory `<name>/` with one event file `<location>.evt` (and optional
//! local definitions `<location>.def`) per location. See `buffer.rs` for the byte level,
//! `defs.rs` for definitions and `events.rs` for event records.
//!
//! Ranks are the MPI locations: rank r is the r-th member of the MPI `COMM_LOCATIONS` group
//! (Score-P's `MPI_COMM_WORLD` ranks); without one, the process location groups in id order,
//! each by its first location. Other locations (OpenMP threads, accelerators) are not read.
//!
//! One MPI call = the Enter and Leave of a region named `MPI_*`; the MPI records between them
//! say what it did (peers, tags, bytes, communicators, requests, collective sizes), and the
//! region name says which call it was, like a DUMPI function label. Other regions are ignored
//! (their time is compute). Quirks survived: a Leave without Enter is ignored, an MPI Enter
//! while another MPI call is open ends that call, a call still open at the end ends at the last
//! event; measurement-off intervals are cut out of the timeline (later times move back by
//! their length), so they count neither as compute nor as call time.
//!
//! `MPI_Irecv` records only a request id; the peer, tag and size come with its completion
//! (MpiIrecv) inside a later wait or test. A second cursor on the same file reads ahead to find
//! them, holding only the receives posted but not yet reached by the main cursor. A receive
//! whose request was cancelled (MpiRequestCancelled) completes with no message, so it becomes
//! a receive that moves nothing and `MPI_Cancel` itself is a local call. The same goes
//! for non-blocking collectives (OTF2 3.0 NonBlockingCollectiveRequest/Complete): the
//! completion gives the collective's communicator, root and sizes.
//!
//! Score-P before OTF2 3.0 records a non-blocking collective's region only: no request,
//! communicator or size, and nothing in the wait that completes it. The reader then takes
//! communicator, root and sizes from the rank's latest blocking collective of the same operation
//! (`MPI_Allreduce`'s for `MPI_Iallreduce`; none: unsupported), and completes these collectives
//! in the order posted: a `MPI_Wait` or `MPI_Waitany` without completion records completes the
//! oldest one in flight, a `MPI_Waitall` all of them (tests and waitsome complete none; what is
//! left is waited for at `MPI_Finalize`).
//!
//! Communicators come from the definitions: every rank's stream starts with one `comm_define`
//! pseudo-call per communicator it belongs to (members in communicator rank order), so the
//! shared builder and the native format know them without the calls that created them.

mod buffer;
mod defs;
mod events;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracewatt_workload::{CollKind, Rank};

use crate::call::{
    Call, CallKind, CommHandle, ReqHandle, NULL_COMM_HANDLE, PROC_NULL, SELF_HANDLE, WORLD_HANDLE,
};
use crate::error::{Location, TraceError};
use crate::funcs::{self, func_id, Func};
use crate::{CallIter, CallSource, CallStream, Pos, TraceFormat};
use defs::{GlobalDefs, LocalDefs, UNDEFINED_U32};
use events::{Coll, Ev, EvtStream, Msg};

/// The anchor file of `path` (an anchor file, or a directory holding exactly one).
pub(crate) fn find_anchor(path: &Path) -> Option<PathBuf> {
    let is_anchor = |p: &Path| p.extension().is_some_and(|e| e == "otf2");
    if path.is_file() {
        return is_anchor(path).then(|| path.to_path_buf());
    }
    if path.join("traces.otf2").is_file() {
        return Some(path.join("traces.otf2"));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && is_anchor(p))
        .collect();
    (found.len() == 1).then(|| found.remove(0))
}

/// What an MPI region is.
#[derive(Debug, Clone)]
struct MpiRegion {
    func: Func,
    /// Lower-case name without `MPI_`.
    name: String,
}

/// Everything the definitions say, shared by every rank's stream.
#[derive(Debug)]
struct Model {
    dir: PathBuf,
    chunk_size_events: u64,
    chunk_size_defs: u64,
    last_event_type: u8,
    ticks_per_s: u64,
    origin_ticks: u64,
    /// The latest time an event may have (origin + length; no bound when the length is
    /// OTF2_UNDEFINED_TIMESTAMP).
    end_ticks: u64,
    rank_locations: Vec<u64>,
    /// Per rank, its host: the name and id of its system tree node (see `host_node`).
    rank_nodes: Vec<Option<String>>,
    /// Global region id -> MPI call (absent: not an MPI region).
    regions: BTreeMap<u32, MpiRegion>,
    /// Every defined region (events may name no other).
    defined_regions: BTreeSet<u32>,
    comms: CommMap,
    /// Communicators besides world and self.
    defined: Defined,
}

impl Model {
    fn open(anchor_path: &Path) -> Result<Self, TraceError> {
        let anchor = defs::read_anchor(anchor_path)?;
        let stem = anchor_path.with_extension("");
        let defs_path = anchor_path.with_extension("def");
        let d = defs::read_global_defs(&defs_path, anchor.chunk_size_defs)?;
        let Some(clock) = d.clock else {
            return Err(TraceError::format(
                near(&d, &defs_path, d.first_skipped_at),
                "a ClockProperties definition (none found; this is the first definition the \
                 reader skips, or where the definitions end)",
            ));
        };
        let rank_locations = checked_rank_locations(&d, &defs_path)?;
        let mut regions = BTreeMap::new();
        for (&id, region) in &d.regions {
            if let Some(r) = mpi_region(&d, &defs_path, id, region)? {
                regions.insert(id, r);
            }
        }
        let (comms, defined) = communicators(&d, rank_locations.len() as u32);
        let rank_nodes = rank_locations
            .iter()
            .map(|l| {
                let group = d.locations.get(l)?.group;
                host_node(&d, *d.location_group_nodes.get(&group)?)
            })
            .collect();
        Ok(Model {
            dir: stem,
            chunk_size_events: anchor.chunk_size_events,
            chunk_size_defs: anchor.chunk_size_defs,
            last_event_type: anchor.last_event_type,
            ticks_per_s: clock.ticks_per_s,
            origin_ticks: clock.origin_ticks,
            end_ticks: clock.origin_ticks.saturating_add(clock.length_ticks),
            rank_locations,
            rank_nodes,
            regions,
            defined_regions: d.regions.keys().copied().collect(),
            comms,
            defined,
        })
    }

    fn location_file(&self, rank: Rank, ext: &str) -> PathBuf {
        let loc = self.rank_locations.get(rank as usize).copied().unwrap_or(0);
        self.dir.join(format!("{loc}.{ext}"))
    }

    /// Ticks since the trace's origin, in ns.
    fn ns(&self, ticks: u64) -> u64 {
        let t = ticks.saturating_sub(self.origin_ticks) as u128 * 1_000_000_000;
        u64::try_from(t / self.ticks_per_s as u128).unwrap_or(u64::MAX)
    }

    /// Ticks as recorded, in ns: the origin applies to corrected times, which raw ones
    /// (offsets not yet added) may precede.
    fn raw_ns(&self, ticks: u64) -> u64 {
        let t = ticks as u128 * 1_000_000_000 / self.ticks_per_s as u128;
        u64::try_from(t).unwrap_or(u64::MAX)
    }

    fn comm(&self, id: u32) -> (CommHandle, u32) {
        match self.comms.get(&id) {
            Some(&c) => c,
            // Unknown (e.g. an intercommunicator): a handle the builder does not know, so
            // calls on it are reported as unsupported rather than simulated on wrong ranks.
            None if id >= UNDEFINED_U32 - 2 => (NULL_COMM_HANDLE, 1),
            None => (id + 2, 1),
        }
    }
}

/// Where in the definitions `defs_path` an error is: at `off`, or (a missing definition has
/// no offset) where the definitions end, since a corrupt record length can skip onto an early
/// end.
fn near(d: &GlobalDefs, defs_path: &Path, off: Option<u64>) -> Location {
    Location::at(defs_path, None, off.unwrap_or(d.end_at))
}

/// World rank -> location id, each a defined location, 1 to 2^24 of them.
fn checked_rank_locations(d: &GlobalDefs, defs_path: &Path) -> Result<Vec<u64>, TraceError> {
    let rank_locations = rank_locations(d);
    if let Some(bad) = rank_locations.iter().find(|l| !d.locations.contains_key(l)) {
        // Only the MPI locations group can name an undefined one.
        let group = d.groups.iter().find(|(_, g)| g.members.contains(bad));
        let off = group
            .and_then(|(id, _)| d.group_at.get(id))
            .copied()
            .unwrap_or(0);
        return Err(TraceError::format(
            Location::at(defs_path, None, off),
            format!("MPI ranks that are defined locations, got location {bad}"),
        ));
    }
    if rank_locations.is_empty() || rank_locations.len() > 1 << 24 {
        // The ranks come from MPI's locations group, else the process location groups.
        let mpi_group = d
            .groups
            .iter()
            .find(|(_, g)| g.ty == defs::GROUP_COMM_LOCATIONS && g.paradigm == defs::PARADIGM_MPI)
            .and_then(|(id, _)| d.group_at.get(id).copied());
        return Err(TraceError::format(
            near(
                d,
                defs_path,
                mpi_group
                    .or(d.first_location_group_at)
                    .or(d.first_skipped_at),
            ),
            format!(
                "1..2^24 MPI ranks (the members of MPI's locations group or the process \
                 location groups; found {}; this is MPI's locations group, the first \
                 location group, the first definition the reader skips, or where the \
                 definitions end)",
                rank_locations.len()
            ),
        ));
    }
    Ok(rank_locations)
}

/// The MPI call a region `id` is (`None`: a user or tool region), checked against the
/// corruptions that would turn one into the other.
fn mpi_region(
    d: &GlobalDefs,
    defs_path: &Path,
    id: u32,
    region: &defs::RegionDef,
) -> Result<Option<MpiRegion>, TraceError> {
    let at = Location::at(defs_path, None, d.region_at.get(&id).copied().unwrap_or(0));
    let string = |s: u32| {
        d.strings.get(&s).ok_or_else(|| {
            TraceError::format(
                at.clone(),
                format!("a region named by defined strings, got string {s}"),
            )
        })
    };
    let name = string(region.name)?;
    // An MPI function's region names it twice (name, canonical name) and says MPI is its
    // paradigm: a corrupt reference to another string breaks the agreement.
    let canonical = region.canonical_name.map(string).transpose()?;
    let mpi = |s: &str| s.starts_with("MPI_");
    if canonical.is_some_and(|c| (mpi(c) || mpi(name)) && c != name) {
        return Err(TraceError::format(
            at,
            format!(
                "an MPI function's region with its name as its canonical name, got `{name}` \
                 and `{}`",
                canonical.map_or("", |c| c.as_str())
            ),
        ));
    }
    if mpi(name) && region.paradigm.is_some_and(|p| p != defs::PARADIGM_MPI) {
        return Err(TraceError::format(
            at,
            format!(
                "`{name}` with MPI's paradigm ({}), got paradigm {}",
                defs::PARADIGM_MPI,
                region.paradigm.unwrap_or(0)
            ),
        ));
    }
    // The other way round, an MPI region other than the tool's own artificial ones
    // (SST/macro's `PARALLEL`) is an MPI function: a corrupt name string, which name and
    // canonical name share, would otherwise turn the call into a user region.
    let function = region
        .role
        .is_some_and(|r| r != defs::REGION_ROLE_ARTIFICIAL);
    if !mpi(name) && function && region.paradigm == Some(defs::PARADIGM_MPI) {
        return Err(TraceError::format(
            at,
            format!(
                "an MPI function's region (paradigm MPI, role {}) named `MPI_...`, got `{name}`",
                region.role.unwrap_or(0)
            ),
        ));
    }
    let Some(rest) = name.strip_prefix("MPI_") else {
        return Ok(None);
    };
    // MPI function names are identifiers: anything else is a corrupt string.
    if !rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        let off = d.string_at.get(&region.name).copied().unwrap_or(0);
        return Err(TraceError::format(
            Location::at(defs_path, None, off),
            format!("an MPI function name of letters, digits and `_`, got `MPI_{rest}`"),
        ));
    }
    let name = rest.to_ascii_lowercase();
    let func = func_id(&name).unwrap_or(funcs::F_UNKNOWN);
    Ok(Some(MpiRegion { func, name }))
}

/// The system tree node that is the host of a process whose location group's parent is
/// `parent`: the nearest ancestor of class `node` (Score-P names a host so; trees may hold
/// sockets, cores or NUMA domains below it). `None` when there is none, or it is `localhost`:
/// the host is unknown.
fn host_node(d: &GlobalDefs, parent: u32) -> Option<String> {
    let mut at = parent;
    // A corrupt parent link could make a cycle: a tree is no deeper than its node count.
    for _ in 0..=d.system_tree.len() {
        let &(name, class, up) = d.system_tree.get(&at)?;
        if d.strings.get(&class).is_some_and(|c| c == "node") {
            let name = d.strings.get(&name).map_or("", String::as_str);
            // Score-P merges processes by hostname: `localhost` may be many machines.
            return (!name.starts_with("localhost"))
                .then(|| format!("{name} (system tree node {at})"));
        }
        at = up;
    }
    None
}

/// World rank -> location id.
fn rank_locations(d: &GlobalDefs) -> Vec<u64> {
    let mpi_locations = d
        .groups
        .values()
        .find(|g| g.ty == defs::GROUP_COMM_LOCATIONS && g.paradigm == defs::PARADIGM_MPI);
    if let Some(g) = mpi_locations {
        return g.members.clone();
    }
    d.location_groups
        .iter()
        .filter(|(_, &ty)| ty == defs::LOCATION_GROUP_PROCESS)
        .filter_map(|(&g, _)| {
            d.locations
                .iter()
                .find(|(_, l)| l.group == g)
                .map(|(&id, _)| id)
        })
        .collect()
}

/// Trace communicator id -> (handle, size).
type CommMap = BTreeMap<u32, (CommHandle, u32)>;
/// Communicators to define: handle and members (world ranks, comm-rank order).
type Defined = Vec<(CommHandle, Vec<Rank>)>;

/// Communicator handles and sizes, and the communicators to define. World is the MPI
/// communicator without parent whose group is every rank in order; communicators of a
/// `COMM_SELF` group are self. Group members of MPI communicators are world ranks.
fn communicators(d: &GlobalDefs, n: u32) -> (CommMap, Defined) {
    let mut comms = BTreeMap::new();
    let mut defined = Vec::new();
    let mut world_seen = false;
    for (&id, c) in &d.comms {
        let Some(g) = d.groups.get(&c.group) else {
            continue;
        };
        if g.paradigm != defs::PARADIGM_MPI && g.ty != defs::GROUP_COMM_SELF {
            continue;
        }
        if g.ty == defs::GROUP_COMM_SELF {
            comms.insert(id, (SELF_HANDLE, 1));
            continue;
        }
        if g.ty != defs::GROUP_COMM_GROUP || id >= UNDEFINED_U32 - 2 {
            continue;
        }
        let members: Option<Vec<Rank>> = g
            .members
            .iter()
            .map(|&m| u32::try_from(m).ok().filter(|&r| r < n))
            .collect();
        let Some(members) = members else {
            continue;
        };
        let is_world = !world_seen
            && c.parent == UNDEFINED_U32
            && members.len() == n as usize
            && members.iter().enumerate().all(|(i, &m)| m == i as u32);
        let size = members.len() as u32;
        if is_world {
            world_seen = true;
            comms.insert(id, (WORLD_HANDLE, n));
        } else {
            comms.insert(id, (id + 2, size));
            defined.push((id + 2, members));
        }
    }
    (comms, defined)
}

/// An OTF2 archive opened for reading.
#[derive(Debug)]
pub struct Otf2Trace {
    model: Arc<Model>,
}

impl Otf2Trace {
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let Some(anchor) = find_anchor(path) else {
            return Err(TraceError::UnknownFormat {
                path: path.to_path_buf(),
                why: "no single OTF2 anchor file (*.otf2)".into(),
            });
        };
        Ok(Otf2Trace {
            model: Arc::new(Model::open(&anchor)?),
        })
    }
}

impl CallSource for Otf2Trace {
    fn format(&self) -> TraceFormat {
        TraceFormat::Otf2
    }
    fn num_ranks(&self) -> u32 {
        self.model.rank_locations.len() as u32
    }
    fn rank_file(&self, rank: Rank) -> PathBuf {
        self.model.location_file(rank, "evt")
    }
    fn calls(&self, rank: Rank) -> Result<CallIter, TraceError> {
        Ok(Box::new(Otf2Calls::open(self.model.clone(), rank)?))
    }
}

/// What the read-ahead cursor found for a posted request.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Irecv(Msg),
    Nbc(Coll),
    /// Cancelled, or never completed in the trace.
    Nothing,
}

/// The second cursor: finds the completions of posted receives and non-blocking collectives.
/// Posts are numbered in file order by both cursors, so a number names the same post.
#[derive(Debug)]
struct ReadAhead {
    ev: Option<EvtStream>,
    posts: u64,
    /// Request id -> post number, for posts seen whose completion was not yet found.
    pending: BTreeMap<u64, u64>,
    found: BTreeMap<u64, Outcome>,
}

impl ReadAhead {
    fn outcome(
        &mut self,
        post: u64,
        open: impl FnOnce() -> Result<EvtStream, TraceError>,
    ) -> Result<Outcome, TraceError> {
        if self.ev.is_none() {
            self.ev = Some(open()?);
        }
        loop {
            if let Some(o) = self.found.remove(&post) {
                return Ok(o);
            }
            let Some(ev) = self.ev.as_mut() else {
                return Ok(Outcome::Nothing);
            };
            let Some((_, e)) = ev.next_event()? else {
                // Posts never completed: drop what is left so they resolve to nothing.
                self.pending.clear();
                return Ok(self.found.remove(&post).unwrap_or(Outcome::Nothing));
            };
            let done = match e {
                Ev::IrecvRequest(req) | Ev::NbcRequest(req) => {
                    self.pending.insert(req, self.posts);
                    self.posts += 1;
                    None
                }
                Ev::Irecv(m, req) => Some((req, Outcome::Irecv(m))),
                Ev::NbcComplete(c, req) => Some((req, Outcome::Nbc(c))),
                Ev::RequestCancelled(req) => Some((req, Outcome::Nothing)),
                _ => None,
            };
            if let Some((req, o)) = done {
                if let Some(p) = self.pending.remove(&req) {
                    if p >= post {
                        self.found.insert(p, o);
                    }
                }
            }
        }
    }
}

/// An MPI call between its Enter and Leave (its records are in `Otf2Calls::evs`).
#[derive(Debug)]
struct Open {
    region: u32,
    func: Func,
    start_ticks: u64,
    /// Its Enter's time as recorded (no correction, no cut): the host's clock.
    start_raw: u64,
    /// The byte offset of its Enter event.
    at: u64,
}

/// Streams one rank's calls.
#[derive(Debug)]
struct Otf2Calls {
    model: Arc<Model>,
    rank: Rank,
    local: LocalDefs,
    ev: EvtStream,
    ahead: ReadAhead,
    posts: u64,
    open: Option<Open>,
    /// The open call's MPI records (reused from call to call).
    evs: Vec<(Ev, Option<Outcome>)>,
    /// Ticks of measurement-off intervals so far, cut out of later times.
    cut_ticks: u64,
    off_since: Option<u64>,
    last_ticks: u64,
    /// The last event's time as recorded.
    last_raw: u64,
    /// Request handles for isends recorded without a request (Score-P without xnonblock) and
    /// non-blocking collectives recorded without one (Score-P before OTF2 3.0).
    synthetic_reqs: u64,
    unrecorded: Unrecorded,
    /// Finished calls with their Enter's byte offset and their times on the host's clock (ns).
    out: VecDeque<(u64, Call, (u64, u64))>,
    done: bool,
    call_at: u64,
    call_host_ns: (u64, u64),
}

impl Otf2Calls {
    fn open(model: Arc<Model>, rank: Rank) -> Result<Self, TraceError> {
        let local = defs::read_local_defs(
            &model.location_file(rank, "def"),
            rank,
            model.chunk_size_defs,
        )?;
        let ev = EvtStream::open(
            &model.location_file(rank, "evt"),
            rank,
            model.chunk_size_events,
            model.last_event_type,
            &local,
        )?;
        let out = model
            .defined
            .iter()
            .filter(|(_, m)| m.contains(&rank))
            .map(|(h, m)| {
                let define = CallKind::CommDefine {
                    new: *h,
                    members: m.clone(),
                };
                (0, Call::untimed(funcs::F_COMM_DEFINE, define), (0, 0))
            })
            .collect();
        Ok(Otf2Calls {
            model,
            rank,
            local,
            ev,
            ahead: ReadAhead {
                ev: None,
                posts: 0,
                pending: BTreeMap::new(),
                found: BTreeMap::new(),
            },
            posts: 0,
            open: None,
            evs: Vec::new(),
            cut_ticks: 0,
            off_since: None,
            last_ticks: 0,
            last_raw: 0,
            synthetic_reqs: 0,
            unrecorded: Unrecorded::default(),
            out,
            done: false,
            call_at: 0,
            call_host_ns: (0, 0),
        })
    }

    fn ns(&self, ticks: u64) -> u64 {
        self.model.ns(ticks)
    }

    /// Ends the open call at `end_ticks` (`end_raw` as recorded).
    fn close(&mut self, end_ticks: u64, end_raw: u64) {
        if let Some(o) = self.open.take() {
            let kind = self.kind(&o);
            self.evs.clear();
            let call = Call {
                func: o.func,
                start_ns: self.ns(o.start_ticks),
                end_ns: self.ns(end_ticks.max(o.start_ticks)),
                cpu_ns: None,
                kind,
            };
            let m = &self.model;
            let host = (m.raw_ns(o.start_raw), m.raw_ns(end_raw.max(o.start_raw)));
            self.out.push_back((o.at, call, host));
        }
    }

    /// Reads events until a call is complete (or the file ends).
    fn step(&mut self) -> Result<(), TraceError> {
        let Some((raw, ev)) = self.ev.next_event()? else {
            let (end, raw) = (self.last_ticks, self.last_raw);
            self.close(end, raw);
            self.done = true;
            return Ok(());
        };
        let m = &self.model;
        if raw < m.origin_ticks || raw > m.end_ticks {
            // A corrupt time, or a corrupt origin, length or clock offset.
            return Err(self.ev.error_at_event(&format!(
                "an event time within the trace's span (ClockProperties: ticks {} to {}), got \
                 tick {raw}",
                m.origin_ticks, m.end_ticks
            )));
        }
        let t = raw.saturating_sub(self.cut_ticks);
        self.last_ticks = t;
        let raw = self.ev.raw_time();
        self.last_raw = raw;
        match ev {
            // Measurement starts on and switches alternately: a switch to the state it is in
            // is a corrupt mode, which would move every later time by the interval's length.
            Ev::Measurement { on } if on != self.off_since.is_some() => {
                return Err(self.ev.error_at_event(
                    "a measurement switched off only while on, and on only while off",
                ));
            }
            Ev::Measurement { on: false } => {
                self.off_since = Some(t);
            }
            Ev::Measurement { on: true } => {
                let gap = t.saturating_sub(self.off_since.take().unwrap_or(t));
                self.cut_ticks += gap;
                self.last_ticks = t - gap;
            }
            Ev::Enter(region) | Ev::Leave(region)
                if !self.model.defined_regions.contains(&region) =>
            {
                return Err(self.ev.error_at_event(&format!(
                    "an Enter or Leave of a region the global definitions define, got region \
                     {region}"
                )));
            }
            Ev::Enter(region) => {
                if let Some(r) = self.model.regions.get(&region) {
                    let func = r.func;
                    self.close(t, raw);
                    self.open = Some(Open {
                        region,
                        func,
                        start_ticks: t,
                        start_raw: raw,
                        at: self.ev.at(),
                    });
                }
            }
            Ev::Leave(region) => {
                // A Leave of another MPI region than the open one still ends it; Leaves of
                // user regions and unmatched Leaves are ignored.
                let ends = self.open.as_ref().is_some_and(|o| o.region == region)
                    || self.model.regions.contains_key(&region);
                if ends {
                    self.close(t, raw);
                }
            }
            Ev::IrecvRequest(_) | Ev::NbcRequest(_) => {
                let post = self.posts;
                self.posts += 1;
                let (model, rank, local) = (&self.model, self.rank, &self.local);
                let outcome = self.ahead.outcome(post, || {
                    EvtStream::open(
                        &model.location_file(rank, "evt"),
                        rank,
                        model.chunk_size_events,
                        model.last_event_type,
                        local,
                    )
                })?;
                if self.open.is_some() {
                    self.evs.push((ev, Some(outcome)));
                }
            }
            Ev::Other => {}
            Ev::Send(_) | Ev::Recv(_) | Ev::Isend(..) | Ev::CollEnd(_) if self.open.is_none() => {
                // Score-P writes a message or collective record inside its MPI call's region:
                // outside any, the region definitions no longer say the call was MPI.
                return Err(self.ev.error_at_event(
                    "an MPI message or collective record inside an MPI call's Enter and Leave \
                     (are the global definitions' MPI regions intact?)",
                ));
            }
            ev => {
                if self.open.is_some() {
                    self.evs.push((ev, None));
                }
            }
        }
        Ok(())
    }

    fn kind(&mut self, o: &Open) -> CallKind {
        let m = &self.model;
        let name = m.regions.get(&o.region).map_or("", |r| r.name.as_str());
        let evs = self.evs.as_slice();
        if o.func == funcs::F_UNKNOWN {
            return unsupported(name, "");
        }
        match name {
            "init" | "init_thread" => CallKind::Init,
            "finalize" => CallKind::Finalize,
            "send" | "bsend" | "ssend" | "rsend" => match first(evs, send) {
                Some(s) => {
                    let (comm, peer, tag, bytes) = envelope(m, s);
                    CallKind::Send {
                        comm,
                        peer,
                        tag,
                        bytes,
                    }
                }
                None => CallKind::Local, // MPI_PROC_NULL: Score-P records no message
            },
            "isend" | "ibsend" | "issend" | "irsend" => isend(m, evs, &mut self.synthetic_reqs),
            "recv" => match first(evs, recv) {
                Some(r) => {
                    let (comm, peer, tag, bytes) = envelope(m, r);
                    CallKind::Recv {
                        comm,
                        peer,
                        tag,
                        bytes,
                    }
                }
                None => CallKind::Local,
            },
            "irecv" => irecv(m, evs),
            "sendrecv" | "sendrecv_replace" => sendrecv(m, evs),
            "wait" | "waitall" | "waitany" | "waitsome" | "test" | "testall" | "testany"
            | "testsome" | "request_free" => completion(name, evs, &mut self.unrecorded),
            n => match coll_name(n) {
                Some(blocking) => collective(
                    m,
                    (name, blocking),
                    evs,
                    &mut self.unrecorded,
                    &mut self.synthetic_reqs,
                ),
                None if funcs::is_unmodelled(n) => unsupported(name, ""),
                None => CallKind::Local,
            },
        }
    }
}

/// What stands in for the records Score-P before OTF2 3.0 did not write for non-blocking
/// collectives (see the module docs).
#[derive(Debug, Default)]
struct Unrecorded {
    /// The rank's latest record of each blocking collective, by name.
    last: BTreeMap<&'static str, Coll>,
    /// Requests made up for non-blocking collectives posted without a request record, oldest
    /// first, until a wait completes them.
    pending: VecDeque<ReqHandle>,
}

/// The events recorded inside one MPI call's region, with the outcomes read ahead for its
/// request posts.
type CallEvents = [(Ev, Option<Outcome>)];

/// The call `name` as unsupported, with why if `why` is not empty.
fn unsupported(name: &str, why: &str) -> CallKind {
    CallKind::Unsupported {
        name: if why.is_empty() {
            name.to_string()
        } else {
            format!("{name} ({why})")
        },
    }
}

/// The first of a call's events that `f` picks.
fn first(evs: &CallEvents, f: fn(&Ev) -> Option<Msg>) -> Option<Msg> {
    evs.iter().find_map(|(e, _)| f(e))
}

/// A message record's communicator, peer, tag and size as a call gives them (a peer or tag
/// out of range: MPI_PROC_NULL, MPI_ANY_TAG).
fn envelope(m: &Model, s: Msg) -> (CommHandle, i32, i32, u64) {
    let peer = i32::try_from(s.peer).unwrap_or(PROC_NULL);
    let tag = i32::try_from(s.tag).unwrap_or(crate::call::ANY);
    (m.comm(s.comm).0, peer, tag, s.bytes)
}

/// A request handle for a call recorded without one: the next of `synthetic_reqs`, counting
/// down from `u64::MAX` (see [`crate::call::MADE_UP_REQS`]).
fn made_up_req(synthetic_reqs: &mut u64) -> ReqHandle {
    *synthetic_reqs += 1;
    u64::MAX - *synthetic_reqs
}

/// An isend: its send record and request, or a send recorded without one (completed at the
/// end, under a request handle made up from `synthetic_reqs`).
fn isend(m: &Model, evs: &CallEvents, synthetic_reqs: &mut u64) -> CallKind {
    let isend = evs.iter().find_map(|(e, _)| match e {
        Ev::Isend(s, req) => Some((*s, *req)),
        _ => None,
    });
    let (s, req) = match (isend, first(evs, send)) {
        (Some(x), _) => x,
        (None, Some(s)) => (s, made_up_req(synthetic_reqs)),
        (None, None) => return CallKind::Local,
    };
    let (comm, peer, tag, bytes) = envelope(m, s);
    CallKind::Isend {
        comm,
        peer,
        tag,
        bytes,
        req,
    }
}

/// An irecv: its request record, with the message that completed it (read ahead).
fn irecv(m: &Model, evs: &CallEvents) -> CallKind {
    let post = evs.iter().find_map(|(e, out)| match (e, out) {
        (Ev::IrecvRequest(req), Some(out)) => Some((*req, *out)),
        _ => None,
    });
    match post {
        Some((req, Outcome::Irecv(r))) => {
            let (comm, peer, tag, bytes) = envelope(m, r);
            CallKind::Irecv {
                comm,
                peer,
                tag,
                bytes,
                req,
            }
        }
        Some((req, _)) => CallKind::Irecv {
            comm: WORLD_HANDLE,
            peer: PROC_NULL,
            tag: 0,
            bytes: 0,
            req,
        },
        None => CallKind::Local,
    }
}

fn sendrecv(m: &Model, evs: &CallEvents) -> CallKind {
    let (s, r) = (first(evs, send), first(evs, recv));
    let Some(c) = s.or(r) else {
        return CallKind::Local;
    };
    let (_, dst, send_tag, send_bytes) = s.map_or((0, PROC_NULL, 0, 0), |s| envelope(m, s));
    let (_, src, recv_tag, recv_bytes) = r.map_or((0, PROC_NULL, 0, 0), |r| envelope(m, r));
    CallKind::Sendrecv {
        comm: m.comm(c.comm).0,
        dst,
        send_tag,
        send_bytes,
        src,
        recv_tag,
        recv_bytes,
    }
}

/// A wait, test or request free `name`: the requests its completion records name, and the
/// non-blocking collectives posted without records it is taken to complete.
fn completion(name: &str, evs: &CallEvents, unrecorded: &mut Unrecorded) -> CallKind {
    if first(evs, recv).is_some() {
        return unsupported(name, "receive completed without a request record");
    }
    let mut done: Vec<ReqHandle> = evs
        .iter()
        .filter_map(|(e, _)| match e {
            Ev::IsendComplete(r)
            | Ev::Irecv(_, r)
            | Ev::NbcComplete(_, r)
            | Ev::RequestCancelled(r) => Some(*r),
            _ => None,
        })
        .collect();
    match name {
        "wait" | "waitany" if done.is_empty() => done.extend(unrecorded.pending.pop_front()),
        "waitall" => done.extend(unrecorded.pending.drain(..)),
        _ => {}
    }
    let tested = evs.iter().find_map(|(e, _)| match e {
        Ev::RequestTest(r) => Some(*r),
        _ => None,
    });
    let flag = !done.is_empty();
    let all: Vec<i32> = (0..done.len() as i32).collect();
    match name {
        "wait" if done.len() == 1 => CallKind::Wait { req: done[0] },
        "wait" | "waitall" => CallKind::Waitall { reqs: done },
        "waitany" => CallKind::Waitany {
            index: if flag { 0 } else { -1 },
            reqs: done,
        },
        "waitsome" => CallKind::Waitsome {
            reqs: done,
            indices: all,
        },
        "test" => CallKind::Test {
            req: done.first().copied().or(tested).unwrap_or(0),
            flag,
        },
        "testall" => CallKind::Testall { reqs: done, flag },
        "testany" => CallKind::Testany {
            index: if flag { 0 } else { -1 },
            reqs: done,
            flag,
        },
        "testsome" => CallKind::Testsome {
            reqs: done,
            indices: all,
        },
        _ => match done.first() {
            Some(&req) => CallKind::RequestFree { req },
            None => CallKind::Local,
        },
    }
}

/// A collective `name` (`blocking`: the blocking collective's name, which it is if blocking):
/// its collective record (blocking), or its request's completion record (non-blocking), or for a
/// non-blocking one without, the rank's latest record of `blocking`.
fn collective(
    m: &Model,
    (name, blocking): (&str, &'static str),
    evs: &CallEvents,
    unrecorded: &mut Unrecorded,
    synthetic_reqs: &mut u64,
) -> CallKind {
    if name == blocking {
        let record = evs.iter().find_map(|(e, _)| match e {
            Ev::CollEnd(c) => Some(*c),
            _ => None,
        });
        let Some(c) = record else {
            return unsupported(name, "no collective record");
        };
        unrecorded.last.insert(blocking, c);
        return match coll_kind(m, c) {
            Some((comm, kind, root, bytes)) => CallKind::Coll {
                comm,
                kind,
                root,
                bytes,
            },
            None => unsupported(name, ""),
        };
    }
    let post = evs.iter().find_map(|(e, out)| match (e, out) {
        (Ev::NbcRequest(req), Some(out)) => Some((*req, *out)),
        _ => None,
    });
    let (req, record) = match post {
        Some((req, Outcome::Nbc(c))) => (req, Some(c)),
        // Never completed in the trace: no record of its sizes.
        Some((req, _)) => (req, None),
        None => {
            let req = made_up_req(synthetic_reqs);
            unrecorded.pending.push_back(req);
            (req, None)
        }
    };
    let record = record.or_else(|| unrecorded.last.get(blocking).copied());
    match record.map(|c| coll_kind(m, c)) {
        Some(Some((comm, kind, root, bytes))) => CallKind::Icoll {
            comm,
            kind,
            root,
            bytes,
            req,
        },
        Some(None) => unsupported(name, ""),
        None => unsupported(name, "no collective record"),
    }
}

fn send(e: &Ev) -> Option<Msg> {
    match e {
        Ev::Send(m) => Some(*m),
        _ => None,
    }
}

fn recv(e: &Ev) -> Option<Msg> {
    match e {
        Ev::Recv(m) => Some(*m),
        _ => None,
    }
}

/// Collective call names (blocking or `i`-prefixed non-blocking) -> the blocking name.
fn coll_name(n: &str) -> Option<&'static str> {
    const COLLS: &[&str] = &[
        "barrier",
        "bcast",
        "gather",
        "gatherv",
        "scatter",
        "scatterv",
        "allgather",
        "allgatherv",
        "alltoall",
        "alltoallv",
        "alltoallw",
        "reduce",
        "allreduce",
        "reduce_scatter",
        "reduce_scatter_block",
        "scan",
        "exscan",
    ];
    let blocking = n.strip_prefix('i').unwrap_or(n);
    COLLS.iter().find(|&&c| c == n || c == blocking).copied()
}

/// A collective record's communicator, kind, root and size, as a call has them. Score-P records
/// per-process totals (sent to / received from all ranks), so per-rank blocks are totals /
/// communicator size; v-collectives become their regular form with the mean block. `None`:
/// non-MPI operations.
fn coll_kind(m: &Model, c: Coll) -> Option<(CommHandle, CollKind, i32, u64)> {
    let (comm, n) = m.comm(c.comm);
    let n = n.max(1) as u64;
    let (s, r) = (c.sent, c.received);
    let root = i32::try_from(c.root).unwrap_or(-1);
    let (kind, bytes) = match c.op {
        0 => (CollKind::Barrier, 0),
        1 => (CollKind::Bcast, if r > 0 { r } else { s / n }),
        2 | 3 => (CollKind::Gather, if s > 0 { s } else { r / n }),
        4 | 5 => (CollKind::Scatter, if r > 0 { r } else { s / n }),
        6 | 7 => (CollKind::Allgather, r / n),
        8..=10 => (CollKind::Alltoall, s / n),
        11 => (CollKind::Allreduce, s / n),
        12 => (CollKind::Reduce, if s > 0 { s } else { r / n }),
        13 | 16 => (CollKind::ReduceScatter, s.div_ceil(n)),
        // Score-P counts a scan as if linear: rank r sends (n - r) and receives (r + 1)
        // buffers, n + 1 in all (n - 1 with MPI_IN_PLACE, not told apart here); an exscan
        // as an in-place scan, n - 1.
        14 => (CollKind::Scan, (s + r) / (n + 1)),
        15 => (CollKind::Exscan, (s + r) / (n - 1).max(1)),
        _ => return None,
    };
    Some((comm, kind, root, bytes))
}

impl CallStream for Otf2Calls {
    fn pos(&self) -> Pos {
        Pos::Offset(self.call_at)
    }
    /// The rank's node in the system tree (see `host_node`): Score-P's timers
    /// (TSC, clock_gettime, gettimeofday) are the node's clock, shared by its processes.
    fn host(&self) -> Option<String> {
        self.model
            .rank_nodes
            .get(self.rank as usize)
            .cloned()
            .flatten()
    }
    /// The recorded times, before clock correction and measurement-off cuts: the offsets
    /// Score-P measures per process would put an error of their own between two processes
    /// of one node, and cuts are per rank.
    fn host_times_ns(&self, _call: &Call) -> (u64, u64) {
        self.call_host_ns
    }
}

impl Iterator for Otf2Calls {
    type Item = Result<Call, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((at, c, host)) = self.out.pop_front() {
                self.call_at = at;
                self.call_host_ns = host;
                return Some(Ok(c));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.step() {
                self.done = true;
                self.out.clear();
                return Some(Err(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use defs::{Comm, Group, LocationDef};

    fn group(ty: u8, paradigm: u8, members: &[u64]) -> Group {
        Group {
            ty,
            paradigm,
            members: members.to_vec(),
        }
    }

    /// A process's host is its nearest system tree ancestor of class `node` (below it may be
    /// sockets or cores); none: unknown. Nodes are told apart by id, names may repeat.
    #[test]
    fn a_process_host_is_its_node_in_the_system_tree() {
        let mut d = GlobalDefs::default();
        for (id, s) in [
            (0, "machine"),
            (1, "node"),
            (2, "socket"),
            (3, "n1"),
            (4, "localhost"),
        ] {
            d.strings.insert(id, s.to_string());
        }
        // machine 0 > node 1 (n1) > socket 2; machine 0 > socket 3 without a node; machine 0 >
        // node 4 (localhost).
        d.system_tree.insert(0, (0, 0, UNDEFINED_U32));
        d.system_tree.insert(1, (3, 1, 0));
        d.system_tree.insert(2, (3, 2, 1));
        d.system_tree.insert(3, (3, 2, 0));
        d.system_tree.insert(4, (4, 1, 0));
        assert_eq!(host_node(&d, 2).as_deref(), Some("n1 (system tree node 1)"));
        assert_eq!(host_node(&d, 1).as_deref(), Some("n1 (system tree node 1)"));
        assert_eq!(host_node(&d, 3), None);
        assert_eq!(host_node(&d, 4), None);
        assert_eq!(host_node(&d, 9), None);
    }

    /// Threads and accelerator streams are not ranks; MPI's location group decides the order.
    #[test]
    fn ranks_are_the_mpi_process_locations() {
        let mut d = GlobalDefs {
            location_groups: [(0, 1), (1, 1), (2, 2)].into_iter().collect(),
            ..GlobalDefs::default()
        };
        for (loc, g) in [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2)] {
            d.locations.insert(loc, LocationDef { group: g });
        }
        assert_eq!(rank_locations(&d), vec![0, 2]);
        d.groups.insert(
            0,
            group(defs::GROUP_COMM_LOCATIONS, defs::PARADIGM_MPI, &[2, 0]),
        );
        assert_eq!(rank_locations(&d), vec![2, 0]);
    }

    #[test]
    fn world_self_and_derived_communicators() {
        let mut d = GlobalDefs::default();
        let (mpi, other) = (defs::PARADIGM_MPI, 6);
        d.groups
            .insert(0, group(defs::GROUP_COMM_GROUP, other, &[0, 1, 2]));
        d.groups
            .insert(1, group(defs::GROUP_COMM_GROUP, mpi, &[0, 1, 2]));
        d.groups.insert(2, group(defs::GROUP_COMM_SELF, mpi, &[]));
        d.groups
            .insert(3, group(defs::GROUP_COMM_GROUP, mpi, &[2, 0]));
        d.groups
            .insert(4, group(defs::GROUP_COMM_GROUP, mpi, &[0, 7]));
        let comm = |group, parent| Comm { group, parent };
        d.comms.insert(0, comm(0, UNDEFINED_U32)); // measurement system, not MPI
        d.comms.insert(1, comm(1, UNDEFINED_U32));
        d.comms.insert(2, comm(2, UNDEFINED_U32));
        d.comms.insert(3, comm(3, 1));
        d.comms.insert(4, comm(4, 1)); // rank 7 does not exist
        let (comms, defined) = communicators(&d, 3);
        assert_eq!(comms.get(&1), Some(&(WORLD_HANDLE, 3)));
        assert_eq!(comms.get(&2), Some(&(SELF_HANDLE, 1)));
        assert_eq!(comms.get(&3), Some(&(5, 2)));
        assert!(!comms.contains_key(&0) && !comms.contains_key(&4));
        assert_eq!(defined, vec![(5, vec![2, 0])]);
    }

    /// One rank (location 0, events in `dir/0.evt`), regions 1 and 2 MPI_Send and MPI_Recv, 3 a
    /// user region,
    /// ticks in ns.
    fn model(dir: &Path) -> Model {
        let mpi = |name: &str| MpiRegion {
            func: func_id(name).unwrap(),
            name: name.into(),
        };
        Model {
            dir: dir.to_path_buf(),
            chunk_size_events: 1 << 20,
            chunk_size_defs: 1 << 20,
            last_event_type: u8::MAX,
            ticks_per_s: 1_000_000_000,
            origin_ticks: 0,
            end_ticks: u64::MAX,
            rank_locations: vec![0],
            rank_nodes: vec![None],
            regions: [(1, mpi("send")), (2, mpi("recv"))].into_iter().collect(),
            defined_regions: [1, 2, 3].into_iter().collect(),
            comms: [(0, (WORLD_HANDLE, 2))].into_iter().collect(),
            defined: Vec::new(),
        }
    }

    /// A measurement-off interval (30-130 ns) is cut out of the call's times, not out of its
    /// times on the host's clock, which other ranks of the host share.
    #[test]
    fn host_times_are_the_recorded_ones() {
        let dir = std::env::temp_dir().join(format!("tracewatt-otf2-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut b = vec![3u8, 0x42];
        b.extend([0u8; 16]);
        for (t, record) in [
            (10u64, [12u8, 1, 1]), // Enter MPI_Send
            (20, [13, 1, 1]),      // Leave MPI_Send
            (30, [11, 1, 2]),      // measurement off
            (130, [11, 1, 1]),     // measurement on
            (140, [12, 1, 2]),     // Enter MPI_Recv
            (150, [13, 1, 2]),     // Leave MPI_Recv
        ] {
            b.push(5);
            b.extend(t.to_le_bytes());
            b.extend(record);
        }
        b.extend([2, 0]); // end of file
        std::fs::write(dir.join("0.evt"), &b).unwrap();
        let mut calls = Otf2Calls::open(Arc::new(model(&dir)), 0).unwrap();
        let mut times = Vec::new();
        while let Some(c) = calls.next() {
            let c = c.unwrap();
            times.push(((c.start_ns, c.end_ns), calls.host_times_ns(&c)));
        }
        assert_eq!(times, vec![((10, 20), (10, 20)), ((40, 50), (140, 150))]);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Non-blocking collectives in a hand-written event file (one rank of a 2-rank world):
    /// first as OTF2 3.0 records them (a request in the call, its completion with the sizes in
    /// the wait), then as Score-P 2.x does (regions only), with the reader's rule: the
    /// iallreduce takes the preceding allreduce's sizes (32 B sent / 2 ranks), the ibcast has
    /// no bcast before it (unsupported), and recordless waits complete them in post order.
    #[test]
    fn nonblocking_collectives_with_and_without_records() {
        let dir = std::env::temp_dir().join(format!("tracewatt-otf2-nbc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut m = model(&dir);
        for (id, name) in [
            (4, "iallreduce"),
            (5, "wait"),
            (6, "allreduce"),
            (7, "ibcast"),
        ] {
            let r = MpiRegion {
                func: func_id(name).unwrap(),
                name: name.into(),
            };
            m.regions.insert(id, r);
            m.defined_regions.insert(id);
        }
        let mut b = vec![3u8, 0x42];
        b.extend([0u8; 16]);
        let events: &[(u64, &[u8])] = &[
            (10, &[12, 1, 4]),                            // Enter MPI_Iallreduce
            (11, &[85, 2, 1, 5]),                         // NbcRequest, request 5
            (20, &[13, 1, 4]),                            // Leave
            (30, &[12, 1, 5]),                            // Enter MPI_Wait
            (35, &[86, 9, 11, 0, 0, 1, 16, 1, 16, 1, 5]), // NbcComplete: allreduce, comm 0, 16 B
            (40, &[13, 1, 5]),                            // Leave
            (50, &[12, 1, 6]),                            // Enter MPI_Allreduce
            (55, &[23, 7, 11, 0, 0, 1, 32, 1, 32]),       // CollectiveEnd: 32 B each way
            (60, &[13, 1, 6]),                            // Leave
            (70, &[12, 1, 4, 13, 1, 4]),                  // MPI_Iallreduce, no records
            (85, &[12, 1, 7, 13, 1, 7]),                  // MPI_Ibcast, no records
            (100, &[12, 1, 5, 13, 1, 5]),                 // three MPI_Waits, no records
            (120, &[12, 1, 5, 13, 1, 5]),
            (140, &[12, 1, 5, 13, 1, 5]),
        ];
        for (t, record) in events {
            b.push(5);
            b.extend(t.to_le_bytes());
            b.extend(*record);
        }
        b.extend([2, 0]);
        std::fs::write(dir.join("0.evt"), &b).unwrap();
        let kinds: Vec<CallKind> = Otf2Calls::open(Arc::new(m), 0)
            .unwrap()
            .map(|c| c.unwrap().kind)
            .collect();
        let icoll = |bytes, req| CallKind::Icoll {
            comm: WORLD_HANDLE,
            kind: CollKind::Allreduce,
            root: 0,
            bytes,
            req,
        };
        assert_eq!(
            kinds,
            vec![
                icoll(8, 5),
                CallKind::Wait { req: 5 },
                CallKind::Coll {
                    comm: WORLD_HANDLE,
                    kind: CollKind::Allreduce,
                    root: 0,
                    bytes: 16
                },
                icoll(16, u64::MAX - 1),
                CallKind::Unsupported {
                    name: "ibcast (no collective record)".into()
                },
                CallKind::Wait { req: u64::MAX - 1 },
                CallKind::Wait { req: u64::MAX - 2 },
                CallKind::Waitall { reqs: vec![] },
            ]
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A hand-written event file: a Leave without Enter, an MPI Enter while another MPI call
    /// is open, user regions, and an MPI call still open at the end.
    #[test]
    fn unbalanced_regions_end_calls_without_failing() {
        let dir = std::env::temp_dir().join(format!("tracewatt-otf2-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut b = vec![3u8, 0x42];
        b.extend([0u8; 16]);
        let ts = |b: &mut Vec<u8>, t: u64| {
            b.push(5);
            b.extend(t.to_le_bytes());
        };
        ts(&mut b, 10);
        b.extend([13, 1, 2]); // Leave MPI_Recv, never entered
        ts(&mut b, 20);
        b.extend([12, 1, 1]); // Enter MPI_Send
        ts(&mut b, 25);
        b.extend([14, 7, 1, 1, 0, 1, 7, 1, 100]); // MpiSend to 1, comm 0, tag 7, 100 bytes
        ts(&mut b, 30);
        b.extend([12, 1, 2]); // Enter MPI_Recv: the send ends here
        ts(&mut b, 40);
        b.extend([13, 1, 3]); // Leave of a user region
        ts(&mut b, 50);
        b.extend([13, 1, 2]); // Leave MPI_Recv (no message record: MPI_PROC_NULL)
        ts(&mut b, 60);
        b.extend([12, 1, 1, 12, 1, 3]); // Enter MPI_Send, Enter user region
        ts(&mut b, 70);
        b.extend([99, 2, 0, 0, 2]); // an unknown event (skipped by length), end of file
        std::fs::write(dir.join("0.evt"), &b).unwrap();
        let calls: Vec<Call> = Otf2Calls::open(Arc::new(model(&dir)), 0)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let summary: Vec<(u64, u64, CallKind)> = calls
            .into_iter()
            .map(|c| (c.start_ns, c.end_ns, c.kind))
            .collect();
        let send = CallKind::Send {
            comm: WORLD_HANDLE,
            peer: 1,
            tag: 7,
            bytes: 100,
        };
        assert_eq!(
            summary,
            vec![
                (20, 30, send),
                (30, 50, CallKind::Local),
                (60, 70, CallKind::Local)
            ]
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
