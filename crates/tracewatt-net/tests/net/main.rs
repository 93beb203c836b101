//! Integration tests of tracewatt-net's topology builders and routing algorithms (one binary).

mod builders;
mod common;
mod flow;
mod network;
mod routing;
