//! The description language of `table.rs`: the wire type of each field of a DUMPI record.

/// Wire types (all big-endian). Arrays are a u32 length followed by the elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    U8,
    U16,
    I32,
    I64,
    I32Array,
    U16Array,
    U8Array,
    /// u32 rows, each an `I32Array`.
    I32Array2,
    /// u32 length + bytes.
    Chars,
    /// u32 count + `Chars` each.
    Chars2,
    /// u32 count, each a u32 count + `Chars` each.
    Chars3,
    /// Present only if the record mask has status bits: u32 count + per status u32 bytes,
    /// u32 source, u8 cancelled, u8 error, and u32 tag since 0.6.3.
    Statuses,
    /// MPI_Init's argv: u32 argc (written twice before 0.6.2) + argc `Chars`.
    InitArgv,
    /// MPI_Init_thread's argv: u32 argc + argc `Chars`.
    InitThreadArgv,
    /// `I32Array` since 0.6.9, a single i32 before (a bug in old writers).
    I32ArraySince069,
    /// `I32Array` since 0.6.8, a single i32 before.
    I32ArraySince068,
}

/// A field present only when two earlier scalar fields are equal (e.g. root-only arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cond {
    Eq(&'static str, &'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    pub name: &'static str,
    pub kind: Kind,
    pub cond: Option<Cond>,
}
