//! tracewatt's native trace format (spec: `docs/native-trace-format.md`): a 16-byte index file
//! `trace.twi` and one `rank-<N>.twr` per rank holding the recorded [`Call`]s as compact
//! varint-encoded records, so the format streams in both directions and stores exactly what the
//! readers produce (a read -> write round trip is byte-identical). The C tracer writes it too.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use tracewatt_workload::{CollKind, Rank};

use crate::call::{Call, CallKind, VKind};
use crate::error::{Location, TraceError, TRUNCATED};
use crate::funcs::Func;
use crate::{stream_step, CallIter, CallSource, CallStream, Pos, TraceFormat};

pub const NATIVE_VERSION: u16 = 5;
/// Since version 4 a rank file's records are framed in blocks of this many bytes (the last one
/// shorter), each followed by its CRC-32: a corrupt byte anywhere is refused at its block, where
/// it could otherwise read as another valid run (a timestamp, a color).
pub const BLOCK_BYTES: usize = 64 * 1024;
const FRAMED_SINCE: u16 = 4;
/// A version-4 index: the 16 bytes of earlier versions, then their CRC-32.
const INDEX_BYTES: usize = 20;
const HEADER_BYTES: u64 = 16;
pub const INDEX_MAGIC: &[u8; 8] = b"TWTRIDX\0";
pub const RANK_MAGIC: &[u8; 8] = b"TWTRACE\0";
pub const INDEX_NAME: &str = "trace.twi";
/// Rank file header flag: records carry start/end timestamps.
pub const FLAG_TIMED: u16 = 1;
const END_TAG: u8 = 0xFF;
/// Set on a record's tag when the record carries CPU times (since version 3).
pub const TAG_CPU: u8 = 0x40;

