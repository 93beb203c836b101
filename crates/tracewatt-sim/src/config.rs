//! The run configuration: what a user writes in TOML (or passes from Python as a dict), with every
//! default documented and filled in, and strict validation — an unknown field, a wrong type or an
//! impossible value is an error naming the field.

use crate::error::SimError;
use crate::presets;
use crate::trace_path;
use crate::units::{ns_to_ps, time_field};
use serde::{Deserialize, Serialize};
use tracewatt_core::time::{self, MAX_DURATION_PS, NS, S, US};
use tracewatt_net::fabric::{Credits, Switching};
use tracewatt_net::topology::LinkParams;
use tracewatt_net::{LinkClass, RoutingSpec, TopologySpec};
use tracewatt_workload::generators::WorkloadSpec;

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Seed of the simulation's one random-number generator.
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub machine: MachineSpec,
    #[serde(default)]
    pub mpi: MpiSpec,
    /// One or more jobs sharing the machine.
    pub jobs: Vec<JobSpec>,
    /// Link, switch and NIC power (`[power]`); defaults: EEE with the paper's measured switch
    /// (10GBASE-T, idle_timeout 600 us, wake 17 us, PowerConnect 8132 power).
    #[serde(default)]
    pub power: tracewatt_power::config::PowerSpec,
    #[serde(default)]
    pub output: OutputSpec,
}

/// `[machine]`. With `preset`, the named machine's fields are the defaults and any field given
/// here overrides them (tables merge field by field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    /// The preset this machine started from, if any (kept for the record).
    #[serde(default)]
    pub preset: Option<String>,
    pub topology: TopologySpec,
    #[serde(default)]
    pub routing: RoutingSpec,
    pub links: LinksSpec,
    /// MPI processes per node (used when a job does not say how many nodes it takes).
    #[serde(default = "default_one")]
    pub ranks_per_node: u32,
    /// Maximum payload bytes per packet.
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
    /// Input buffer per switch port per virtual channel, bytes.
    #[serde(default = "default_buffer_bytes")]
    pub buffer_bytes: u32,
    /// Switch traversal latency (head in to head out), ns.
    #[serde(default = "default_switch_latency_ns")]
    pub switch_latency_ns: f64,
    #[serde(default = "default_switching")]
    pub switching: Switching,
    /// How credits travel back upstream: out of band, or as frames on the reverse link
    /// direction (which must be awake to carry them).
    #[serde(default)]
    pub credits: Credits,
    /// Messages between ranks on the same node go through memory, not the network.
    #[serde(default = "default_intra_node_bandwidth_gbps")]
    pub intra_node_bandwidth_gbps: f64,
    #[serde(default = "default_intra_node_latency_ns")]
    pub intra_node_latency_ns: f64,
    /// The network model: packets (exact) or flows (faster). Written out only when it is not
    /// the default, so a packet run's resolved configuration is the same with or without it.
    #[serde(default, skip_serializing_if = "NetworkModel::is_packet")]
    pub network: NetworkModel,
    /// Flow mode: the longest train of segments a message is sent as (0: none); the packet
    /// model ignores it. Written out only when it is not the default, as `network` is.
    #[serde(
        default = "default_train_segments",
        skip_serializing_if = "is_default_train_segments"
    )]
    pub flow_train_segments: u32,
    /// Flow mode: the packets of a train's segment (at least 1, at most half a buffer's); the
    /// packet model ignores it. Written out only when it is not the default, as `network` is.
    #[serde(
        default = "default_segment_packets",
        skip_serializing_if = "is_default_segment_packets"
    )]
    pub flow_segment_packets: u32,
    /// Flow mode: the packets of a short message's units (0: a short message moves whole); the
    /// packet model ignores it. Written out only when it is not the default, as `network` is.
    #[serde(
        default = "default_short_unit_packets",
        skip_serializing_if = "is_default_short_unit_packets"
    )]
    pub flow_short_unit_packets: u32,
}

fn default_short_unit_packets() -> u32 {
    tracewatt_net::flow::SHORT_UNIT_PACKETS
}

fn is_default_short_unit_packets(n: &u32) -> bool {
    *n == tracewatt_net::flow::SHORT_UNIT_PACKETS
}

fn default_segment_packets() -> u32 {
    tracewatt_net::flow::SEGMENT_PACKETS
}

fn is_default_segment_packets(n: &u32) -> bool {
    *n == tracewatt_net::flow::SEGMENT_PACKETS
}

fn default_train_segments() -> u32 {
    tracewatt_net::flow::TRAIN_SEGMENTS
}

fn is_default_train_segments(n: &u32) -> bool {
    *n == tracewatt_net::flow::TRAIN_SEGMENTS
}

/// `[machine] network`: which model moves messages through the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkModel {
    /// Packets through ports, buffers and links with credit flow control.
    #[default]
    Packet,
    /// One max-min shared flow per message (`tracewatt_net::flow`).
    Flow,
}

impl NetworkModel {
    pub fn is_packet(&self) -> bool {
        *self == NetworkModel::Packet
    }
}

/// `[machine.links]`: bandwidth and propagation latency of every link, with optional overrides
/// per link class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinksSpec {
    pub bandwidth_gbps: f64,
    #[serde(default = "default_link_latency_ns")]
    pub latency_ns: f64,
    /// Node-to-switch links.
    #[serde(default)]
    pub node: Option<LinkOverride>,
    /// Dragonfly intra-group links.
    #[serde(default)]
    pub local: Option<LinkOverride>,
    /// Dragonfly inter-group links.
    #[serde(default)]
    pub global: Option<LinkOverride>,
    /// Fat-tree links by level: `tree[0]` between levels 1 and 2, `tree[1]` between 2 and 3.
    #[serde(default)]
    pub tree: Vec<LinkOverride>,
    /// Torus links by dimension.
    #[serde(default)]
    pub torus: Vec<LinkOverride>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkOverride {
    #[serde(default)]
    pub bandwidth_gbps: Option<f64>,
    #[serde(default)]
    pub latency_ns: Option<f64>,
}

