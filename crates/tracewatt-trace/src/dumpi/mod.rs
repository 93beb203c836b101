//! SST-DUMPI binary traces: a `.meta` text file (`numprocs`, `fileprefix`) and one
//! `<prefix>-NNNN.bin` per rank.
//!
//! A `.bin` starts with the magic `FF AA DD 44 55 4D 50 49`; its last 64 bytes index the
//! sections (older versions have fewer entries; the index is found by probing for the magic the
//! way sst-dumpi does). The body is a u32 CPU-seconds bias, a u32 wall-seconds bias, then records:
//! u16 function label, u8 mask (0x03 statuses present, 0x04 CPU times, 0x08 wall times, 0x40
//! thread id, 0x80 perf counters), optional u16 thread, times as {u16 s, u32 ns} start + stop,
//! perf counters, then the call's arguments. Records carry no length, so every call needs its
//! layout, even the ones the simulator ignores: `table.rs` describes all of them.
//! Message bytes are count x the datatype's size from the file's datatype size table.
//!
//! The body ends with the end-of-stream label (293) just before the next section; the footer is
//! a u32, the magic `F0 07 FE E7`, then per label (0..=290, the last one the total) how often
//! the rank called it, then how often it was ignored (called but not written). Because records
//! carry no length or checksum, corruption is caught by what must hold in a genuine trace: the
//! decoded calls per label equal the footer's, the end-of-stream label comes only at the end,
//! timestamps never go backwards and have nanoseconds below 1e9, peers are ranks of the trace.

mod layout;
mod table;

use std::cell::Cell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use tracewatt_workload::{CollKind, Rank};

use crate::call::{Call, CallKind, CommHandle, VKind, NULL_COMM_HANDLE, SELF_HANDLE, WORLD_HANDLE};
use crate::error::{Location, TraceError, TRUNCATED};
use crate::funcs::{self, Func};
use crate::{stream_step, CallIter, CallSource, CallStream, Pos, TraceFormat};
use layout::{Cond, Kind};
use table::FUNCS;

const MAGIC: u64 = 0xffaa_dd44_554d_5049;
const FOOTER_MAGIC: u32 = 0xf007_fee7;
/// Labels the footer counts: every MPI function and the total (`MPI_ALL_FUNCTIONS`).
const COUNTED_LABELS: usize = 291;
/// The label closing the body.
const END_OF_STREAM: u16 = 293;

/// True if `path` is a `.meta` file or a directory holding one.
pub(crate) fn detect(path: &Path) -> bool {
    if path.is_file() {
        return path.extension().is_some_and(|e| e == "meta");
    }
    find_meta(path).is_ok()
}

fn find_meta(dir: &Path) -> Result<PathBuf, TraceError> {
    let rd = std::fs::read_dir(dir).map_err(|e| TraceError::io(dir, e))?;
    let mut metas: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "meta"))
        .collect();
    metas.sort();
    match metas.len() {
        1 => Ok(metas.remove(0)),
        0 => Err(TraceError::UnknownFormat {
            path: dir.to_path_buf(),
            why: "no .meta file".into(),
        }),
        _ => Err(TraceError::UnknownFormat {
            path: dir.to_path_buf(),
            why: format!("several DUMPI .meta files ({}); name one", metas.len()),
        }),
    }
}

/// A DUMPI trace: the meta file's facts and the per-rank file paths.
#[derive(Debug)]
pub struct DumpiTrace {
    pub meta: PathBuf,
    pub num_ranks: u32,
    pub files: Vec<PathBuf>,
}

impl DumpiTrace {
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let meta = if path.is_dir() {
            find_meta(path)?
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read(&meta).map_err(|e| TraceError::io(&meta, e))?;
        let text = String::from_utf8_lossy(&text);
        let (mut n, mut prefix) = (None, None);
        // The lines of `numprocs` and `fileprefix`, named when the rank files do not match.
        let mut lines = (0, 0);
        for (i, line) in text.lines().enumerate() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            match k.trim() {
                "numprocs" => {
                    lines.0 = i as u64 + 1;
                    n = Some(v.trim().parse::<u32>().map_err(|_| {
                        TraceError::format(
                            Location::line(&meta, None, i as u64 + 1),
                            "numprocs=<positive integer>",
                        )
                    })?)
                }
                "fileprefix" => {
                    lines.1 = i as u64 + 1;
                    prefix = Some(v.trim().to_string())
                }
                _ => {}
            }
        }
        let (Some(n), Some(prefix)) = (n, prefix) else {
            return Err(TraceError::format(
                Location::file(&meta),
                "`numprocs=` and `fileprefix=` lines",
            ));
        };
        if n == 0 || n > 1 << 24 || prefix.contains('/') {
            return Err(TraceError::format(
                Location::file(&meta),
                "1..2^24 ranks and a plain file prefix",
            ));
        }
        let dir = meta.parent().unwrap_or(Path::new("."));
        let files: Vec<PathBuf> = (0..n)
            .map(|r| dir.join(format!("{prefix}-{r:04}.bin")))
            .collect();
        check_rank_files(&meta, lines, dir, &prefix, n)?;
        Ok(DumpiTrace {
            meta,
            num_ranks: n,
            files,
        })
    }
}