/// The previous record's end on each clock: records store times as deltas from them.
#[derive(Debug, Default, Clone, Copy)]
pub struct PrevEnd {
    pub wall_ns: u64,
    pub cpu_ns: u64,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub fn rank_file_name(rank: Rank) -> String {
    format!("rank-{rank}.twr")
}

pub(crate) fn detect(path: &Path) -> Option<TraceFormat> {
    let index = if path.is_dir() {
        path.join(INDEX_NAME)
    } else {
        path.to_path_buf()
    };
    // A file named as the index is one, even with a corrupt magic (which `open` then reports).
    if index.file_name().is_some_and(|n| n == INDEX_NAME) && index.is_file() {
        return Some(TraceFormat::Native);
    }
    let mut magic = [0u8; 8];
    let mut f = File::open(index).ok()?;
    f.read_exact(&mut magic).ok()?;
    (&magic == INDEX_MAGIC).then_some(TraceFormat::Native)
}

// ---- encoding ----

fn put_v(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}
fn put_z(b: &mut Vec<u8>, v: i64) {
    put_v(b, ((v << 1) ^ (v >> 63)) as u64);
}
fn put_vec(b: &mut Vec<u8>, v: &[u64]) {
    put_v(b, v.len() as u64);
    for x in v {
        put_v(b, *x);
    }
}
fn put_ivec(b: &mut Vec<u8>, v: &[i32]) {
    put_v(b, v.len() as u64);
    for x in v {
        put_z(b, *x as i64);
    }
}

pub(crate) fn coll_code(k: CollKind) -> u8 {
    match k {
        CollKind::Barrier => 0,
        CollKind::Bcast => 1,
        CollKind::Reduce => 2,
        CollKind::Allreduce => 3,
        CollKind::Allgather => 4,
        CollKind::Alltoall => 5,
        CollKind::Gather => 6,
        CollKind::Scatter => 7,
        CollKind::ReduceScatter => 8,
        CollKind::Scan => 9,
        CollKind::Exscan => 10,
    }
}
fn coll_from(c: u8) -> Option<CollKind> {
    Some(match c {
        0 => CollKind::Barrier,
        1 => CollKind::Bcast,
        2 => CollKind::Reduce,
        3 => CollKind::Allreduce,
        4 => CollKind::Allgather,
        5 => CollKind::Alltoall,
        6 => CollKind::Gather,
        7 => CollKind::Scatter,
        8 => CollKind::ReduceScatter,
        9 => CollKind::Scan,
        10 => CollKind::Exscan,
        _ => return None,
    })
}
fn vkind_code(k: VKind) -> u8 {
    match k {
        VKind::Alltoallv => 0,
        VKind::Allgatherv => 1,
        VKind::Gatherv => 2,
        VKind::Scatterv => 3,
        VKind::ReduceScatter => 4,
    }
}
fn vkind_from(c: u8) -> Option<VKind> {
    Some(match c {
        0 => VKind::Alltoallv,
        1 => VKind::Allgatherv,
        2 => VKind::Gatherv,
        3 => VKind::Scatterv,
        4 => VKind::ReduceScatter,
        _ => return None,
    })
}

/// Appends one record to `b`; `prev` holds the previous record's ends (0 at the start).
pub fn encode_call(b: &mut Vec<u8>, c: &Call, timed: bool, prev: &mut PrevEnd) {
    let tag = record_tag(&c.kind);
    b.push(if c.cpu_ns.is_some() {
        tag | TAG_CPU
    } else {
        tag
    });
    put_v(b, c.func as u64);
    if timed {
        put_z(b, c.start_ns.wrapping_sub(prev.wall_ns) as i64);
        put_z(b, c.end_ns.wrapping_sub(c.start_ns) as i64);
        prev.wall_ns = c.end_ns;
    }
    if let Some((start, end)) = c.cpu_ns {
        put_z(b, start.wrapping_sub(prev.cpu_ns) as i64);
        put_z(b, end.wrapping_sub(start) as i64);
        prev.cpu_ns = end;
    }
    put_fields(b, &c.kind);
}

/// The record tag of a call kind (without [`TAG_CPU`]).
fn record_tag(kind: &CallKind) -> u8 {
    use CallKind as K;
    match kind {
        K::Local => 0,
        K::Unsupported { .. } => 1,
        K::Compute { .. } => 2,
        K::Init => 3,
        K::Finalize => 4,
        K::Send { .. } => 5,
        K::Recv { .. } => 6,
        K::Isend { .. } => 7,
        K::Irecv { .. } => 8,
        K::Sendrecv { .. } => 9,
        K::Wait { .. } => 10,
        K::Waitall { .. } => 11,
        K::Waitany { .. } => 12,
        K::Waitsome { .. } => 13,
        K::Test { .. } => 14,
        K::Testall { .. } => 15,
        K::Testany { .. } => 16,
        K::Testsome { .. } => 17,
        K::RequestFree { .. } => 18,
        K::Coll { .. } => 19,
        K::VColl { .. } => 20,
        K::CommSplit { .. } => 21,
        K::CommFree { .. } => 22,
        K::GroupFromComm { .. } => 23,
        K::GroupSelect { .. } => 24,
        K::GroupFree { .. } => 25,
        K::CommCreate { .. } => 26,
        K::CommDefine { .. } => 27,
        K::Cancel { .. } => 28,
        K::CancelOutcome { .. } => 29,
        K::Icoll { .. } => 30,
    }
}

/// A message's peer, tag and size (as [`NativeCalls`] reads them back).
fn put_envelope(b: &mut Vec<u8>, peer: i32, tag: i32, bytes: u64) {
    put_z(b, peer as i64);
    put_z(b, tag as i64);
    put_v(b, bytes);
}

/// The fields of a record, after its tag, function id and times.
fn put_fields(b: &mut Vec<u8>, kind: &CallKind) {
    use CallKind as K;
    match kind {
        K::Local | K::Init | K::Finalize => {}
        K::Unsupported { name } => {
            put_v(b, name.len() as u64);
            b.extend_from_slice(name.as_bytes());
        }
        K::Compute { ps, .. } => put_v(b, *ps),
        K::Send {
            comm,
            peer,
            tag,
            bytes,
        }
        | K::Recv {
            comm,
            peer,
            tag,
            bytes,
        } => {
            put_v(b, *comm as u64);
            put_envelope(b, *peer, *tag, *bytes);
        }
        K::Isend {
            comm,
            peer,
            tag,
            bytes,
            req,
        }
        | K::Irecv {
            comm,
            peer,
            tag,
            bytes,
            req,
        } => {
            put_v(b, *comm as u64);
            put_envelope(b, *peer, *tag, *bytes);
            put_v(b, *req);
        }
        K::Sendrecv {
            comm,
            dst,
            send_tag,
            send_bytes,
            src,
            recv_tag,
            recv_bytes,
        } => {
            put_v(b, *comm as u64);
            put_envelope(b, *dst, *send_tag, *send_bytes);
            put_envelope(b, *src, *recv_tag, *recv_bytes);
        }
        K::Wait { req } | K::RequestFree { req } | K::Cancel { req } => put_v(b, *req),
        K::CancelOutcome { req, cancelled } => {
            b.push(req.is_some() as u8);
            if let Some(r) = req {
                put_v(b, *r);
            }
            b.push(*cancelled as u8);
        }
        K::Waitall { reqs } => put_vec(b, reqs),
        K::Waitany { reqs, index } => {
            put_vec(b, reqs);
            put_z(b, *index as i64);
        }
        K::Waitsome { reqs, indices } | K::Testsome { reqs, indices } => {
            put_vec(b, reqs);
            put_ivec(b, indices);
        }
        K::Test { req, flag } => {
            put_v(b, *req);
            b.push(*flag as u8);
        }
        K::Testall { reqs, flag } => {
            put_vec(b, reqs);
            b.push(*flag as u8);
        }
        K::Testany { reqs, index, flag } => {
            put_vec(b, reqs);
            put_z(b, *index as i64);
            b.push(*flag as u8);
        }
        K::Coll {
            comm,
            kind,
            root,
            bytes,
        } => {
            put_v(b, *comm as u64);
            b.push(coll_code(*kind));
            put_z(b, *root as i64);
            put_v(b, *bytes);
        }
        K::Icoll {
            comm,
            kind,
            root,
            bytes,
            req,
        } => {
            put_v(b, *comm as u64);
            b.push(coll_code(*kind));
            put_z(b, *root as i64);
            put_v(b, *bytes);
            put_v(b, *req);
        }
        K::VColl {
            comm,
            kind,
            root,
            send,
            recv,
        } => {
            put_v(b, *comm as u64);
            b.push(vkind_code(*kind));
            put_z(b, *root as i64);
            put_vec(b, send);
            put_vec(b, recv);
        }
        K::CommSplit {
            parent,
            color,
            key,
            new,
        } => {
            put_v(b, *parent as u64);
            put_z(b, *color as i64);
            put_z(b, *key as i64);
            put_v(b, *new as u64);
        }
        K::CommFree { comm } => put_v(b, *comm as u64),
        K::GroupFromComm { comm, group } => {
            put_v(b, *comm as u64);
            put_v(b, *group as u64);
        }
        K::GroupSelect {
            group,
            ranks,
            exclude,
            new,
        } => {
            put_v(b, *group as u64);
            put_ivec(b, ranks);
            b.push(*exclude as u8);
            put_v(b, *new as u64);
        }
        K::GroupFree { group } => put_v(b, *group as u64),
        K::CommCreate { parent, group, new } => {
            put_v(b, *parent as u64);
            put_v(b, *group as u64);
            put_v(b, *new as u64);
        }
        K::CommDefine { new, members } => {
            put_v(b, *new as u64);
            put_v(b, members.len() as u64);
            for m in members {
                put_v(b, *m as u64);
            }
        }
    }
}

/// Writes a native trace: the index now, then one [`RankWriter`] per rank.
#[derive(Debug)]
pub struct NativeWriter {
    dir: PathBuf,
    num_ranks: u32,
}

impl NativeWriter {
    pub fn create(dir: &Path, num_ranks: u32) -> Result<Self, TraceError> {
        std::fs::create_dir_all(dir).map_err(|e| TraceError::io(dir, e))?;
        let mut b = Vec::with_capacity(INDEX_BYTES);
        b.extend_from_slice(INDEX_MAGIC);
        b.extend_from_slice(&NATIVE_VERSION.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&num_ranks.to_le_bytes());
        b.extend_from_slice(&crc32fast::hash(&b).to_le_bytes());
        let p = dir.join(INDEX_NAME);
        std::fs::write(&p, b).map_err(|e| TraceError::io(&p, e))?;
        Ok(NativeWriter {
            dir: dir.to_path_buf(),
            num_ranks,
        })
    }
    pub fn num_ranks(&self) -> u32 {
        self.num_ranks
    }
    /// A writer for `rank`'s file; `timed`: store timestamps.
    pub fn rank(&self, rank: Rank, timed: bool) -> Result<RankWriter, TraceError> {
        let path = self.dir.join(rank_file_name(rank));
        let mut f = File::create(&path).map_err(|e| TraceError::io(&path, e))?;
        let mut h = Vec::with_capacity(HEADER_BYTES as usize);
        h.extend_from_slice(RANK_MAGIC);
        h.extend_from_slice(&NATIVE_VERSION.to_le_bytes());
        h.extend_from_slice(&(if timed { FLAG_TIMED } else { 0 }).to_le_bytes());
        h.extend_from_slice(&rank.to_le_bytes());
        f.write_all(&h).map_err(|e| TraceError::io(&path, e))?;
        Ok(RankWriter {
            f,
            path,
            timed,
            prev: PrevEnd::default(),
            count: 0,
            block: Vec::with_capacity(4 + BLOCK_BYTES + 4),
            buf: Vec::new(),
        })
    }
}

#[derive(Debug)]
pub struct RankWriter {
    f: File,
    path: PathBuf,
    timed: bool,
    prev: PrevEnd,
    count: u64,
    /// The block being filled: 4 bytes for its length, then its payload.
    block: Vec<u8>,
    buf: Vec<u8>,
}

impl RankWriter {
    pub fn write(&mut self, c: &Call) -> Result<(), TraceError> {
        self.buf.clear();
        encode_call(&mut self.buf, c, self.timed, &mut self.prev);
        self.count += 1;
        self.put()
    }
    /// Writes the end record (without it a reader reports the file as truncated).
    pub fn finish(mut self) -> Result<(), TraceError> {
        self.buf.clear();
        self.buf.push(END_TAG);
        put_v(&mut self.buf, self.count);
        self.put()?;
        self.emit()
    }
    /// Appends `buf` to the blocks, writing each block as it fills.
    fn put(&mut self) -> Result<(), TraceError> {
        let mut at = 0;
        while at < self.buf.len() {
            if self.block.is_empty() {
                self.block.extend_from_slice(&[0; 4]);
            }
            let n = (4 + BLOCK_BYTES - self.block.len()).min(self.buf.len() - at);
            self.block.extend_from_slice(&self.buf[at..at + n]);
            at += n;
            if self.block.len() == 4 + BLOCK_BYTES {
                self.emit()?;
            }
        }
        Ok(())
    }
    /// Writes the block being filled, if any: its length, payload and CRC-32.
    fn emit(&mut self) -> Result<(), TraceError> {
        if self.block.is_empty() {
            return Ok(());
        }
        let len = (self.block.len() - 4) as u32;
        self.block[..4].copy_from_slice(&len.to_le_bytes());
        let crc = crc32fast::hash(&self.block);
        self.block.extend_from_slice(&crc.to_le_bytes());
        let r = self.f.write_all(&self.block);
        self.block.clear();
        r.map_err(|e| TraceError::io(&self.path, e))
    }
}

/// Writes every rank of `source` (the body of [`crate::convert`]).
pub(crate) fn write_all(source: &dyn CallSource, out: &Path) -> Result<(), TraceError> {
    let w = NativeWriter::create(out, source.num_ranks())?;
    for rank in 0..source.num_ranks() {
        let mut rw = w.rank(rank, source.timed(rank)?)?;
        for c in source.calls(rank)? {
            rw.write(&c?)?;
        }
        rw.finish()?;
    }
    Ok(())
}

// ---- reading ----

#[derive(Debug)]
pub struct NativeTrace {
    dir: PathBuf,
    num_ranks: u32,
}

impl NativeTrace {
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let index = if path.is_dir() {
            path.join(INDEX_NAME)
        } else {
            path.to_path_buf()
        };
        let b = std::fs::read(&index).map_err(|e| TraceError::io(&index, e))?;
        let at = |o| Location::at(&index, None, o);
        if b.len() < 16 || &b[..8] != INDEX_MAGIC {
            return Err(TraceError::format(
                at(0),
                "a native index starting with TWTRIDX\\0",
            ));
        }
        let version = u16::from_le_bytes([b[8], b[9]]);
        // Versions only added to the format (2: a record kind, 3: CPU times, 4: CRCs).
        if !(1..=NATIVE_VERSION).contains(&version) {
            return Err(TraceError::format(
                at(8),
                format!("native format version 1 to {NATIVE_VERSION}, got {version}"),
            ));
        }
        let size = if version >= FRAMED_SINCE {
            INDEX_BYTES
        } else {
            16
        };
        if b.len() != size {
            return Err(TraceError::format(
                at(0),
                format!(
                    "a {size}-byte index (version {version}), got {} bytes",
                    b.len()
                ),
            ));
        }
        if version >= FRAMED_SINCE {
            let (stored, computed) = (u32_at(&b, 16), crc32fast::hash(&b[..16]));
            if stored != computed {
                return Err(TraceError::format(
                    at(0),
                    format!(
                        "an index whose CRC-32 (bytes 16..20) matches bytes 0..16: stored \
                         {stored:#010x}, computed {computed:#010x}; the index is corrupt"
                    ),
                ));
            }
        }
        let flags = u16::from_le_bytes([b[10], b[11]]);
        if flags != 0 {
            return Err(TraceError::format(
                at(10),
                format!("index flags 0, got {flags:#x}"),
            ));
        }
        let n = u32_at(&b, 12);
        if n == 0 || n > 1 << 24 {
            return Err(TraceError::format(
                at(12),
                format!("1..2^24 ranks, got {n}"),
            ));
        }
        let dir = index.parent().unwrap_or(Path::new(".")).to_path_buf();
        if let Some(r) = (0..n).find(|&r| !dir.join(rank_file_name(r)).is_file()) {
            return Err(TraceError::format(
                at(12),
                format!(
                    "{n} ranks, each with its file beside the index ({} is missing)",
                    rank_file_name(r)
                ),
            ));
        }
        Ok(NativeTrace { dir, num_ranks: n })
    }
}