/// `[mpi]`: the message-passing layer's costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpiSpec {
    /// Messages up to this size are sent eagerly; larger ones use the rendezvous handshake
    /// (request-to-send, clear-to-send, then data).
    #[serde(default = "default_eager_limit")]
    pub eager_limit_bytes: u64,
    /// CPU time a rank spends to issue a send, ns.
    #[serde(default = "default_overhead_ns")]
    pub send_overhead_ns: f64,
    /// CPU time from a message's arrival to its receive completing, ns.
    #[serde(default = "default_overhead_ns")]
    pub recv_overhead_ns: f64,
    /// Size of a rendezvous control message (RTS or CTS), bytes.
    #[serde(default = "default_control_bytes")]
    pub control_bytes: u64,
    /// Rendezvous control messages go ahead of bulk data at the NIC (a separate control queue);
    /// `false`: one first-in first-out queue.
    #[serde(default = "default_true")]
    pub control_priority: bool,
    /// Peers a scattered alltoall(v) posts receives and sends to at a time, as MPICH's
    /// `MPIR_CVAR_ALLTOALL_THROTTLE`; 0 posts them all at once.
    #[serde(default = "default_alltoall_throttle")]
    pub alltoall_throttle: u32,
    /// How ranks wait (`[mpi.wait]`).
    #[serde(default)]
    pub wait: tracewatt_power::config::WaitSpec,
}

impl Default for MpiSpec {
    fn default() -> Self {
        Self {
            eager_limit_bytes: default_eager_limit(),
            send_overhead_ns: default_overhead_ns(),
            recv_overhead_ns: default_overhead_ns(),
            control_bytes: default_control_bytes(),
            control_priority: true,
            alltoall_throttle: default_alltoall_throttle(),
            wait: tracewatt_power::config::WaitSpec::default(),
        }
    }
}

/// `[[jobs]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Name used in results (default `job<i>`).
    #[serde(default)]
    pub name: Option<String>,
    /// MPI ranks (a trace job without it takes the trace's: [`crate::sizing`]).
    pub ranks: u32,
    /// Nodes the job takes (default: ranks / machine.ranks_per_node, rounded up).
    #[serde(default)]
    pub nodes: Option<u32>,
    /// Simulated time at which the job starts, us.
    #[serde(default)]
    pub start_us: f64,
    #[serde(default)]
    pub allocation: Allocation,
    /// With `allocation = "list"`: the node ids, in order.
    #[serde(default)]
    pub node_list: Vec<u32>,
    #[serde(default)]
    pub mapping: Mapping,
    /// With `mapping = "list"`: for each rank, the index of its node in the allocation.
    #[serde(default)]
    pub rank_nodes: Vec<u32>,
    /// A generated workload (`[jobs.workload]`). Exactly one of `workload` and `trace` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSpec>,
    /// A recorded MPI trace as the workload (`[jobs.trace]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSpec>,
    /// Memory in use on each of the job's nodes, GiB, for the DIMM model: a constant...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<f64>,
    /// ... or a profile (`[[jobs.memory]]`: from `at_s` after the job's start, `gib` in use).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemoryPoint>,
}

/// `[[jobs.memory]]`: from `at_s` after the job's start, `gib` in use on each of its nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryPoint {
    pub at_s: f64,
    pub gib: f64,
}

impl JobSpec {
    /// The job's memory profile per node: (time after its start, GiB in use from then).
    pub(crate) fn memory_profile(&self) -> Vec<(f64, f64)> {
        match self.memory_gib {
            Some(g) => vec![(0.0, g)],
            None => self.memory.iter().map(|p| (p.at_s, p.gib)).collect(),
        }
    }
}

/// `[jobs.trace]`: an MPI trace (SST-DUMPI, SimGrid time-independent or tracewatt's native
/// format, detected from the files) replayed as the job's workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The trace: a DUMPI `.meta` file or its directory, a native trace directory (or its
    /// `trace.twi`), a SimGrid list file, action file or directory. A relative path is relative
    /// to the configuration file's directory; for configurations not read from a file (source
    /// `<dict>`, `<string>`) to the current directory.
    pub path: String,
    /// Factor applied to every compute gap between the trace's calls (1.0: as traced).
    #[serde(default = "default_compute_scale")]
    pub compute_scale: f64,
    /// Flop rate turning SimGrid `compute <flops>` into time, flop/s (default 1e9).
    #[serde(default = "default_flops_per_s")]
    pub flops_per_s: f64,
    /// Calls the simulator cannot replay are errors instead of being skipped.
    #[serde(default)]
    pub strict: bool,
    /// The clock measuring compute between calls: `wall` (default) or `cpu` (formats that
    /// record CPU time; checked when the trace is opened).
    #[serde(default)]
    pub compute_clock: tracewatt_trace::ComputeClock,
    /// The timed region (`[jobs.trace.window]`): the run still replays the whole trace up to
    /// the window's end, and reports makespan and energy over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowSpec>,
}

/// `[jobs.trace.window]`: where each rank enters and leaves the timed region. The start is
/// `start_s` seconds after the trace's first call or the `from_occurrence`-th call named
/// `from` (default: the trace's start); the stop `stop_s` or the `to_occurrence`-th `to` call
/// (default: the trace's end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_s: Option<f64>,
    /// An MPI function name (`MPI_Pcontrol`, `pcontrol`, `barrier`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default = "default_occurrence")]
    pub from_occurrence: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default = "default_occurrence")]
    pub to_occurrence: u32,
}

fn default_occurrence() -> u32 {
    1
}

