//! The packet model's time for one message alone in the network, in closed form.
//!
//! Number the channels of the path `0..=K` (0 leaves the source node, `K` enters the destination
//! node), let `F_k` be the serialisation of a full packet on channel `k` and `s_k(x)` that of `x`
//! bytes, `L_k` its latency and `S` the switch latency. A message of `B` bytes is `n =
//! max(1, ceil(B / packet_bytes))` packets, the last one of `r = B - (n - 1) * packet_bytes`
//! bytes. With buffers that never run out of credit, [`crate::fabric::Fabric`] starts packet `j`
//! on channel `k` at the latest of its head's arrival and the end of packet `j - 1` there, and a
//! switch does not let a tail out sooner than `S` after it came in. Every such constraint is an
//! edge of a longest-path problem over the (channel, packet) grid whose paths are monotone
//! staircases, and its solution is
//!
//! - cut-through: `sum L + K S + max over k1 <= k2 of ((n - 1) F_k1 + s_k2(r))` (the full
//!   packets are paced by the slowest channel, the last one by the slowest at or after it);
//! - store-and-forward: `sum L + K S + max over m of (sum_{k<=m} F_k + (n - 2) max_{k<=m} F_k +
//!   sum_{k>=m} s_k(r))`, `m` the first channel the last packet's staircase cell is on (each
//!   channel up to `m` serialises at least one full packet, the other `n - 2` go on the slowest
//!   of them, and the last packet crosses every channel from `m` on), and `sum L + K S + sum
//!   s_k(B)` for a single packet.
//!
//! The flow model splits that time into a latency part, which its head pays hop by hop, and a
//! rate part, the message's bytes at the bottleneck rate; what is left over (the rounding of
//! per-packet serialisation, the store-and-forward pipeline) is added to the flow's tail.

use crate::fabric::{FabricParams, Switching};
use tracewatt_core::time::serialization_ps;
use tracewatt_core::Ps;

/// The packet model's serialisation part of one message of `bytes` alone on a path whose
/// channels have the bandwidths `bps` (in path order): its delivery time less the latencies and
/// switch latencies.
pub(crate) fn lone_serialisation_ps(params: &FabricParams, bps: &[u64], bytes: u64) -> Ps {
    let p = u64::from(params.packet_bytes);
    let n = bytes.div_ceil(p).max(1);
    let last = bytes - (n - 1) * p;
    let full = |b: u64| serialization_ps(p, b);
    let tail = |b: u64| serialization_ps(last, b);
    match params.switching {
        Switching::CutThrough => {
            let mut best_full: Ps = 0;
            let mut best: Ps = 0;
            for &b in bps {
                best_full = best_full.max(full(b));
                best = best.max((n - 1) * best_full + tail(b));
            }
            best
        }
        Switching::StoreAndForward if n == 1 => bps.iter().map(|&b| tail(b)).sum(),
        Switching::StoreAndForward => {
            let tails: Vec<Ps> = bps.iter().map(|&b| tail(b)).collect();
            let mut after: Ps = tails.iter().sum();
            let (mut before, mut best_full, mut best) = (0, 0, 0);
            for (k, &b) in bps.iter().enumerate() {
                best_full = best_full.max(full(b));
                before += full(b);
                best = best.max(before + (n - 2) * best_full + after);
                after -= tails[k];
            }
            best
        }
    }
}