impl CallSource for NativeTrace {
    fn format(&self) -> TraceFormat {
        TraceFormat::Native
    }
    fn num_ranks(&self) -> u32 {
        self.num_ranks
    }
    fn rank_file(&self, rank: Rank) -> PathBuf {
        self.dir.join(rank_file_name(rank))
    }
    fn timed(&self, rank: Rank) -> Result<bool, TraceError> {
        Ok(NativeCalls::open(&self.rank_file(rank), rank)?.timed)
    }
    fn calls(&self, rank: Rank) -> Result<CallIter, TraceError> {
        Ok(Box::new(NativeCalls::open(&self.rank_file(rank), rank)?))
    }
}

pub(crate) struct NativeCalls {
    body: Body,
    path: PathBuf,
    rank: Rank,
    /// Offset in the record stream: the header's 16 bytes, then the records (in a framed file,
    /// the blocks' payloads end to end). Errors give file offsets ([`Self::file_offset`]).
    off: u64,
    /// The stream's length in those units.
    len: u64,
    timed: bool,
    version: u16,
    prev: PrevEnd,
    count: u64,
    done: bool,
    /// The stream offset of the record last returned.
    call_at: u64,
}

/// A rank file's bytes after its header: read ahead in chunks (versions 1 to 3) or block by
/// block, each block checked against its CRC-32 before any of it is decoded (version 4).
#[derive(Debug)]
struct Body {
    f: File,
    framed: bool,
    /// The current chunk or block payload, and how much of it is consumed.
    buf: Vec<u8>,
    pos: usize,
    /// File offset of the next byte not yet in `buf`, and the file's length.
    file_off: u64,
    file_len: u64,
}