impl WindowSpec {
    /// The window as the trace readers take it; `Err((field, expected))` for a bad one.
    pub fn to_window(&self) -> Result<tracewatt_trace::Window, (&'static str, String)> {
        use tracewatt_trace::WindowEdge;
        let edge = |secs: Option<f64>,
                    call: &Option<String>,
                    occurrence: u32,
                    fields: (&'static str, &'static str, &'static str)|
         -> Result<WindowEdge, (&'static str, String)> {
            if occurrence == 0 {
                return Err((fields.2, "must be at least 1 (the first call is 1)".into()));
            }
            match (secs, call) {
                (Some(_), Some(_)) => Err((
                    fields.1,
                    format!("give {} or {}, not both", fields.0, fields.1),
                )),
                (_, None) if occurrence != 1 => Err((
                    fields.2,
                    format!("counts calls of {}: give {} too", fields.1, fields.1),
                )),
                (Some(s), None) => Ok(WindowEdge::Time {
                    ns: (s * 1e9).round() as u64,
                }),
                (None, Some(name)) => {
                    let lower = name.to_ascii_lowercase();
                    let bare = lower.strip_prefix("mpi_").unwrap_or(&lower);
                    match tracewatt_trace::funcs::func_id(bare) {
                        Some(func) => Ok(WindowEdge::Call { func, occurrence }),
                        None => Err((
                            fields.1,
                            format!("an MPI function name such as \"MPI_Pcontrol\" or \"barrier\", got {name:?}"),
                        )),
                    }
                }
                (None, None) => Ok(WindowEdge::Trace),
            }
        };
        let start = edge(
            self.start_s,
            &self.from,
            self.from_occurrence,
            ("start_s", "from", "from_occurrence"),
        )?;
        let stop = edge(
            self.stop_s,
            &self.to,
            self.to_occurrence,
            ("stop_s", "to", "to_occurrence"),
        )?;
        if let (Some(a), Some(b)) = (self.start_s, self.stop_s) {
            if b <= a {
                return Err(("stop_s", format!("a time after start_s = {a}, got {b}")));
            }
        }
        Ok(tracewatt_trace::Window { start, stop })
    }
}

impl TraceSpec {
    /// The trace's path: `path` as written if absolute, else relative to the directory of the
    /// configuration file `source` (or to the current directory when `source` is not a file
    /// name, i.e. `<dict>` / `<string>`).
    pub fn resolve(&self, source: &str) -> std::path::PathBuf {
        trace_path::resolve(&self.path, source)
    }
}

/// Which nodes a job gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Allocation {
    /// The lowest-numbered free nodes.
    #[default]
    Contiguous,
    /// Free nodes drawn at random.
    Random,
    /// One free node per switch in turn (spreads a job over routers / leaves / groups).
    RoundRobin,
    /// Exactly `node_list`.
    List,
}

/// How a job's ranks are placed on its nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mapping {
    /// Consecutive ranks fill a node before the next one.
    #[default]
    Linear,
    /// Rank r on node r mod nodes.
    RoundRobin,
    /// A random permutation of the linear placement.
    Random,
    /// Exactly `rank_nodes`.
    List,
}

/// `[output]`: what the results keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// For each threshold, every link's count and total of idle intervals longer than it are kept
    /// exactly (the idle-interval histogram is binned; these are not), us.
    #[serde(default = "default_idle_thresholds_us")]
    pub idle_thresholds_us: Vec<f64>,
    /// Log-spaced idle-histogram bins per decade.
    #[serde(default = "default_bins_per_decade")]
    pub idle_bins_per_decade: u32,
    /// Keep one row per message (`messages` table): memory grows with the message count.
    #[serde(default)]
    pub messages: bool,
    /// Also count each link's idle intervals with both directions together
    /// (`pair_idle_thresholds`), for screening `paired` links exactly.
    #[serde(default)]
    pub pair_idle: bool,
}

impl Default for OutputSpec {
    fn default() -> Self {
        Self {
            idle_thresholds_us: default_idle_thresholds_us(),
            idle_bins_per_decade: default_bins_per_decade(),
            messages: false,
            pair_idle: false,
        }
    }
}

fn default_seed() -> u64 {
    1
}
fn default_one() -> u32 {
    1
}
fn default_packet_bytes() -> u32 {
    4096
}
fn default_buffer_bytes() -> u32 {
    65536
}
fn default_switch_latency_ns() -> f64 {
    100.0
}
fn default_switching() -> Switching {
    Switching::CutThrough
}
fn default_intra_node_bandwidth_gbps() -> f64 {
    80.0
}
fn default_intra_node_latency_ns() -> f64 {
    300.0
}
fn default_link_latency_ns() -> f64 {
    10.0
}
fn default_eager_limit() -> u64 {
    65536
}
fn default_alltoall_throttle() -> u32 {
    tracewatt_workload::collectives::DEFAULT_ALLTOALL_THROTTLE
}

fn default_overhead_ns() -> f64 {
    1000.0
}
fn default_true() -> bool {
    true
}
fn default_control_bytes() -> u64 {
    64
}
fn default_idle_thresholds_us() -> Vec<f64> {
    // The timeouts and wake-ups the papers sweep (TraceRP 10-1,250 us; Miwa 600-160,000 us;
    // the 20 ms interval statistic).
    vec![
        1.0, 5.0, 10.0, 17.0, 50.0, 250.0, 600.0, 1250.0, 1600.0, 16000.0, 20000.0, 160000.0,
    ]
}
fn default_bins_per_decade() -> u32 {
    10
}
fn default_compute_scale() -> f64 {
    1.0
}
fn default_flops_per_s() -> f64 {
    1e9
}

/// Where a configuration came from, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

