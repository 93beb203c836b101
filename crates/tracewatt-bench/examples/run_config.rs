//! One simulation of a configuration file, natively, with the product's allocator: what a
//! whole-process benchmark (alternating builds) or cachegrind's instruction count measures.
//!
//! `cargo run --release -p tracewatt-bench --example run_config -- CONFIG.toml` (or a `.json` one)

use tracewatt_sim::{simulate, Config, Format};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: run_config CONFIG.toml");
        std::process::exit(2);
    };
    let run = || -> Result<String, String> {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let format = if path.ends_with(".json") {
            Format::Json
        } else {
            Format::Toml
        };
        let config = Config::parse(&text, format, &path).map_err(|e| e.to_string())?;
        let r = simulate(&config, &path, &mut |_| true).map_err(|e| e.to_string())?;
        Ok(format!(
            "makespan_s {} events {} total_j {}",
            r.summary["makespan_s"], r.summary["events"], r.summary["energy_j"]["total"]
        ))
    };
    match run() {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