/// Why a block could not be read: at which file offset, and what was expected.
type BlockError = (u64, String);

impl Body {
    fn u32(&mut self) -> std::io::Result<u32> {
        let mut b = [0u8; 4];
        self.f.read_exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    /// Loads the next chunk or block into `buf`.
    fn refill(&mut self) -> Result<(), BlockError> {
        let at = self.file_off;
        let io = |e: std::io::Error| (at, format!("a readable file ({e})"));
        let truncated = |what: String| (at, format!("{what}; {TRUNCATED}"));
        self.pos = 0;
        if !self.framed {
            let n = (self.file_len - at).min(BLOCK_BYTES as u64) as usize;
            if n == 0 {
                return Err(truncated("more bytes".into()));
            }
            self.buf.resize(n, 0);
            self.f.read_exact(&mut self.buf).map_err(io)?;
            self.file_off += n as u64;
            return Ok(());
        }
        let left = self.file_len - at;
        if left < 4 {
            return Err(truncated("a block's 4-byte length".into()));
        }
        let n = self.u32().map_err(io)?;
        let size = 4 + u64::from(n) + 4;
        if n == 0 || n as usize > BLOCK_BYTES {
            return Err((
                at,
                format!("a block length of 1 to {BLOCK_BYTES} bytes, got {n}"),
            ));
        }
        if size > left {
            return Err(truncated(format!("a block of {n} bytes and its CRC-32")));
        }
        if n as usize != BLOCK_BYTES && size != left {
            return Err((
                at,
                format!(
                    "a block of {BLOCK_BYTES} bytes (only the file's last is shorter), got {n}"
                ),
            ));
        }
        self.buf.resize(n as usize, 0);
        self.f.read_exact(&mut self.buf).map_err(io)?;
        let stored = self.u32().map_err(io)?;
        let mut h = crc32fast::Hasher::new();
        h.update(&n.to_le_bytes());
        h.update(&self.buf);
        let computed = h.finalize();
        if stored != computed {
            return Err((
                at,
                format!(
                    "a block whose CRC-32 matches its bytes (stored {stored:#010x}, computed \
                     {computed:#010x}): bytes {at}..{} of the file are corrupt",
                    at + size
                ),
            ));
        }
        self.file_off += size;
        Ok(())
    }
}

impl NativeCalls {
    fn open(path: &Path, rank: Rank) -> Result<Self, TraceError> {
        let mut f = File::open(path).map_err(|e| TraceError::io(path, e))?;
        let len = f.metadata().map_err(|e| TraceError::io(path, e))?.len();
        let mut h = [0u8; HEADER_BYTES as usize];
        let short = len < HEADER_BYTES;
        if !short {
            f.read_exact(&mut h).map_err(|e| TraceError::io(path, e))?;
        }
        let mut c = NativeCalls {
            body: Body {
                f,
                framed: false,
                buf: Vec::with_capacity(BLOCK_BYTES),
                pos: 0,
                file_off: HEADER_BYTES,
                file_len: len,
            },
            path: path.to_path_buf(),
            rank,
            off: HEADER_BYTES,
            len,
            timed: false,
            version: 0,
            prev: PrevEnd::default(),
            count: 0,
            done: false,
            call_at: 0,
        };
        if short {
            return Err(c.err_at(0, format!("the 16-byte rank file header; {TRUNCATED}")));
        }
        if &h[..8] != RANK_MAGIC {
            return Err(c.err_at(0, "a rank file starting with TWTRACE\\0"));
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        // Versions only added to the format (2: a record kind, 3: CPU times, 4: CRCs), so
        // older streams read unchanged.
        if !(1..=NATIVE_VERSION).contains(&version) {
            return Err(c.err_at(
                8,
                format!("native format version 1 to {NATIVE_VERSION}, got {version}"),
            ));
        }
        c.version = version;
        let flags = u16::from_le_bytes([h[10], h[11]]);
        if flags & !FLAG_TIMED != 0 {
            return Err(c.err_at(10, format!("known header flags, got {flags:#x}")));
        }
        c.timed = flags & FLAG_TIMED != 0;
        let r = u32_at(&h, 12);
        if r != rank {
            return Err(c.err_at(12, format!("rank {rank} in the header, got {r}")));
        }
        if version >= FRAMED_SINCE {
            c.body.framed = true;
            // Every block but the last holds BLOCK_BYTES and 8 bytes of framing.
            let body = len - HEADER_BYTES;
            let blocks = body.div_ceil(BLOCK_BYTES as u64 + 8);
            c.len = len - 8 * blocks;
        }
        Ok(c)
    }
    /// Where stream offset `off` is in the file (they differ by the blocks' framing).
    fn file_offset(&self, off: u64) -> u64 {
        if !self.body.framed || off < HEADER_BYTES {
            return off;
        }
        let (block, within) = (
            (off - HEADER_BYTES) / BLOCK_BYTES as u64,
            (off - HEADER_BYTES) % BLOCK_BYTES as u64,
        );
        HEADER_BYTES + block * (BLOCK_BYTES as u64 + 8) + 4 + within
    }
    fn err_at(&self, off: u64, expected: impl Into<String>) -> TraceError {
        let at = self.file_offset(off);
        TraceError::format(Location::at(&self.path, Some(self.rank), at), expected)
    }
    fn err(&self, expected: impl Into<String>) -> TraceError {
        self.err_at(self.off, expected)
    }
    fn read(&mut self, b: &mut [u8], what: &str) -> Result<(), TraceError> {
        if self.off + b.len() as u64 > self.len {
            return Err(self.err(format!("{what}; {TRUNCATED}")));
        }
        let mut done = 0;
        while done < b.len() {
            if self.body.pos == self.body.buf.len() {
                self.body.refill().map_err(|(at, expected)| {
                    TraceError::format(Location::at(&self.path, Some(self.rank), at), expected)
                })?;
            }
            let n = (b.len() - done).min(self.body.buf.len() - self.body.pos);
            b[done..done + n].copy_from_slice(&self.body.buf[self.body.pos..self.body.pos + n]);
            self.body.pos += n;
            done += n;
        }
        self.off += b.len() as u64;
        Ok(())
    }
    /// Whether every byte of the file has been read.
    fn at_end(&self) -> bool {
        self.body.pos == self.body.buf.len() && self.body.file_off == self.body.file_len
    }
    fn u8(&mut self, what: &str) -> Result<u8, TraceError> {
        let mut b = [0u8; 1];
        self.read(&mut b, what)?;
        Ok(b[0])
    }
    fn v(&mut self, what: &str) -> Result<u64, TraceError> {
        let start = self.off;
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.u8(what)?;
            if shift == 63 && byte > 1 {
                return Err(self.err_at(start, format!("{what}: a varint below 2^64")));
            }
            v |= ((byte & 0x7f) as u64) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err_at(start, format!("{what}: a varint of at most 10 bytes")))
    }
    fn z(&mut self, what: &str) -> Result<i64, TraceError> {
        let u = self.v(what)?;
        Ok((u >> 1) as i64 ^ -((u & 1) as i64))
    }
    fn i32(&mut self, what: &str) -> Result<i32, TraceError> {
        let start = self.off;
        let v = self.z(what)?;
        i32::try_from(v).map_err(|_| self.err_at(start, format!("{what}: a 32-bit value, got {v}")))
    }
    fn u32(&mut self, what: &str) -> Result<u32, TraceError> {
        let start = self.off;
        let v = self.v(what)?;
        u32::try_from(v).map_err(|_| self.err_at(start, format!("{what}: a 32-bit value, got {v}")))
    }
    fn flag(&mut self) -> Result<bool, TraceError> {
        match self.u8("a flag")? {
            0 => Ok(false),
            1 => Ok(true),
            x => Err(self.err_at(self.off - 1, format!("a flag 0 or 1, got {x}"))),
        }
    }
    fn len_of(&mut self, what: &str) -> Result<usize, TraceError> {
        let start = self.off;
        let n = self.v(what)?;
        // Every element takes at least one byte.
        if n > self.len - self.off {
            return Err(self.err_at(
                start,
                format!("{what}: a length that fits in the file, got {n}"),
            ));
        }
        Ok(n as usize)
    }
    fn vec(&mut self, what: &str) -> Result<Vec<u64>, TraceError> {
        let n = self.len_of(what)?;
        (0..n).map(|_| self.v(what)).collect()
    }
    fn ivec(&mut self, what: &str) -> Result<Vec<i32>, TraceError> {
        let n = self.len_of(what)?;
        (0..n).map(|_| self.i32(what)).collect()
    }

