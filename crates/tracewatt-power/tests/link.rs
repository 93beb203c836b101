//! The link state machine against hand calculations. Timing used throughout: idle_timeout 10 us,
//! sleep_time 2 us, wake_time 3 us; ports draw 4 W active and 1 W in LPI.

use tracewatt_core::time::PS_PER_US as US;
use tracewatt_power::PowerModel;
use tracewatt_power::{
    Depth, FastWake, LinkControl, LinkPolicy, LinkPower, LinkSetup, MpiCall, PhyTiming,
    PolicySettings, PortOwner, PortPower, Timeline,
};

fn timing(policy: LinkPolicy, refresh_period_us: u64, refresh_time_us: u64) -> LinkSetup {
    LinkSetup {
        phy: PhyTiming {
            sleep_time_ps: 2 * US,
            wake_time_ps: 3 * US,
            refresh_period_ps: refresh_period_us * US,
            refresh_time_ps: refresh_time_us * US,
            fast_wake: None,
        },
        policy: PolicySettings::new(policy, 10 * US),
    }
}

/// One link: channel 0 and channel 1 are its two directions.
fn link(control: LinkControl, t: LinkSetup) -> LinkPower {
    let port = PortPower {
        active_w: 4.0,
        lpi_w: 1.0,
    };
    LinkPower::new(
        &[control; 2],
        &[1, 0],
        vec![t; 2],
        vec![port; 2],
        vec![PortOwner::Switch(0); 2],
        Timeline::new(2, 0, 1024),
    )
}

/// Asks to send on `ch` at `now`, transmits for 1 us, returns the start.
fn send(lp: &mut LinkPower, ch: u32, now_us: u64) -> u64 {
    let start = lp.link_ready(ch, now_us * US);
    lp.on_transmit(ch, start, start + US, 100);
    start
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn a_packet_within_the_timeout_is_not_delayed() {
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Timeout, 0, 0));
    assert_eq!(send(&mut lp, 0, 0), 0);
    assert_eq!(send(&mut lp, 0, 11), 11 * US); // idle 10 us exactly: still active
    let (r, _) = lp.close(12 * US);
    assert_eq!(
        (r[0].wakes, r[0].sleep_ps, r[0].lpi_ps, r[0].wake_delay_ps),
        (0, 0, 0, 0)
    );
    assert!(close(r[0].energy_j, 4.0 * 12e-6));
}

#[test]
fn a_packet_during_sleeping_waits_for_the_sleep_then_the_wake() {
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Timeout, 0, 0));
    send(&mut lp, 0, 0); // busy until 1 us; sleeps at 11 us, LPI from 13 us
    assert_eq!(send(&mut lp, 0, 12), 16 * US); // sleep ends 13, wake 13..16
    let (r, _) = lp.close(17 * US);
    assert_eq!(r[0].wakes, 1);
    assert_eq!(r[0].wake_delay_ps, 4 * US);
    assert_eq!(
        (r[0].sleep_ps, r[0].lpi_ps, r[0].wake_ps),
        (2 * US, 0, 3 * US)
    );
    assert!(close(r[0].energy_j, 4.0 * 17e-6)); // never in LPI: all at active power
}

#[test]
fn a_packet_in_lpi_pays_one_wake_and_lpi_saves_power() {
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Timeout, 0, 0));
    send(&mut lp, 0, 0);
    assert_eq!(send(&mut lp, 0, 30), 33 * US); // LPI 13..30, wake 30..33
    let (r, _) = lp.close(40 * US);
    assert_eq!(
        (r[0].sleep_ps, r[0].lpi_ps, r[0].wake_ps, r[0].wakes),
        (2 * US, 17 * US, 3 * US, 1)
    );
    // 23 us at 4 W + 17 us at 1 W.
    assert!(
        close(r[0].energy_j, 4.0 * 23e-6 + 1.0 * 17e-6),
        "{}",
        r[0].energy_j
    );
}

#[test]
fn refreshes_in_lpi_are_counted_and_cost_active_power() {
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Timeout, 5, 1));
    send(&mut lp, 0, 0);
    send(&mut lp, 0, 30); // LPI 13..30 = 17 us: 3 refreshes of 1 us
    let (r, _) = lp.close(40 * US);
    assert_eq!(r[0].refreshes, 3);
    assert!(
        close(r[0].energy_j, 4.0 * 26e-6 + 1.0 * 14e-6),
        "{}",
        r[0].energy_j
    );
}

