use super::*;
use crate::check::check_workload;

fn spec(json: &str) -> WorkloadSpec {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

fn ops(w: &dyn Workload, rank: Rank) -> Vec<Op> {
    w.program(rank)
        .map(|op| op.expect("generator ops never fail"))
        .collect()
}

/// Builds and runs every rank of `json` on `ranks` ranks through the zero-time checker.
fn consistent(json: &str, ranks: u32) -> crate::check::Traffic {
    let w = build(&spec(json), ranks, 7).unwrap_or_else(|e| panic!("{json} on {ranks}: {e}"));
    assert_eq!(w.num_ranks(), ranks);
    let t = check_workload(w.as_ref()).unwrap_or_else(|e| panic!("{json} on {ranks}: {e}"));
    assert_eq!(t.sent.iter().sum::<u64>(), t.received.iter().sum::<u64>());
    t
}

/// Every kind, with the fields it requires.
const ALL_KINDS: [(&str, &str); 21] = [
    ("pingpong", ""),
    ("uniform_random", ""),
    ("near_neighbor", ""),
    ("permutation", ""),
    ("qbox", ""),
    ("stencil4d", ""),
    ("a2a", ""),
    ("allreduce", ""),
    ("bcast", ""),
    ("allgather", ""),
    ("reduce", ""),
    ("paced_stream", r#","rate_mbps":100"#),
    ("shaped_stream", r#","rate_mbps":100"#),
    ("ft", ""),
    ("cg", ""),
    ("mg", ""),
    ("lu", ""),
    ("bt", ""),
    ("sp", ""),
    ("ep", ""),
    ("is", ""),
];

#[test]
fn every_kind_builds_with_defaults() {
    for (kind, required) in ALL_KINDS {
        let s = spec(&format!(r#"{{"kind":"{kind}"{required}}}"#));
        assert_eq!(s.kind_name(), kind);
        let w = build(&s, 16, 1).unwrap_or_else(|e| panic!("{kind}: {e}"));
        // The first ops of every rank are available without materialising the program.
        for r in 0..16 {
            let _ = w.program(r).take(10).count();
        }
    }
}

#[test]
fn synthetic_workloads_are_consistent() {
    let t = consistent(r#"{"kind":"pingpong","iterations":5}"#, 2);
    assert_eq!(t.pairs[&(0, 1)], (5, 5 * 64));
    assert_eq!(t.pairs[&(1, 0)], (5, 5 * 64));
    assert_eq!(t.compute_ps, 5 * 1_000_000_000);
    consistent(r#"{"kind":"pingpong","iterations":3,"bytes":1000000}"#, 5);
    let t = consistent(r#"{"kind":"uniform_random"}"#, 16);
    assert_eq!(t.messages, 16 * 20);
    assert_eq!(t.received.iter().sum::<u64>(), 16 * 20 * 2048);
    consistent(r#"{"kind":"uniform_random","messages":3}"#, 2);
    for n in [1, 2, 8, 12, 27] {
        let t = consistent(r#"{"kind":"near_neighbor","iterations":2}"#, n);
        if n == 27 {
            // 3x3x3 periodic grid: 6 distinct neighbours, 2 iterations.
            assert!(t.received.iter().all(|&b| b == 2 * 6 * 8192));
        }
    }
    for n in [1, 2, 10, 33] {
        consistent(r#"{"kind":"permutation","iterations":4}"#, n);
    }
    for n in [1, 6, 12, 16] {
        consistent(r#"{"kind":"qbox","iterations":2}"#, n);
    }
    for n in [6, 16, 81] {
        let t = consistent(r#"{"kind":"stencil4d","iterations":1}"#, n);
        if n == 81 {
            assert!(t.received.iter().all(|&b| b == 8 * 8192));
        }
    }
    for algo in ["auto", "bruck", "scattered", "pairwise_exchange"] {
        let t = consistent(
            &format!(r#"{{"kind":"a2a","algo":"{algo}","bytes":100}}"#),
            12,
        );
        if algo == "scattered" || algo == "pairwise_exchange" {
            assert!(t.received.iter().all(|&b| b == 11 * 100));
        }
    }
}

#[test]
fn npb_skeletons_are_consistent() {
    let cases: &[(&str, &[u32])] = &[
        (r#"{"kind":"ft","class":"S","iterations":2}"#, &[1, 2, 8]),
        (r#"{"kind":"ft","class":"W","iterations":1}"#, &[64]),
        (
            r#"{"kind":"cg","class":"S","iterations":1}"#,
            &[1, 2, 8, 16],
        ),
        (r#"{"kind":"mg","class":"S","iterations":1}"#, &[1, 2, 8]),
        (r#"{"kind":"lu","class":"S","iterations":1}"#, &[1, 2, 4, 8]),
        (r#"{"kind":"bt","class":"S","iterations":1}"#, &[1, 4, 9]),
        (r#"{"kind":"sp","class":"S","iterations":1}"#, &[4, 16]),
        (r#"{"kind":"ep","class":"S"}"#, &[1, 5]),
        (r#"{"kind":"is","class":"S","iterations":2}"#, &[1, 2, 8]),
    ];
    for (json, sizes) in cases {
        for &n in sizes.iter() {
            let t = consistent(json, n);
            assert!(t.compute_ps > 0, "{json} on {n}: no compute");
            if n > 1 {
                assert!(t.messages > 0, "{json} on {n}: no messages");
            }
        }
    }
}

#[test]
fn npb_compute_follows_the_operation_count() {
    // FT class C on 16 ranks at the default 0.8 Gop/s per rank: ~25 s of compute per rank.
    let w = build(&spec(r#"{"kind":"ft","class":"C"}"#), 16, 0).expect("ft");
    let ps: u64 = ops(w.as_ref(), 0)
        .iter()
        .map(|op| match op {
            Op::Compute { ps } => *ps,
            _ => 0,
        })
        .sum();
    let s = ps as f64 / 1e12;
    assert!((20.0..40.0).contains(&s), "{s} s");
    // compute_scale halves it.
    let w = build(
        &spec(r#"{"kind":"ft","class":"C","compute_scale":0.5}"#),
        16,
        0,
    )
    .expect("ft");
    let half: u64 = ops(w.as_ref(), 0)
        .iter()
        .map(|op| match op {
            Op::Compute { ps } => *ps,
            _ => 0,
        })
        .sum();
    assert!((half as f64 * 2.0 - ps as f64).abs() < 1e6);
}

#[test]
fn cg_sends_the_bytes_npb_sends() {
    // The DUMPI trace of NPB CG class S on 4 ranks (tests/data/dumpi/npb-cg.S-4ranks) holds
    // 18,664,448 point-to-point bytes: 291,632 per rank and conj_grad call (16 calls: 15 timed,
    // 1 untimed), each rank's transpose exchange included. 2 x 2 grid, blocks of 700 rows;
    // ranks 0 and 3 are their own transpose partners, which costs no traffic here.
    let t = consistent(r#"{"kind":"cg","class":"S","iterations":1}"#, 4);
    let own = 26 * 8 * 700;
    assert_eq!(t.sent, [291_632 - own, 291_632, 291_632, 291_632 - own]);
    // 2 x 4 grid: half blocks of 350 rows in every exchange; 2 exchanges per scalar reduction.
    let t = consistent(r#"{"kind":"cg","class":"S","iterations":1}"#, 8);
    let scalars = 52 * 2 * 8 + 2 * 16;
    let half = 26 * 8 * 350;
    for (r, &b) in t.sent.iter().enumerate() {
        let exchanges = if [0, 1, 6, 7].contains(&r) { 2 } else { 3 };
        assert_eq!(b, exchanges * half + scalars, "rank {r}");
    }
}

#[test]
fn bt_sp_share_the_step_between_phases_as_npb_does() {
    // (kind, NPB's operations per step at class C, default Gop/s per rank, compute_rhs share,
    // whether a solve computes between posting a receive and waiting for it).
    let n = 162f64;
    let cases = [
        (
            "sp",
            881.174 * n.powi(3) - 4683.91 * n * n + 11484.5 * n - 19272.4,
            1.2,
            472.0 / 893.0,
            true,
        ),
        (
            "bt",
            3478.8 * n.powi(3) - 17655.7 * n * n + 28023.7 * n,
            2.0,
            440.0 / 3565.0,
            false,
        ),
    ];
    for (kind, step_ops, gops, rhs_share, overlaps) in cases {
        let json = format!(r#"{{"kind":"{kind}","class":"C","iterations":1}}"#);
        let v = ops(build(&spec(&json), 16, 0).expect(kind).as_ref(), 0);
        let computes: Vec<u64> = v
            .iter()
            .filter_map(|op| match op {
                Op::Compute { ps } => Some(*ps),
                _ => None,
            })
            .collect();
        let total: u64 = computes.iter().sum();
        let want = step_ops / 16.0 / gops * 1e3;
        assert!(
            (total as f64 / want - 1.0).abs() < 1e-9,
            "{kind}: {total} ps"
        );
        // compute_rhs comes first, right after copy_faces.
        let first = v.iter().position(|op| matches!(op, Op::Compute { .. }));
        assert!(
            matches!(v[first.expect(kind) - 1], Op::Waitall { .. }),
            "{kind}"
        );
        let share = computes[0] as f64 / total as f64;
        assert!(
            (share - rhs_share).abs() < 1e-9,
            "{kind}: rhs share {share}"
        );
        let overlap = v
            .windows(3)
            .any(|w| matches!(w, [Op::Isend { .. }, Op::Compute { .. }, Op::Wait { .. }]));
        assert_eq!(overlap, overlaps, "{kind}");
    }
}

#[test]
fn errors_name_the_field() {
    let cases = [
        (r#"{"kind":"pingpong"}"#, 1, "workload.ranks"),
        (
            r#"{"kind":"pingpong","iterations":0}"#,
            2,
            "workload.iterations",
        ),
        (
            r#"{"kind":"pingpong","interval_us":-1.0}"#,
            2,
            "workload.interval_us",
        ),
        (r#"{"kind":"uniform_random"}"#, 1, "workload.ranks"),
        (
            r#"{"kind":"near_neighbor","compute_us":-2.0}"#,
            4,
            "workload.compute_us",
        ),
        (r#"{"kind":"a2a","algo":"ring"}"#, 4, "workload.algo"),
        (
            r#"{"kind":"cg"}"#,
            12,
            "workload.ranks: cg needs a power-of-two",
        ),
        (r#"{"kind":"bt"}"#, 8, "workload.ranks: bt needs a square"),
        (r#"{"kind":"sp","iterations":0}"#, 4, "workload.iterations"),
        (
            r#"{"kind":"ep","gflops_per_rank":0.0}"#,
            4,
            "workload.gflops_per_rank",
        ),
        (
            r#"{"kind":"mg","compute_scale":-1.0}"#,
            4,
            "workload.compute_scale",
        ),
        (r#"{"kind":"ft","class":"S"}"#, 8192, "workload.ranks"),
        (r#"{"kind":"a2a"}"#, 0, "workload.ranks"),
        (
            r#"{"kind":"bcast","algo":"ring"}"#,
            4,
            "workload.algo: `ring` does not apply to bcast; expected auto, binomial_tree, scatter_allgather",
        ),
        (
            r#"{"kind":"reduce","root":4}"#,
            4,
            "workload.root: must be a rank of the job (< 4), got 4",
        ),
        (r#"{"kind":"allgather","iterations":0}"#, 4, "workload.iterations"),
        (
            r#"{"kind":"allreduce","compute_us":-1.0}"#,
            4,
            "workload.compute_us",
        ),
        (
            r#"{"kind":"paced_stream","rate_mbps":100}"#,
            1,
            "workload.ranks: paced_stream needs at least 2 ranks, got 1",
        ),
        (
            r#"{"kind":"paced_stream","rate_mbps":0}"#,
            2,
            "workload.rate_mbps: must be a finite number > 0, got 0",
        ),
        (
            r#"{"kind":"shaped_stream","rate_mbps":-5}"#,
            2,
            "workload.rate_mbps",
        ),
        (
            r#"{"kind":"paced_stream","rate_mbps":100,"duration_s":0}"#,
            2,
            "workload.duration_s: must be > 0",
        ),
        (
            r#"{"kind":"paced_stream","rate_mbps":100,"frame_bytes":0}"#,
            2,
            "workload.frame_bytes: must be >= 1",
        ),
        (
            r#"{"kind":"shaped_stream","rate_mbps":100,"bucket_period_us":0}"#,
            2,
            "workload.bucket_period_us: must be > 0",
        ),
        // One 8 ms period at 1 Mb/s earns 8,000 bits: less than a 12,000-bit frame.
        (
            r#"{"kind":"shaped_stream","rate_mbps":1,"duration_s":0.001}"#,
            2,
            "workload.duration_s: 0.001 s at 1 Mb/s in bursts every 8000 us carries no frame",
        ),
        // 1e9 Mb/s for 10 s is 8.3e11 frames of 1,500 bytes.
        (
            r#"{"kind":"paced_stream","rate_mbps":1e9,"duration_s":10}"#,
            2,
            "workload.duration_s: 10 s at 1000000000 Mb/s is 8.3333e11 frames",
        ),
    ];
    for (json, ranks, want) in cases {
        let err = build(&spec(json), ranks, 0).expect_err(json).to_string();
        assert!(err.starts_with(want), "{json}: {err}");
    }
    assert!(serde_json::from_str::<WorkloadSpec>(r#"{"kind":"a2a","byte":4}"#).is_err());
    // The rate has no default.
    let err = serde_json::from_str::<WorkloadSpec>(r#"{"kind":"paced_stream"}"#)
        .expect_err("rate_mbps is required")
        .to_string();
    assert!(err.contains("rate_mbps"), "{err}");
    assert!(serde_json::from_str::<WorkloadSpec>(
        r#"{"kind":"uniform_random","arrival":"bursty"}"#
    )
    .is_err());
    assert!(serde_json::from_str::<WorkloadSpec>(r#"{"kind":"cg","class":"Q"}"#).is_err());
    assert_eq!(
        spec(r#"{"kind":"cg","class":"c"}"#),
        spec(r#"{"kind":"cg","class":"C"}"#)
    );
}

#[test]
fn same_seed_same_ops() {
    for json in [
        r#"{"kind":"uniform_random"}"#,
        r#"{"kind":"uniform_random","arrival":"poisson"}"#,
        r#"{"kind":"permutation"}"#,
    ] {
        let a = build(&spec(json), 24, 99).expect("build");
        let b = build(&spec(json), 24, 99).expect("build");
        let c = build(&spec(json), 24, 100).expect("build");
        let mut differs = false;
        for r in 0..24 {
            assert_eq!(ops(a.as_ref(), r), ops(b.as_ref(), r));
            differs |= ops(a.as_ref(), r) != ops(c.as_ref(), r);
        }
        assert!(differs, "{json}: seed has no effect");
    }
}

#[test]
fn large_jobs_build_and_stream_cheaply() {
    // 8,192 ranks: building and pulling a few ops per rank must not be quadratic.
    for json in [
        r#"{"kind":"uniform_random"}"#,
        r#"{"kind":"permutation"}"#,
        r#"{"kind":"qbox"}"#,
        r#"{"kind":"stencil4d"}"#,
        r#"{"kind":"lu","class":"D"}"#,
    ] {
        let w = build(&spec(json), 8192, 3).expect("build");
        for r in (0..8192).step_by(97) {
            assert!(w.program(r).take(50).count() > 0, "{json}");
        }
    }
}

#[test]
fn dims_create_is_balanced() {
    assert_eq!(dims_create(8192, 3), vec![32, 16, 16]);
    assert_eq!(dims_create(12, 2), vec![4, 3]);
    assert_eq!(dims_create(7, 3), vec![7, 1, 1]);
    assert_eq!(dims_create(16, 4), vec![2, 2, 2, 2]);
}

/// (time of each `WaitUntil`, frames sent after it) of a sender's program.
fn send_groups(ops: &[Op]) -> Vec<(u64, u64)> {
    let mut groups: Vec<(u64, u64)> = Vec::new();
    for op in ops {
        match op {
            Op::WaitUntil { ps } => groups.push((*ps, 0)),
            Op::Isend { .. } => groups.last_mut().expect("a send before any WaitUntil").1 += 1,
            _ => {}
        }
    }
    groups
}

#[test]
fn paced_stream_sends_each_frame_at_its_own_rounded_time() {
    // 1,500-byte frames at 700 Mb/s: one every 12,000 / 700 us = 17,142,857.14 ps. Frame k at
    // round(k x 17,142,857.14 ps) while below 100 us: k = 0..=5 (frame 6 would be at 102.9 us).
    // Frame 4 is at 68,571,429 ps, not 4 x 17,142,857 = 68,571,428: no accumulated rounding.
    let json = r#"{"kind":"paced_stream","rate_mbps":700,"duration_s":100e-6}"#;
    let w = build(&spec(json), 2, 0).expect("build");
    let groups = send_groups(&ops(w.as_ref(), 0));
    let want = [
        0, 17_142_857, 34_285_714, 51_428_571, 68_571_429, 85_714_286,
    ];
    assert_eq!(groups, want.map(|t| (t, 1)));
    // Every frame received; default ack_every 2: 3 ACKs of 64 bytes.
    let t = consistent(json, 2);
    assert_eq!(t.pairs[&(0, 1)], (6, 6 * 1500));
    assert_eq!(t.pairs[&(1, 0)], (3, 3 * 64));
    // Nothing is compute: the sender sleeps until each send time.
    assert_eq!(t.compute_ps, 0);

    // A frame due exactly at the end is not sent: 600 Mb/s is one frame per 20 us, so 100 us
    // holds frames at 0, 20, 40, 60 and 80 us.
    let json = r#"{"kind":"paced_stream","rate_mbps":600,"duration_s":100e-6,"ack_every":0}"#;
    let w = build(&spec(json), 2, 0).expect("build");
    let groups = send_groups(&ops(w.as_ref(), 0));
    assert_eq!(groups, [0u64, 20, 40, 60, 80].map(|us| (us * 1_000_000, 1)));
    let t = consistent(json, 2);
    assert_eq!(t.pairs[&(0, 1)], (5, 5 * 1500));
    assert!(!t.pairs.contains_key(&(1, 0)), "ack_every = 0 sends no ACK");
}

#[test]
fn stream_acks_follow_ack_every() {
    // 8,000 frames of 1,000 bytes at 800 Mb/s (10 us apart) for 80 ms: long enough that the
    // sender waits for its oldest requests (10 ms old) while it sends.
    for (ack_every, ack_bytes, acks) in [(1u32, 64u64, 8000u64), (3, 40, 2666), (7, 0, 1142)] {
        let json = format!(
            r#"{{"kind":"paced_stream","rate_mbps":800,"duration_s":0.08,"frame_bytes":1000,
                "ack_every":{ack_every},"ack_bytes":{ack_bytes}}}"#
        );
        let t = consistent(&json, 3);
        assert_eq!(t.pairs[&(0, 1)], (8000, 8000 * 1000), "{json}");
        assert_eq!(t.pairs[&(1, 0)], (acks, acks * ack_bytes), "{json}");
        assert_eq!(t.sent[2] + t.received[2], 0, "rank 2 does nothing");
    }
    // The sender holds at most 10 ms of requests: its largest waitall before the final one
    // settles about 10 ms / 10 us = 1,000 frames' sends plus their ACKs, far fewer than the
    // stream's 8,000 + 8,000.
    let json = r#"{"kind":"paced_stream","rate_mbps":800,"duration_s":0.08,"frame_bytes":1000,"ack_every":1}"#;
    let w = build(&spec(json), 2, 0).expect("build");
    let sizes: Vec<usize> = ops(w.as_ref(), 0)
        .iter()
        .filter_map(|op| match op {
            Op::Waitall { reqs } => Some(reqs.len()),
            _ => None,
        })
        .collect();
    let (last, during) = sizes.split_last().expect("waitalls");
    assert_eq!(sizes.iter().sum::<usize>(), 16_000);
    // Once 10 ms have passed, each new frame settles the frame (and ACK) sent 1,000 frames ago.
    assert!(during.iter().all(|&n| n == 2), "{during:?}");
    assert_eq!(during.len(), 8000 - 1000);
    assert_eq!(*last, 2000);
}

#[test]
fn shaped_stream_bursts_add_up_to_the_rate() {
    // 100 Mb/s in 8 ms periods earns 800,000 bits = 66.67 frames of 12,000 bits per period;
    // by the end of period j, floor(66.67 (j + 1)) frames: bursts of 66, 67, 67, repeating.
    // 96 ms = 12 whole periods: 100e6 x 0.096 / 12,000 = 800 frames.
    let json = r#"{"kind":"shaped_stream","rate_mbps":100,"duration_s":0.096}"#;
    let w = build(&spec(json), 2, 0).expect("build");
    let groups = send_groups(&ops(w.as_ref(), 0));
    let want: Vec<(u64, u64)> = (0..12u64)
        .map(|j| (j * 8_000_000_000, [66, 67, 67][j as usize % 3]))
        .collect();
    assert_eq!(groups, want);
    assert_eq!(groups.iter().map(|g| g.1).sum::<u64>(), 800);
    let t = consistent(json, 2);
    assert_eq!(t.pairs[&(0, 1)], (800, 800 * 1500));
    assert_eq!(t.pairs[&(1, 0)], (400, 400 * 64));

    // 100 ms is 12.5 periods: 13 bursts (the last starts at 96 ms), floor(13 x 66.67) = 866
    // frames. 600 Mb/s, 1 ms periods: 50 frames per burst, all 100 of them.
    let json = r#"{"kind":"shaped_stream","rate_mbps":100,"duration_s":0.1}"#;
    let t = consistent(json, 2);
    assert_eq!(t.pairs[&(0, 1)].0, 866);
    let json =
        r#"{"kind":"shaped_stream","rate_mbps":600,"duration_s":0.1,"bucket_period_us":1000}"#;
    let w = build(&spec(json), 2, 0).expect("build");
    let groups = send_groups(&ops(w.as_ref(), 0));
    assert_eq!(groups.len(), 100);
    assert!(groups.iter().all(|g| g.1 == 50), "{groups:?}");

    // Below one frame per period some periods send nothing: 1 Mb/s in 8 ms earns 2/3 of a
    // frame, so 24 ms (3 periods) sends 2 frames, in periods 1 and 2.
    let json = r#"{"kind":"shaped_stream","rate_mbps":1,"duration_s":0.024}"#;
    let w = build(&spec(json), 2, 0).expect("build");
    let groups = send_groups(&ops(w.as_ref(), 0));
    assert_eq!(groups, [(8_000_000_000, 1), (16_000_000_000, 1)]);
}

/// Gaps between a rank's consecutive send times (from the job's start for the first).
fn poisson_gaps(w: &dyn Workload, rank: Rank) -> Vec<f64> {
    let mut prev = 0;
    ops(w, rank)
        .iter()
        .filter_map(|op| match op {
            Op::WaitUntil { ps } => {
                let gap = (ps - prev) as f64;
                prev = *ps;
                Some(gap)
            }
            _ => None,
        })
        .collect()
}

#[test]
fn poisson_arrivals_have_exponential_gaps_per_rank() {
    // n = 100,000 gaps of mean 10 us per rank. For exponential gaps the sample mean / 10 us and
    // the coefficient of variation (sd / mean) are both 1 with a standard deviation of
    // sigma = 1 / sqrt(n) = 0.0032 (CLT; for the CV by the delta method: Var(s) = 2 sigma^2 / n,
    // Cov(mean, s) = sigma^2 / n). Two independent ranks' gaps have a correlation of 0 with the
    // same sigma. Tolerance 5 sigma.
    let n = 100_000usize;
    let json = format!(
        r#"{{"kind":"uniform_random","arrival":"poisson","messages":{n},"interval_us":10}}"#
    );
    let w = build(&spec(&json), 2, 5).expect("build");
    let tol = 5.0 / (n as f64).sqrt();
    let stats = |g: &[f64]| {
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (g.len() - 1) as f64;
        (mean, var.sqrt())
    };
    let a = poisson_gaps(w.as_ref(), 0);
    let b = poisson_gaps(w.as_ref(), 1);
    assert_eq!((a.len(), b.len()), (n, n));
    for g in [&a, &b] {
        let (mean, sd) = stats(g);
        assert!((mean / 1e7 - 1.0).abs() < tol, "mean {mean} ps");
        assert!((sd / mean - 1.0).abs() < tol, "cv {}", sd / mean);
    }
    // Not in lockstep: the ranks' gaps are uncorrelated.
    let ((ma, sa), (mb, sb)) = (stats(&a), stats(&b));
    let cov = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - ma) * (y - mb))
        .sum::<f64>()
        / (n - 1) as f64;
    let corr = cov / (sa * sb);
    assert!(corr.abs() < tol, "correlation {corr}");
    // Each send follows its WaitUntil directly: no compute, so the overhead adds nothing.
    let v = ops(w.as_ref(), 0);
    assert!(!v.iter().any(|op| matches!(op, Op::Compute { .. })));
}

#[test]
fn fixed_arrival_is_the_default_and_computes_after_each_send() {
    let fixed = build(
        &spec(r#"{"kind":"uniform_random","arrival":"fixed","messages":3,"interval_us":2}"#),
        4,
        9,
    )
    .expect("build");
    let default = build(
        &spec(r#"{"kind":"uniform_random","messages":3,"interval_us":2}"#),
        4,
        9,
    )
    .expect("build");
    for r in 0..4 {
        let v = ops(fixed.as_ref(), r);
        assert_eq!(v, ops(default.as_ref(), r));
        let sends: Vec<usize> = (0..v.len())
            .filter(|&i| matches!(v[i], Op::Isend { .. }))
            .collect();
        assert_eq!(sends.len(), 3);
        for i in sends {
            assert_eq!(v[i + 1], Op::Compute { ps: 2_000_000 });
        }
    }
}

#[test]
fn collective_loops_run_their_collective() {
    // Point-to-point bytes of one iteration, by hand (p ranks, `bytes` as in MPI):
    // ring allreduce 2 (p - 1) blocks of bytes / p per rank; ring allgather p - 1 blocks per
    // rank; binomial reduce: every rank but the root sends its buffer once.
    let t = consistent(r#"{"kind":"allreduce","algo":"ring","bytes":600}"#, 6);
    assert_eq!(t.sent, vec![2 * 5 * 100; 6]);
    let t = consistent(
        r#"{"kind":"allgather","algo":"ring","bytes":10,"iterations":3}"#,
        5,
    );
    assert_eq!(t.sent, vec![3 * 4 * 10; 5]);
    let t = consistent(r#"{"kind":"reduce","root":2,"bytes":7}"#, 5);
    assert_eq!(t.sent, vec![7, 7, 0, 7, 7]);
    // Binomial bcast from root 3 of 6: the root sends ceil(log2 6) = 3 messages, the tree 5.
    let t = consistent(
        r#"{"kind":"bcast","root":3,"bytes":9,"algo":"binomial_tree"}"#,
        6,
    );
    assert_eq!(t.sent[3], 3 * 9);
    assert_eq!(t.messages, 5);
    for kind in ["allreduce", "bcast", "allgather", "reduce"] {
        for n in [1, 2, 7, 16] {
            let t = consistent(&format!(r#"{{"kind":"{kind}","compute_us":3}}"#), n);
            assert_eq!(t.compute_ps, n as u128 * 3_000_000, "{kind} on {n}");
        }
    }
}