    fn next_call(&mut self) -> Result<Option<Call>, TraceError> {
        let rec = self.off;
        let mut tag = self.u8("a record tag or the end record")?;
        if tag == END_TAG {
            self.end_record(rec)?;
            return Ok(None);
        }
        let with_cpu = tag & TAG_CPU != 0 && self.version >= 3;
        if with_cpu {
            tag &= !TAG_CPU;
        }
        let func = self.v("a function id")?;
        let func =
            Func::try_from(func).map_err(|_| self.err_at(rec + 1, "a 16-bit function id"))?;
        let (mut start, mut end) = (0, 0);
        if self.timed {
            (start, end) = self.span(self.prev.wall_ns, "a start time delta", "a duration")?;
            self.prev.wall_ns = end;
        }
        let mut cpu = None;
        if with_cpu {
            let (s, e) = self.span(self.prev.cpu_ns, "a CPU start time delta", "a CPU duration")?;
            self.prev.cpu_ns = e;
            cpu = Some((s, e));
        }
        let kind = self.kind(tag, rec)?;
        self.count += 1;
        self.call_at = rec;
        Ok(Some(Call {
            func,
            start_ns: start,
            end_ns: end,
            cpu_ns: cpu,
            kind,
        }))
    }

    /// The end record (its tag read at stream offset `rec`): the record count, then the file's
    /// end.
    fn end_record(&mut self, rec: u64) -> Result<(), TraceError> {
        let n = self.v("the record count")?;
        if n != self.count {
            return Err(self.err_at(
                rec,
                format!("an end record counting {} records, got {n}", self.count),
            ));
        }
        if !self.at_end() {
            return Err(self.err("the end of the file after the end record"));
        }
        Ok(())
    }

