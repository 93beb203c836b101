//! The report of a run that cannot go on: every rank that has not finished, what it waits for,
//! and what is stuck in the network.

use super::ranks::{RankRt, RankState};
use super::Engine;
use crate::error::SimError;
use tracewatt_core::time::to_seconds;
use tracewatt_net::Network;
use tracewatt_workload::{SrcSel, TagSel};

/// Ranks described one by one; the rest are counted.
const LISTED: usize = 16;

impl<N: Network> Engine<'_, N> {
    /// Describes every rank that has not finished, for the deadlock error.
    pub(super) fn deadlock(&self) -> SimError {
        let mut lines = Vec::new();
        let mut blocked = 0;
        for (i, r) in self.ranks.iter().enumerate() {
            if r.state == RankState::Done {
                continue;
            }
            blocked += 1;
            if lines.len() >= LISTED {
                continue;
            }
            let job = &self.jobs[r.job as usize];
            let what = self.waits_for(i as u32, r);
            lines.push(format!(
                "  job `{}` rank {} (node {}) in {}: waits for {}",
                job.name,
                r.job_rank,
                r.node,
                if r.blocked_in.is_empty() {
                    "?"
                } else {
                    r.blocked_in
                },
                if what.is_empty() {
                    "nothing known".into()
                } else {
                    what.join("; ")
                }
            ));
        }
        if blocked > lines.len() {
            lines.push(format!("  ... and {} more", blocked - lines.len()));
        }
        // Nothing is scheduled any more: what is still in the network cannot move (a cycle of
        // full buffers), in the model's own terms.
        let stuck = self.net.in_flight();
        if stuck > 0 {
            lines.push(format!(
                "  {stuck} {} in the network, none of which can move",
                N::UNIT
            ));
        }
        SimError::Deadlock {
            time_s: to_seconds(self.q.now()),
            blocked,
            details: lines.join("\n"),
        }
    }

    /// The requests rank `rank` (`r`) waits for that are not done, in words.
    fn waits_for(&self, rank: u32, r: &RankRt) -> Vec<String> {
        let mut what = Vec::new();
        for slot in &r.waiting {
            let q = &self.reqs[*slot];
            if q.done {
                continue;
            }
            if q.send {
                let m = &self.msgs[q.msg];
                let peer = self.ranks[m.dst as usize].job_rank;
                what.push(format!(
                    "a send of {} bytes to rank {peer} with tag {} that no receive matches (rendezvous)",
                    q.bytes, m.tag
                ));
                continue;
            }
            if self.nbcs.completes(rank, *slot) {
                what.push("a non-blocking collective that cannot finish".into());
                continue;
            }
            // A receive not done is still posted: nothing in flight is left to match it.
            let posted = r.matcher.posted().find(|(.., p)| **p == *slot);
            let Some((comm, src, tag, _)) = posted else {
                what.push(format!("a receive of {} bytes", q.bytes));
                continue;
            };
            let s = match src {
                SrcSel::Rank(s) => format!("rank {s}"),
                SrcSel::Any => "any source".into(),
            };
            let t = match tag {
                TagSel::Tag(t) if t < 0 => "a collective message".to_string(),
                TagSel::Tag(t) => format!("tag {t}"),
                TagSel::Any => "any tag".into(),
            };
            what.push(format!(
                "a receive from {s} with {t} on communicator {comm} ({} bytes)",
                q.bytes
            ));
        }
        what
    }
}