impl Config {
    /// Parses, merges the machine preset, deserialises strictly and validates. `source` names the
    /// file (or `<dict>`) in errors.
    pub fn parse(text: &str, format: Format, source: &str) -> Result<Config, SimError> {
        let value: toml::Value = match format {
            Format::Toml => toml::from_str::<toml::Table>(text)
                .map(toml::Value::Table)
                .map_err(|e| {
                    let at = e.span().map(|s| line_col(text, s.start));
                    SimError::config(source, "", e.message().to_string(), at)
                })?,
            Format::Json => {
                let j: serde_json::Value = serde_json::from_str::<UniqueKeys>(text)
                    .and_then(|_| serde_json::from_str(text))
                    .map_err(|e| SimError::config(source, "", e.to_string(), None))?;
                json_to_toml(&j, "")
                    .map_err(|(path, msg)| SimError::config(source, &path, msg, None))?
            }
        };
        let mut value = presets::apply(value)
            .map_err(|(path, msg)| SimError::config(source, &path, msg, None))?;
        crate::sizing::fill(&mut value, source)?;
        let mut config: Config = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            let (field, message) = field_in_tagged_table(&value, &path)
                .unwrap_or_else(|| (path, e.inner().message().to_string()));
            let message = in_config_terms(&message, lookup(&value, &field));
            SimError::config(source, &field, message, None)
        })?;
        config.validate(source)?;
        config
            .power
            .resolve()
            .map_err(|e| SimError::power_config(source, e))?;
        config
            .mpi
            .wait
            .resolve()
            .map_err(|e| SimError::power_config(source, e))?;
        Ok(config)
    }

    /// The configuration with every default filled in, as JSON (written to `summary.json`).
    /// Optional fields left unset (meaning "inherit") are omitted, so the result parses back.
    /// Every policy at its baseline, for `compare`: links always on, MPI waits spinning. (The
    /// NIC's coalescing is the machine's setting, not a low-power policy: it stays as
    /// configured.)
    pub fn set_baseline(&mut self) {
        self.power.set_always_on();
        self.mpi.wait = tracewatt_power::config::WaitSpec::default();
        // Resolving a default cannot fail.
        let _ = self.mpi.wait.resolve();
    }

    pub fn resolved_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        strip_nulls(&mut v);
        v
    }

    /// Checks what deserialisation cannot: values in range, fields that go together, traces
    /// that exist. The first fault found is reported, section by section in the order of the
    /// configuration reference.
    fn validate(&self, source: &str) -> Result<(), SimError> {
        self.validate_machine(source)?;
        self.validate_mpi(source)?;
        self.validate_jobs(source)?;
        self.validate_output(source)
    }

    /// `[machine]`: packets and buffers, link speeds and latencies, link overrides.
    fn validate_machine(&self, source: &str) -> Result<(), SimError> {
        let err = |field: &str, msg: String| Err(SimError::config(source, field, msg, None));
        let m = &self.machine;
        if m.packet_bytes == 0 {
            return err("machine.packet_bytes", "must be at least 1".into());
        }
        if m.buffer_bytes < m.packet_bytes {
            return err(
                "machine.buffer_bytes",
                format!("must hold at least one packet ({} bytes)", m.packet_bytes),
            );
        }
        if m.ranks_per_node == 0 {
            return err("machine.ranks_per_node", "must be at least 1".into());
        }
        if m.flow_segment_packets == 0 {
            return err("machine.flow_segment_packets", "must be at least 1".into());
        }
        let bandwidth = |field: &str, gbps: f64| bandwidth(source, field, gbps, m.packet_bytes);
        bandwidth("machine.links.bandwidth_gbps", m.links.bandwidth_gbps)?;
        time_field(source, "machine.links.latency_ns", m.links.latency_ns, NS)?;
        time_field(source, "machine.switch_latency_ns", m.switch_latency_ns, NS)?;
        bandwidth(
            "machine.intra_node_bandwidth_gbps",
            m.intra_node_bandwidth_gbps,
        )?;
        time_field(
            source,
            "machine.intra_node_latency_ns",
            m.intra_node_latency_ns,
            NS,
        )?;
        let overrides = [
            ("node", &m.links.node),
            ("local", &m.links.local),
            ("global", &m.links.global),
        ];
        for (name, o) in overrides {
            if let Some(o) = o {
                check_override(source, &format!("machine.links.{name}"), o, m.packet_bytes)?;
            }
        }
        for (i, o) in m.links.tree.iter().enumerate() {
            check_override(
                source,
                &format!("machine.links.tree[{i}]"),
                o,
                m.packet_bytes,
            )?;
        }
        for (i, o) in m.links.torus.iter().enumerate() {
            check_override(
                source,
                &format!("machine.links.torus[{i}]"),
                o,
                m.packet_bytes,
            )?;
        }
        if m.network == NetworkModel::Flow && self.power.nic.coalescing {
            return err(
                "power.nic.coalescing",
                "[power.nic] coalescing needs the arrival of every frame, and a flow has no \
                 frames: set coalescing = false, or [machine] network = \"packet\""
                    .into(),
            );
        }
        self.check_link_classes(source)
    }

    /// `[mpi]`: overheads and the size of control messages.
    fn validate_mpi(&self, source: &str) -> Result<(), SimError> {
        time_field(
            source,
            "mpi.send_overhead_ns",
            self.mpi.send_overhead_ns,
            NS,
        )?;
        if self.mpi.control_bytes > MAX_MESSAGE_BYTES {
            return Err(SimError::config(
                source,
                "mpi.control_bytes",
                too_large_message(self.mpi.control_bytes),
                None,
            ));
        }
        time_field(
            source,
            "mpi.recv_overhead_ns",
            self.mpi.recv_overhead_ns,
            NS,
        )?;
        Ok(())
    }

    /// `[[jobs]]`: at least one, with names that differ, each valid on its own.
    fn validate_jobs(&self, source: &str) -> Result<(), SimError> {
        if self.jobs.is_empty() {
            return Err(SimError::config(
                source,
                "jobs",
                "at least one [[jobs]] entry is required",
                None,
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, j) in self.jobs.iter().enumerate() {
            self.validate_job(source, i, j, &mut names)?;
        }
        Ok(())
    }

    /// `jobs[i]`; `names` holds the names of the jobs before it.
    fn validate_job<'j>(
        &self,
        source: &str,
        i: usize,
        j: &'j JobSpec,
        names: &mut std::collections::BTreeSet<&'j str>,
    ) -> Result<(), SimError> {
        let err = |field: &str, msg: String| {
            Err(SimError::config(
                source,
                &format!("jobs[{i}].{field}"),
                msg,
                None,
            ))
        };
        if j.ranks == 0 {
            return err("ranks", "must be at least 1".into());
        }
        if let Some(name) = &j.name {
            if name.is_empty() {
                return err("name", "must not be empty".into());
            }
            if !names.insert(name.as_str()) {
                return err(
                    "name",
                    format!("{name:?} names an earlier job too: job names must differ"),
                );
            }
        }
        if let Some(w) = &j.workload {
            // Sizes beyond any MPI message would only make a run that never ends.
            let fields = serde_json::to_value(w).unwrap_or_default();
            for (k, v) in fields.as_object().into_iter().flatten() {
                if let Some(b) = v.as_u64().filter(|_| k.ends_with("bytes")) {
                    if b > MAX_MESSAGE_BYTES {
                        return err(&format!("workload.{k}"), too_large_message(b));
                    }
                }
            }
        }
        self.check_memory_fits(source, i, j)?;
        if let (Some(n), Allocation::List) = (j.nodes, j.allocation) {
            if n as usize != j.node_list.len() {
                return err(
                    "nodes",
                    format!(
                        "{n}, but node_list names {} nodes (give one of them, or both alike)",
                        j.node_list.len()
                    ),
                );
            }
        }
        time_field(source, &format!("jobs[{i}].start_us"), j.start_us, US)?;
        check_memory_profile(source, i, j)?;
        check_node_lists(source, i, j)?;
        match (&j.workload, &j.trace) {
            (Some(_), Some(_)) => err(
                "trace",
                "give either [jobs.workload] or [jobs.trace], not both".into(),
            ),
            (None, None) => err(
                "workload",
                "missing: give a [jobs.workload] table or a [jobs.trace] table".into(),
            ),
            (Some(_), None) => Ok(()),
            (None, Some(t)) => self.validate_trace(source, i, t),
        }
    }

    /// Job `i`'s memory in use never exceeds its nodes' DIMMs.
    fn check_memory_fits(&self, source: &str, i: usize, j: &JobSpec) -> Result<(), SimError> {
        let d = &self.power.dimms;
        let installed = f64::from(d.channels) * f64::from(d.dimms_per_channel) * d.dimm_gib;
        let most = j
            .memory_profile()
            .into_iter()
            .map(|p| p.1)
            .fold(0.0, f64::max);
        if most > installed {
            return Err(SimError::config(
                source,
                &format!("jobs[{i}].memory_gib"),
                format!(
                    "{most} GiB in use is more than the node's {installed} GiB of DIMMs \
                     (power.dimms: channels x dimms_per_channel x dimm_gib)"
                ),
                None,
            ));
        }
        Ok(())
    }

    /// `jobs[i].trace`: scales, a path that exists, a window that can be found.
    fn validate_trace(&self, source: &str, i: usize, t: &TraceSpec) -> Result<(), SimError> {
        let f = |k: &str| format!("jobs[{i}].trace.{k}");
        let err = |field: &str, msg: String| Err(SimError::config(source, field, msg, None));
        non_negative(source, &f("compute_scale"), t.compute_scale)?;
        positive(source, &f("flops_per_s"), t.flops_per_s)?;
        if t.path.is_empty() {
            return err(&f("path"), "must name a trace file or directory".into());
        }
        let resolved = t.resolve(source);
        if !resolved.exists() {
            return Err(trace_path::missing(source, i, &resolved));
        }
        if let Some(w) = &t.window {
            for (k, v) in [("start_s", w.start_s), ("stop_s", w.stop_s)] {
                if let Some(s) = v {
                    time_field(source, &f(&format!("window.{k}")), s, S)?;
                }
            }
            if let Err((field, expected)) = w.to_window() {
                return err(&f(&format!("window.{field}")), expected);
            }
            if self.jobs.len() > 1 {
                return err(
                    &f("window"),
                    "a window needs a configuration with this job only".into(),
                );
            }
        }
        Ok(())
    }

    /// `[output]`: idle thresholds and histogram bins.
    fn validate_output(&self, source: &str) -> Result<(), SimError> {
        for (i, t) in self.output.idle_thresholds_us.iter().enumerate() {
            time_field(source, &format!("output.idle_thresholds_us[{i}]"), *t, US)?;
        }
        if !(1..=MAX_BINS_PER_DECADE).contains(&self.output.idle_bins_per_decade) {
            return Err(SimError::config(
                source,
                "output.idle_bins_per_decade",
                format!(
                    "must be from 1 to {MAX_BINS_PER_DECADE}, got {}",
                    self.output.idle_bins_per_decade
                ),
                None,
            ));
        }
        Ok(())
    }

    /// Link overrides (`machine.links.*`, `power.*`) only for link classes the topology has: one
    /// for a class it lacks would be ignored.
    fn check_link_classes(&self, source: &str) -> Result<(), SimError> {
        // Tree link levels, torus dimensions, whether it has local and global links.
        let (tree, torus, dragonfly, kind) = match &self.machine.topology {
            TopologySpec::FatTree { levels, .. } => (
                usize::from(*levels) - 1,
                0,
                false,
                format!("a {levels}-level fat-tree"),
            ),
            TopologySpec::Torus { dims, .. } => (
                0,
                dims.len(),
                false,
                format!("a {}-dimensional torus", dims.len()),
            ),
            TopologySpec::Dragonfly { .. } => (0, 0, true, "a dragonfly".into()),
            TopologySpec::SingleSwitch { .. } => (0, 0, false, "a single switch".into()),
        };
        let l = &self.machine.links;
        let p = &self.power;
        let checks = [
            (
                "machine.links.local",
                l.local.is_some() && !dragonfly,
                "no local links",
            ),
            (
                "machine.links.global",
                l.global.is_some() && !dragonfly,
                "no global links",
            ),
            (
                "power.local",
                p.local.is_some() && !dragonfly,
                "no local links",
            ),
            (
                "power.global",
                p.global.is_some() && !dragonfly,
                "no global links",
            ),
            (
                "machine.links.tree",
                l.tree.len() > tree,
                "fewer link levels",
            ),
            ("power.tree", p.tree.len() > tree, "fewer link levels"),
            (
                "machine.links.torus",
                l.torus.len() > torus,
                "fewer dimensions",
            ),
            ("power.torus", p.torus.len() > torus, "fewer dimensions"),
        ];
        for (field, unused, why) in checks {
            if unused {
                return Err(SimError::config(
                    source,
                    field,
                    format!(
                        "the machine ({kind}) has {why}: the override would apply to nothing \
                         (fat-tree: {tree} tree level(s); torus: one entry per dimension)"
                    ),
                    None,
                ));
            }
        }
        Ok(())
    }

    /// Link parameters for a class, after overrides.
    pub fn link_params(&self, class: LinkClass) -> LinkParams {
        let l = &self.machine.links;
        let o = match class {
            LinkClass::Node => l.node.as_ref(),
            LinkClass::Local => l.local.as_ref(),
            LinkClass::Global => l.global.as_ref(),
            LinkClass::Tree { level } => l.tree.get(level.saturating_sub(1) as usize),
            LinkClass::Torus { dim } => l.torus.get(dim as usize),
        };
        let gbps = o.and_then(|o| o.bandwidth_gbps).unwrap_or(l.bandwidth_gbps);
        let ns = o.and_then(|o| o.latency_ns).unwrap_or(l.latency_ns);
        LinkParams {
            bandwidth_bps: (gbps * 1e9).round() as u64,
            latency_ps: ns_to_ps(ns),
        }
    }
}