    /// A record's start and end on one clock: the start as a delta from `prev_end` (the
    /// previous record's end), then the duration.
    fn span(
        &mut self,
        prev_end: u64,
        start: &str,
        duration: &str,
    ) -> Result<(u64, u64), TraceError> {
        let s = prev_end.wrapping_add(self.z(start)? as u64);
        let e = s.wrapping_add(self.z(duration)? as u64);
        Ok((s, e))
    }

    /// The fields of a record of tag `tag` (read at stream offset `rec`).
    fn kind(&mut self, tag: u8, rec: u64) -> Result<CallKind, TraceError> {
        use CallKind as K;
        Ok(match tag {
            0 => K::Local,
            1 => K::Unsupported {
                name: self.call_name()?,
            },
            2 => K::Compute {
                ps: self.v("compute ps")?,
                flops: None,
            },
            3 => K::Init,
            4 => K::Finalize,
            5..=9 => self.message(tag)?,
            10..=18 => self.completion(tag)?,
            19 => {
                let (comm, kind, root, bytes) = self.coll()?;
                K::Coll {
                    comm,
                    kind,
                    root,
                    bytes,
                }
            }
            30 => {
                let (comm, kind, root, bytes) = self.coll()?;
                K::Icoll {
                    comm,
                    kind,
                    root,
                    bytes,
                    req: self.v("a request")?,
                }
            }
            20 => self.v_coll()?,
            21..=27 => self.comm_or_group(tag)?,
            28 => K::Cancel {
                req: self.v("a request")?,
            },
            29 => K::CancelOutcome {
                req: if self.flag()? {
                    Some(self.v("a request")?)
                } else {
                    None
                },
                cancelled: self.flag()?,
            },
            t => {
                return Err(self.err_at(
                    rec,
                    format!(
                        "a record tag 0..=30 (plus {TAG_CPU:#x} with CPU times, version 3) or \
                         255, got {t}"
                    ),
                ))
            }
        })
    }

