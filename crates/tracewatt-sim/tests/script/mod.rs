//! Test workloads written out op by op, shared by the integration tests.

use tracewatt_workload::generators::Workload;
use tracewatt_workload::{Op, Program, Rank, SrcSel, TagSel, WORLD};

/// A workload given as explicit per-rank operation lists.
#[derive(Debug)]
pub struct Script(pub Vec<Vec<Op>>);

impl Workload for Script {
    fn num_ranks(&self) -> u32 {
        self.0.len() as u32
    }
    fn comms(&self) -> Vec<Vec<Rank>> {
        Vec::new()
    }
    fn program(&self, rank: Rank) -> Program {
        Box::new(self.0[rank as usize].clone().into_iter().map(Ok))
    }
}

pub fn send(dst: Rank, bytes: u64) -> Op {
    Op::Send {
        comm: WORLD,
        dst,
        tag: 0,
        bytes,
    }
}
pub fn recv(src: Rank, bytes: u64) -> Op {
    Op::Recv {
        comm: WORLD,
        src: SrcSel::Rank(src),
        tag: TagSel::Tag(0),
        bytes,
    }
}
