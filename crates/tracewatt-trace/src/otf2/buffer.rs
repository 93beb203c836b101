//! OTF2's buffer layer. A file is a sequence of chunks of the archive's chunk size (events and
//! definitions have their own); the anchor file is a single unchunked buffer. Every chunk starts
//! with a header: `03`, the endianness byte (`42` little, `23` big endian) and, in chunked files,
//! the numbers of its first and last event (u64 each). Records follow. In a record stream, `00`
//! ends the chunk (the rest of it is padding) and `02` ends the file.
//!
//! Integers are fixed-size ("full": u8, u64, f64) or compressed (u32, u64): a length byte
//! `0..=width` followed by that many low-order bytes in the chunk's byte order; length 0 is the
//! value 0 and `FF` the undefined value (all ones). Records carry their body length in one byte,
//! or `FF` and a full u64 for long records, so readers skip what they do not know.
//!
//! Only one chunk is in memory at a time, and never more bytes than the file holds.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use tracewatt_workload::Rank;

use crate::error::{Location, TraceError, TRUNCATED};

const CHUNK_HEADER: u8 = 3;
const LITTLE_ENDIAN: u8 = 0x42;
const BIG_ENDIAN: u8 = 0x23;
/// Record type ending a chunk.
pub(crate) const END_OF_CHUNK: u8 = 0;
/// Record type ending the file.
pub(crate) const END_OF_FILE: u8 = 2;

/// Something wrong at a byte offset, before the file and rank are attached.
#[derive(Debug)]
pub(crate) struct Bad {
    pub off: u64,
    pub expected: String,
}

/// Decoding cursor over bytes of one chunk.
#[derive(Debug)]
pub(crate) struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
    /// File offset of `b[0]`.
    base: u64,
    big: bool,
}

impl<'a> Cur<'a> {
    pub fn new(b: &'a [u8], base: u64, big: bool) -> Self {
        Cur {
            b,
            pos: 0,
            base,
            big,
        }
    }

