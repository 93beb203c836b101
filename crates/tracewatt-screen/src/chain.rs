//! The penalty bound along the chains of messages the ranks wait for.
//!
//! A packet that finds a link asleep waits at most sleep + wake time on that hop, so a message
//! is delayed by at most its hops that can meet a wake times that. A rank's delay grows along
//! the messages it waits for, `D[dst] = max(D[dst], D[src] at the send + w(m))` in the order of
//! the run; a rendezvous message is request, clear-to-send and data:
//! `C = max(D[src] + w(m), D[dst]) + w(return)`, then `D[src] >= C` and `D[dst] >= C + w(m)`.
//! The makespan grows by at most the largest `D`. This module counts the hops (the bound is
//! their number times sleep + wake time).

use crate::{check_index, check_lengths, ScreenError, REL};

/// Every message of the run (`messages.parquet`), in the order they arrived.
#[derive(Debug, Clone, Copy)]
pub struct Messages<'a> {
    /// Ranks of the run (over every job), and each message's sender and receiver among them.
    pub ranks: usize,
    pub src: &'a [usize],
    pub dst: &'a [usize],
    /// The sender's and the receiver's node.
    pub src_node: &'a [usize],
    pub dst_node: &'a [usize],
    /// Per node: the link direction from its NIC to its switch, and back.
    pub uplink: &'a [Option<usize>],
    pub downlink: &'a [Option<usize>],
    /// `[m * classes + k]`: the switch-to-switch links of class `k` on message `m`'s route (the
    /// most any of its packets crossed; `hops_<class>` in the messages table).
    pub hops: &'a [f64],
    pub classes: usize,
    /// When its send was posted and when it arrived, s.
    pub start_s: &'a [f64],
    pub end_s: &'a [f64],
    /// Above the eager limit: request, clear-to-send and data.
    pub rendezvous: &'a [bool],
    /// What the run counted (`message_wake_hops.parquet`), if it did.
    pub counted: Option<Counted<'a>>,
    /// The run's longest sleep + wake time: the counts hold for wakes up to it.
    pub horizon_s: f64,
}

/// Per message and kept threshold, the hops on which its packets could meet a wake (rows with
/// none left out).
#[derive(Debug, Clone, Copy)]
pub struct Counted<'a> {
    pub message: &'a [usize],
    pub threshold_s: &'a [f64],
    pub hops: &'a [f64],
}

/// The most wakes a chain meets, per level, for wakes within the run's horizon (where its
/// counts hold) and beyond it.
#[derive(Debug, Clone)]
pub(crate) struct Chains {
    within: Vec<f64>,
    beyond: Vec<f64>,
    horizon_s: f64,
}

impl Chains {
    /// The chain for a wake + sleep of `d_s`.
    pub(crate) fn for_delay(&self, d_s: f64) -> &[f64] {
        if d_s <= self.horizon_s * (1.0 + REL) {
            &self.within
        } else {
            &self.beyond
        }
    }
}

/// What can wake at one level: each link direction, and any link of each switch-to-switch class.
#[derive(Debug)]
struct Wakeable<'a> {
    link: &'a [bool],
    class: Vec<bool>,
    /// Per message, what the run counted at the largest kept threshold at or below the level.
    met: Option<Vec<f64>>,
}

