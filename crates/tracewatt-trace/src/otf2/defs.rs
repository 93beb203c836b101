//! OTF2 definitions: the anchor file, the global definitions (`traces.def`) and a location's
//! local definitions (`traces/<location>.def`: mapping tables from the location's local ids to
//! global ids, clock offsets). Only the records the reader needs are decoded; the others are
//! skipped by their length. Record layouts follow OTF2's record specifications: attributes of
//! version 1.0 first (including ones later retired, which stay on the wire), attributes added
//! later appended in version order and present only if the record is long enough.

use std::collections::BTreeMap;
use std::path::Path;

use tracewatt_workload::Rank;

use super::buffer::{read_unchunked, Bad, ChunkReader, Cur};
use crate::error::TraceError;

/// OTF2's undefined value for 32-bit references.
pub(crate) const UNDEFINED_U32: u32 = u32::MAX;

/// The anchor file's facts.
#[derive(Debug, Clone)]
pub(crate) struct Anchor {
    pub chunk_size_events: u64,
    pub chunk_size_defs: u64,
    /// The highest event record type the writer's OTF2 version defines (`u8::MAX` for a
    /// version this reader does not know all the records of).
    pub last_event_type: u8,
}

/// ProgramEnd, the last event record of OTF2 2.x (3.0 added non-blocking collectives, 85-86).
const LAST_EVENT_TYPE_OTF2_2: u8 = 84;

const ANCHOR_MAX_BYTES: u64 = 1 << 20;
const SUBSTRATE_POSIX: u8 = 1;
const SUBSTRATE_SION: u8 = 2;
const COMPRESSION_NONE: u8 = 1;
/// Chunks must hold at least a header and an end-of-file marker.
const MIN_CHUNK_SIZE: u64 = 32;

pub(crate) fn read_anchor(path: &Path) -> Result<Anchor, TraceError> {
    read_unchunked(path, ANCHOR_MAX_BYTES, |c| {
        if c.string("the OTF2 magic")? != "OTF2" {
            return Err(c.bad("the magic string \"OTF2\""));
        }
        if c.u8("the anchor format")? == 0 {
            return Err(c.bad("an anchor format version above 0"));
        }
        // Records are forward compatible: a reader skips the types it does not know, but a
        // writer cannot have written a type its own version does not define.
        c.u8("the trace format")?;
        let major = c.u8("the OTF2 version")?;
        c.u8("the OTF2 version")?;
        c.u8("the OTF2 version")?;
        let last_event_type = if major <= 2 {
            LAST_EVENT_TYPE_OTF2_2
        } else {
            u8::MAX
        };
        let chunk_size_events = c.u64_full("the event chunk size")?;
        let chunk_size_defs = c.u64_full("the definition chunk size")?;
        if chunk_size_events < MIN_CHUNK_SIZE || chunk_size_defs < MIN_CHUNK_SIZE {
            return Err(c.bad(format!(
                "chunk sizes of at least {MIN_CHUNK_SIZE} bytes (got {chunk_size_events} and {chunk_size_defs})"
            )));
        }
        match c.u8("the file substrate")? {
            SUBSTRATE_POSIX => {}
            SUBSTRATE_SION => {
                return Err(c.bad("the POSIX file substrate (SIONlib containers are not supported)"))
            }
            s => return Err(c.bad(format!("the POSIX file substrate (got {s})"))),
        }
        let compression = c.u8("the compression")?;
        if compression != COMPRESSION_NONE {
            return Err(c.bad(format!(
                "uncompressed files (got compression {compression})"
            )));
        }
        c.u64_full("the number of locations")?;
        c.u64_full("the number of global definitions")?;
        Ok(Anchor {
            chunk_size_events,
            chunk_size_defs,
            last_event_type,
        })
    })
}

/// Group types (OTF2 1.2 numbering; older files are converted).
pub(crate) const GROUP_COMM_LOCATIONS: u8 = 4;
pub(crate) const GROUP_COMM_GROUP: u8 = 5;
pub(crate) const GROUP_COMM_SELF: u8 = 6;
pub(crate) const PARADIGM_MPI: u8 = 4;
/// OTF2_REGION_ROLE_ARTIFICIAL: a region the measurement tool made up.
pub(crate) const REGION_ROLE_ARTIFICIAL: u8 = 31;
pub(crate) const LOCATION_GROUP_PROCESS: u8 = 1;