/// Job `i`'s memory: `memory_gib` or a profile, not both, and no negative amounts.
fn check_memory_profile(source: &str, i: usize, j: &JobSpec) -> Result<(), SimError> {
    if j.memory_gib.is_some() && !j.memory.is_empty() {
        return Err(SimError::config(
            source,
            &format!("jobs[{i}].memory"),
            "give memory_gib or a [[jobs.memory]] profile, not both",
            None,
        ));
    }
    if let Some(g) = j.memory_gib {
        non_negative(source, &format!("jobs[{i}].memory_gib"), g)?;
    }
    for (k, p) in j.memory.iter().enumerate() {
        time_field(source, &format!("jobs[{i}].memory[{k}].at_s"), p.at_s, S)?;
        non_negative(source, &format!("jobs[{i}].memory[{k}].gib"), p.gib)?;
    }
    Ok(())
}

/// Job `i`'s `node_list` and `rank_nodes`: given exactly when its allocation and mapping are
/// `list`, one entry per rank in `rank_nodes`.
fn check_node_lists(source: &str, i: usize, j: &JobSpec) -> Result<(), SimError> {
    let err = |field: &str, msg: String| {
        Err(SimError::config(
            source,
            &format!("jobs[{i}].{field}"),
            msg,
            None,
        ))
    };
    if j.allocation == Allocation::List && j.node_list.is_empty() {
        return err(
            "node_list",
            "allocation = \"list\" needs the node ids".into(),
        );
    }
    if j.allocation != Allocation::List && !j.node_list.is_empty() {
        return err(
            "node_list",
            "only allowed with allocation = \"list\"".into(),
        );
    }
    if j.mapping == Mapping::List && j.rank_nodes.len() != j.ranks as usize {
        return err(
            "rank_nodes",
            format!(
                "mapping = \"list\" needs one entry per rank ({}), got {}",
                j.ranks,
                j.rank_nodes.len()
            ),
        );
    }
    if j.mapping != Mapping::List && !j.rank_nodes.is_empty() {
        return err("rank_nodes", "only allowed with mapping = \"list\"".into());
    }
    Ok(())
}

