//! What the `predictive` link policy ([`crate::sleep::Predictive`]) is told: each rank's MPI
//! layer learns its own pattern of MPI calls and forecasts, whenever it leaves MPI, when it will
//! call MPI next; its node's forecast is the earliest of its ranks' (after Dickov et al., ICPP
//! 2014, whose MPI library predicts each compute phase from the calls before it).
//!
//! The learner keeps, per rank, an n-gram table: the context is the rank's last `n` calls (each
//! its kind, peer and size), and the context's entry holds the call that followed it last, how
//! many times running that same call followed it, and the gap that followed it last (from
//! leaving MPI after the context's last call to the next call). When the rank leaves MPI, its
//! forecast is "next call at now + that gap" if the entry's count is at least `confidence`;
//! otherwise, and while the rank is inside MPI, it has no forecast, which vetoes its node's
//! sleep. A finished rank never calls again. Only the past is used: an entry learns a gap once
//! the call that ends it has come.

use std::collections::BTreeMap;
use tracewatt_core::flat::FIB;
use tracewatt_core::Ps;

/// One MPI call as the learner tells calls apart: its kind (any number that differs between
/// kinds of call, a collective's kind included), its peer (a rank of its communicator, its
/// root, or `u32::MAX` for none or any) and its size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpiCall {
    pub kind: u32,
    pub peer: u32,
    pub bytes: u64,
}

impl MpiCall {
    /// The call as one number (a context is hashed from these; a collision merely shares an
    /// entry between two contexts).
    fn signature(&self) -> u64 {
        let mix = |h: u64, v: u64| (h ^ v).wrapping_mul(FIB).rotate_left(29);
        mix(
            mix(mix(0, u64::from(self.kind)), u64::from(self.peer)),
            self.bytes,
        )
    }
}

/// A forecast of a node's next network use: made at `made`, from what was known then; `next`
/// is when (`None`: no confident forecast, do not sleep; `Some(Ps::MAX)`: never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forecast {
    pub made: Ps,
    pub next: Option<Ps>,
}

/// What followed a context last.
#[derive(Debug, Clone, Copy)]
struct Entry {
    successor: u64,
    /// Times running `successor` followed the context.
    count: u32,
    gap_ps: Ps,
}

#[derive(Debug, Clone, Default)]
struct RankLearner {
    /// The last `n` calls' signatures, oldest first.
    recent: Vec<u64>,
    /// The context the rank's next call will follow (`None` before `n` calls).
    context: Option<u64>,
    /// When it left MPI after its last call, if it has.
    left_at: Option<Ps>,
    forecast: Option<Ps>,
}

/// The learners of every rank, and each node's forecast.
#[derive(Debug)]
pub struct Predictor {
    ngram: usize,
    confidence: u32,
    ranks: Vec<RankLearner>,
    /// Per rank, its context table.
    tables: Vec<BTreeMap<u64, Entry>>,
    /// The ranks of each node.
    node_ranks: Vec<Vec<u32>>,
    rank_node: Vec<u32>,
    /// Each node's forecast as last told (`next` only): at first none, or never for a node
    /// without ranks.
    node_next: Vec<Option<Ps>>,
}

impl Predictor {
    /// Learners for ranks placed on `rank_node`, on contexts of `ngram` calls, confident after
    /// `confidence` repetitions (both at least 1).
    pub fn new(rank_node: Vec<u32>, nodes: usize, ngram: u32, confidence: u32) -> Self {
        let mut node_ranks = vec![Vec::new(); nodes];
        for (r, &n) in rank_node.iter().enumerate() {
            node_ranks[n as usize].push(r as u32);
        }
        Self {
            ngram: ngram.max(1) as usize,
            confidence: confidence.max(1),
            ranks: vec![RankLearner::default(); rank_node.len()],
            tables: vec![BTreeMap::new(); rank_node.len()],
            rank_node,
            node_next: node_ranks
                .iter()
                .map(|r| r.is_empty().then_some(Ps::MAX))
                .collect(),
            node_ranks,
        }
    }

    /// Node `node`'s forecast as the run begins: none, or never for a node without ranks.
    pub fn initial(&self, node: u32) -> Forecast {
        Forecast {
            made: 0,
            next: self.node_next[node as usize],
        }
    }

    /// Rank `rank` enters `call` at `now`: it learns what followed its context, and has no
    /// forecast while in MPI. Returns its node's new forecast if it changed.
    pub fn call(&mut self, rank: u32, call: MpiCall, now: Ps) -> Option<(u32, Forecast)> {
        let sig = call.signature();
        let r = &mut self.ranks[rank as usize];
        if let Some(ctx) = r.context {
            let gap_ps = r.left_at.map_or(0, |t| now - t);
            let e = self.tables[rank as usize].entry(ctx).or_insert(Entry {
                successor: sig,
                count: 0,
                gap_ps,
            });
            e.count = if e.successor == sig { e.count + 1 } else { 1 };
            e.successor = sig;
            e.gap_ps = gap_ps;
        }
        if r.recent.len() == self.ngram {
            r.recent.remove(0);
        }
        r.recent.push(sig);
        r.context = (r.recent.len() == self.ngram).then(|| {
            r.recent
                .iter()
                .fold(0u64, |h, &s| (h ^ s).wrapping_mul(FIB).rotate_left(17))
        });
        r.left_at = None;
        r.forecast = None;
        self.node_forecast(rank, now)
    }

