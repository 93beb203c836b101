//! Named machines. A preset is a `[machine]` table kept as TOML next to this file; a user's
//! `[machine]` table with `preset = "name"` is merged over it field by field, so any preset value
//! can be overridden. Changing `topology.kind` replaces the preset's topology table whole. A
//! preset may also carry the machine's own power figures in a `[power]` table (its nodes'
//! base and core power), under which the user's `[power]` table is merged the same way.

/// (name, one-line description, TOML text) of every preset.
pub const PRESETS: &[(&str, &str, &str)] = &[
    (
        "miwa2014-16node",
        "Miwa et al. 2014's 10GBASE-T cluster: 16 nodes, a two-level fat-tree of 24-port switches",
        include_str!("presets/miwa2014-16node.toml"),
    ),
    (
        "tracerp-fattree-288",
        "TraceRP's fat-tree: 288 nodes of 32 ranks, 24-port switches in 3 levels, 10 Gb/s links",
        include_str!("presets/tracerp-fattree-288.toml"),
    ),
    (
        "tracerp-torus-4x8x8",
        "TraceRP's 3-D torus 4 x 8 x 8: 256 nodes of 32 ranks, 10 Gb/s links",
        include_str!("presets/tracerp-torus-4x8x8.toml"),
    ),
    (
        "tracerp-dragonfly-342",
        "TraceRP's dragonfly: 19 groups of 6 routers, 342 nodes of 32 ranks, 10 Gb/s links",
        include_str!("presets/tracerp-dragonfly-342.toml"),
    ),
    (
        "bench-dragonfly-1056",
        "The packet simulators' benchmark dragonfly: 33 groups of 8 routers, 1,056 nodes, UGAL",
        include_str!("presets/bench-dragonfly-1056.toml"),
    ),
    (
        "codes-dragonfly-1056",
        "CODES' synthetic-traffic dragonfly: 1,056 nodes, GiB/s links, no link latency",
        include_str!("presets/codes-dragonfly-1056.toml"),
    ),
];

/// Names of the presets, for error messages and `--help`.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _, _)| *n).collect()
}

/// (name, one-line description) of every preset, for `tracewatt presets`.
pub fn descriptions() -> Vec<(&'static str, &'static str)> {
    PRESETS.iter().map(|(n, d, _)| (*n, *d)).collect()
}

/// The machine table of a preset.
pub fn machine_table(name: &str) -> Option<toml::Table> {
    let (_, _, text) = PRESETS.iter().find(|(n, _, _)| *n == name)?;
    // The presets are part of the program and parsed by a test; a parse failure is a bug.
    text.parse::<toml::Table>().ok()
}

/// Applies `machine.preset` to a whole configuration value. Errors are (field path, message).
pub fn apply(mut config: toml::Value) -> Result<toml::Value, (String, String)> {
    let Some(machine) = config.get_mut("machine").and_then(|m| m.as_table_mut()) else {
        return Ok(config);
    };
    let Some(preset) = machine.get("preset") else {
        return Ok(config);
    };
    let Some(name) = preset.as_str() else {
        return Err(("machine.preset".into(), "must be a string".into()));
    };
    let Some(mut base) = machine_table(name) else {
        return Err((
            "machine.preset".into(),
            format!(
                "unknown preset `{name}`; expected one of: {}",
                names().join(", ")
            ),
        ));
    };
    let user_kind = machine.get("topology").and_then(|t| t.get("kind")).cloned();
    let base_kind = base.get("topology").and_then(|t| t.get("kind")).cloned();
    if user_kind.is_some() && user_kind != base_kind {
        base.remove("topology");
    }
    let base_power = base.remove("power");
    merge(&mut base, std::mem::take(machine));
    *machine = base;
    if let (Some(toml::Value::Table(mut power)), Some(root)) = (base_power, config.as_table_mut()) {
        if let Some(toml::Value::Table(user)) = root.remove("power") {
            merge(&mut power, user);
        }
        root.insert("power".into(), toml::Value::Table(power));
    }
    Ok(config)
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}
