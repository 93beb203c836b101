//! Prints `trace info` for the paths given (JSON), reader throughput with `--bench`, and
//! converts to the native format with `--convert OUT` (then benchmarks that too).
use std::path::Path;
use std::time::Instant;

use tracewatt_trace::{info, open_trace, ReadOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let opts = ReadOptions::default();
    if let Some(i) = args.iter().position(|a| a == "--convert") {
        let (Some(src), Some(out)) = (args.get(i + 1), args.get(i + 2)) else {
            eprintln!("usage: --convert SRC OUT");
            return;
        };
        match tracewatt_trace::convert(Path::new(src), Path::new(out), &opts) {
            Ok(i) => println!("converted {src} -> {out}: {} ranks", i.ranks),
            Err(e) => eprintln!("{e}"),
        }
        return;
    }
    for p in args.iter().filter(|a| !a.starts_with("--")) {
        let path = Path::new(p);
        if !bench {
            match info(path, &opts) {
                Ok(i) => println!("{}", serde_json::to_string_pretty(&i).unwrap_or_default()),
                Err(e) => println!("{p}: error: {e}"),
            }
            continue;
        }
        let Ok(t) = open_trace(path, &opts) else {
            continue;
        };
        let bytes: u64 = walk_size(path);
        let (mut records, reps) = (0u64, 50);
        let start = Instant::now();
        for _ in 0..reps {
            for r in 0..t.info().ranks {
                records += t.calls(r).map(|c| c.count() as u64).unwrap_or(0);
            }
        }
        let s = start.elapsed().as_secs_f64();
        println!(
            "{p}: {:.2} M records/s, {:.1} MB/s",
            records as f64 / s / 1e6,
            (bytes * reps) as f64 / s / 1e6
        );
    }
}

fn walk_size(p: &Path) -> u64 {
    if p.is_file() {
        return p.metadata().map(|m| m.len()).unwrap_or(0);
    }
    std::fs::read_dir(p)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| walk_size(&e.path()))
                .sum()
        })
        .unwrap_or(0)
}