#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub ty: u8,
    pub paradigm: u8,
    pub members: Vec<u64>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Comm {
    pub group: u32,
    pub parent: u32,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct LocationDef {
    pub group: u32,
}

/// A Region definition's string references and paradigm.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RegionDef {
    pub name: u32,
    /// The canonical name and the paradigm, which OTF2 1.1 appended to the record (absent
    /// from older traces).
    pub canonical_name: Option<u32>,
    pub role: Option<u8>,
    pub paradigm: Option<u8>,
}

/// The global definitions the reader uses.
#[derive(Debug, Default)]
pub(crate) struct GlobalDefs {
    /// Ticks per second, the trace's time origin and its length in ticks (ClockProperties).
    pub clock: Option<Clock>,
    pub strings: BTreeMap<u32, String>,
    /// String id -> the byte offset of its definition (named when a name is corrupt).
    pub string_at: BTreeMap<u32, u64>,
    pub regions: BTreeMap<u32, RegionDef>,
    /// Region id -> the byte offset of its definition.
    pub region_at: BTreeMap<u32, u64>,
    /// Location group id -> type.
    pub location_groups: BTreeMap<u32, u8>,
    /// Location group id -> its system tree parent.
    pub location_group_nodes: BTreeMap<u32, u32>,
    /// System tree node id -> (name and class name string ids, parent id).
    pub system_tree: BTreeMap<u32, (u32, u32, u32)>,
    pub locations: BTreeMap<u64, LocationDef>,
    pub groups: BTreeMap<u32, Group>,
    /// Group id -> the byte offset of its definition.
    pub group_at: BTreeMap<u32, u64>,
    /// Byte offsets of the first location group definition and of the first definition this
    /// reader skips (named when a definition it needs is missing: a corrupt record type).
    pub first_location_group_at: Option<u64>,
    pub first_skipped_at: Option<u64>,
    /// Byte offset of the end-of-file record (named when definitions are missing and no
    /// record hints why: a corrupt length can make the reader skip onto an early one).
    pub end_at: u64,
    pub comms: BTreeMap<u32, Comm>,
}

const DEF_CLOCK_PROPERTIES: u8 = 5;

/// A trace's ClockProperties. OTF2 promises that no event is earlier than `origin_ticks` or
/// later than `origin_ticks + length_ticks` (OTF2_GlobalDefWriter_WriteClockProperties).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub ticks_per_s: u64,
    pub origin_ticks: u64,
    pub length_ticks: u64,
}
const DEF_STRING: u8 = 10;
const DEF_SYSTEM_TREE_NODE: u8 = 12;
const DEF_LOCATION_GROUP: u8 = 13;
const DEF_LOCATION: u8 = 14;
const DEF_REGION: u8 = 15;
const DEF_GROUP: u8 = 18;
const DEF_COMM: u8 = 22;

/// Group types before OTF2 1.2 -> (type, paradigm).
fn group_type_pre_1_2(t: u8) -> (u8, u8) {
    match t {
        1 => (1, 0),
        2 | 3 => (2, 0),
        4 => (GROUP_COMM_GROUP, PARADIGM_MPI),
        5 => (GROUP_COMM_SELF, PARADIGM_MPI),
        6 => (GROUP_COMM_LOCATIONS, PARADIGM_MPI),
        _ => (0, 0),
    }
}

/// Array lengths are checked against the record before allocating (each entry is >= 1 byte).
fn array_len(c: &mut Cur, n: u64, left: usize, what: &str) -> Result<usize, Bad> {
    if n > left as u64 {
        return Err(c.bad(format!(
            "{what}: a length that fits in the record (got {n})"
        )));
    }
    Ok(n as usize)
}