    fn call_name(&mut self) -> Result<String, TraceError> {
        let n = self.len_of("a call name")?;
        let mut b = vec![0u8; n];
        self.read(&mut b, "a call name")?;
        String::from_utf8(b).map_err(|_| self.err("a UTF-8 call name"))
    }

    /// A message's peer, tag and size.
    fn envelope(&mut self) -> Result<(i32, i32, u64), TraceError> {
        Ok((self.i32("a peer")?, self.i32("a tag")?, self.v("bytes")?))
    }

    /// Records 5 to 9: send, recv, isend, irecv, sendrecv.
    fn message(&mut self, tag: u8) -> Result<CallKind, TraceError> {
        use CallKind as K;
        let comm = self.u32("a communicator")?;
        let (peer, t, bytes) = self.envelope()?;
        Ok(match tag {
            5 => K::Send {
                comm,
                peer,
                tag: t,
                bytes,
            },
            6 => K::Recv {
                comm,
                peer,
                tag: t,
                bytes,
            },
            7 => K::Isend {
                comm,
                peer,
                tag: t,
                bytes,
                req: self.v("a request")?,
            },
            8 => K::Irecv {
                comm,
                peer,
                tag: t,
                bytes,
                req: self.v("a request")?,
            },
            _ => {
                let (src, recv_tag, recv_bytes) = self.envelope()?;
                K::Sendrecv {
                    comm,
                    dst: peer,
                    send_tag: t,
                    send_bytes: bytes,
                    src,
                    recv_tag,
                    recv_bytes,
                }
            }
        })
    }

