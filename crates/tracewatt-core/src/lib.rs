//! Engine primitives shared by every tracewatt crate: integer time, the deterministic event queue,
//! the seeded random-number generator, the slab, a flat hash map and result tables. Nothing here knows about networks or MPI.

pub mod flat;
pub mod queue;
pub mod rng;
pub mod slab;
pub mod table;
pub mod time;

pub use flat::{FlatKey, FlatMap, Probe};
pub use queue::{EventQueue, Schedule};
pub use rng::Rng;
pub use slab::Slab;
pub use table::{Column, Table};
pub use time::Ps;
