//! Where a run ends, and the ranks entering and leaving the timed region of their traces.

use tracewatt_core::Ps;

/// Where a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Stop {
    /// When every rank has finished.
    #[default]
    Finished,
    /// When every rank has left its window (`Op::Window`) or finished.
    WindowEnd,
    /// At this simulated time: the state then is the run's end.
    At(Ps),
}

/// Ranks entering and leaving the timed region of their traces.
#[derive(Debug, Default)]
pub(super) struct WindowRt {
    pub stop: Stop,
    /// The first entry.
    pub start_ps: Option<Ps>,
    /// Per rank: left the window (or finished).
    left: Vec<bool>,
    pub left_count: u64,
}

impl WindowRt {
    /// A run of `ranks` ranks that ends at `stop`.
    pub fn new(stop: Stop, ranks: usize) -> Self {
        Self {
            stop,
            left: vec![false; ranks],
            ..Self::default()
        }
    }

    /// A rank enters its window at `now`.
    pub fn enter(&mut self, now: Ps) {
        self.start_ps.get_or_insert(now);
    }

    /// A rank leaves its window, or finishes.
    pub fn leave(&mut self, rank: u32) {
        if let Some(l) = self.left.get_mut(rank as usize).filter(|l| !**l) {
            *l = true;
            self.left_count += 1;
        }
    }
}
