//! Sleep policies: what decides when a link's state machine ([`crate::link`]) leaves ACTIVE for
//! low power. The state machine prices whatever a policy decides (sleep, LPI with refresh, wake)
//! from the PHY's timing; a policy only chooses when, and keeps whatever state of its own it
//! needs, one instance per state machine (a link direction, or a link in `paired` mode).
//!
//! A policy is a [`SleepPolicy`]; [`LinkSleep`] holds one of each kind, so the state machine
//! dispatches with a `match` the compiler inlines into the packet path. The configuration names
//! a policy with the `policy` key of a link power table ([`LinkPolicy`]) and gives its
//! parameters beside it ([`PolicySettings`]).

use serde::{Deserialize, Serialize};
use tracewatt_core::Ps;

/// A policy's decision that a state machine sleeps within an idle stretch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sleep {
    /// When it starts going into low power (the PHY's sleep time follows, then LPI).
    pub at: Ps,
}

/// Decides when an idle state machine goes to sleep.
///
/// The state machine is evaluated lazily: it asks only when the stretch ends, because a packet
/// is ready at `until` or the run ends there. A policy that answers `None` may be asked again
/// about the same stretch with a later `until` (a ready credit that found its link busy sends
/// nothing); one that answers a sleep is not, as the wake ends the stretch. A policy that
/// stands for a real port decides from the past only: `at` must follow from what was known by
/// then.
pub trait SleepPolicy {
    /// The state machine has been idle since `idle_since` and has traffic again (or the run
    /// ends) at `until`: when, in between, did it go to sleep, if at all.
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep>;
}

/// `always_on`: never sleeps, the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlwaysOn;

impl SleepPolicy for AlwaysOn {
    #[inline]
    fn idle(&mut self, _idle_since: Ps, _until: Ps) -> Option<Sleep> {
        None
    }
}

/// `timeout`: sleeps after `idle_timeout_ps` without traffic; a timeout of 0 sleeps right after
/// each packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout {
    pub idle_timeout_ps: Ps,
}

impl SleepPolicy for Timeout {
    #[inline]
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        // Idle for exactly the timeout is still active.
        (until - idle_since > self.idle_timeout_ps).then(|| Sleep {
            at: idle_since + self.idle_timeout_ps,
        })
    }
}

/// One state machine's policy, of any kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkSleep {
    AlwaysOn(AlwaysOn),
    Timeout(Timeout),
}

impl SleepPolicy for LinkSleep {
    #[inline]
    fn idle(&mut self, idle_since: Ps, until: Ps) -> Option<Sleep> {
        match self {
            LinkSleep::AlwaysOn(p) => p.idle(idle_since, until),
            LinkSleep::Timeout(p) => p.idle(idle_since, until),
        }
    }
}

/// What a link does when idle: the `policy` key of a link power table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkPolicy {
    /// [`AlwaysOn`].
    AlwaysOn,
    /// [`Timeout`].
    Timeout,
}

/// A link's policy as configured: its name and the parameters of its link power table (each
/// policy reads its own; the links table reports them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicySettings {
    pub policy: LinkPolicy,
    /// `timeout`: idle time before the link sleeps.
    pub idle_timeout_ps: Ps,
}

impl PolicySettings {
    /// A fresh instance of the policy, for one state machine.
    pub fn build(&self) -> LinkSleep {
        match self.policy {
            LinkPolicy::AlwaysOn => LinkSleep::AlwaysOn(AlwaysOn),
            LinkPolicy::Timeout => LinkSleep::Timeout(Timeout {
                idle_timeout_ps: self.idle_timeout_ps,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Ps = 1_000_000;

    #[test]
    fn a_timeout_sleeps_only_in_a_gap_longer_than_it() {
        let mut t = Timeout {
            idle_timeout_ps: 10 * US,
        };
        assert_eq!(t.idle(5 * US, 15 * US), None);
        assert_eq!(t.idle(5 * US, 16 * US), Some(Sleep { at: 15 * US }));
        let mut eager = Timeout { idle_timeout_ps: 0 };
        assert_eq!(eager.idle(5 * US, 5 * US + 1), Some(Sleep { at: 5 * US }));
        assert_eq!(AlwaysOn.idle(0, 1_000 * US), None);
    }
}