#[test]
fn the_run_ends_in_lpi_without_a_wake() {
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Timeout, 0, 0));
    send(&mut lp, 0, 0);
    let (r, _) = lp.close(100 * US); // sleep 11..13, LPI 13..100
    assert_eq!(
        (r[0].sleep_ps, r[0].lpi_ps, r[0].wakes),
        (2 * US, 87 * US, 0)
    );
    assert!(close(r[0].energy_j, 4.0 * 13e-6 + 1.0 * 87e-6));
    // The other direction never sent: LPI from 12 us (idle from 0).
    assert_eq!(r[1].lpi_ps, 88 * US);
}

#[test]
fn the_run_ends_while_sleeping() {
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Timeout, 0, 0));
    send(&mut lp, 0, 0);
    let (r, _) = lp.close(12 * US); // sleep started at 11 us
    assert_eq!((r[0].sleep_ps, r[0].lpi_ps), (US, 0));
}

#[test]
fn zero_timeout_sleeps_after_every_packet_but_not_between_back_to_back_ones() {
    let mut t = timing(LinkPolicy::Timeout, 0, 0);
    t.policy.idle_timeout_ps = 0;
    let mut lp = link(LinkControl::Independent, t);
    // Idle from t=0: sleeping at once, LPI from 2 us; asked at 1 us -> the sleep completes,
    // then the wake.
    assert_eq!(send(&mut lp, 0, 1), 5 * US);
    let start = lp.link_ready(0, 6 * US); // back to back after the packet ending at 6 us
    assert_eq!(start, 6 * US);
    lp.on_transmit(0, start, 7 * US, 100);
    assert_eq!(send(&mut lp, 0, 20), 23 * US); // gap 13 us: sleep 7..9, LPI 9..20, wake
    let (r, _) = lp.close(24 * US);
    assert_eq!(r[0].wakes, 2);
}

#[test]
fn always_on_never_delays_and_draws_active_power() {
    let mut lp = link(LinkControl::Paired, timing(LinkPolicy::AlwaysOn, 0, 0));
    send(&mut lp, 0, 0);
    assert_eq!(send(&mut lp, 1, 500), 500 * US);
    let (r, _) = lp.close(1000 * US);
    for x in &r {
        assert_eq!((x.lpi_ps, x.wakes, x.wake_delay_ps), (0, 0, 0));
        assert!(close(x.energy_j, 4.0 * 1000e-6));
    }
}

#[test]
fn paired_directions_sleep_and_wake_together() {
    let mut lp = link(LinkControl::Paired, timing(LinkPolicy::Timeout, 0, 0));
    send(&mut lp, 0, 0);
    // The link is awake: direction 0 was busy recently.
    assert_eq!(send(&mut lp, 1, 5), 5 * US);
    // Idle since 6 us: sleep 16..18, LPI 18..20; direction 0 wakes the link 20..23.
    assert_eq!(send(&mut lp, 0, 20), 23 * US);
    // Direction 1 asks during the wake: it waits for the same wake, no second wake.
    assert_eq!(send(&mut lp, 1, 21), 23 * US);
    let (r, _) = lp.close(30 * US);
    assert_eq!((r[0].wakes, r[1].wakes), (1, 0));
    assert_eq!((r[0].wake_delay_ps, r[1].wake_delay_ps), (3 * US, 2 * US));
    // Both ports: LPI 18..20 only (the link stays busy until 24 us, idle 6 us to the end).
    assert_eq!((r[0].lpi_ps, r[1].lpi_ps), (2 * US, 2 * US));
    assert!(close(
        r[0].energy_j + r[1].energy_j,
        2.0 * (4.0 * 28e-6 + 1.0 * 2e-6)
    ));
}

#[test]
fn a_paired_wake_lasts_the_waking_transmitters_wake_time() {
    // Channel 0 (a NIC) wakes in 3 us, channel 1 (the switch port) in 30 us.
    let port = PortPower {
        active_w: 4.0,
        lpi_w: 1.0,
    };
    let nic = timing(LinkPolicy::Timeout, 0, 0);
    let mut switch = nic;
    switch.phy.wake_time_ps = 30 * US;
    let mut lp = LinkPower::new(
        &[LinkControl::Paired; 2],
        &[1, 0],
        vec![nic, switch],
        vec![port; 2],
        vec![PortOwner::Node(0), PortOwner::Switch(0)],
        Timeline::new(2, 0, 1024),
    );
    send(&mut lp, 0, 0);
    // Idle since 1 us: sleep 11..13, LPI 13..20; the NIC wakes the link 20..23.
    assert_eq!(send(&mut lp, 0, 20), 23 * US);
    // The switch's frame during that wake waits for it alone, not for its own 30 us.
    assert_eq!(send(&mut lp, 1, 21), 23 * US);
    // Idle since 24 us: sleep 34..36, LPI 36..50; the switch wakes the link 50..80.
    assert_eq!(send(&mut lp, 1, 50), 80 * US);
    // The NIC's frame during the switch's wake waits for its end, 25 us (full duplex: not for
    // the switch's frame).
    assert_eq!(send(&mut lp, 0, 55), 80 * US);
    let (r, _) = lp.close(90 * US);
    assert_eq!((r[0].wakes, r[1].wakes), (1, 1));
    assert_eq!((r[0].wake_delay_ps, r[1].wake_delay_ps), (28 * US, 32 * US));
    assert_eq!((r[0].wake_ps, r[0].lpi_ps), (33 * US, 21 * US));
}

