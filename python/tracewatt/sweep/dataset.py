"""A sweep's dataset: ``sweep.parquet`` (a row per run, docs/cli.md) beside ``sweep.json`` (its
description), and the groups of runs its figures draw."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracewatt._dependencies import pandas as pd
from tracewatt.compare import Comparison
from tracewatt.results import (
    Results,
    _atomic_write_parquet,
    _frame_to_arrow,
    read_json,
    read_parquet,
    read_summary,
)
from tracewatt.sweep.labels import default_label
from tracewatt.sweep.spec import Run, SweepSpec


def _outcome(r: Run, out: Path) -> dict[str, Any] | None:
    """A run's outcome: finished (``done.json``), failed (its error), or None (not run)."""
    if r.error:
        return {"status": "failed", "error": r.error}
    for name in ("done.json", "error.json"):
        if (out / r.dir / name).is_file():
            what = "a sweep run's outcome as the sweep writes it"
            return dict(read_json(out / r.dir / name, what, {"status": str}))
    return None


def dataset(spec: SweepSpec, runs: Sequence[Run], out: Path) -> pd.DataFrame:
    """A row per finished run, in spec order, with the columns of docs/cli.md."""
    listed: list[tuple[Run, dict[str, Any]]] = []
    summaries: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in runs:
        outcome = _outcome(r, out)
        if outcome is None:
            continue
        ok = outcome["status"] == "ok"
        row: dict[str, Any] = {"group": r.group, "variant": r.variant}
        row.update({a: r.values.get(a) for a in spec.axis_names})
        row.update(status=outcome["status"], error=outcome.get("error", ""))
        row["dir"] = "" if r.error else r.dir
        row["network"] = _network(r.config.to_dict())
        if ok:
            summary = read_summary(out / r.dir / "summary.json")
            row.update(_metrics(summary))
            row.update(
                run_wall_s=outcome.get("wall_s", math.nan), run_cpu_s=outcome.get("cpu_s", math.nan)
            )
            summaries[(r.group, _cell_key(r), r.variant)] = summary
        listed.append((r, row))
    if spec.baseline is not None:
        for r, row in listed:
            row.update(_against(summaries, r, spec.baseline))
    rows = [row for _, row in listed]
    columns = ["group", "variant", *spec.axis_names, "status", "error", "dir", "network"]
    for row in rows:
        columns += [k for k in row if k not in columns]
    return pd.DataFrame(rows, columns=columns)


def _network(config: Mapping[str, Any]) -> str:
    """The network model a run's configuration asks for (``[machine] network``, default
    ``packet``)."""
    machine = config.get("machine")
    network = machine.get("network") if isinstance(machine, Mapping) else None
    return str(network or "packet")


def _cell_key(r: Run) -> str:
    return json.dumps(r.values, sort_keys=True, default=str)


def _against(
    summaries: Mapping[tuple[str, str, str], dict[str, Any]], r: Run, baseline: str
) -> dict[str, float]:
    """Saving and slowdown of ``r`` against the baseline variant of its cell; NaN for the
    baseline itself and where either run failed."""
    s = summaries.get((r.group, _cell_key(r), r.variant))
    b = summaries.get((r.group, _cell_key(r), baseline))
    if s is None or b is None or r.variant == baseline:
        return dict.fromkeys(("saving_pct", "link_saving_pct", "slowdown_pct"), math.nan)
    c = Comparison(policy=Results(s, {}), baseline=Results(b, {}))
    return {
        "saving_pct": c.saving_pct,
        "link_saving_pct": c.link_saving_pct,
        "slowdown_pct": c.slowdown_pct,
    }