/// `numprocs` must name exactly the `<prefix>-NNNN.bin` files present: rank files 0..n-1 and
/// none beyond (a wrong `numprocs` would silently drop or invent ranks). Errors name the
/// `fileprefix` line when no file has the prefix, else the `numprocs` line (`lines`).
fn check_rank_files(
    meta: &Path,
    lines: (u64, u64),
    dir: &Path,
    prefix: &str,
    n: u32,
) -> Result<(), TraceError> {
    let rd = std::fs::read_dir(dir).map_err(|e| TraceError::io(dir, e))?;
    let mut present: Vec<u32> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let num = name.strip_prefix(prefix)?.strip_prefix('-')?;
            num.strip_suffix(".bin")?.parse::<u32>().ok()
        })
        .collect();
    present.sort_unstable();
    let missing = (0..n).find(|r| present.binary_search(r).is_err());
    let extra = present.iter().find(|&&r| r >= n);
    let problem = match (missing, extra) {
        (Some(r), _) => Some(format!("{prefix}-{r:04}.bin is missing")),
        (None, Some(r)) => Some(format!("{prefix}-{r:04}.bin is present beyond them")),
        (None, None) => None,
    };
    if let Some(what) = problem {
        let line = if present.is_empty() { lines.1 } else { lines.0 };
        return Err(TraceError::format(
            Location::line(meta, None, line),
            format!(
                "numprocs={n} and fileprefix={prefix} to match the rank files beside it ({} \
                 found; {what})",
                present.len()
            ),
        ));
    }
    Ok(())
}

impl CallSource for DumpiTrace {
    fn format(&self) -> TraceFormat {
        TraceFormat::Dumpi
    }
    fn num_ranks(&self) -> u32 {
        self.num_ranks
    }
    fn rank_file(&self, rank: Rank) -> PathBuf {
        self.files.get(rank as usize).cloned().unwrap_or_default()
    }
    fn calls(&self, rank: Rank) -> Result<CallIter, TraceError> {
        Ok(Box::new(DumpiCalls::open(
            &self.rank_file(rank),
            rank,
            self.num_ranks,
        )?))
    }
}

/// Big-endian reads with offset tracking; never reads past the file's end.
struct Rd {
    r: BufReader<File>,
    off: u64,
    len: u64,
    file: PathBuf,
    rank: Rank,
}

impl Rd {
    fn err(&self, expected: impl Into<String>) -> TraceError {
        TraceError::format(
            Location::at(&self.file, Some(self.rank), self.off),
            expected,
        )
    }
    fn seek(&mut self, off: u64) -> Result<(), TraceError> {
        if off > self.len {
            return Err(self.err(format!("a section offset within the file (got {off})")));
        }
        self.r
            .seek(SeekFrom::Start(off))
            .map_err(|e| TraceError::io(&self.file, e))?;
        self.off = off;
        Ok(())
    }
    #[inline(always)]
    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N], TraceError> {
        let mut b = [0u8; N];
        if self.off + N as u64 > self.len {
            return Err(self.err(format!("{what} ({N} bytes), found the end of the file")));
        }
        // The buffered bytes directly when they suffice: the per-field hot path of every
        // reader pass, kept free of a call into the generic `read_exact`.
        match self.r.buffer().get(..N) {
            Some(buffered) => {
                b.copy_from_slice(buffered);
                self.r.consume(N);
            }
            None => self
                .r
                .read_exact(&mut b)
                .map_err(|e| TraceError::io(&self.file, e))?,
        }
        self.off += N as u64;
        Ok(b)
    }
    #[inline(always)]
    fn u8(&mut self, what: &str) -> Result<u8, TraceError> {
        Ok(self.bytes::<1>(what)?[0])
    }
    #[inline(always)]
    fn u16(&mut self, what: &str) -> Result<u16, TraceError> {
        Ok(u16::from_be_bytes(self.bytes(what)?))
    }
    #[inline(always)]
    fn u32(&mut self, what: &str) -> Result<u32, TraceError> {
        Ok(u32::from_be_bytes(self.bytes(what)?))
    }
    #[inline(always)]
    fn u64(&mut self, what: &str) -> Result<u64, TraceError> {
        Ok(u64::from_be_bytes(self.bytes(what)?))
    }
    fn skip(&mut self, n: u64, what: &str) -> Result<(), TraceError> {
        if self.off.saturating_add(n) > self.len {
            return Err(self.err(format!("{what} ({n} bytes), found the end of the file")));
        }
        let mut left = n;
        while left > 0 {
            let buf = self
                .r
                .fill_buf()
                .map_err(|e| TraceError::io(&self.file, e))?;
            if buf.is_empty() {
                return Err(self.err(format!("{what}, found the end of the file")));
            }
            let k = (buf.len() as u64).min(left) as usize;
            self.r.consume(k);
            left -= k as u64;
        }
        self.off += n;
        Ok(())
    }
    /// An array length, checked against the bytes left so corrupt lengths fail fast.
    fn len_of(&mut self, elem: u64, what: &str) -> Result<u32, TraceError> {
        let n = self.u32(what)?;
        if (n as u64).saturating_mul(elem) > self.len - self.off {
            return Err(self.err(format!("{what}: a length that fits in the file (got {n})")));
        }
        Ok(n)
    }
}