pub(crate) fn read_global_defs(path: &Path, chunk_size: u64) -> Result<GlobalDefs, TraceError> {
    let mut r = ChunkReader::open(path, None, chunk_size)?;
    let mut d = GlobalDefs::default();
    while let Some(t) = r.next_record_type()? {
        let body = r.record("a definition record")?;
        let len = body.len();
        match t {
            DEF_CLOCK_PROPERTIES => d.clock = Some(r.body(body, clock_def)?),
            DEF_STRING => {
                let at = r.offset_of(&body);
                let (id, s) = r.body(body, |c| {
                    Ok((c.u32c("a string id")?, c.string("a string")?))
                })?;
                if d.strings.insert(id, s).is_some() {
                    return Err(r.error_at(at, format!("string {id} defined once")));
                }
                d.string_at.insert(id, at);
            }
            DEF_SYSTEM_TREE_NODE => {
                let (id, node) = r.body(body, system_tree_node_def)?;
                d.system_tree.insert(id, node);
            }
            DEF_LOCATION_GROUP => {
                d.first_location_group_at.get_or_insert(r.offset_of(&body));
                let (id, ty, node) = r.body(body, location_group_def)?;
                d.location_groups.insert(id, ty);
                d.location_group_nodes.insert(id, node);
            }
            DEF_LOCATION => {
                let (id, loc) = r.body(body, location_def)?;
                d.locations.insert(id, loc);
            }
            DEF_REGION => {
                let at = r.offset_of(&body);
                let (id, region) = r.body(body, region_def)?;
                if d.regions.insert(id, region).is_some() {
                    return Err(r.error_at(at, format!("region {id} defined once")));
                }
                d.region_at.insert(id, at);
            }
            DEF_GROUP => {
                let at = r.offset_of(&body);
                let (id, g) = r.body(body, |c| group_def(c, len))?;
                d.groups.insert(id, g);
                d.group_at.insert(id, at);
            }
            DEF_COMM => {
                let (id, comm) = r.body(body, comm_def)?;
                d.comms.insert(id, comm);
            }
            _ => {
                d.first_skipped_at.get_or_insert(r.offset_of(&body));
            }
        }
    }
    d.end_at = r.offset() - 1;
    Ok(d)
}

fn clock_def(c: &mut Cur) -> Result<Clock, Bad> {
    let ticks_per_s = c.u64c("the timer resolution")?;
    let origin_ticks = c.u64c("the global offset")?;
    let length_ticks = c.u64c("the trace length")?;
    if ticks_per_s == 0 {
        return Err(c.bad("a timer resolution above 0"));
    }
    Ok(Clock {
        ticks_per_s,
        origin_ticks,
        length_ticks,
    })
}

/// A system tree node: its id, then its name, class and parent.
fn system_tree_node_def(c: &mut Cur) -> Result<(u32, (u32, u32, u32)), Bad> {
    let id = c.u32c("a system tree node id")?;
    let name = c.u32c("a system tree node name")?;
    let class = c.u32c("a system tree node class")?;
    Ok((id, (name, class, c.u32c("a system tree node's parent")?)))
}

/// A location group: its id, type and system tree parent.
fn location_group_def(c: &mut Cur) -> Result<(u32, u8, u32), Bad> {
    let id = c.u32c("a location group id")?;
    c.u32c("a location group name")?;
    let ty = c.u8("a location group type")?;
    let node = c.u32c("a location group's system tree parent")?;
    Ok((id, ty, node))
}

fn location_def(c: &mut Cur) -> Result<(u64, LocationDef), Bad> {
    let id = c.u64c("a location id")?;
    c.u32c("a location name")?;
    c.u8("a location type")?;
    c.u64c("a location's number of events")?;
    let group = c.u32c("a location's group")?;
    Ok((id, LocationDef { group }))
}

fn region_def(c: &mut Cur) -> Result<(u32, RegionDef), Bad> {
    let id = c.u32c("a region id")?;
    let name = c.u32c("a region name")?;
    c.u32c("a region description")?;
    c.u8("a region type")?;
    c.u32c("a region source file")?;
    c.u32c("a region begin line")?;
    c.u32c("a region end line")?;
    let (mut canonical_name, mut role, mut paradigm) = (None, None, None);
    if !c.at_end() {
        canonical_name = Some(c.u32c("a region canonical name")?);
        role = Some(c.u8("a region role")?);
        paradigm = Some(c.u8("a region paradigm")?);
    }
    let region = RegionDef {
        name,
        canonical_name,
        role,
        paradigm,
    };
    Ok((id, region))
}

