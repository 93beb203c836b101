//! Shared helpers: preset specs, occupancy views, route walking and the channel dependency graph.

use tracewatt_core::Rng;
use tracewatt_net::topology::build;
use tracewatt_net::{
    ChannelId, Device, DragonflyArrangement, LinkClass, LinkParams, NodeId, QueueView, RouteState,
    Router, RoutingAlgorithm, RoutingSpec, Shape, Topology, TopologySpec,
};

/// Distinct bandwidths per class so tests can check the builder asked for the right one.
pub fn link(class: LinkClass) -> LinkParams {
    let bandwidth_bps = match class {
        LinkClass::Node => 100,
        LinkClass::Tree { level } => 200 + u64::from(level),
        LinkClass::Torus { dim } => 300 + u64::from(dim),
        LinkClass::Local => 400,
        LinkClass::Global => 500,
    };
    LinkParams {
        bandwidth_bps,
        latency_ps: bandwidth_bps * 10,
    }
}

pub fn build_ok(spec: &TopologySpec) -> Topology {
    match build(spec, &link) {
        Ok(t) => t,
        Err(e) => panic!("{spec:?} should build: {e}"),
    }
}

pub fn fat_tree(levels: u8, radix: u32) -> TopologySpec {
    TopologySpec::FatTree {
        levels,
        radix,
        nodes_per_leaf: None,
        taper: 1.0,
        leaves: None,
        pods: None,
        leaves_per_pod: None,
        spines: None,
    }
}

/// Sets optional fat-tree fields on a spec from [`fat_tree`].
pub fn with_ft(
    spec: TopologySpec,
    npl: Option<u32>,
    taper_: f64,
    leaves_: Option<u32>,
    pods_: Option<u32>,
    lpp: Option<u32>,
    spines_: Option<u32>,
) -> TopologySpec {
    match spec {
        TopologySpec::FatTree { levels, radix, .. } => TopologySpec::FatTree {
            levels,
            radix,
            nodes_per_leaf: npl,
            taper: taper_,
            leaves: leaves_,
            pods: pods_,
            leaves_per_pod: lpp,
            spines: spines_,
        },
        other => other,
    }
}

pub fn torus(dims: &[u32], nodes_per_switch: u32) -> TopologySpec {
    TopologySpec::Torus {
        dims: dims.to_vec(),
        nodes_per_switch,
    }
}

pub fn dragonfly(
    g: u32,
    a: u32,
    p: u32,
    h: u32,
    arrangement: DragonflyArrangement,
) -> TopologySpec {
    TopologySpec::Dragonfly {
        groups: g,
        routers_per_group: a,
        nodes_per_router: p,
        global_links_per_router: h,
        arrangement,
    }
}

pub fn miwa2014_16node() -> TopologySpec {
    with_ft(fat_tree(2, 24), Some(8), 1.0, Some(2), None, None, Some(1))
}

pub fn tracerp_fattree_288() -> TopologySpec {
    with_ft(
        fat_tree(3, 24),
        Some(12),
        1.0,
        None,
        Some(2),
        Some(12),
        None,
    )
}

pub fn tracerp_torus_4x8x8() -> TopologySpec {
    torus(&[4, 8, 8], 1)
}

pub fn tracerp_dragonfly_342() -> TopologySpec {
    dragonfly(19, 6, 3, 3, DragonflyArrangement::Absolute)
}

pub fn benchmark_dragonfly_1056() -> TopologySpec {
    dragonfly(33, 8, 4, 4, DragonflyArrangement::Absolute)
}

/// Small instances of every family, with structure worth exercising, for all-pairs checks.
pub fn small_instances() -> Vec<TopologySpec> {
    use DragonflyArrangement::{Absolute, Relative};
    vec![
        TopologySpec::SingleSwitch { nodes: 5 },
        fat_tree(2, 4),
        miwa2014_16node(),
        with_ft(fat_tree(2, 8), None, 2.0, None, None, None, None),
        with_ft(fat_tree(2, 6), None, 1.0, Some(3), None, None, Some(2)),
        fat_tree(3, 4),
        with_ft(fat_tree(3, 6), None, 1.0, None, Some(2), None, None),
        with_ft(fat_tree(3, 8), Some(4), 2.0, None, Some(3), Some(2), None),
        torus(&[3], 1),
        torus(&[4], 2),
        torus(&[2, 3], 2),
        torus(&[3, 3], 1),
        torus(&[2, 2, 2], 1),
        torus(&[5, 4], 1),
        dragonfly(5, 2, 2, 2, Absolute),
        dragonfly(5, 2, 2, 2, Relative),
        dragonfly(3, 2, 1, 2, Absolute),
        dragonfly(3, 2, 1, 2, Relative),
        dragonfly(4, 3, 1, 1, Absolute),
        dragonfly(7, 3, 1, 2, Absolute),
        dragonfly(1, 3, 2, 0, Absolute),
    ]
}

/// Every algorithm that applies to the topology's family.
pub fn algorithms(shape: &Shape) -> Vec<RoutingSpec> {
    use RoutingAlgorithm as A;
    let algs: &[A] = match shape {
        Shape::SingleSwitch => &[A::Default, A::Minimal],
        Shape::FatTree { .. } => &[A::Default, A::Dmodk, A::Hashed, A::Adaptive],
        Shape::Torus { .. } => &[A::Default, A::DimensionOrder],
        Shape::Dragonfly { .. } => &[A::Default, A::Minimal, A::Valiant, A::Ugal, A::Adaptive],
    };
    algs.iter()
        .map(|&algorithm| RoutingSpec {
            algorithm,
            ugal_threshold_bytes: 0,
        })
        .collect()
}

