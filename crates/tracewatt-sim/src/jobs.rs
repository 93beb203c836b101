//! Placing jobs on the machine: which nodes each job gets (allocation) and which node each of its
//! ranks runs on (mapping). Jobs never share a node.

use crate::config::{Allocation, JobSpec, Mapping};
use crate::error::SimError;
use tracewatt_core::Rng;
use tracewatt_net::{NodeId, Topology};

/// Nodes of every job and the node of every rank, per job.
#[derive(Debug, Clone)]
pub struct Placement {
    pub job_nodes: Vec<Vec<NodeId>>,
    pub rank_node: Vec<Vec<NodeId>>,
}

/// Allocates every job in order from the free nodes.
pub fn place(
    jobs: &[JobSpec],
    topo: &Topology,
    ranks_per_node: u32,
    rng: &mut Rng,
    source: &str,
) -> Result<Placement, SimError> {
    let mut free = vec![true; topo.num_nodes as usize];
    let mut job_nodes = Vec::with_capacity(jobs.len());
    let mut rank_node = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let err = |field: &str, msg: String| {
            SimError::config(source, &format!("jobs[{i}].{field}"), msg, None)
        };
        let want = match job.allocation {
            Allocation::List => job.node_list.len() as u32,
            _ => job
                .nodes
                .unwrap_or_else(|| job.ranks.div_ceil(ranks_per_node)),
        };
        if want == 0 {
            return Err(err("nodes", "must be at least 1".into()));
        }
        let available = free.iter().filter(|f| **f).count() as u32;
        if want > available {
            return Err(err(
                "nodes",
                format!(
                    "the job needs {want} node(s) but only {available} of the machine's {} are free",
                    topo.num_nodes
                ),
            ));
        }
        let nodes: Vec<NodeId> = match job.allocation {
            Allocation::Contiguous => (0..topo.num_nodes)
                .filter(|n| free[*n as usize])
                .take(want as usize)
                .collect(),
            Allocation::Random => {
                let mut cand: Vec<NodeId> =
                    (0..topo.num_nodes).filter(|n| free[*n as usize]).collect();
                rng.shuffle(&mut cand);
                cand.truncate(want as usize);
                cand
            }
            Allocation::RoundRobin => round_robin(topo, &free, want),
            Allocation::List => {
                for (k, n) in job.node_list.iter().enumerate() {
                    if *n >= topo.num_nodes {
                        return Err(err(
                            &format!("node_list[{k}]"),
                            format!(
                                "node {n} does not exist (the machine has nodes 0..{})",
                                topo.num_nodes
                            ),
                        ));
                    }
                    if !free[*n as usize] || job.node_list[..k].contains(n) {
                        return Err(err(
                            &format!("node_list[{k}]"),
                            format!("node {n} is already taken"),
                        ));
                    }
                }
                job.node_list.clone()
            }
        };
        for n in &nodes {
            free[*n as usize] = false;
        }
        let per_node = job.ranks.div_ceil(nodes.len() as u32);
        let ranks: Vec<NodeId> = match job.mapping {
            Mapping::Linear => (0..job.ranks)
                .map(|r| nodes[(r / per_node) as usize])
                .collect(),
            Mapping::RoundRobin => (0..job.ranks)
                .map(|r| nodes[(r as usize) % nodes.len()])
                .collect(),
            Mapping::Random => {
                let mut v: Vec<NodeId> = (0..job.ranks)
                    .map(|r| nodes[(r / per_node) as usize])
                    .collect();
                rng.shuffle(&mut v);
                v
            }
            Mapping::List => {
                let mut v = Vec::with_capacity(job.ranks as usize);
                for (r, idx) in job.rank_nodes.iter().enumerate() {
                    match nodes.get(*idx as usize) {
                        Some(n) => v.push(*n),
                        None => {
                            return Err(err(
                                &format!("rank_nodes[{r}]"),
                                format!(
                                    "index {idx} is outside the job's {} allocated node(s)",
                                    nodes.len()
                                ),
                            ))
                        }
                    }
                }
                v
            }
        };
        job_nodes.push(nodes);
        rank_node.push(ranks);
    }
    Ok(Placement {
        job_nodes,
        rank_node,
    })
}

/// One free node from each switch in turn (switches in id order), until `want` are taken.
fn round_robin(topo: &Topology, free: &[bool], want: u32) -> Vec<NodeId> {
    let mut per_switch: Vec<Vec<NodeId>> = vec![Vec::new(); topo.num_switches as usize];
    for n in 0..topo.num_nodes {
        if free[n as usize] {
            per_switch[topo.node_switch(n) as usize].push(n);
        }
    }
    let mut out = Vec::with_capacity(want as usize);
    let mut depth = 0;
    while out.len() < want as usize {
        for s in &per_switch {
            if let Some(n) = s.get(depth) {
                out.push(*n);
                if out.len() == want as usize {
                    break;
                }
            }
        }
        depth += 1;
    }
    out
}
