//! Power models of the network, attached as observers: the link low-power state machine
//! ([`link`]), the power timeline ([`timeline`]) and the PHY / switch presets ([`phy`]).

pub mod link;
pub mod phy;
pub mod timeline;

pub use link::{Control, LinkPower, LinkReport, LinkTiming, Policy, PortPower};
pub use timeline::Timeline;