    pub fn bad(&self, expected: impl Into<String>) -> Bad {
        Bad {
            off: self.base + self.pos as u64,
            expected: expected.into(),
        }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.b.len()
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Bad> {
        if self.b.len() - self.pos < n {
            return Err(self.bad(format!("{what} ({n} bytes), found the end of the data")));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, Bad> {
        Ok(self.take(1, what)?[0])
    }

    fn uint(&self, bytes: &[u8]) -> u64 {
        if self.big {
            bytes.iter().fold(0, |v, &b| (v << 8) | b as u64)
        } else {
            bytes.iter().rev().fold(0, |v, &b| (v << 8) | b as u64)
        }
    }

    pub fn u64_full(&mut self, what: &str) -> Result<u64, Bad> {
        let b = self.take(8, what)?;
        Ok(self.uint(b))
    }

    pub fn f64_full(&mut self, what: &str) -> Result<f64, Bad> {
        Ok(f64::from_bits(self.u64_full(what)?))
    }

    fn compressed(&mut self, width: u8, what: &str) -> Result<u64, Bad> {
        let at = self.pos;
        let n = self.u8(what)?;
        if n == 0xFF {
            return Ok(if width == 4 {
                u32::MAX as u64
            } else {
                u64::MAX
            });
        }
        if n > width {
            self.pos = at;
            return Err(self.bad(format!(
                "{what}: a compressed length byte 0..={width} or FF (got {n})"
            )));
        }
        let b = self.take(n as usize, what)?;
        Ok(self.uint(b))
    }

    pub fn u32c(&mut self, what: &str) -> Result<u32, Bad> {
        Ok(self.compressed(4, what)? as u32)
    }

    pub fn u64c(&mut self, what: &str) -> Result<u64, Bad> {
        self.compressed(8, what)
    }

    /// Compressed signed 64-bit (two's complement in the unsigned encoding).
    pub fn i64c(&mut self, what: &str) -> Result<i64, Bad> {
        Ok(self.u64c(what)? as i64)
    }

    /// A NUL-terminated string (lossy UTF-8).
    pub fn string(&mut self, what: &str) -> Result<String, Bad> {
        let rest = &self.b[self.pos..];
        let Some(n) = rest.iter().position(|&c| c == 0) else {
            return Err(self.bad(format!("{what}: a NUL-terminated string")));
        };
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n + 1;
        Ok(s)
    }

    /// A record's body length (one byte, or `FF` then a full u64), checked against the data left.
    pub fn record_len(&mut self, what: &str) -> Result<usize, Bad> {
        let at = self.pos;
        let short = self.u8(what)?;
        let len = if short == 0xFF {
            self.u64_full(what)?
        } else {
            short as u64
        };
        if len > (self.b.len() - self.pos) as u64 {
            self.pos = at;
            return Err(self.bad(format!(
                "{what}: a record length within its chunk (got {len}, {} bytes left)",
                self.b.len() - self.pos - 1
            )));
        }
        Ok(len as usize)
    }
}

/// Reads an OTF2 file chunk by chunk.
#[derive(Debug)]
pub(crate) struct ChunkReader {
    file: File,
    path: PathBuf,
    rank: Option<Rank>,
    chunk_size: u64,
    file_len: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    chunk_off: u64,
    pos: usize,
    big: bool,
}

impl ChunkReader {
    /// Opens a chunked file (events, definitions) and reads its first chunk header.
    pub fn open(path: &Path, rank: Option<Rank>, chunk_size: u64) -> Result<Self, TraceError> {
        let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
        let file_len = file.metadata().map_err(|e| TraceError::io(path, e))?.len();
        let mut r = ChunkReader {
            file,
            path: path.to_path_buf(),
            rank,
            chunk_size,
            file_len,
            buf: Vec::new(),
            chunk_off: 0,
            pos: 0,
            big: false,
        };
        r.load(0)?;
        Ok(r)
    }

    /// File offset of the read position.
    pub fn offset(&self) -> u64 {
        self.chunk_off + self.pos as u64
    }

    pub fn error_at(&self, off: u64, expected: impl Into<String>) -> TraceError {
        TraceError::format(Location::at(&self.path, self.rank, off), expected)
    }

    pub fn error(&self, bad: Bad) -> TraceError {
        self.error_at(bad.off, bad.expected)
    }

    /// Loads the chunk at file offset `off` and reads its header.
    fn load(&mut self, off: u64) -> Result<(), TraceError> {
        let n = self.chunk_size.min(self.file_len - off) as usize;
        self.buf.resize(n, 0);
        self.file
            .read_exact(&mut self.buf)
            .map_err(|e| TraceError::io(&self.path, e))?;
        self.chunk_off = off;
        self.pos = 0;
        let mut c = Cur::new(&self.buf, off, false);
        let header = (|| {
            if c.u8("a chunk header")? != CHUNK_HEADER {
                return Err(Bad {
                    off,
                    expected: "a chunk header (03)".into(),
                });
            }
            let e = c.u8("the endianness byte")?;
            if e != LITTLE_ENDIAN && e != BIG_ENDIAN {
                return Err(Bad {
                    off: off + 1,
                    expected: format!("the endianness byte 42 or 23 (got {e:02x})"),
                });
            }
            c.big = e == BIG_ENDIAN;
            c.u64_full("the chunk's first event number")?;
            c.u64_full("the chunk's last event number")?;
            Ok(c.big)
        })();
        let pos = c.pos;
        self.big = header.map_err(|b| self.error(b))?;
        self.pos = pos;
        Ok(())
    }

    /// Moves to the next chunk (after an end-of-chunk record).
    pub fn next_chunk(&mut self) -> Result<(), TraceError> {
        let next = self.chunk_off + self.chunk_size;
        if self.buf.len() as u64 != self.chunk_size || next >= self.file_len {
            return Err(self.error_at(
                self.file_len,
                format!("another chunk after an end-of-chunk record; {TRUNCATED}"),
            ));
        }
        self.load(next)
    }

    /// Runs `f` on a cursor at the read position; advances past what it consumed.
    pub fn read<T>(&mut self, f: impl FnOnce(&mut Cur) -> Result<T, Bad>) -> Result<T, TraceError> {
        let mut c = Cur::new(&self.buf[self.pos..], self.offset(), self.big);
        match f(&mut c) {
            Ok(v) => {
                self.pos += c.pos;
                Ok(v)
            }
            Err(b) => Err(self.error(b)),
        }
    }

    /// The next byte (a record type), or an error at the end of the data.
    pub fn record_type(&mut self) -> Result<u8, TraceError> {
        if self.pos >= self.buf.len() {
            return Err(self.error_at(
                self.offset(),
                format!(
                    "a record or an end-of-file marker, found the end of the file; {TRUNCATED}"
                ),
            ));
        }
        let t = self.buf[self.pos];
        self.pos += 1;
        Ok(t)
    }

    /// The next record's type, crossing chunk boundaries; `None` at the end-of-file record.
    pub fn next_record_type(&mut self) -> Result<Option<u8>, TraceError> {
        loop {
            match self.record_type()? {
                END_OF_CHUNK => self.next_chunk()?,
                END_OF_FILE => return Ok(None),
                t => return Ok(Some(t)),
            }
        }
    }

    /// Reads a record length and skips the body; returns the body's range for [`Self::body`].
    pub fn record(&mut self, what: &str) -> Result<Range<usize>, TraceError> {
        let len = self.read(|c| c.record_len(what))?;
        let start = self.pos;
        self.pos += len;
        Ok(start..start + len)
    }

    /// The file offset of a record body returned by [`Self::record`].
    pub fn offset_of(&self, range: &Range<usize>) -> u64 {
        self.chunk_off + range.start as u64
    }

    /// Decodes a record body returned by [`Self::record`].
    pub fn body<T>(
        &self,
        range: Range<usize>,
        f: impl FnOnce(&mut Cur) -> Result<T, Bad>,
    ) -> Result<T, TraceError> {
        let base = self.chunk_off + range.start as u64;
        let mut c = Cur::new(&self.buf[range], base, self.big);
        f(&mut c).map_err(|b| self.error(b))
    }
}

/// Parses a whole small unchunked file (the anchor): header `03` + endianness, then `f`.
pub(crate) fn read_unchunked<T>(
    path: &Path,
    max_bytes: u64,
    f: impl FnOnce(&mut Cur) -> Result<T, Bad>,
) -> Result<T, TraceError> {
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    let mut b = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut b)
        .map_err(|e| TraceError::io(path, e))?;
    let err = |bad: Bad| TraceError::format(Location::at(path, None, bad.off), bad.expected);
    if b.len() as u64 > max_bytes {
        return Err(err(Bad {
            off: max_bytes,
            expected: format!("an anchor file of at most {max_bytes} bytes"),
        }));
    }
    let mut c = Cur::new(&b, 0, false);
    if c.u8("a buffer header").map_err(err)? != CHUNK_HEADER {
        return Err(err(Bad {
            off: 0,
            expected: "a buffer header (03)".into(),
        }));
    }
    match c.u8("the endianness byte").map_err(err)? {
        LITTLE_ENDIAN => {}
        BIG_ENDIAN => c.big = true,
        e => {
            return Err(err(Bad {
                off: 1,
                expected: format!("the endianness byte 42 or 23 (got {e:02x})"),
            }))
        }
    }
    f(&mut c).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers_in_both_byte_orders() {
        let le = [0u8, 0xFF, 1, 7, 2, 0x34, 0x12, 0xFF, 3, 1, 2, 3];
        let mut c = Cur::new(&le, 0, false);
        assert_eq!(c.u32c("a").unwrap(), 0);
        assert_eq!(c.u32c("a").unwrap(), u32::MAX);
        assert_eq!(c.u64c("a").unwrap(), 7);
        assert_eq!(c.u64c("a").unwrap(), 0x1234);
        assert_eq!(c.u64c("a").unwrap(), u64::MAX);
        assert_eq!(c.u32c("a").unwrap(), 0x030201);
        let be = [2u8, 0x12, 0x34];
        assert_eq!(Cur::new(&be, 0, true).u32c("a").unwrap(), 0x1234);
        let too_long = [5u8, 1, 2, 3, 4, 5];
        let e = Cur::new(&too_long, 10, false).u32c("x").unwrap_err();
        assert_eq!(e.off, 10);
        let short = [4u8, 1];
        assert!(Cur::new(&short, 0, false).u32c("x").is_err());
    }

    #[test]
    fn record_lengths_are_checked_against_the_data() {
        let ok = [2u8, 9, 9, 0];
        let mut c = Cur::new(&ok, 0, false);
        assert_eq!(c.record_len("r").unwrap(), 2);
        let long = [0xFFu8, 3, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3];
        assert_eq!(Cur::new(&long, 0, false).record_len("r").unwrap(), 3);
        let bad = [5u8, 1, 2];
        assert!(Cur::new(&bad, 0, false).record_len("r").is_err());
    }
}