#[test]
fn independent_directions_sleep_alone() {
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Timeout, 0, 0));
    send(&mut lp, 0, 0);
    // Direction 1 has been idle since 0: sleep 10..12, LPI from 12; asked at 5 -> active.
    assert_eq!(send(&mut lp, 1, 5), 5 * US);
    assert_eq!(send(&mut lp, 0, 20), 23 * US); // own FSM: idle since 1, LPI 13..20
    assert_eq!(send(&mut lp, 1, 21), 24 * US); // own FSM: idle since 6, LPI 18..21, own wake
    let (r, _) = lp.close(30 * US);
    assert_eq!((r[0].wakes, r[1].wakes), (1, 1));
    assert_eq!((r[0].lpi_ps, r[1].lpi_ps), (7 * US, 3 * US));
}

#[test]
fn each_link_follows_its_own_control() {
    // Channels 0 and 1: a paired link; 2 and 3: an independent one. Each behaves as the
    // single-mode tests above.
    let port = PortPower {
        active_w: 4.0,
        lpi_w: 1.0,
    };
    let t = timing(LinkPolicy::Timeout, 0, 0);
    let mut lp = LinkPower::new(
        &[
            LinkControl::Paired,
            LinkControl::Paired,
            LinkControl::Independent,
            LinkControl::Independent,
        ],
        &[1, 0, 3, 2],
        vec![t; 4],
        vec![port; 4],
        vec![PortOwner::Switch(0); 4],
        Timeline::new(2, 0, 1024),
    );
    assert_eq!(lp.units(), 3);
    for base in [0, 2] {
        send(&mut lp, base, 0);
        send(&mut lp, base + 1, 5);
    }
    assert_eq!(send(&mut lp, 0, 20), 23 * US);
    assert_eq!(send(&mut lp, 1, 21), 23 * US);
    assert_eq!(send(&mut lp, 2, 20), 23 * US);
    assert_eq!(send(&mut lp, 3, 21), 24 * US);
    let (r, _) = lp.close(30 * US);
    let wakes: Vec<u64> = r.iter().map(|x| x.wakes).collect();
    let lpi: Vec<u64> = r.iter().map(|x| x.lpi_ps / US).collect();
    assert_eq!(wakes, [1, 0, 1, 1]);
    assert_eq!(lpi, [2, 2, 7, 3]);
}

#[test]
fn timeline_integrates_to_the_saving() {
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Timeout, 0, 0));
    send(&mut lp, 0, 0);
    let (r, mut tl) = lp.close(100 * US);
    let drawn_j: f64 = tl
        .bins(100 * US)
        .iter()
        .map(|(lo, hi, w)| w[0] * (hi - lo) as f64 * 1e-12)
        .sum();
    // Two ports at 4 W for 100 us, less (4 - 1) W x each direction's LPI time.
    let saved_j = 2.0 * 4.0 * 100e-6 - drawn_j;
    let want = 3.0 * (r[0].lpi_ps + r[1].lpi_ps) as f64 * 1e-12;
    assert!((saved_j - want).abs() < 1e-15, "{saved_j} vs {want}");
}

/// The timing above with 802.3bj's second depth: fast wake of no sleep time, a 0.5 us wake and
/// half the LPI saving (the port draws 4 - 0.5 x 3 = 2.5 W in it).
fn two_depths(policy: LinkPolicy) -> LinkSetup {
    let mut t = timing(policy, 0, 0);
    t.phy.fast_wake = Some(FastWake {
        sleep_time_ps: 0,
        wake_time_ps: US / 2,
        saving: 0.5,
    });
    t
}

