//! Engine primitives shared by every tracewatt crate: integer time, the deterministic event queue
//! and the seeded random-number generator. Nothing here knows about networks or MPI.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::{EventQueue, Schedule};
pub use rng::Rng;
pub use time::Ps;
