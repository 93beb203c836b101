//! What the ranks do: the MPI operation vocabulary ([`op`]), communicators, message matching with
//! MPI semantics ([`matching`]), collectives decomposed into point-to-point ([`collectives`]), and
//! the built-in workload generators ([`generators`]).

pub mod check;
pub mod collectives;
pub mod generators;
pub mod matching;
pub mod op;

pub use op::{
    CollAlgo, CollKind, CommId, Op, Program, ProgramError, Rank, ReqId, SrcSel, Tag, TagSel, WORLD,
};