    /// Records 10 to 18: waits, tests and request frees.
    fn completion(&mut self, tag: u8) -> Result<CallKind, TraceError> {
        use CallKind as K;
        Ok(match tag {
            10 => K::Wait {
                req: self.v("a request")?,
            },
            11 => K::Waitall {
                reqs: self.vec("requests")?,
            },
            12 => K::Waitany {
                reqs: self.vec("requests")?,
                index: self.i32("an index")?,
            },
            13 => K::Waitsome {
                reqs: self.vec("requests")?,
                indices: self.ivec("indices")?,
            },
            14 => K::Test {
                req: self.v("a request")?,
                flag: self.flag()?,
            },
            15 => K::Testall {
                reqs: self.vec("requests")?,
                flag: self.flag()?,
            },
            16 => K::Testany {
                reqs: self.vec("requests")?,
                index: self.i32("an index")?,
                flag: self.flag()?,
            },
            17 => K::Testsome {
                reqs: self.vec("requests")?,
                indices: self.ivec("indices")?,
            },
            _ => K::RequestFree {
                req: self.v("a request")?,
            },
        })
    }

    /// Records 19 and 30 (blocking and non-blocking collectives): communicator, kind, root and
    /// size.
    fn coll(&mut self) -> Result<(u32, CollKind, i32, u64), TraceError> {
        let comm = self.u32("a communicator")?;
        let c = self.u8("a collective kind")?;
        let kind = coll_from(c).ok_or_else(|| {
            self.err_at(self.off - 1, format!("a collective kind 0..=10, got {c}"))
        })?;
        Ok((comm, kind, self.i32("a root")?, self.v("bytes")?))
    }

    /// Record 20: a collective with per-rank sizes.
    fn v_coll(&mut self) -> Result<CallKind, TraceError> {
        let comm = self.u32("a communicator")?;
        let c = self.u8("a v-collective kind")?;
        let kind = vkind_from(c).ok_or_else(|| {
            self.err_at(self.off - 1, format!("a v-collective kind 0..=4, got {c}"))
        })?;
        Ok(CallKind::VColl {
            comm,
            kind,
            root: self.i32("a root")?,
            send: self.vec("send sizes")?,
            recv: self.vec("receive sizes")?,
        })
    }

    /// Records 21 to 27: communicators and groups made, freed and defined.
    fn comm_or_group(&mut self, tag: u8) -> Result<CallKind, TraceError> {
        use CallKind as K;
        Ok(match tag {
            21 => K::CommSplit {
                parent: self.u32("a communicator")?,
                color: self.i32("a color")?,
                key: self.i32("a key")?,
                new: self.u32("a communicator")?,
            },
            22 => K::CommFree {
                comm: self.u32("a communicator")?,
            },
            23 => K::GroupFromComm {
                comm: self.u32("a communicator")?,
                group: self.u32("a group")?,
            },
            24 => K::GroupSelect {
                group: self.u32("a group")?,
                ranks: self.ivec("group ranks")?,
                exclude: self.flag()?,
                new: self.u32("a group")?,
            },
            25 => K::GroupFree {
                group: self.u32("a group")?,
            },
            26 => K::CommCreate {
                parent: self.u32("a communicator")?,
                group: self.u32("a group")?,
                new: self.u32("a communicator")?,
            },
            _ => K::CommDefine {
                new: self.u32("a communicator")?,
                members: {
                    let n = self.len_of("communicator members")?;
                    (0..n)
                        .map(|_| self.u32("a member rank"))
                        .collect::<Result<_, _>>()?
                },
            },
        })
    }
}

impl CallStream for NativeCalls {
    fn pos(&self) -> Pos {
        Pos::Offset(self.file_offset(self.call_at))
    }
}

impl Iterator for NativeCalls {
    type Item = Result<Call, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.next_call();
        stream_step(&mut self.done, step)
    }
}
