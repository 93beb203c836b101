//! Power models that observe the simulation. The engine emits signals into one [`Power`]
//! family and names no model; each model ([`PowerModel`]) integrates its energy exactly at its
//! state changes and reports rows of one energy account:
//!
//! - [`link`]: the EEE / On-Off state machine of every link direction, and its ports' power;
//!   [`sleep`]: the policies that decide when it sleeps; [`predict`]: the MPI layer's forecasts
//!   one of them follows;
//! - [`switch`]: switch backplanes;
//! - [`nic`]: NICs with interrupt coalescing (which delays receives);
//! - [`core`]: cores by what their rank does, MPI wait policies (which delay wake-ups), and
//!   each node's base power;
//! - [`dimm`]: DIMMs under memory-hotplug policies (whose onlining stalls the ranks);
//! - [`timeline`]: power over time; [`phy`]: 802.3az PHY timing and measured switch figures;
//! - [`config`]: the `[power]` and `[mpi.wait]` configuration and the models it builds.

pub mod config;
pub mod core;
pub mod dimm;
pub mod family;
pub mod link;
pub mod model;
pub mod nic;
pub mod phy;
pub mod predict;
pub mod sleep;
pub mod switch;
pub mod timeline;

pub use crate::core::{
    CState, CoreOf, CoreParams, CorePower, Governor, IdleHistory, NodeBase, WaitPolicy, C_STATES,
};
pub use dimm::{DimmParams, DimmPolicy, DimmPower, NodeJob};
pub use family::{Power, TwoDelayingModels};
pub use link::{
    lpi_time, refreshes, DepthTiming, FastWake, LinkControl, LinkPower, LinkReport, LinkSetup,
    PhyTiming, PortOwner, PortPower, Span,
};
pub use model::{Account, Activity, EnergyRow, PowerModel, Scalar, Signals};
pub use nic::{NicParams, NicPort, NicPower};
pub use predict::{Forecast, MpiCall, Predictor};
pub use sleep::{
    Adaptive, Depth, LinkPolicy, LinkSleep, Oracle, PerfBound, PolicySettings, Predictive, Sleep,
    SleepPolicy, Timeout,
};
pub use switch::Backplanes;
pub use timeline::Timeline;