impl Messages<'_> {
    fn len(&self) -> usize {
        self.src.len()
    }

    pub(crate) fn check(&self, classes: usize) -> Result<(), ScreenError> {
        let n = self.len();
        check_lengths(
            "messages",
            &[
                n,
                self.dst.len(),
                self.src_node.len(),
                self.dst_node.len(),
                self.start_s.len(),
                self.end_s.len(),
                self.rendezvous.len(),
            ],
        )?;
        if self.hops.len() != n * self.classes || classes > self.classes {
            return Err(ScreenError(format!(
                "messages: expected the hops of {} switch-to-switch link classes per message",
                classes.max(self.classes)
            )));
        }
        check_index("messages", "src_rank", self.src, self.ranks, "ranks")?;
        check_index("messages", "dst_rank", self.dst, self.ranks, "ranks")?;
        let nodes = self.uplink.len().min(self.downlink.len());
        check_index("messages", "source node", self.src_node, nodes, "nodes")?;
        check_index(
            "messages",
            "destination node",
            self.dst_node,
            nodes,
            "nodes",
        )?;
        if let Some(c) = &self.counted {
            check_lengths(
                "message_wake_hops",
                &[c.message.len(), c.threshold_s.len(), c.hops.len()],
            )?;
            check_index("message_wake_hops", "message", c.message, n, "messages")?;
        }
        Ok(())
    }

    /// The most wakes a chain of messages meets at each level (`can_wake[l]`: the link
    /// directions that can wake at level `l`, a timeout of `levels_s[l]`); `class` gives each
    /// link direction's switch-to-switch class. With the run's counts, a level uses those at the
    /// largest kept threshold at or below it, for wakes up to the horizon; `longest_s` is the
    /// longest screened wake + sleep (beyond the horizon the routes alone bound it).
    pub(crate) fn chains(
        &self,
        class: &[Option<usize>],
        can_wake: &[&[bool]],
        levels_s: &[f64],
        kept: &[f64],
        longest_s: f64,
    ) -> Chains {
        let by_routes: Vec<Wakeable> = can_wake
            .iter()
            .map(|link| {
                let mut on = vec![false; self.classes];
                for (c, w) in class.iter().zip(*link) {
                    if let (Some(c), true) = (c, w) {
                        on[*c] = true;
                    }
                }
                Wakeable {
                    link,
                    class: on,
                    met: None,
                }
            })
            .collect();
        let Some(counted) = &self.counted else {
            let within = self.chain(&by_routes);
            return Chains {
                beyond: within.clone(),
                within,
                horizon_s: self.horizon_s,
            };
        };
        let with_counts: Vec<Wakeable> = by_routes
            .iter()
            .zip(levels_s)
            .map(|(w, &t)| Wakeable {
                link: w.link,
                class: w.class.clone(),
                met: self.met_below(counted, kept, t),
            })
            .collect();
        let within = self.chain(&with_counts);
        let beyond = if longest_s <= self.horizon_s {
            within.clone()
        } else {
            self.chain(&by_routes)
        };
        Chains {
            within,
            beyond,
            horizon_s: self.horizon_s,
        }
    }

    /// Per message, what the run counted at the largest kept threshold at or below `t` (a gap
    /// longer than `t` is longer than that one too), if there is one.
    fn met_below(&self, counted: &Counted<'_>, kept: &[f64], t: f64) -> Option<Vec<f64>> {
        let below = kept
            .iter()
            .copied()
            .filter(|k| *k <= t * (1.0 + REL))
            .fold(None, |m: Option<f64>, k| Some(m.map_or(k, |m| m.max(k))))?;
        let mut met = vec![0.0; self.len()];
        for i in 0..counted.message.len() {
            // Both tables write a threshold from the same whole picoseconds: equal bits.
            if counted.threshold_s[i].total_cmp(&below).is_eq() {
                met[counted.message[i]] = counted.hops[i];
            }
        }
        Some(met)
    }

    /// Per message, the wake hops of a rendezvous request `a`, its clear-to-send `r` and its
    /// data or an eager message `b`: from the routes (the node links that can wake, and every
    /// switch-to-switch hop of a class in which some link can), and no more than the run
    /// counted (which sums a rendezvous message's three phases, in `r`).
    fn phases(&self, m: usize, w: &Wakeable<'_>) -> (f64, f64, f64) {
        let remote = self.src_node[m] != self.dst_node[m];
        let at = |link: Option<usize>| match link {
            Some(l) if remote && w.link[l] => 1.0,
            _ => 0.0,
        };
        let (s, d) = (self.src_node[m], self.dst_node[m]);
        let hops = &self.hops[m * self.classes..(m + 1) * self.classes];
        let inner: f64 = hops
            .iter()
            .zip(&w.class)
            .map(|(h, on)| if *on { *h } else { 0.0 })
            .sum();
        let fwd = at(self.uplink[s]) + at(self.downlink[d]) + inner;
        let rev = at(self.uplink[d]) + at(self.downlink[s]) + inner;
        match &w.met {
            None => (fwd, rev, fwd),
            Some(met) if self.rendezvous[m] => (0.0, met[m].min(2.0 * fwd + rev), 0.0),
            Some(met) => (0.0, 0.0, met[m].min(fwd)),
        }
    }

    /// The largest delay (in wake hops) any rank accumulates along the messages it waits for,
    /// per level.
    fn chain(&self, levels: &[Wakeable<'_>]) -> Vec<f64> {
        let (n, cols) = (self.len(), levels.len());
        let mut delay = vec![0.0f64; self.ranks * cols];
        // Each message's sender's delay when it was sent.
        let mut sent = vec![0.0f64; n * cols];
        // Arrivals (0..n) before sends (n..2n) at the same instant: a rank's send then carries
        // what it received.
        let mut order: Vec<usize> = (0..2 * n).collect();
        let time = |e: usize| {
            if e < n {
                self.end_s[e]
            } else {
                self.start_s[e - n]
            }
        };
        order.sort_by(|&x, &y| time(x).total_cmp(&time(y)).then((x >= n).cmp(&(y >= n))));
        for e in order {
            if e >= n {
                let (m, s) = (e - n, self.src[e - n]);
                sent[m * cols..(m + 1) * cols].copy_from_slice(&delay[s * cols..(s + 1) * cols]);
                continue;
            }
            let (s, d) = (self.src[e], self.dst[e]);
            for (l, w) in levels.iter().enumerate() {
                let (a, r, b) = self.phases(e, w);
                let carried = sent[e * cols + l];
                if self.rendezvous[e] {
                    let cts = (carried + a).max(delay[d * cols + l]) + r;
                    delay[s * cols + l] = delay[s * cols + l].max(cts);
                    delay[d * cols + l] = delay[d * cols + l].max(cts + b);
                } else {
                    delay[d * cols + l] = delay[d * cols + l].max(carried + b);
                }
            }
        }
        (0..cols)
            .map(|l| (0..self.ranks).fold(0.0f64, |m, r| m.max(delay[r * cols + l])))
            .collect()
    }
}