/// One decoded argument.
#[derive(Debug, Clone)]
enum Val {
    Int(i64),
    Arr(Vec<i64>),
    Skipped,
}

/// The footer's call counts then ignored counts per label (see the module docs).
fn read_footer(rd: &mut Rd, at: u64) -> Result<Vec<u32>, TraceError> {
    rd.seek(at)?;
    rd.u32("the footer's first word")?;
    if rd.u32("the footer magic")? != FOOTER_MAGIC {
        rd.off -= 4;
        return Err(rd.err("the footer magic F0 07 FE E7"));
    }
    (0..2 * COUNTED_LABELS)
        .map(|_| rd.u32("a footer call count"))
        .collect()
}

fn version_at_least(v: [u8; 3], a: u8, b: u8, c: u8) -> bool {
    (v[0], v[1], v[2]) >= (a, b, c)
}

/// The rank's host from its header (after the version): the start time, the hostname and the
/// user name (u16 length + bytes), then the mesh: dimensions and 2 x that many u32 (its size and
/// the rank's coordinates, written by machines whose hostname is the partition's, e.g. Blue
/// Gene). Ranks with the same hostname and mesh fields ran on one node. Only the clock checks
/// use it, so a header that does not read as one, or names `localhost`, gives no host (no
/// check) rather than an error.
fn read_host(rd: &mut Rd) -> Option<String> {
    const MAX_HOSTNAME: u16 = 255;
    const MAX_MESH_DIMS: u32 = 16;
    rd.u64("the header's start time").ok()?;
    let string = |rd: &mut Rd, max: u16| -> Option<String> {
        let n = rd.u16("a header string's length").ok()?;
        if n > max {
            return None;
        }
        let b: Option<Vec<u8>> = (0..n).map(|_| rd.u8("a header string").ok()).collect();
        Some(String::from_utf8_lossy(&b?).into_owned())
    };
    let hostname = string(rd, MAX_HOSTNAME)?;
    string(rd, u16::MAX)?;
    let dims = rd.u32("the header's mesh dimensions").ok()?;
    // `localhost` names no machine: nodes of a cluster can all report it.
    if hostname.is_empty() || hostname.starts_with("localhost") || dims > MAX_MESH_DIMS {
        return None;
    }
    let mesh: Option<Vec<u32>> = (0..2 * dims)
        .map(|_| rd.u32("the header's mesh").ok())
        .collect();
    let mesh = mesh?;
    Some(if mesh.is_empty() {
        hostname
    } else {
        format!("{hostname} (mesh {mesh:?})")
    })
}