/// serde reads a table selected by `kind` (`machine.topology`, `jobs[i].workload`) whole, and
/// its error names the table but not the field at fault. This finds the field: the one whose
/// value, alone beside `kind`, fails as a value (`kind` itself when it fails alone). Returns
/// that field's path and error.
fn field_in_tagged_table(root: &toml::Value, path: &str) -> Option<(String, String)> {
    type Probe = fn(toml::Value) -> Result<(), toml::de::Error>;
    let (table, probe): (_, Probe) = if path == "machine.topology" {
        (root.get("machine")?.get("topology")?, |v| {
            TopologySpec::deserialize(v).map(drop)
        })
    } else {
        let job: usize = path
            .strip_prefix("jobs[")?
            .strip_suffix("].workload")?
            .parse()
            .ok()?;
        (root.get("jobs")?.get(job)?.get("workload")?, |v| {
            WorkloadSpec::deserialize(v).map(drop)
        })
    };
    let table = table.as_table()?;
    let kind = table.get("kind")?;
    let fails_as_a_value = |fields: &[(&String, &toml::Value)]| {
        let mut t = toml::Table::new();
        t.insert("kind".into(), kind.clone());
        for (k, v) in fields {
            t.insert((*k).clone(), (*v).clone());
        }
        let message = probe(toml::Value::Table(t)).err()?.message().to_string();
        let by_value = message.starts_with("invalid ") || message.starts_with("unknown variant");
        by_value.then_some(message)
    };
    if let Some(message) = fails_as_a_value(&[]) {
        return Some((format!("{path}.kind"), message));
    }
    table
        .iter()
        .filter(|(k, _)| *k != "kind")
        .find_map(|f| Some((format!("{path}.{}", f.0), fails_as_a_value(&[f])?)))
}

