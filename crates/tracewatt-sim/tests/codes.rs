//! The `codes-dragonfly-1056` preset against CODES' `modelnet-synthetic-dragonfly.conf`, and the
//! UGAL behaviour a single message shows on it (docs/comparing.md).

use tracewatt_net::TopologySpec;
use tracewatt_sim::{machine_info, simulate_with, Column, Config, Format, Results};

mod script;
use script::{recv, send, Script};

/// The preset, one job of two ranks on `nodes`, eager sends only (no control packets: every
/// packet on the network is the message's) and `machine_extra` merged over the preset.
fn config(nodes: [u32; 2], machine_extra: &str) -> Config {
    let text = format!(
        r#"
seed = 7
[machine]
preset = "codes-dragonfly-1056"
{machine_extra}
[mpi]
send_overhead_ns = 0
recv_overhead_ns = 0
eager_limit_bytes = 10000000
[[jobs]]
ranks = 2
allocation = "list"
node_list = [{}, {}]
mapping = "round_robin"
[jobs.workload]
kind = "pingpong"
"#,
        nodes[0], nodes[1]
    );
    Config::parse(&text, Format::Toml, "codes.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// Packets of a one-way message of `bytes` from `nodes[0]` to `nodes[1]` that took the
/// non-minimal path, and all its packets. Between two groups a minimal path crosses one global
/// link and a Valiant path two, so the non-minimal packets are the global transmissions less
/// the packets.
fn non_minimal(nodes: [u32; 2], bytes: u64, machine_extra: &str) -> (u64, u64) {
    let c = config(nodes, machine_extra);
    let r: Results = simulate_with(
        &c,
        "codes.toml",
        vec![Box::new(Script(vec![
            vec![send(1, bytes)],
            vec![recv(0, bytes)],
        ]))],
        &mut |_| true,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let links = r.table("links").expect("links table");
    let column = |name: &str| {
        &links
            .columns
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("links.{name}"))
            .1
    };
    let (Column::Str(kind), Column::U64(packets)) = (column("kind"), column("packets")) else {
        panic!("links.kind / links.packets of an unexpected type");
    };
    let count = |k: &str| -> u64 {
        kind.iter()
            .zip(packets)
            .filter(|(x, _)| *x == k)
            .map(|(_, p)| p)
            .sum()
    };
    // Every packet crosses two node links (injection and ejection).
    let sent = count("node") / 2;
    (count("global") - sent, sent)
}

#[test]
fn preset_builds_the_machine_codes_describes() {
    let c = config([0, 1], "");
    let m = &c.machine;
    // modelnet-synthetic-dragonfly.conf: num_routers = 8, 264 repetitions of 4 nodes and one
    // router; dragonfly.c: a = 2p = 2h, groups = a * h + 1.
    assert_eq!(
        m.topology,
        TopologySpec::Dragonfly {
            groups: 33,
            routers_per_group: 8,
            nodes_per_router: 4,
            global_links_per_router: 4,
            arrangement: Default::default(),
        }
    );
    // packet_size = 512, cn_vc_size = local_vc_size = 4096, router_delay 50 ns.
    assert_eq!((m.packet_bytes, m.buffer_bytes), (512, 4096));
    assert_eq!(m.switch_latency_ns.to_bits(), 50f64.to_bits());
    let info = machine_info(&c, "codes.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (info["nodes"].as_u64(), info["switches"].as_u64()),
        (Some(1056), Some(264))
    );
    // GiB/s to bit/s: x 2^30 bytes x 8 bits.
    let gib_bps = |gib: f64| gib * (1u64 << 33) as f64 / 1e9;
    let want = [
        // one link per node; 8 routers fully connected in each of 33 groups; 264 x 4 / 2.
        ("global", 264 * 4 / 2, gib_bps(4.7)),
        ("local", 33 * 8 * 7 / 2, gib_bps(5.25)),
        ("node", 1056, gib_bps(5.25)),
    ];
    let classes = info["link_classes"].as_array().expect("link_classes");
    assert_eq!(classes.len(), want.len());
    for (class, (kind, links, gbps)) in classes.iter().zip(want) {
        assert_eq!(class["kind"], kind);
        assert_eq!(class["links"].as_u64(), Some(links), "{kind}");
        let got = class["bandwidth_gbps"].as_f64().expect("bandwidth");
        // The configured Gb/s are rounded to whole bit/s.
        assert!((got - gbps).abs() < 1e-9, "{kind}: {got} Gb/s, want {gbps}");
        assert_eq!(class["latency_ns"].as_f64(), Some(0.0), "{kind}");
    }
}

/// Node 0 sits on router 0 of group 0, which holds the global link to group 1 (absolute
/// arrangement: router 0's ports go to groups 1-4), whose far end is router 8 with node 32: the
/// minimal path is that one global link. A channel's UGAL occupancy counts a packet from its
/// queueing until it starts onward at the next router (50 ns after it started on the channel).
///
/// Packet k reaches router 0 at 50 + 90.82 k ns (node link, 512 B at 45.10 Gb/s) but the global
/// link needs 101.45 ns per packet (40.37 Gb/s), so packet k starts at 50 + 101.45 k ns once a
/// queue has formed, falling 10.63 ns further behind per packet. Packet k sees packet k-1 while
/// (k-1) x 10.63 > 90.82 - 50: first for k = 5, whose 512 B x 1 minimal hop beats an empty
/// first Valiant hop. Packet 5 is diverted, the queue is gone, and packets 6 and 7 find it
/// empty again: 1 of 8 non-minimal. A threshold of one packet per minimal hop removes that.
/// With the global link as fast as the node link no queue forms: no packet is diverted.
#[test]
fn ugal_counts_the_message_own_packets_as_queue() {
    assert_eq!(non_minimal([0, 32], 4096, ""), (1, 8));
    let threshold = "[machine.routing]\nugal_threshold_bytes = 512";
    assert_eq!(non_minimal([0, 32], 4096, threshold), (0, 8));
    let equal = "[machine.links.global]\nbandwidth_gbps = 45.097156608";
    assert_eq!(non_minimal([0, 1055], 1 << 20, equal), (0, 2048));
}