pub fn is_adaptive_or_random(alg: RoutingAlgorithm) -> bool {
    matches!(
        alg,
        RoutingAlgorithm::Adaptive | RoutingAlgorithm::Ugal | RoutingAlgorithm::Valiant
    )
}

pub struct ZeroView;

impl QueueView for ZeroView {
    fn queued_bytes(&self, _ch: ChannelId) -> u64 {
        0
    }
}

/// A fixed pseudo-random occupancy per channel.
pub struct RandView(pub u64);

impl QueueView for RandView {
    fn queued_bytes(&self, ch: ChannelId) -> u64 {
        let mut r = Rng::fork(self.0, u64::from(ch));
        r.below(4096)
    }
}

/// One step of a walk: the channel and VC returned, and the state after the call.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub ch: ChannelId,
    pub vc: u8,
    pub state: RouteState,
}

/// Most `route` calls a walk may take before it is declared lost.
pub const WALK_BOUND: usize = 64;

/// Follows `route` from `src`'s switch until it returns `dst`'s ejection channel, checking the
/// router's contract on every step (channel leaves the current switch, VC in range, hops counted).
pub fn walk(
    topo: &Topology,
    router: &dyn Router,
    src: NodeId,
    dst: NodeId,
    view: &dyn QueueView,
    rng: &mut Rng,
) -> Result<Vec<Step>, String> {
    let mut sw = topo.node_switch(src);
    let mut state = RouteState::new();
    let mut steps = Vec::new();
    let mut switch_hops = 0u8;
    for _ in 0..WALK_BOUND {
        let (ch, vc) = router.route(sw, src, dst, &mut state, view, rng);
        let c = topo
            .channels
            .get(ch as usize)
            .ok_or_else(|| format!("{src}->{dst}: channel {ch} out of range"))?;
        if c.src != Device::Switch(sw) {
            return Err(format!(
                "{src}->{dst}: channel {ch} does not leave switch {sw}"
            ));
        }
        if vc >= router.num_vcs() {
            return Err(format!(
                "{src}->{dst}: vc {vc} >= num_vcs {}",
                router.num_vcs()
            ));
        }
        if state.vc != vc {
            return Err(format!(
                "{src}->{dst}: state.vc {} != returned vc {vc}",
                state.vc
            ));
        }
        steps.push(Step { ch, vc, state });
        if ch == topo.node_ejection[dst as usize] {
            if state.hops != switch_hops {
                return Err(format!(
                    "{src}->{dst}: state.hops {} != {switch_hops}",
                    state.hops
                ));
            }
            return Ok(steps);
        }
        match c.dst {
            Device::Switch(t) => {
                sw = t;
                switch_hops += 1;
            }
            Device::Node(n) => return Err(format!("{src}->{dst}: ejected at wrong node {n}")),
        }
        if state.hops != switch_hops {
            return Err(format!(
                "{src}->{dst}: state.hops {} != {switch_hops}",
                state.hops
            ));
        }
    }
    Err(format!(
        "{src}->{dst}: not delivered within {WALK_BOUND} steps"
    ))
}

/// Switch-to-switch hops of a walk.
pub fn switch_hops(steps: &[Step]) -> usize {
    steps.len() - 1
}

/// Channel dependency graph over (channel, vc) pairs.
pub struct Cdg {
    num_vcs: u64,
    edges: Vec<(u64, u64)>,
}

impl Cdg {
    pub fn new(num_vcs: u8) -> Self {
        Self {
            num_vcs: u64::from(num_vcs),
            edges: Vec::new(),
        }
    }

    fn key(&self, s: &Step) -> u64 {
        u64::from(s.ch) * self.num_vcs + u64::from(s.vc)
    }

    pub fn add_path(&mut self, steps: &[Step]) {
        for w in steps.windows(2) {
            let e = (self.key(&w[0]), self.key(&w[1]));
            self.edges.push(e);
        }
        if self.edges.len() > 1 << 20 {
            self.edges.sort_unstable();
            self.edges.dedup();
        }
    }

    /// Kahn's algorithm; returns a vertex on a cycle if there is one.
    pub fn find_cycle_vertex(&mut self) -> Option<u64> {
        self.edges.sort_unstable();
        self.edges.dedup();
        let mut verts: Vec<u64> = self.edges.iter().flat_map(|&(a, b)| [a, b]).collect();
        verts.sort_unstable();
        verts.dedup();
        let idx = |v: u64| verts.binary_search(&v).unwrap_or(usize::MAX);
        let mut indeg = vec![0usize; verts.len()];
        let mut start = vec![0usize; verts.len() + 1];
        for &(a, b) in &self.edges {
            indeg[idx(b)] += 1;
            start[idx(a) + 1] += 1;
        }
        for i in 0..verts.len() {
            start[i + 1] += start[i];
        }
        // Edges are sorted by source, so they are already grouped as CSR.
        let mut stack: Vec<usize> = (0..verts.len()).filter(|&i| indeg[i] == 0).collect();
        let mut seen = 0;
        while let Some(v) = stack.pop() {
            seen += 1;
            for &(_, b) in &self.edges[start[v]..start[v + 1]] {
                let bi = idx(b);
                indeg[bi] -= 1;
                if indeg[bi] == 0 {
                    stack.push(bi);
                }
            }
        }
        if seen == verts.len() {
            None
        } else {
            (0..verts.len()).find(|&i| indeg[i] > 0).map(|i| verts[i])
        }
    }
}