/// Streams one rank's calls.
struct DumpiCalls {
    /// The host from the header (see [`read_host`]).
    host: Option<String>,
    rd: Rd,
    version: [u8; 3],
    sizes: Vec<u32>,
    perf_labels: Option<u32>,
    /// Where the body's records end (the next section).
    body_end: u64,
    /// The footer's offset and its call count per label, when the file has one.
    footer: Option<(u64, Vec<u32>)>,
    /// Calls decoded so far per label (compared with the footer at the end).
    decoded: Vec<u32>,
    num_ranks: u32,
    cpu_bias: u64,
    wall_bias: u64,
    /// The previous record's stop times (wall, CPU): time never goes backwards.
    prev_stop: (u64, u64),
    finalized: bool,
    done: bool,
    vals: Vec<(&'static str, Val)>,
    /// The byte offset of the record last returned.
    call_at: u64,
    /// A datatype index the size table does not know, met while sizing the current call.
    unknown_type: Cell<Option<i64>>,
}

impl DumpiCalls {
    fn open(path: &Path, rank: Rank, num_ranks: u32) -> Result<Self, TraceError> {
        let f = File::open(path).map_err(|e| TraceError::io(path, e))?;
        let len = f.metadata().map_err(|e| TraceError::io(path, e))?.len();
        let mut rd = Rd {
            r: BufReader::with_capacity(64 * 1024, f),
            off: 0,
            len,
            file: path.to_path_buf(),
            rank,
        };
        if rd.u64("the DUMPI magic")? != MAGIC {
            rd.off = 0;
            return Err(rd.err("the DUMPI magic FF AA DD 44 55 4D 50 49"));
        }
        if len < 72 {
            return Err(rd.err(format!(
                "a 64-byte section index at the end of the file; {TRUNCATED}"
            )));
        }
        rd.seek(len - 64)?;
        let mut v = [0u64; 8];
        for x in v.iter_mut() {
            *x = rd.u64("the section index")?;
        }
        // Probe the index like sst-dumpi: newer writers prepended entries, each after a magic.
        let mut p = 0usize;
        let next = |p: &mut usize| {
            let x = v.get(*p).copied().unwrap_or(0);
            *p += 1;
            x
        };
        let (mut sizelbl, mut addrlbl, mut perflbl) = (0, 0, 0);
        let mut m = next(&mut p);
        if m != MAGIC {
            m = next(&mut p);
        } else {
            sizelbl = next(&mut p);
        }
        if m != MAGIC {
            m = next(&mut p);
        } else {
            addrlbl = next(&mut p);
        }
        if m != MAGIC {
            m = next(&mut p);
        } else {
            perflbl = next(&mut p);
        }
        if m != MAGIC || p > 4 {
            rd.off = len - 64;
            return Err(rd.err(format!(
                "a section index starting with the DUMPI magic; {TRUNCATED}"
            )));
        }
        let (header, body, footer) = (next(&mut p), next(&mut p), next(&mut p));
        let mut version = [0u8; 3];
        let mut host = None;
        if header > 0 {
            rd.seek(header)?;
            for x in version.iter_mut() {
                *x = rd.u8("the header's version")?;
            }
            host = read_host(&mut rd);
        }
        let mut sizes = Vec::new();
        if sizelbl > 0 {
            rd.seek(sizelbl)?;
            let n = rd.len_of(4, "the datatype size table")?;
            for _ in 0..n {
                sizes.push(rd.u32("a datatype size")?);
            }
        }
        let mut perf_labels = None;
        if perflbl > 0 {
            rd.seek(perflbl)?;
            perf_labels = Some(rd.len_of(2, "the perf counter labels")?);
        }
        if body == 0 || body >= len {
            return Err(rd.err(format!("a body offset inside the file (got {body})")));
        }
        let body_end = [header, footer, sizelbl, addrlbl, perflbl]
            .into_iter()
            .filter(|&o| o > body)
            .fold(len - 64, u64::min);
        let footer = if footer > 0 {
            Some((footer, read_footer(&mut rd, footer)?))
        } else {
            None
        };
        rd.seek(body)?;
        let cpu_bias = rd.u32("the CPU time bias")? as u64;
        let wall_bias = rd.u32("the wall time bias")? as u64;
        Ok(DumpiCalls {
            host,
            rd,
            version,
            sizes,
            perf_labels,
            body_end,
            footer,
            decoded: vec![0; COUNTED_LABELS],
            num_ranks,
            cpu_bias,
            wall_bias,
            prev_stop: (0, 0),
            finalized: false,
            done: false,
            vals: Vec::with_capacity(16),
            call_at: 0,
            unknown_type: Cell::new(None),
        })
    }

    /// The size of datatype index `dt` from the rank's size table; `None` for an index the
    /// table does not hold.
    fn size_of(&self, dt: i64) -> Option<u64> {
        usize::try_from(dt)
            .ok()
            .and_then(|i| self.size_table().get(i))
            .map(|&s| s as u64)
    }

    /// Datatype sizes by index: the rank's table, or for traces older than 0.6.6 (no table) the
    /// predefined types' LP64 sizes.
    fn size_table(&self) -> &[u32] {
        const BUILTIN: [u32; 28] = [
            0, 0, 1, 1, 1, 1, 4, 2, 2, 4, 4, 8, 8, 4, 8, 16, 8, 8, 8, 1, 0, 0, 8, 12, 16, 6, 8, 20,
        ];
        if self.sizes.is_empty() {
            &BUILTIN
        } else {
            &self.sizes
        }
    }

    /// `count` elements of datatype index `dt` in bytes. An index the size table does not hold
    /// is remembered when it sizes a message (count > 0), and the call refused once decoded.
    fn sized(&self, count: i64, dt: i64) -> u64 {
        if count <= 0 {
            return 0;
        }
        match self.size_of(dt) {
            Some(s) => (count as u64).saturating_mul(s),
            None => {
                self.unknown_type.set(Some(dt));
                0
            }
        }
    }

    /// A record's {start, stop} on one clock, checked: nanoseconds below 1e9, stop not before
    /// start, start not before the previous record's stop (`prev`, updated).
    fn times(&mut self, bias: u64, clock: &str, prev: &mut u64) -> Result<(u64, u64), TraceError> {
        let mut t = [0u64; 2];
        for (x, what) in t.iter_mut().zip(["start", "stop"]) {
            let at = self.rd.off;
            let s = self.rd.u16("a time's seconds")? as u64 + bias;
            let ns = self.rd.u32("a time's nanoseconds")? as u64;
            *x = s * 1_000_000_000 + ns;
            let problem = if ns >= 1_000_000_000 {
                Some(format!("nanoseconds below 1e9 (got {ns})"))
            } else if *x < *prev {
                Some(format!(
                    "time that does not go backwards (the previous {clock} time is {} ns later)",
                    *prev - *x
                ))
            } else {
                None
            };
            if let Some(p) = problem {
                self.rd.off = at;
                return Err(self.rd.err(format!("a {clock} {what} time with {p}")));
            }
            *prev = *x;
        }
        Ok((t[0], t[1]))
    }

