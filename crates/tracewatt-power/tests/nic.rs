//! NIC interrupt coalescing against hand calculations: rx_usecs 18 us, at most 6 frames per
//! interrupt, tx_usecs 35 us; 1,500-byte frames take 12 us at 1 Gb/s. Channel 0 enters node 0
//! (no latency), channel 1 leaves it.

use tracewatt_core::time::PS_PER_US as US;
use tracewatt_core::Ps;
use tracewatt_power::{Account, NicParams, NicPort, NicPower, PowerModel, Timeline};

const W_MBPS: f64 = 1.25e-2;
const W_IRQ: f64 = 1.56e-4;

fn nic() -> NicPower {
    NicPower::new(
        NicParams {
            rx_usecs_ps: 18 * US,
            rx_max_frames: 6,
            tx_usecs_ps: 35 * US,
            w_per_mbps: W_MBPS,
            w_per_interrupt_per_s: W_IRQ,
        },
        vec![
            NicPort::Rx {
                node: 0,
                latency_ps: 0,
            },
            NicPort::Tx { node: 0 },
        ],
        1,
        Timeline::new(1, 0, 64),
    )
}

/// Plays what the engine does: releases whatever is due before `t`.
fn release_until(n: &mut NicPower, t: Ps, out: &mut Vec<(u32, Ps)>) {
    while let Some(d) = n.due().filter(|d| *d < t) {
        let mut got = Vec::new();
        n.release(d, &mut got);
        out.extend(got.into_iter().map(|m| (m, d)));
    }
}

/// Receives one-frame messages `0..` whose transmissions into the node span `frames` (us);
/// returns when each reached MPI, in us.
fn receive(n: &mut NicPower, frames: &[(u64, u64)]) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for (k, &(start, end)) in frames.iter().enumerate() {
        release_until(n, start * US, &mut out);
        n.link_ready(0, start * US);
        n.on_transmit(0, start * US, end * US, 1500);
        release_until(n, end * US, &mut out);
        if n.deliver(0, k as u32, end * US) {
            out.push((k as u32, end * US));
        }
    }
    release_until(n, Ps::MAX, &mut out);
    out.into_iter().map(|(m, t)| (m, t / US)).collect()
}

fn finish(n: NicPower, end_us: u64) -> Account {
    let mut a = Account::new(Timeline::new(1, 0, 64), vec!["nics_w"]);
    Box::new(n).finish(end_us * US, &mut a);
    a
}

fn column_u64(a: &Account, name: &str) -> u64 {
    let t = a.tables.iter().find(|t| t.name == "nics").unwrap();
    match &t.columns.iter().find(|c| c.0 == name).unwrap().1 {
        tracewatt_core::Column::U64(v) => v[0],
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn frames_further_apart_than_rx_usecs_get_an_interrupt_each() {
    let mut n = nic();
    // Paced at 600 Mb/s: a frame every 20 us, each 12 us on the wire.
    let frames: Vec<(u64, u64)> = (0..5).map(|k| (20 * k + 8, 20 * k + 20)).collect();
    let got = receive(&mut n, &frames);
    let want: Vec<(u32, u64)> = (0..5).map(|k| (k as u32, 20 * k + 20 + 18)).collect();
    assert_eq!(got, want);
    let a = finish(n, 200);
    assert_eq!(column_u64(&a, "interrupts"), 5);
    // Each waited rx_usecs.
    let e = &a.rows[0];
    let want_j = W_MBPS * 5.0 * 1500.0 * 8.0 / 1e6 + W_IRQ * 5.0;
    assert!(
        (e.energy_j - want_j).abs() < 1e-15,
        "{} vs {want_j}",
        e.energy_j
    );
}

#[test]
fn a_burst_is_serviced_six_frames_at_a_time() {
    let mut n = nic();
    // Back to back at line rate: 12 us apart (< rx_usecs), 14 frames.
    let frames: Vec<(u64, u64)> = (0..14).map(|k| (12 * k, 12 * k + 12)).collect();
    let got = receive(&mut n, &frames);
    // Frames 0-5 arrive at 12..72 us: the 6th fires at once; 6-11 at 84..144; 12 and 13 at
    // 156 and 168, then rx_usecs of silence: 168 + 18.
    let at = |k: u64| match k {
        0..=5 => 72,
        6..=11 => 144,
        _ => 186,
    };
    let want: Vec<(u32, u64)> = (0..14).map(|k| (k as u32, at(k))).collect();
    assert_eq!(got, want);
    let a = finish(n, 300);
    assert_eq!(column_u64(&a, "interrupts"), 3);
    assert_eq!(column_u64(&a, "rx_frames"), 14);
}

#[test]
fn a_transmit_completion_rides_on_a_receive_interrupt_or_fires_its_own() {
    // The completion at 90 us would fire at 125; the frame arriving at 100 restarts the timer,
    // which fires at 118 and services both: one interrupt.
    let mut n = nic();
    n.link_ready(1, 80 * US);
    n.on_transmit(1, 80 * US, 90 * US, 64);
    assert_eq!(receive(&mut n, &[(88, 100)]), [(0, 118)]);
    assert_eq!(column_u64(&finish(n, 200), "interrupts"), 1);
    // A completion at 50 us fires alone at 85, before the frame arrives: two interrupts.
    let mut n = nic();
    n.link_ready(1, 40 * US);
    n.on_transmit(1, 40 * US, 50 * US, 64);
    assert_eq!(receive(&mut n, &[(88, 100)]), [(0, 118)]);
    assert_eq!(column_u64(&finish(n, 200), "interrupts"), 2);
}

#[test]
fn interrupts_after_the_end_of_the_run_are_not_counted() {
    let mut n = nic();
    n.link_ready(0, 0);
    n.on_transmit(0, 0, 12 * US, 1500);
    // The run ends at 20 us, before the interrupt at 30 us.
    let a = finish(n, 20);
    assert_eq!(column_u64(&a, "interrupts"), 0);
    assert_eq!(column_u64(&a, "rx_frames"), 1);
}
