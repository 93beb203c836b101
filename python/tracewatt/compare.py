"""A policy against its always-on baseline: what a low-power policy saves and what it costs.

The baseline is the same configuration with every link forced to ``always_on`` (built by the
Rust core, so there is one definition of it). The runs go two at a time on two threads: the
simulations release the GIL. :func:`compare_policies` puts several link policies side by side
on one configuration, each against the same baseline.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from tracewatt import _tracewatt
from tracewatt._dependencies import pandas as pd
from tracewatt.config import Config, link_tables
from tracewatt.results import Results
from tracewatt.simulation import (
    ConfigLike,
    ProgressCallback,
    as_config,
    check_progress,
    simulate,
)


def baseline_of(config: Config) -> Config:
    """The always-on baseline of ``config``."""
    text = _tracewatt.baseline_config(config.text, config.format, config.source)
    return Config.from_json(text, f"{config.source} (always-on baseline)")


def _link_energy_j(summary: dict[str, Any]) -> float:
    """Energy of a run's link ports, switch and NIC, J."""
    e = summary["energy_j"]
    return float(e.get("switch_ports", 0.0)) + float(e.get("nic_ports", 0.0))


def pct_change(new: float, old: float) -> float:
    """``(new - old) / old`` in percent; 0 when ``old`` is 0."""
    return 0.0 if old == 0 else 100.0 * (new - old) / old


def pct_saved(new: float, old: float) -> float:
    """``(old - new) / old`` in percent; 0 when ``old`` is 0 (never -0: nothing saved is 0)."""
    return 0.0 if old == 0 else 100.0 * (old - new) / old


@dataclass(frozen=True)
class Comparison:
    """The policy's results, the baseline's, and the savings summary."""

    policy: Results
    baseline: Results
    #: Wall time of the policy's run, s, where it was timed (:func:`compare`): not part of the
    #: results, which are deterministic.
    policy_wall_s: float | None = None

    @property
    def components(self) -> list[str]:
        """The component kinds both runs price (``summary["energy_j"]`` keys but ``total``), in
        the order the runs report them."""
        keys = list(self.baseline.summary["energy_j"])
        keys += [k for k in self.policy.summary["energy_j"] if k not in keys]
        return [k for k in keys if k != "total"]

    @property
    def saving_pct(self) -> float:
        """Energy saved over every component priced (:attr:`components`), % of the
        baseline's."""
        return pct_saved(
            self.policy.summary["energy_j"]["total"], self.baseline.summary["energy_j"]["total"]
        )

    @property
    def link_saving_pct(self) -> float:
        """Energy of the link ports (switch and NIC) saved, % of the baseline's."""
        return pct_saved(_link_energy_j(self.policy.summary), _link_energy_j(self.baseline.summary))

    @property
    def slowdown_pct(self) -> float:
        """Makespan increase, % of the baseline's."""
        return pct_change(self.policy.makespan_s, self.baseline.makespan_s)

    def summary(self) -> dict[str, Any]:
        """The policy's summary plus ``baseline`` (the same energy, power and time keys),
        ``saving_pct`` (over ``saving_covers``, the components priced), ``link_saving_pct``,
        ``saving_by_component_pct`` and ``slowdown_pct``."""
        s = dict(self.policy.summary)
        b = self.baseline.summary
        s["baseline"] = {
            "makespan_s": b["makespan_s"],
            "energy_j": b["energy_j"],
            "avg_power_w": b["avg_power_w"],
            "jobs": b["jobs"],
        }
        s["saving_pct"] = self.saving_pct
        s["saving_covers"] = self.components
        s["saving_by_component_pct"] = {
            k: pct_saved(
                self.policy.summary["energy_j"].get(k, 0.0),
                self.baseline.summary["energy_j"].get(k, 0.0),
            )
            for k in self.components
        }
        s["link_saving_pct"] = self.link_saving_pct
        s["slowdown_pct"] = self.slowdown_pct
        return s

    def table(self) -> list[tuple[str, float, float, float]]:
        """Rows of (quantity, baseline, policy, change %) for printing."""
        rows: list[tuple[str, float, float, float]] = []
        b, p = self.baseline.summary, self.policy.summary
        rows.append(("makespan_s", b["makespan_s"], p["makespan_s"], self.slowdown_pct))
        for group, unit in (("energy", "j"), ("avg_power", "w")):
            key = f"{group}_{unit}"
            for k in [*self.components, "total"]:
                before, after = b[key].get(k, 0.0), p[key].get(k, 0.0)
                rows.append((f"{group}_{k}_{unit}", before, after, pct_change(after, before)))
        return rows


def _run_all(
    configs: list[Config], progress: ProgressCallback | None = None
) -> list[tuple[Results, float]]:
    """Runs ``configs`` two at a time (``progress`` follows the first) and returns each one's
    results and wall time, s, in order. If a run fails or the caller is interrupted (Ctrl-C),
    the runs under way are stopped and the rest not started before the error propagates."""
    stop = threading.Event()

    def until_stopped(report: Callable[[dict[str, Any]], object] | None) -> Any:
        # Only the main thread sees Ctrl-C; the runs on the pool's threads stop when their
        # progress callback returns False.
        def check(p: dict[str, Any]) -> object:
            if stop.is_set():
                return False
            return report(p) if report is not None else None

        return check

    def timed(
        cfg: Config, report: Callable[[dict[str, Any]], object] | None
    ) -> tuple[Results, float]:
        if stop.is_set():
            raise RuntimeError("not started: another run failed")
        start = time.monotonic()
        res = simulate(cfg, progress=until_stopped(report))
        return res, time.monotonic() - start

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(timed, cfg, progress if i == 0 else None) for i, cfg in enumerate(configs)
        ]
        try:
            for f in as_completed(futures):
                f.result()  # the first failure, as soon as it happens
        except BaseException:
            stop.set()
            raise
        return [f.result() for f in futures]