    /// Rank `rank` leaves MPI at `now` (it starts computing or sleeping on a timer): it
    /// forecasts its next call if its context is confident. A second compute before the next
    /// call keeps the first's forecast.
    pub fn leave(&mut self, rank: u32, now: Ps) -> Option<(u32, Forecast)> {
        let r = &mut self.ranks[rank as usize];
        if r.left_at.is_some() {
            return None;
        }
        r.left_at = Some(now);
        let table = &self.tables[rank as usize];
        r.forecast = r
            .context
            .and_then(|c| table.get(&c))
            .filter(|e| e.count >= self.confidence)
            .map(|e| now + e.gap_ps);
        self.node_forecast(rank, now)
    }

    /// Rank `rank` has finished at `now`: it never calls again.
    pub fn done(&mut self, rank: u32, now: Ps) -> Option<(u32, Forecast)> {
        let r = &mut self.ranks[rank as usize];
        r.left_at = Some(now);
        r.forecast = Some(Ps::MAX);
        self.node_forecast(rank, now)
    }

    /// The node of `rank`'s forecast at `now` — the earliest of its ranks', none if one has
    /// none — if it changed.
    fn node_forecast(&mut self, rank: u32, now: Ps) -> Option<(u32, Forecast)> {
        let node = self.rank_node[rank as usize];
        let next = self.node_ranks[node as usize]
            .iter()
            .map(|&r| self.ranks[r as usize].forecast)
            .try_fold(Ps::MAX, |m, f| f.map(|f| m.min(f)));
        let told = &mut self.node_next[node as usize];
        (*told != next).then(|| {
            *told = next;
            (node, Forecast { made: now, next })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Ps = 1_000_000;

    fn send(peer: u32) -> MpiCall {
        MpiCall {
            kind: 1,
            peer,
            bytes: 1024,
        }
    }

    fn recv(peer: u32) -> MpiCall {
        MpiCall {
            kind: 2,
            peer,
            bytes: 1024,
        }
    }

    #[test]
    fn a_send_recv_loop_is_forecast_from_its_third_iteration_with_n_1_and_k_2() {
        // One rank alone on its node; each iteration: send, recv (each 1 us in MPI), then
        // 100 us of compute. With n = 1 the context after a recv is "recv"; its successor
        // "send" and its 100 us gap are seen once at the start of iteration 2 and again at the
        // start of iteration 3: confident (k = 2) when the rank leaves MPI in iteration 3.
        let mut p = Predictor::new(vec![0], 1, 1, 2);
        let mut t = 0;
        let mut forecasts = Vec::new();
        for _ in 0..4 {
            p.call(0, send(1), t);
            p.call(0, recv(1), t + US);
            forecasts.push(p.leave(0, t + 2 * US));
            t += 102 * US;
        }
        let at = |made: Ps, next: Option<Ps>| Some((0, Forecast { made, next }));
        // Iterations 1 and 2 leave without a forecast: "none" is what the node had, no change.
        assert_eq!(forecasts[0], None);
        assert_eq!(forecasts[1], None);
        assert_eq!(forecasts[2], at(206 * US, Some(306 * US)));
        assert_eq!(forecasts[3], at(308 * US, Some(408 * US)));
        // A call vetoes; a finished rank never calls again.
        assert_eq!(p.call(0, send(1), 408 * US), at(408 * US, None));
        assert_eq!(p.done(0, 409 * US), at(409 * US, Some(Ps::MAX)));
    }

    #[test]
    fn a_node_forecasts_its_earliest_rank_and_a_rank_without_one_vetoes() {
        // Ranks 0 and 1 on node 0, n = 1, k = 1: after one repetition a rank is confident.
        let mut p = Predictor::new(vec![0, 0], 1, 1, 1);
        for r in 0..2 {
            p.call(r, send(9), 0);
            p.leave(r, US);
        }
        // Rank 0 comes back after 50 us, rank 1 after 80 us: their entries learn these gaps.
        p.call(0, send(9), 51 * US);
        p.call(1, send(9), 81 * US);
        // Rank 0 leaves at 52 us (next at 102 us); rank 1 is still in MPI: no forecast.
        assert_eq!(p.leave(0, 52 * US), None);
        // Rank 1 leaves at 82 us (next at 162 us): the node's is rank 0's 102 us.
        assert_eq!(
            p.leave(1, 82 * US),
            Some((
                0,
                Forecast {
                    made: 82 * US,
                    next: Some(102 * US)
                }
            ))
        );
    }
}