#[test]
fn the_oracle_sleeps_in_the_gaps_past_break_even_and_adds_no_delay() {
    // Break-even Ts + Tw = 5 us. Gaps of 4, 5, 6 and 20 us after each 1 us packet, twice: it
    // sleeps in the 6 us gaps (LPI 6 - 5 = 1 us) and the 20 us ones (LPI 15 us), waking 3 us
    // ahead of the next packet, which goes when it asked.
    let mut lp = link(LinkControl::Independent, timing(LinkPolicy::Oracle, 0, 0));
    let mut t = 0;
    assert_eq!(send(&mut lp, 0, t), 0);
    for _ in 0..2 {
        for gap in [4, 5, 6, 20] {
            t += 1 + gap;
            assert_eq!(send(&mut lp, 0, t), t * US, "no delay at {t} us");
        }
    }
    // 9 packets and 2 x 35 us of gaps: the last ends at 79 us.
    assert_eq!(t + 1, 79);
    let (r, _) = lp.close(79 * US);
    assert_eq!(
        (r[0].wakes, r[0].wake_delay_ps, r[0].sleep_ps, r[0].wake_ps),
        (4, 0, 8 * US, 12 * US)
    );
    assert_eq!(r[0].lpi_ps, 32 * US);
    // 79 - 32 = 47 us at 4 W and 32 us at 1 W; always on: 79 us at 4 W = 316 uJ.
    assert!(
        close(r[0].energy_j, 4.0 * 47e-6 + 1.0 * 32e-6),
        "{}",
        r[0].energy_j
    );
}

#[test]
fn the_oracle_picks_fast_wake_for_a_middle_gap_and_deep_sleep_for_a_long_one() {
    // A 4 us gap: deep sleep cannot reach LPI; fast wake saves 0.5 x (4 - 0.5) us. A 20 us gap:
    // deep saves 20 - 5 = 15 us of the saving, fast 0.5 x 19.5 = 9.75 us.
    let mut lp = link(LinkControl::Independent, two_depths(LinkPolicy::Oracle));
    send(&mut lp, 0, 0);
    // Fast wake: LPI 1..4.5, wake 4.5..5.
    assert_eq!(send(&mut lp, 0, 5), 5 * US);
    // Deep sleep: sleep 6..8, LPI 8..23, wake 23..26.
    assert_eq!(send(&mut lp, 0, 26), 26 * US);
    let (r, _) = lp.close(27 * US);
    assert_eq!((r[0].lpi_ps, r[0].fast_lpi_ps), (18_500_000, 3_500_000));
    assert_eq!((r[0].sleep_ps, r[0].wake_ps), (2 * US, 3_500_000));
    // 3.5 us at 2.5 W, 15 us at 1 W, the other 8.5 us at 4 W.
    assert!(
        close(r[0].energy_j, 2.5 * 3.5e-6 + 1.0 * 15e-6 + 4.0 * 8.5e-6),
        "{}",
        r[0].energy_j
    );
}

#[test]
fn a_timeout_in_fast_wake_wakes_in_fast_wakes_time() {
    let mut t = two_depths(LinkPolicy::Timeout);
    t.policy.depth = Depth::FastWake;
    let mut lp = link(LinkControl::Independent, t);
    send(&mut lp, 0, 0);
    // Idle since 1 us: LPI from 11 us (no sleep time) to 30, wake 0.5 us.
    assert_eq!(send(&mut lp, 0, 30), 30 * US + US / 2);
    let (r, _) = lp.close(31 * US + US / 2);
    assert_eq!((r[0].fast_lpi_ps, r[0].wake_delay_ps), (19 * US, US / 2));
    // 19 us at 2.5 W, 12.5 us at 4 W.
    assert!(
        close(r[0].energy_j, 2.5 * 19e-6 + 4.0 * 12.5e-6),
        "{}",
        r[0].energy_j
    );
}

#[test]
fn a_paired_oracle_wakes_in_time_for_the_slower_end() {
    // Channel 0 wakes in 3 us, channel 1 in 30 us: the oracle wakes 30 us ahead, so the 3 us
    // end's packet is not delayed either, and the link waits 27 us awake.
    let fast = timing(LinkPolicy::Oracle, 0, 0);
    let mut slow = fast;
    slow.phy.wake_time_ps = 30 * US;
    let port = PortPower {
        active_w: 4.0,
        lpi_w: 1.0,
    };
    let mut lp = LinkPower::new(
        &[LinkControl::Paired; 2],
        &[1, 0],
        vec![fast, slow],
        vec![port; 2],
        vec![PortOwner::Node(0), PortOwner::Switch(0)],
        Timeline::new(2, 0, 1024),
    );
    send(&mut lp, 0, 0);
    // Gap 1..100: break-even 2 + 30 = 32 us. Sleep 1..3, LPI 3..70, wake 70..73 (channel 0's).
    assert_eq!(send(&mut lp, 0, 100), 100 * US);
    let (r, _) = lp.close(101 * US);
    assert_eq!(
        (r[0].lpi_ps, r[0].wake_ps, r[0].wake_delay_ps),
        (67 * US, 3 * US, 0)
    );
}