/// A group whose record is `len` bytes long (its member count must fit in it).
fn group_def(c: &mut Cur, len: usize) -> Result<(u32, Group), Bad> {
    let id = c.u32c("a group id")?;
    c.u32c("a group name")?;
    let pre12 = c.u8("a group type")?;
    let n = c.u32c("a group's number of members")? as u64;
    let n = array_len(c, n, len, "a group's number of members")?;
    let mut members = Vec::with_capacity(n);
    for _ in 0..n {
        members.push(c.u64c("a group member")?);
    }
    let (ty, paradigm) = if c.at_end() {
        group_type_pre_1_2(pre12)
    } else {
        (c.u8("a group type")?, c.u8("a group paradigm")?)
    };
    Ok((
        id,
        Group {
            ty,
            paradigm,
            members,
        },
    ))
}

fn comm_def(c: &mut Cur) -> Result<(u32, Comm), Bad> {
    let id = c.u32c("a communicator id")?;
    c.u32c("a communicator name")?;
    let group = c.u32c("a communicator's group")?;
    let parent = c.u32c("a communicator's parent")?;
    Ok((id, Comm { group, parent }))
}

/// Local-to-global id map of one definition kind.
#[derive(Debug, Clone)]
pub(crate) enum IdMap {
    Dense(Vec<u64>),
    Sparse(BTreeMap<u64, u64>),
}

impl IdMap {
    /// The global id; ids the map does not name map to themselves (as in OTF2).
    pub fn map(&self, local: u64) -> u64 {
        match self {
            IdMap::Dense(v) => usize::try_from(local)
                .ok()
                .and_then(|i| v.get(i))
                .copied()
                .unwrap_or(local),
            IdMap::Sparse(m) => m.get(&local).copied().unwrap_or(local),
        }
    }
}

/// Mapping kinds the event reader applies.
const MAPPING_REGION: u8 = 3;
const MAPPING_COMM: u8 = 6;

/// A location's local definitions.
#[derive(Debug, Clone, Default)]
pub(crate) struct LocalDefs {
    pub regions: Option<IdMap>,
    pub comms: Option<IdMap>,
    /// Clock offsets (time, offset), in file order.
    pub clock_offsets: Vec<(u64, i64)>,
}

const LOCAL_MAPPING_TABLE: u8 = 5;
const LOCAL_CLOCK_OFFSET: u8 = 6;

pub(crate) fn read_local_defs(
    path: &Path,
    rank: Rank,
    chunk_size: u64,
) -> Result<LocalDefs, TraceError> {
    let mut d = LocalDefs::default();
    if !path.exists() {
        return Ok(d); // local definitions are optional
    }
    let mut r = ChunkReader::open(path, Some(rank), chunk_size)?;
    while let Some(t) = r.next_record_type()? {
        let body = r.record("a local definition record")?;
        let len = body.len();
        match t {
            LOCAL_MAPPING_TABLE => {
                let (kind, map) = r.body(body, |c| {
                    let kind = c.u8("a mapping type")?;
                    let n = c.u64c("a mapping table size")?;
                    let n = array_len(c, n, len, "a mapping table size")?;
                    let map = match c.u8("a mapping table mode")? {
                        0 => {
                            let mut v = Vec::with_capacity(n);
                            for _ in 0..n {
                                v.push(c.u64c("a global id")?);
                            }
                            IdMap::Dense(v)
                        }
                        1 => {
                            let mut m = BTreeMap::new();
                            for _ in 0..n {
                                let l = c.u64c("a local id")?;
                                m.insert(l, c.u64c("a global id")?);
                            }
                            IdMap::Sparse(m)
                        }
                        x => return Err(c.bad(format!("mapping table mode 0 or 1 (got {x})"))),
                    };
                    Ok((kind, map))
                })?;
                match kind {
                    MAPPING_REGION => d.regions = Some(map),
                    MAPPING_COMM => d.comms = Some(map),
                    _ => {}
                }
            }
            LOCAL_CLOCK_OFFSET => {
                let off = r.body(body, |c| {
                    let time = c.u64_full("a clock offset time")?;
                    let offset = c.i64c("a clock offset")?;
                    c.f64_full("a clock offset deviation")?;
                    Ok((time, offset))
                })?;
                d.clock_offsets.push(off);
            }
            _ => {}
        }
    }
    Ok(d)
}