    /// A peer rank argument: a rank of the trace or a negative special value (ANY_SOURCE,
    /// PROC_NULL, ...); corrupt values are refused where they were read.
    fn check_peers(&mut self, record: u64, mpi_name: &str) -> Result<(), TraceError> {
        for name in ["dest", "source", "root"] {
            let Some(p) = self
                .vals
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, v)| if let Val::Int(i) = v { Some(*i) } else { None })
            else {
                continue;
            };
            if !(-4..self.num_ranks as i64).contains(&p) {
                self.rd.off = record;
                return Err(self.rd.err(format!(
                    "{mpi_name}'s `{name}` a rank below numprocs={} or a special value (got {p})",
                    self.num_ranks
                )));
            }
        }
        Ok(())
    }

    /// At the end of the body: the decoded calls per label must equal the footer's counts
    /// (called, or called minus ignored: writers differ in whether ignored calls are written).
    fn check_counts(&mut self) -> Result<(), TraceError> {
        let Some((off, called)) = &self.footer else {
            return Ok(());
        };
        let ignored = &called[COUNTED_LABELS..];
        for (label, (&c, &d)) in called.iter().zip(&self.decoded).enumerate() {
            if label == COUNTED_LABELS - 1 {
                continue; // the total, implied by the others
            }
            if d != c && d != c.saturating_sub(ignored[label]) {
                let name = FUNCS.get(label).map_or("?", |f| f.0);
                self.rd.off = off + 8 + 4 * label as u64;
                return Err(self.rd.err(format!(
                    "{c} {name} calls as the footer counts, decoded {d}: the body is corrupt, or \
                     the file was cut and patched"
                )));
            }
        }
        Ok(())
    }

    fn int(&self, name: &str) -> i64 {
        self.vals
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| if let Val::Int(i) = v { Some(*i) } else { None })
            .unwrap_or(0)
    }
    fn arr(&self, name: &str) -> &[i64] {
        self.vals
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| {
                if let Val::Arr(a) = v {
                    Some(a.as_slice())
                } else {
                    None
                }
            })
            .unwrap_or(&[])
    }
    fn bytes(&self, count: &str, dt: &str) -> u64 {
        self.sized(self.int(count), self.int(dt))
    }
    fn byte_vec(&self, counts: &str, dt: &str) -> Vec<u64> {
        let dt = self.int(dt);
        self.arr(counts)
            .iter()
            .map(|&c| self.sized(c, dt))
            .collect()
    }
    fn comm(&self, name: &str) -> CommHandle {
        match self.int(name) {
            2 => WORLD_HANDLE,
            3 => SELF_HANDLE,
            h if h >= 4 => h as CommHandle,
            _ => NULL_COMM_HANDLE,
        }
    }
    fn req(&self, name: &str) -> u64 {
        self.int(name) as u32 as u64
    }
    fn reqs(&self, name: &str) -> Vec<u64> {
        self.arr(name).iter().map(|&r| r as u32 as u64).collect()
    }

    fn read_fields(
        &mut self,
        fields: &'static [layout::Field],
        mask: u8,
    ) -> Result<(), TraceError> {
        self.vals.clear();
        for f in fields {
            if let Some(Cond::Eq(a, b)) = f.cond {
                if self.int(a) != self.int(b) {
                    continue;
                }
            }
            let what = f.name;
            let rd = &mut self.rd;
            let v = match f.kind {
                Kind::U8 => Val::Int(rd.u8(what)? as i64),
                Kind::U16 => Val::Int(rd.u16(what)? as i64),
                Kind::I32 => Val::Int(rd.u32(what)? as i32 as i64),
                Kind::I64 => Val::Int(rd.u64(what)? as i64),
                Kind::I32Array => {
                    let n = rd.len_of(4, what)?;
                    let mut a = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        a.push(rd.u32(what)? as i32 as i64);
                    }
                    Val::Arr(a)
                }
                Kind::I32ArraySince069 | Kind::I32ArraySince068 => {
                    let since = if f.kind == Kind::I32ArraySince069 {
                        9
                    } else {
                        8
                    };
                    if version_at_least(self.version, 0, 6, since) {
                        let n = rd.len_of(4, what)?;
                        rd.skip(n as u64 * 4, what)?;
                    } else {
                        rd.skip(4, what)?;
                    }
                    Val::Skipped
                }
                Kind::U16Array => {
                    let n = rd.len_of(2, what)?;
                    let mut a = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        a.push(rd.u16(what)? as i64);
                    }
                    Val::Arr(a)
                }
                Kind::U8Array => {
                    let n = rd.len_of(1, what)?;
                    rd.skip(n as u64, what)?;
                    Val::Skipped
                }
                Kind::I32Array2 => {
                    let rows = rd.len_of(4, what)?;
                    for _ in 0..rows {
                        let n = rd.len_of(4, what)?;
                        rd.skip(n as u64 * 4, what)?;
                    }
                    Val::Skipped
                }
                Kind::Chars => {
                    let n = rd.len_of(1, what)?;
                    rd.skip(n as u64, what)?;
                    Val::Skipped
                }
                Kind::Chars2 | Kind::InitArgv | Kind::InitThreadArgv => {
                    let rows = rd.len_of(4, what)?;
                    if f.kind == Kind::InitArgv && !version_at_least(self.version, 0, 6, 2) {
                        rd.skip(4, what)?;
                    }
                    for _ in 0..rows {
                        let n = rd.len_of(1, what)?;
                        rd.skip(n as u64, what)?;
                    }
                    Val::Skipped
                }
                Kind::Chars3 => {
                    let rows = rd.len_of(4, what)?;
                    for _ in 0..rows {
                        let cols = rd.len_of(4, what)?;
                        for _ in 0..cols {
                            let n = rd.len_of(1, what)?;
                            rd.skip(n as u64, what)?;
                        }
                    }
                    Val::Skipped
                }
                Kind::Statuses => {
                    if mask & 0x03 != 0 {
                        let each = if version_at_least(self.version, 0, 6, 3) {
                            14
                        } else {
                            10
                        };
                        let n = rd.len_of(each, what)?;
                        rd.skip(n as u64 * each, what)?;
                    }
                    Val::Skipped
                }
            };
            self.vals.push((f.name, v));
        }
        Ok(())
    }

    fn next_call(&mut self) -> Result<Option<Call>, TraceError> {
        loop {
            if self.rd.off >= self.body_end {
                self.check_counts()?;
                return Ok(None);
            }
            let start_off = self.rd.off;
            let label = self.rd.u16("a function label")?;
            if label == END_OF_STREAM && self.rd.off == self.body_end {
                self.check_counts()?;
                return Ok(None);
            }
            if self.finalized && label == 0 {
                self.check_counts()?;
                return Ok(None); // some writers leave zeros after Finalize
            }
            let (mpi_name, fields) = match FUNCS.get(label as usize) {
                Some(f) if label as usize != COUNTED_LABELS - 1 => f,
                _ => {
                    self.rd.off = start_off;
                    return Err(self.rd.err(format!(
                        "a function label below {END_OF_STREAM}, or {END_OF_STREAM} (end of \
                         stream) at the body's end (offset {}); got {label}",
                        self.body_end - 2
                    )));
                }
            };
            let Some(fields) = fields else {
                self.rd.off = start_off;
                return Err(self.rd.err(format!(
                    "a call whose layout is known; {mpi_name} (label {label}) cannot be decoded"
                )));
            };
            let mask = self.rd.u8("a record mask")?;
            if mask & 0x40 != 0 {
                self.rd.u16("a thread id")?;
            }
            let (mut t, mut cpu) = ((0, 0), None);
            let (mut prev_wall, mut prev_cpu) = self.prev_stop;
            if mask & 0x04 != 0 {
                cpu = Some(self.times(self.cpu_bias, "CPU", &mut prev_cpu)?);
            }
            if mask & 0x08 != 0 {
                t = self.times(self.wall_bias, "wall", &mut prev_wall)?;
            }
            self.prev_stop = (prev_wall, prev_cpu);
            if mask & 0x80 != 0 {
                let count = self.rd.u8("a perf counter count")? as u64;
                let n = self.perf_labels.map_or(count, |l| l as u64);
                self.rd.skip(n * 16, "perf counter values")?;
            }
            self.read_fields(fields, mask)?;
            if let Some(n) = self.decoded.get_mut(label as usize) {
                *n += 1;
            }
            if mpi_name.starts_with("Function_") {
                continue; // user-function enter/exit markers, not MPI calls
            }
            self.check_peers(start_off, mpi_name)?;
            let func = label as Func;
            let kind = self.kind(func, mpi_name);
            if let Some(dt) = self.unknown_type.take() {
                self.rd.off = start_off;
                return Err(self.rd.err(format!(
                    "{mpi_name}'s datatypes among the {} of the rank's size table, got index {dt}",
                    self.size_table().len()
                )));
            }
            self.call_at = start_off;
            if label as Func == funcs::F_FINALIZE {
                self.finalized = true;
            }
            return Ok(Some(Call {
                func,
                start_ns: t.0,
                end_ns: t.1,
                cpu_ns: cpu,
                kind,
            }));
        }
    }

    /// The call `mpi_name` (function id `func`, which is its DUMPI label) of the fields read.
    fn kind(&self, func: Func, mpi_name: &str) -> CallKind {
        // A plain prefix test: a substring search here, once per record, cost a tenth of the
        // reader's time.
        let name = mpi_name.strip_prefix("MPI_").unwrap_or(mpi_name);
        match name {
            "Init" | "Init_thread" => CallKind::Init,
            "Finalize" => CallKind::Finalize,
            _ => self
                .message(name)
                .or_else(|| self.completion(name))
                .or_else(|| self.collective(name))
                .or_else(|| self.comm_or_group(name))
                .unwrap_or_else(|| {
                    if is_unsupported(func) {
                        CallKind::Unsupported {
                            name: name.to_ascii_lowercase(),
                        }
                    } else {
                        CallKind::Local
                    }
                }),
        }
    }

    /// Point-to-point calls (`name` without `MPI_`).
    fn message(&self, name: &str) -> Option<CallKind> {
        Some(match name {
            "Send" | "Bsend" | "Ssend" | "Rsend" => CallKind::Send {
                comm: self.comm("comm"),
                peer: self.int("dest") as i32,
                tag: self.int("tag") as i32,
                bytes: self.bytes("count", "datatype"),
            },
            "Recv" => CallKind::Recv {
                comm: self.comm("comm"),
                peer: self.int("source") as i32,
                tag: self.int("tag") as i32,
                bytes: self.bytes("count", "datatype"),
            },
            "Isend" | "Ibsend" | "Issend" | "Irsend" => CallKind::Isend {
                comm: self.comm("comm"),
                peer: self.int("dest") as i32,
                tag: self.int("tag") as i32,
                bytes: self.bytes("count", "datatype"),
                req: self.req("request"),
            },
            "Irecv" => CallKind::Irecv {
                comm: self.comm("comm"),
                peer: self.int("source") as i32,
                tag: self.int("tag") as i32,
                bytes: self.bytes("count", "datatype"),
                req: self.req("request"),
            },
            "Sendrecv" => self.sendrecv(("sendcount", "sendtype"), ("recvcount", "recvtype")),
            "Sendrecv_replace" => self.sendrecv(("count", "datatype"), ("count", "datatype")),
            _ => return None,
        })
    }

    /// A sendrecv whose send and receive sizes are the fields named `send` and `recv` (count,
    /// datatype).
    fn sendrecv(&self, send: (&str, &str), recv: (&str, &str)) -> CallKind {
        CallKind::Sendrecv {
            comm: self.comm("comm"),
            dst: self.int("dest") as i32,
            send_tag: self.int("sendtag") as i32,
            send_bytes: self.bytes(send.0, send.1),
            src: self.int("source") as i32,
            recv_tag: self.int("recvtag") as i32,
            recv_bytes: self.bytes(recv.0, recv.1),
        }
    }

    /// Waits, tests, request frees and cancels (`name` without `MPI_`).
    fn completion(&self, name: &str) -> Option<CallKind> {
        Some(match name {
            "Wait" => CallKind::Wait {
                req: self.req("request"),
            },
            "Test" => CallKind::Test {
                req: self.req("request"),
                flag: self.int("flag") != 0,
            },
            "Waitall" => CallKind::Waitall {
                reqs: self.reqs("requests"),
            },
            "Testall" => CallKind::Testall {
                reqs: self.reqs("requests"),
                flag: self.int("flag") != 0,
            },
            "Waitany" => CallKind::Waitany {
                reqs: self.reqs("requests"),
                index: self.int("index") as i32,
            },
            "Testany" => CallKind::Testany {
                reqs: self.reqs("requests"),
                index: self.int("index") as i32,
                flag: self.int("flag") != 0,
            },
            "Waitsome" | "Testsome" => {
                let reqs = self.reqs("requests");
                let indices = self.arr("indices").iter().map(|&i| i as i32).collect();
                if name == "Waitsome" {
                    CallKind::Waitsome { reqs, indices }
                } else {
                    CallKind::Testsome { reqs, indices }
                }
            }
            "Request_free" => CallKind::RequestFree {
                req: self.req("request"),
            },
            "Cancel" => CallKind::Cancel {
                req: self.req("request"),
            },
            // Names a status, not a request: the cancelled request completed last.
            "Test_cancelled" => CallKind::CancelOutcome {
                req: None,
                cancelled: self.int("cancelled") != 0,
            },
            _ => return None,
        })
    }

    /// Collectives (`name` without `MPI_`).
    fn collective(&self, name: &str) -> Option<CallKind> {
        let coll = |kind: CollKind, root: i64, bytes: u64| CallKind::Coll {
            comm: self.comm("comm"),
            kind,
            root: root as i32,
            bytes,
        };
        let vcoll = |kind: VKind, root: i64, send: Vec<u64>, recv: Vec<u64>| CallKind::VColl {
            comm: self.comm("comm"),
            kind,
            root: root as i32,
            send,
            recv,
        };
        let root = || self.int("root");
        let count = || self.bytes("count", "datatype");
        let send = || self.bytes("sendcount", "sendtype");
        let recv = || self.bytes("recvcount", "recvtype");
        Some(match name {
            "Barrier" => coll(CollKind::Barrier, 0, 0),
            "Bcast" => coll(CollKind::Bcast, root(), count()),
            "Reduce" => coll(CollKind::Reduce, root(), count()),
            "Allreduce" => coll(CollKind::Allreduce, 0, count()),
            "Scan" => coll(CollKind::Scan, 0, count()),
            "Exscan" => coll(CollKind::Exscan, 0, count()),
            "Allgather" => coll(CollKind::Allgather, 0, send()),
            "Alltoall" => coll(CollKind::Alltoall, 0, send()),
            "Gather" => coll(CollKind::Gather, root(), send()),
            "Scatter" => coll(CollKind::Scatter, root(), recv()),
            "Alltoallv" => vcoll(
                VKind::Alltoallv,
                0,
                self.byte_vec("sendcounts", "sendtype"),
                self.byte_vec("recvcounts", "recvtype"),
            ),
            "Alltoallw" => {
                let per = |c: &str, t: &str| -> Vec<u64> {
                    self.arr(c)
                        .iter()
                        .zip(self.arr(t))
                        .map(|(&c, &t)| self.sized(c, t))
                        .collect()
                };
                let (s, r) = (
                    per("sendcounts", "sendtypes"),
                    per("recvcounts", "recvtypes"),
                );
                vcoll(VKind::Alltoallv, 0, s, r)
            }
            "Allgatherv" => vcoll(
                VKind::Allgatherv,
                0,
                vec![send()],
                self.byte_vec("recvcounts", "recvtype"),
            ),
            "Gatherv" => vcoll(
                VKind::Gatherv,
                root(),
                vec![send()],
                self.byte_vec("recvcounts", "recvtype"),
            ),
            "Scatterv" => vcoll(
                VKind::Scatterv,
                root(),
                self.byte_vec("sendcounts", "sendtype"),
                vec![recv()],
            ),
            "Reduce_scatter" => {
                let v = self.byte_vec("recvcounts", "datatype");
                vcoll(VKind::ReduceScatter, 0, v.clone(), v)
            }
            _ => return None,
        })
    }

    /// Communicators and groups made and freed (`name` without `MPI_`).
    fn comm_or_group(&self, name: &str) -> Option<CallKind> {
        Some(match name {
            "Comm_split" => CallKind::CommSplit {
                parent: self.comm("oldcomm"),
                color: self.int("color") as i32,
                key: self.int("key") as i32,
                new: self.comm("newcomm"),
            },
            // Ties on key are ordered by parent rank, which is exactly dup's order.
            "Comm_dup" => CallKind::CommSplit {
                parent: self.comm("oldcomm"),
                color: 0,
                key: 0,
                new: self.comm("newcomm"),
            },
            "Comm_free" => CallKind::CommFree {
                comm: self.comm("comm"),
            },
            "Comm_create" => CallKind::CommCreate {
                parent: self.comm("oldcomm"),
                group: self.int("group") as u32,
                new: self.comm("newcomm"),
            },
            "Comm_group" => CallKind::GroupFromComm {
                comm: self.comm("comm"),
                group: self.int("group") as u32,
            },
            "Group_incl" | "Group_excl" => CallKind::GroupSelect {
                group: self.int("group") as u32,
                ranks: self.arr("ranks").iter().map(|&r| r as i32).collect(),
                exclude: name == "Group_excl",
                new: self.int("newgroup") as u32,
            },
            "Group_free" => CallKind::GroupFree {
                group: self.int("group") as u32,
            },
            _ => return None,
        })
    }
}

