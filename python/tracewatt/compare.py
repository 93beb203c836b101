"""A policy against its always-on baseline: what a low-power policy saves and what it costs.

The baseline is the same configuration with every link forced to ``always_on`` (built by the
Rust core, so there is one definition of it). Both runs go at once on two threads: the
simulations release the GIL.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from tracewatt import _tracewatt
from tracewatt.config import Config
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
        p = self.policy.summary["energy_j"]
        b = self.baseline.summary["energy_j"]
        return pct_saved(p["switch_ports"] + p["nic_ports"], b["switch_ports"] + b["nic_ports"])

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


def compare(config: ConfigLike, *, progress: ProgressCallback | None = None) -> Comparison:
    """Runs ``config`` (anything :func:`tracewatt.simulate` accepts) and its always-on baseline
    concurrently. If either run fails or the caller is interrupted (Ctrl-C), the other run is
    stopped too before the error propagates."""
    check_progress(progress)
    config = as_config(config)
    base = baseline_of(config)
    # The two runs together must fit in memory (each alone is checked as it starts).
    _tracewatt.check_memory(config.text, config.format, config.source, 2)
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
        start = time.monotonic()
        res = simulate(cfg, progress=until_stopped(report))
        return res, time.monotonic() - start

    with ThreadPoolExecutor(max_workers=2) as pool:
        fp = pool.submit(timed, config, progress)
        fb = pool.submit(timed, base, None)
        try:
            for f in as_completed([fp, fb]):
                f.result()  # the first failure, as soon as it happens
        except BaseException:
            stop.set()
            raise
        (policy, wall_s), (baseline, _) = fp.result(), fb.result()
        return Comparison(policy=policy, baseline=baseline, policy_wall_s=wall_s)


def comparison_json(c: Comparison) -> str:
    return json.dumps(c.summary(), indent=2, sort_keys=True) + "\n"