def compare(config: ConfigLike, *, progress: ProgressCallback | None = None) -> Comparison:
    """Runs ``config`` (anything :func:`tracewatt.simulate` accepts) and its always-on baseline
    concurrently. If either run fails or the caller is interrupted (Ctrl-C), the other run is
    stopped too before the error propagates."""
    check_progress(progress)
    config = as_config(config)
    base = baseline_of(config)
    # The two runs together must fit in memory (each alone is checked as it starts).
    _tracewatt.check_memory(config.text, config.format, config.source, 2)
    (policy, wall_s), (baseline, _) = _run_all([config, base], progress)
    return Comparison(policy=policy, baseline=baseline, policy_wall_s=wall_s)


#: The always-on row of :func:`compare_policies`, the baseline of every other.
ALWAYS_ON = "always_on"

#: The link policy that knows every idle gap: its saving is the bound of every other's.
ORACLE = "oracle"

#: The file ``compare --policies -o DIR`` writes its table to.
POLICIES_FILE = "policies.parquet"

#: The columns of :func:`compare_policies`' table, in order (defined in docs/cli.md).
POLICY_COLUMNS = (
    "policy",
    "makespan_s",
    "slowdown_pct",
    "link_energy_j",
    "link_saving_j",
    "link_saving_pct",
    "energy_j",
    "saving_j",
    "saving_pct",
    "wakes",
    "wake_delay_s",
    "oracle_share_pct",
)


def link_policy_config(config: ConfigLike, policy: str) -> Config:
    """``config``'s always-on baseline (:func:`baseline_of`) with every link table, the class
    overrides included, under the link policy ``policy`` and its parameters as configured (or
    their defaults): only the link policy differs from the baseline. Raises
    :class:`~tracewatt.errors.ConfigError` naming the valid policies for an unknown one."""
    config = as_config(config)
    d = baseline_of(config).to_dict()
    for table in link_tables(d["power"]):
        table["policy"] = policy
    out = Config.from_dict(d, source=config.source)
    out.validate()
    return out


def policy_rows(runs: dict[str, Results]) -> list[dict[str, Any]]:
    """The rows of :func:`compare_policies` from each policy's results (``always_on`` among
    them): against always-on, link energy (switch and NIC ports) and whole-machine energy
    saved (J and % of always-on's), slowdown (%), link wakes and the wake delay they added, and
    the share of the oracle's link saving (%; NaN without an ``oracle`` run, or when it saves
    nothing)."""
    base = runs[ALWAYS_ON].summary
    base_link_j, base_j = _link_energy_j(base), float(base["energy_j"]["total"])
    oracle = runs.get(ORACLE)
    oracle_saving_j = base_link_j - _link_energy_j(oracle.summary) if oracle else 0.0
    rows = []
    for name, res in runs.items():
        s = res.summary
        link_j, total_j = _link_energy_j(s), float(s["energy_j"]["total"])
        links = s.get("links") or {}
        rows.append(
            {
                "policy": name,
                "makespan_s": float(s["makespan_s"]),
                "slowdown_pct": pct_change(float(s["makespan_s"]), float(base["makespan_s"])),
                "link_energy_j": link_j,
                "link_saving_j": base_link_j - link_j,
                "link_saving_pct": pct_saved(link_j, base_link_j),
                "energy_j": total_j,
                "saving_j": base_j - total_j,
                "saving_pct": pct_saved(total_j, base_j),
                "wakes": int(links.get("wakes", 0)),
                "wake_delay_s": float(links.get("wake_delay_s", 0.0)),
                "oracle_share_pct": 100.0 * (base_link_j - link_j) / oracle_saving_j
                if oracle_saving_j > 0
                else math.nan,
            }
        )
    return rows


@dataclass(frozen=True)
class PolicyComparison:
    """Link policies side by side on one configuration: each one's results (``always_on``
    first) and their table (:data:`POLICY_COLUMNS`, a row per policy)."""

    runs: dict[str, Results]
    table: pd.DataFrame

    @property
    def has_oracle(self) -> bool:
        return ORACLE in self.runs


def compare_policies(
    config: ConfigLike, policies: Sequence[str], *, progress: ProgressCallback | None = None
) -> PolicyComparison:
    """Runs ``config``'s always-on baseline and, for each link policy of ``policies``, the
    same with every link under that policy (:func:`link_policy_config`), two at a time; each
    distinct resolved configuration runs once (``always_on`` in the list is the baseline
    itself). ``progress`` follows the always-on run."""
    check_progress(progress)
    config = as_config(config)
    names = [ALWAYS_ON, *dict.fromkeys(p for p in policies if p != ALWAYS_ON)]
    configs = {ALWAYS_ON: baseline_of(config)}
    configs.update({p: link_policy_config(config, p) for p in names[1:]})
    distinct: dict[str, Config] = {}  # resolved JSON -> the configuration that runs it
    key_of: dict[str, str] = {}
    for name, cfg in configs.items():
        key = json.dumps(cfg.resolved(), sort_keys=True)
        distinct.setdefault(key, cfg)
        key_of[name] = key
    _tracewatt.check_memory(config.text, config.format, config.source, min(2, len(distinct)))
    done = dict(zip(distinct, _run_all(list(distinct.values()), progress), strict=True))
    runs = {name: done[key_of[name]][0] for name in names}
    table = pd.DataFrame(policy_rows(runs), columns=list(POLICY_COLUMNS))
    return PolicyComparison(runs=runs, table=table)


def comparison_json(c: Comparison) -> str:
    return json.dumps(c.summary(), indent=2, sort_keys=True) + "\n"