/// Calls with effects the simulator does not model ([`funcs::is_unmodelled`]) and, in DUMPI
/// traces, communicators built from topologies (an OTF2 trace defines every communicator up
/// front) and ROMIO's `MPIO_` calls. A DUMPI label is its function's id, so `func` names the
/// call as DUMPI does, in lower case.
fn is_unsupported(func: Func) -> bool {
    const TOPOLOGIES: &[&str] = &["cart_create", "cart_sub", "graph_create"];
    let name = funcs::func_name(func);
    funcs::is_unmodelled(name) || TOPOLOGIES.contains(&name) || name.starts_with("mpio_")
}

impl CallStream for DumpiCalls {
    fn pos(&self) -> Pos {
        Pos::Offset(self.call_at)
    }
    /// DUMPI's wall times are the host's real-time clock (the call's own times).
    fn host(&self) -> Option<String> {
        self.host.clone()
    }
}

impl Iterator for DumpiCalls {
    type Item = Result<Call, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.next_call();
        stream_step(&mut self.done, step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sst-macro's Blue Gene/P trace names one hostname (the partition's) for all 7 ranks; the
    /// mesh fields tell its two nodes apart: ranks 0-3 and 4-6 (tests/data/README.md: a 4x2x2
    /// mesh header; the fields read with a hex dump of each file's header).
    #[test]
    fn hosts_are_the_hostname_and_mesh_fields() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/dumpi");
        let host = |trace: &str, file: &str, rank: Rank| {
            DumpiCalls::open(&dir.join(trace).join(file), rank, 7)
                .unwrap()
                .host()
        };
        let bgp = |r: Rank| host("sst-macro-testbgp", &format!("testbgp-000{r}.bin"), r);
        let node = |x: u32| format!("R00-M1-N01-J01.challenger (mesh [{x}, 0, 0, 3, 4, 2])");
        for r in 0..4 {
            assert_eq!(bgp(r), Some(node(0)), "rank {r}");
        }
        for r in 4..7 {
            assert_eq!(bgp(r), Some(node(1)), "rank {r}");
        }
        assert_eq!(
            host("sst-dumpi-testtrace", "testtrace-0000.bin", 0).as_deref(),
            Some("hadalst-mbp.ca.sandia.gov")
        );
    }
}