/// The value at a dotted path like `jobs[0].workload.algo`.
fn lookup<'a>(root: &'a toml::Value, path: &str) -> Option<&'a toml::Value> {
    path.split('.').try_fold(root, |v, segment| {
        let mut parts = segment.split('[');
        let mut v = v.get(parts.next()?)?;
        for index in parts {
            v = v.get(index.strip_suffix(']')?.parse::<usize>().ok()?)?;
        }
        Some(v)
    })
}

/// serde's "invalid type/value" messages, which speak Rust (`invalid value: integer `-1`,
/// expected u32`), in the configuration's terms (`expected a non-negative integer, got -1`).
/// `actual` is the value at the field, for messages that do not show it.
fn in_config_terms(message: &str, actual: Option<&toml::Value>) -> String {
    let Some((got, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|m| m.rsplit_once(", expected "))
    else {
        return message.to_string();
    };
    let max = match expected {
        "u8" => Some(u64::from(u8::MAX)),
        "u16" => Some(u64::from(u16::MAX)),
        "u32" => Some(u64::from(u32::MAX)),
        "u64" => Some(u64::MAX),
        _ => None,
    };
    let too_large = got.starts_with("integer `") && !got.starts_with("integer `-");
    let expected = match (expected, max) {
        (_, Some(max)) if too_large => format!("a non-negative integer of at most {max}"),
        (_, Some(_)) => "a non-negative integer".into(),
        ("i8" | "i16" | "i32" | "i64", _) => "an integer".into(),
        ("f32" | "f64", _) => "a number".into(),
        ("a sequence", _) => "an array".into(),
        // How the TOML reader names an enum written as a name (or a name or a table).
        ("string only", _) => "a name".into(),
        ("string or map", _) => "a name or a table".into(),
        (e, _) if e.starts_with("struct ") || e.contains("enum ") || e == "a map" => {
            "a table".into()
        }
        (e, _) => e.to_string(),
    };
    let literal = ["integer `", "floating point `", "boolean `"]
        .iter()
        .find_map(|p| got.strip_prefix(p))
        .map(|v| v.trim_end_matches('`').to_string())
        .or_else(|| got.strip_prefix("string ").map(str::to_string));
    let got = match (literal, got, actual) {
        (Some(v), ..) => v,
        (None, "sequence", _) => "an array".into(),
        (None, "map", _) => "a table".into(),
        // e.g. "unit variant" for a number where a name belongs: show the number.
        (None, _, Some(v)) if !v.is_table() && !v.is_array() => v.to_string(),
        (None, other, _) => other.to_string(),
    };
    format!("expected {expected}, got {got}")
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The largest message a workload may ask for, bytes (1 TiB): beyond any MPI message, and a run
/// moving it packet by packet would not end.
const MAX_MESSAGE_BYTES: u64 = 1 << 40;
/// The finest idle-interval histogram (bins per decade of interval length).
const MAX_BINS_PER_DECADE: u32 = 1000;
/// The fastest link, Gb/s (1 Pb/s; its bits per second still fit the output's 64-bit integers).
const MAX_BANDWIDTH_GBPS: f64 = 1e6;

fn too_large_message(bytes: u64) -> String {
    format!("must be at most {MAX_MESSAGE_BYTES} bytes (1 TiB), got {bytes}")
}

/// Checks a bandwidth: at least 1 bit/s (bandwidths are whole bits per second, and a zero one
/// would never send), and fast enough that a packet of `packet_bytes` takes at most the longest
/// duration.
fn bandwidth(source: &str, field: &str, gbps: f64, packet_bytes: u32) -> Result<(), SimError> {
    const BIT_PER_S_GBPS: f64 = 1e-9;
    let packet_gbps = f64::from(packet_bytes) * 8.0 / time::to_seconds(MAX_DURATION_PS) * 1e-9;
    let (min, why) = if packet_gbps > BIT_PER_S_GBPS {
        (
            packet_gbps,
            format!(
                "so that a packet of machine.packet_bytes = {packet_bytes} takes at most {:e} s, \
                 the longest duration",
                time::to_seconds(MAX_DURATION_PS)
            ),
        )
    } else {
        (BIT_PER_S_GBPS, "1 bit/s".to_string())
    };
    if gbps.is_finite() && gbps >= min && gbps <= MAX_BANDWIDTH_GBPS {
        Ok(())
    } else if gbps > MAX_BANDWIDTH_GBPS {
        Err(SimError::config(
            source,
            field,
            format!("must be at most {MAX_BANDWIDTH_GBPS:e} (1 Pb/s), got {gbps}"),
            None,
        ))
    } else {
        Err(SimError::config(
            source,
            field,
            format!("must be at least {min:e} ({why}), got {gbps}"),
            None,
        ))
    }
}

fn positive(source: &str, field: &str, v: f64) -> Result<(), SimError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(SimError::config(
            source,
            field,
            format!("must be a positive number, got {v}"),
            None,
        ))
    }
}

fn non_negative(source: &str, field: &str, v: f64) -> Result<(), SimError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(SimError::config(
            source,
            field,
            format!("must be a non-negative number, got {v}"),
            None,
        ))
    }
}

fn check_override(
    source: &str,
    field: &str,
    o: &LinkOverride,
    packet_bytes: u32,
) -> Result<(), SimError> {
    if let Some(b) = o.bandwidth_gbps {
        bandwidth(source, &format!("{field}.bandwidth_gbps"), b, packet_bytes)?;
    }
    if let Some(l) = o.latency_ns {
        time_field(source, &format!("{field}.latency_ns"), l, NS)?;
    }
    Ok(())
}