def _metrics(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A run's summary metrics as dataset columns."""
    energy, power = summary["energy_j"], summary["avg_power_w"]
    row: dict[str, Any] = {"makespan_s": float(summary["makespan_s"])}
    row["energy_j"] = float(energy["total"])
    row.update({f"energy_{k}_j": float(v) for k, v in energy.items() if k != "total"})
    row["avg_power_w"] = float(power["total"])
    row.update({f"avg_power_{k}_w": float(v) for k, v in power.items() if k != "total"})
    row["link_wakes"] = int(summary["links"]["wakes"])
    row["lpi_share"] = float(summary["links"]["lpi_fraction"])
    row["messages"] = int(summary["messages"]["count"])
    row["mean_switch_hops"] = float(summary["network"]["mean_switch_hops"])
    return row


def write_dataset(df: pd.DataFrame, out: Path) -> None:
    _atomic_write_parquet(out / "sweep.parquet", _frame_to_arrow(df))


def read_dataset(directory: str | os.PathLike[str]) -> tuple[dict[str, Any], pd.DataFrame]:
    """``sweep.json`` and ``sweep.parquet`` of a sweep's directory. Raises
    :class:`~tracewatt.errors.ResultsError` naming the file that is not what a sweep writes."""
    d = Path(directory)
    meta = read_json(d / "sweep.json", "a sweep's description (name, axes, variants, ...)", _META)
    return meta, read_parquet(d / "sweep.parquet").to_pandas()


# What readers of sweep.json use (SweepSpec.description_json writes more).
_META = {
    "name": str,
    "axes": [str],
    "variants": [str],
    "baseline?": (str, type(None)),
    "mode?": str,
    "groups?": [{"name": str}],
    "labels?": dict,
    "variant_sets?": dict,
    "base?": (dict, type(None)),
}


# --------------------------------------------------------------------------- groups of runs


def sweep_axes(frame: pd.DataFrame, meta: dict[str, Any]) -> list[str]:
    """The axis columns of a sweep dataset: ``sweep.json`` ``axes``, then its groups' own, in
    spec order."""
    names = list(meta.get("axes", []))
    for g in meta.get("groups", []):
        if isinstance(g, dict):
            names += list(g.get("axes", []))
    return [n for n in dict.fromkeys(names) if n in frame.columns]


def axis_labels(meta: dict[str, Any], axes: list[str]) -> dict[str, str]:
    """How a report names each axis: its spec ``label`` (``sweep.json`` ``labels``), else
    :func:`~tracewatt.sweep.labels.default_label`; ``variant`` as it is."""
    given = meta.get("labels") or {}
    out = {a: str(given.get(a) or default_label(a)) for a in axes}
    out["variant"] = "variant"
    return out


@dataclass(frozen=True)
class SweepGroup:
    """The runs of one group of a sweep (``sweep.parquet`` rows, the baseline variant's
    excluded) and how they vary: ``categorical`` and ``numeric`` are the axes with more than one
    value in the group, in spec order (``variant`` counts as a categorical axis where there are
    several variants besides the baseline); ``fixed`` the axes with one value, and that value;
    ``labels`` how a report names each axis (:func:`axis_labels`)."""

    name: str
    rows: pd.DataFrame
    categorical: list[str]
    numeric: list[str]
    fixed: dict[str, Any]
    baseline: str | None
    random: bool
    labels: dict[str, str]


def _is_numeric(values: pd.Series) -> bool:
    v = values.dropna().infer_objects()
    return pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v)


def sweep_groups(frame: pd.DataFrame, meta: dict[str, Any], axes: list[str]) -> list[SweepGroup]:
    """The groups of a sweep dataset, in dataset order. ``axes`` are its axis columns."""
    baseline = meta.get("baseline")
    modes = {g["name"]: g.get("mode") for g in meta.get("groups", []) if isinstance(g, dict)}
    labels = axis_labels(meta, axes)
    out = []
    for name, rows in frame.groupby("group", sort=False):
        random = "random" in (meta.get("mode"), modes.get(name))
        policy = rows[rows["variant"] != baseline] if baseline is not None else rows
        categorical, numeric, fixed = [], [], {}
        for axis in axes:
            values = policy[axis].dropna()
            if values.empty:
                continue  # another group's axis
            if values.nunique() == 1:
                fixed[axis] = values.iloc[0]
            elif _is_numeric(values):
                numeric.append(axis)
            else:
                categorical.append(axis)
        if policy["variant"].nunique() > 1:
            categorical.append("variant")
        out.append(
            SweepGroup(
                str(name),
                policy,
                categorical,
                numeric,
                fixed,
                baseline,
                random,
                labels,
            )
        )
    return out
