//! Collective operations: a rank's collective is expanded, piece by piece, into the
//! point-to-point operations it runs ahead of its program.

use super::Engine;
use crate::error::SimError;
use tracewatt_net::Network;
use tracewatt_workload::collectives::Expansion;
use tracewatt_workload::{CollAlgo, CollKind, CommId, Rank};

impl<N: Network> Engine<'_, N> {
    /// The rank starts a collective (all its members of `comm` do, each on its own).
    pub(super) fn start_collective(
        &mut self,
        rank: u32,
        comm: CommId,
        kind: CollKind,
        root: Rank,
        bytes: u64,
        algo: CollAlgo,
    ) -> Result<(), SimError> {
        let c = self.comm(rank, comm)?;
        let me = self.comm_rank(rank, c)?;
        let e = Expansion::collective(
            comm,
            kind,
            algo,
            c.members.len() as u32,
            me,
            root,
            bytes,
            self.costs.alltoall_throttle,
        )
        .map_err(|e| self.program_error(rank, e.to_string()))?;
        self.ranks[rank as usize].coll = Some(Box::new(e));
        Ok(())
    }

    /// The rank starts an all-to-all with its own counts: `send_bytes[i]` to the member `i` of
    /// `comm`, `recv_bytes[i]` from it.
    pub(super) fn start_alltoallv(
        &mut self,
        rank: u32,
        comm: CommId,
        send_bytes: Box<[u64]>,
        recv_bytes: Box<[u64]>,
        algo: CollAlgo,
    ) -> Result<(), SimError> {
        let c = self.comm(rank, comm)?;
        let me = self.comm_rank(rank, c)?;
        let e = Expansion::alltoallv(
            comm,
            algo,
            c.members.len() as u32,
            me,
            send_bytes,
            recv_bytes,
            self.costs.alltoall_throttle,
        )
        .map_err(|e| self.program_error(rank, e.to_string()))?;
        self.ranks[rank as usize].coll = Some(Box::new(e));
        Ok(())
    }

    /// Moves the next piece of the rank's collective into `pending`, or ends the collective.
    pub(super) fn next_piece(&mut self, rank: u32) {
        // Enough phases per piece to amortise the call, few enough that 8,192 ranks in an
        // all-to-all hold only a few MB of operations.
        const PIECE_OPS: usize = 64;
        let r = &mut self.ranks[rank as usize];
        let buf = &mut self.expand_buf;
        buf.clear();
        if r.coll.as_mut().is_some_and(|e| e.fill(buf, PIECE_OPS)) {
            r.pending.extend(buf.drain(..));
        } else {
            r.coll = None;
        }
    }
}