fn strip_nulls(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// A JSON document read only to refuse a key given twice in one object, as TOML does (a JSON
/// reader keeps the last, so the first would be silently dropped).
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeys)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Self, A::Error> {
        while a.next_element::<UniqueKeys>()?.is_some() {}
        Ok(self)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Self, A::Error> {
        let mut seen = std::collections::BTreeSet::new();
        while let Some(k) = a.next_key::<String>()? {
            if !seen.insert(k.clone()) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{k}` is given twice in one object"
                )));
            }
            a.next_value::<UniqueKeys>()?;
        }
        Ok(self)
    }
}

/// JSON has `null` and TOML does not; reject it with the path rather than guessing.
fn json_to_toml(j: &serde_json::Value, path: &str) -> Result<toml::Value, (String, String)> {
    use serde_json::Value as J;
    Ok(match j {
        J::Null => {
            return Err((
                path.to_string(),
                "null is not a value; leave the field out for its default".into(),
            ))
        }
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => match n.as_f64() {
                Some(f) => toml::Value::Float(f),
                None => return Err((path.to_string(), format!("number {n} is out of range"))),
            },
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(a) => toml::Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, v)| json_to_toml(v, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        J::Object(o) => {
            let mut t = toml::Table::new();
            for (k, v) in o {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                t.insert(k.clone(), json_to_toml(v, &p)?);
            }
            toml::Value::Table(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[machine]` lines, `[machine.topology]` lines and `[jobs.workload]` lines of a config.
    fn error(machine: &str, topology: &str, workload: &str) -> String {
        let text = format!(
            "[machine]\n{machine}\n[machine.topology]\n{topology}\n\
             [machine.links]\nbandwidth_gbps = 10.0\n\
             [[jobs]]\nranks = 2\n[jobs.workload]\n{workload}\n"
        );
        Config::parse(&text, Format::Toml, "t.toml")
            .expect_err("an invalid configuration")
            .to_string()
    }

    const SWITCH: &str = "kind = \"single_switch\"\nnodes = 2";
    const PING: &str = "kind = \"pingpong\"";

    /// Errors inside a table selected by `kind` name the field, in the configuration's terms
    /// (they used to name only the table, and say e.g. "expected u32").
    #[test]
    fn errors_in_tagged_tables_name_the_field() {
        let cases = [
            (
                error("", SWITCH, "kind = \"pingpong\"\niterations = -1"),
                "t.toml: jobs[0].workload.iterations: expected a non-negative integer, got -1",
            ),
            (
                error("", SWITCH, "kind = \"pingpong\"\niterations = 5000000000"),
                "t.toml: jobs[0].workload.iterations: expected a non-negative integer of at most \
                 4294967295, got 5000000000",
            ),
            (
                error(
                    "",
                    SWITCH,
                    "kind = \"uniform_random\"\ninterval_us = \"fast\"",
                ),
                "t.toml: jobs[0].workload.interval_us: expected a number, got \"fast\"",
            ),
            (
                error(
                    "",
                    "kind = \"torus\"\ndims = [4, 4]\nnodes_per_switch = 2.5",
                    PING,
                ),
                "t.toml: machine.topology.nodes_per_switch: expected a non-negative integer, \
                 got 2.5",
            ),
            (
                error("", "kind = \"fat_tree\"\nlevels = 300\nradix = 8", PING),
                "t.toml: machine.topology.levels: expected a non-negative integer of at most 255, \
                 got 300",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
        let e = error("", SWITCH, "kind = \"ft\"\nclass = \"Z\"");
        assert!(
            e.starts_with("t.toml: jobs[0].workload.class: unknown variant `Z`"),
            "{e}"
        );
        // A bad kind is the kind's fault, not another field's.
        let e = error("", SWITCH, "kind = \"bogus\"\niterations = 3");
        assert!(
            e.starts_with("t.toml: jobs[0].workload.kind: unknown variant `bogus`"),
            "{e}"
        );
        // Errors that already name the field keep the table's path.
        let e = error("", SWITCH, "kind = \"pingpong\"\nsize = 3");
        assert!(
            e.starts_with("t.toml: jobs[0].workload: unknown field `size`"),
            "{e}"
        );
        let e = error("", "kind = \"fat_tree\"", PING);
        assert_eq!(e, "t.toml: machine.topology: missing field `radix`");
    }

    #[test]
    fn type_errors_elsewhere_are_in_the_configurations_terms() {
        let cases = [
            (
                error("ranks_per_node = 2.5", SWITCH, PING),
                "t.toml: machine.ranks_per_node: expected a non-negative integer, got 2.5",
            ),
            (
                error("switching = 3", SWITCH, PING),
                "t.toml: machine.switching: expected a name, got 3",
            ),
            (
                error("switch_latency_ns = true", SWITCH, PING),
                "t.toml: machine.switch_latency_ns: expected a number, got true",
            ),
            (
                error("", "kind = \"torus\"\ndims = 4", PING),
                "t.toml: machine.topology.dims: expected an array, got 4",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn lookup_follows_dotted_paths_and_indices() {
        let v: toml::Value = toml::from_str("a = { b = [1, { c = 2 }] }\n[[jobs]]\nx = 3").unwrap();
        assert_eq!(lookup(&v, "a.b[0]"), Some(&toml::Value::Integer(1)));
        assert_eq!(lookup(&v, "a.b[1].c"), Some(&toml::Value::Integer(2)));
        assert_eq!(lookup(&v, "jobs[0].x"), Some(&toml::Value::Integer(3)));
        assert_eq!(lookup(&v, "a.b[2]"), None);
        assert_eq!(lookup(&v, "nope"), None);
    }
}