/// Rank 0 alone on node 0, whose link is channel 0 (node to switch) and channel 1 (back),
/// both `predictive`, the MPI layer's contexts 3 calls long and confident after 2 repetitions.
fn predictive_node_link() -> LinkPower {
    let port = PortPower {
        active_w: 4.0,
        lpi_w: 1.0,
    };
    LinkPower::new(
        &[LinkControl::Independent; 2],
        &[1, 0],
        vec![timing(LinkPolicy::Predictive, 0, 0); 2],
        vec![port; 2],
        vec![PortOwner::Node(0), PortOwner::Switch(0)],
        Timeline::new(2, 0, 1024),
    )
    .with_forecasts(vec![0], 1, 3, 2)
}

#[test]
fn predictive_learns_a_send_recv_loop_sleeps_its_gaps_and_pays_one_wake_when_it_changes() {
    let mut lp = predictive_node_link();
    assert!(lp.forecasts());
    let call = |kind| MpiCall {
        kind,
        peer: 1,
        bytes: 1024,
    };
    // Each iteration: send (its packet on channel 0, 1 us), receive (the reply on channel 1,
    // 1 us after the send's start), leave MPI when the reply is in, then compute. Returns the
    // send's start and when the rank leaves MPI.
    let iteration = |lp: &mut LinkPower, t: u64| {
        lp.on_call(0, call(0), t * US);
        let s = send(lp, 0, t);
        lp.on_call(0, call(2), (t + 1) * US);
        let r = send(lp, 1, s / US + 1);
        let left = r / US + 1;
        lp.on_leave(0, left * US);
        (s / US, left)
    };
    // Calls S R S R ...: the context (R, S, R) first has 3 calls after iteration 2's receive;
    // its successor S with the 100 us gap is seen at iterations 3 and 4's sends, so from
    // iteration 4's compute on (it leaves at 308 us) the node's forecast is "next use 100 us
    // on". Iterations 1 to 3's gaps are not slept.
    let mut t = 0;
    let mut starts = Vec::new();
    for _ in 0..6 {
        let (s, left) = iteration(&mut lp, t);
        starts.push(s);
        t = left + 100;
    }
    // Every send goes when it asked: the wakes ahead (at 405 and 507 us) end just in time.
    assert_eq!(starts, [0, 102, 204, 306, 408, 510]);
    // Iteration 6 leaves at 512 us and the rank calls after 50 us instead of 100: its call at
    // 562 us wakes the sleeping link at once, and the send waits for the wake: 3 us. The reply
    // comes after it, its link woken by the same call: no delay.
    assert_eq!(iteration(&mut lp, 562), (565, 567));
    let (r, _) = lp.close(567 * US);
    // Each direction slept in three gaps: from 308 us (LPI 310-405), 410 us (412-507) and
    // 512 us (514-562): 238 us of LPI, three sleeps of 2 us and wakes of 3 us.
    for (ch, delay) in [(0, 3 * US), (1, 0)] {
        assert_eq!(
            (r[ch].wakes, r[ch].sleep_ps, r[ch].lpi_ps, r[ch].wake_ps),
            (3, 6 * US, 238 * US, 9 * US),
            "channel {ch}"
        );
        assert_eq!(r[ch].wake_delay_ps, delay);
        // 567 - 238 = 329 us at 4 W and 238 us at 1 W (always on: 2,268 uJ).
        assert!(
            close(r[ch].energy_j, 4.0 * 329e-6 + 1.0 * 238e-6),
            "{}",
            r[ch].energy_j
        );
    }
}

#[test]
fn predictive_on_a_link_between_switches_is_a_timeout() {
    // Both ends switches: no MPI layer forecasts for it, so it sleeps after its idle timeout
    // (10 us): idle 1-20 us, asleep from 11 us, LPI 13-20 us, and the packet waits the wake.
    let mut lp = link(
        LinkControl::Independent,
        timing(LinkPolicy::Predictive, 0, 0),
    )
    .with_forecasts(vec![0], 1, 3, 2);
    assert!(!lp.forecasts());
    send(&mut lp, 0, 0);
    assert_eq!(send(&mut lp, 0, 20), 23 * US);
    let (r, _) = lp.close(24 * US);
    assert_eq!((r[0].lpi_ps, r[0].wake_delay_ps), (7 * US, 3 * US));
}
