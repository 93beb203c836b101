"""Tuning link low-power settings under a slowdown budget: screen, then confirm by simulation.

One always-on run (keeping its messages and paired idle intervals) screens every candidate
setting of every link class (``analyze idle``, one class at a time); settings of different
classes combine with their link energies added and their penalty bounds added (the critical
path through several classes meets at most the sum of what it meets in each). The ``k``
combinations that save the most link energy with a bound within the budget are confirmed by
full simulation, as one sweep (one cell, a variant per candidate, always-on as the baseline);
if fewer are within the bound (a bound, often loose), the rest of the ``k`` are spread over the
settings beyond it. The policies that only a simulation can price (``adaptive``,
``perfbound``, ``predictive``: their decisions depend on what they have seen or on the delays
they cause) join
the confirming sweep directly, each at a few values of its parameters (:func:`policy_candidates`),
every link class under it. The confirmed one with the largest whole-machine saving whose
slowdown is within the budget wins. Screened on the flow-level network (``[machine] network =
"flow"``), the candidates are confirmed on the packet-level one unless told otherwise: the fast
model picks them, the exact one decides.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracewatt import sweep
from tracewatt._dependencies import numpy as np
from tracewatt._dependencies import pandas as pd
from tracewatt.analysis.idle import screen_idle, tables_span_s
from tracewatt.compare import baseline_of
from tracewatt.config import Config, read_text
from tracewatt.errors import ConfigError
from tracewatt.simulation import ConfigLike, as_config, simulate

if TYPE_CHECKING:
    from tracewatt.results import Results

__all__ = [
    "TuneResult",
    "apply_fragment",
    "class_path",
    "pick_candidates",
    "screen_candidates",
    "sweep_spec",
    "tune",
]

#: The timeouts screened by default, us: the papers' sweeps (TraceRP Fig. 3, the EEE paper's
#: 600 and 1,600) and their neighbours.
DEFAULT_TIMEOUTS_US: tuple[float, ...] = (0, 1, 5, 10, 50, 250, 600, 1250, 1600, 16000)

#: The link policies tune searches: ``timeout`` screened then confirmed, the others confirmed.
TUNED_POLICIES = ("timeout", "adaptive", "perfbound", "predictive")

#: ``perfbound``'s bound on each port's delay and ``adaptive``'s delay target, tried by tune, as
#: shares of the budget: the budget itself, and half of it, since delays on several links of a
#: path add up.
BUDGET_SHARES = (0.5, 1.0)


def check_policies(policies: Sequence[str]) -> list[str]:
    """The link policies to tune, checked: each of :data:`TUNED_POLICIES`, at least one."""
    names = list(dict.fromkeys(policies))
    if not names:
        raise ValueError("policies: expected at least one of " + ", ".join(TUNED_POLICIES))
    for name in names:
        if name == "oracle":
            raise ValueError(
                "policies: `oracle` is the bound, not a policy a port can run (it knows every "
                "gap in advance); tracewatt compare --policies ...,oracle measures it"
            )
        if name not in TUNED_POLICIES:
            raise ValueError(
                f"policies: `{name}` is not a link policy tune searches; expected "
                + ", ".join(TUNED_POLICIES)
            )
    return names


def policy_candidates(
    policies: Sequence[str], slowdown_pct: float, kinds: Sequence[str]
) -> list[dict[str, dict[str, Any]]]:
    """The candidates of the policies tune confirms without screening: every link kind of
    ``kinds`` under the policy, ``adaptive``'s delay target and ``perfbound``'s bound each at
    every share of :data:`BUDGET_SHARES` of the budget (as a share of the run, at most 1),
    ``predictive`` at its defaults (it has no budget to aim at)."""
    shares = dict.fromkeys(min(1.0, share * slowdown_pct / 100.0) for share in BUDGET_SHARES)
    params: list[dict[str, Any]] = []
    for policy in policies:
        if policy == "adaptive":
            params += [{"policy": "adaptive", "adaptive_delay_share": s} for s in shares]
        elif policy == "perfbound":
            params += [{"policy": "perfbound", "slowdown_bound": s} for s in shares]
        elif policy == "predictive":
            params.append({"policy": "predictive"})
    return [{kind: dict(p) for kind in kinds} for p in params]


def describe(settings: Mapping[str, Mapping[str, Any]]) -> str:
    """A candidate's settings in a line: ``node 600/17 us; tree1 0/17 us paired`` for
    timeouts (idle_timeout/wake_time), ``perfbound slowdown_bound=0.005`` for a policy that
    every kind shares; ``always-on`` for none."""
    policies = [dict(s) for s in settings.values() if s.get("policy", "timeout") != "timeout"]
    if policies and all(p == policies[0] for p in settings.values()):
        p = dict(policies[0])
        name = p.pop("policy")
        return " ".join([name, *(f"{k}={v:g}" for k, v in p.items())])
    return (
        "; ".join(
            f"{kind} {s['idle_timeout_us']:g}/{s['wake_time_us']:g} us"
            + (f" {s['control']}" if s.get("control") else "")
            for kind, s in settings.items()
        )
        or "always-on"
    )


_TREE = re.compile(r"tree(\d+)$")
_TORUS = re.compile(r"torus(\d+)$")


def class_path(kind: str) -> str:
    """The ``[power]`` table of a link kind (``links.parquet``'s ``kind``): ``node`` ->
    ``power.node``, ``tree1`` -> ``power.tree[0]``, ``torus0`` -> ``power.torus[0]``."""
    if kind in ("node", "local", "global"):
        return f"power.{kind}"
    if m := _TREE.match(kind):
        return f"power.tree[{int(m.group(1)) - 1}]"
    if m := _TORUS.match(kind):
        return f"power.torus[{int(m.group(1))}]"
    raise ValueError(f"link kind {kind!r} has no [power] table")


def _screening_config(config: Config, timeouts_us: Sequence[float]) -> Config:
    """The always-on run that screens: it keeps every message and each link's own idle
    intervals, exactly at the screened timeouts."""
    thresholds = sorted(set(config.resolved()["output"]["idle_thresholds_us"]) | set(timeouts_us))
    return baseline_of(config).with_overrides(
        {
            "output.messages": True,
            "output.pair_idle": True,
            "output.idle_thresholds_us": [float(t) for t in thresholds],
        }
    )


def screen_candidates(
    run: Results,
    slowdown_pct: float,
    timeouts_us: Sequence[float] = DEFAULT_TIMEOUTS_US,
    wakes_us: Sequence[float] | None = None,
    controls: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every combination of per-class settings (each class's screened rows that no other row
    beats in energy, penalty bound and wakes together, and leaving it always-on), best link
    saving first. Columns: ``settings`` ({kind: {idle_timeout_us, wake_time_us, control}}; a
    kind left out stays always-on), ``link_saving_pct`` (all link ports),
    ``penalty_bound_pct`` (the classes' bounds summed), ``wakes``, ``within_bound``
    (``penalty_bound_pct <= slowdown_pct``). ``wakes_us``: None keeps each class's configured
    wake time; ``controls``: None keeps the run's."""
    links = run.links.sort_values("link_id")
    span_s = tables_span_s(run)
    always_on_j = float((links["port_active_w"] * span_s).sum())
    options: list[list[tuple[str, dict[str, Any] | None, float, float, float]]] = []
    for kind in sorted(set(links["kind"])):
        of_kind = links[links["kind"] == kind]
        wakes = wakes_us or sorted(set(np.round(of_kind["wake_time_s"] * 1e6, 6)))
        kind_j = float((of_kind["port_active_w"] * span_s).sum())
        rows: list[tuple[str, dict[str, Any] | None, float, float, float]] = [
            (kind, None, 0.0, 0.0, 0.0)
        ]
        choices: list[str | None] = list(controls) if controls else [None]
        for control in choices:
            df = screen_idle(run, timeouts_us, wakes, links=[kind], control=control)
            keep = _undominated(
                df["link_energy_j"].to_numpy(),
                df["penalty_bound_pct"].to_numpy(),
                df["wakes"].to_numpy(),
            )
            for r in df[keep].to_dict("records"):
                setting = {
                    "idle_timeout_us": r["idle_timeout_us"],
                    "wake_time_us": r["wake_time_us"],
                    "control": control,
                }
                # From the screen's own saving: its energy and always-on total are summed
                # alike, so a setting that never sleeps saves exactly 0 (a difference of two
                # sums made apart could leave a rounding error that reads as a saving).
                saved = kind_j * float(r["link_saving_pct"]) / 100.0
                rows.append((kind, setting, saved, r["penalty_bound_pct"], r["wakes"]))
        options.append(rows)
    out = []
    for combo in itertools.product(*options):
        bound = sum(c[3] for c in combo)
        out.append(
            {
                "settings": {c[0]: c[1] for c in combo if c[1] is not None},
                "link_saving_pct": 100.0 * sum(c[2] for c in combo) / always_on_j
                if always_on_j
                else 0.0,
                "penalty_bound_pct": bound,
                "wakes": sum(c[4] for c in combo),
                "within_bound": bound <= slowdown_pct,
            }
        )
    df = pd.DataFrame(out)
    return df.sort_values(
        ["link_saving_pct", "penalty_bound_pct"], ascending=[False, True], kind="stable"
    ).reset_index(drop=True)


def _undominated(*criteria: np.ndarray) -> np.ndarray:
    """True where no other row is at least as low in every criterion and lower in one."""
    m = np.stack(criteria, axis=1)
    le = (m[None, :, :] <= m[:, None, :]).all(axis=2)
    lt = (m[None, :, :] < m[:, None, :]).any(axis=2)
    return np.asarray(~(np.asarray(le & lt, dtype=bool).any(axis=1)), dtype=bool)


def pick_candidates(screened: pd.DataFrame, k: int) -> pd.DataFrame:
    """The ``k`` to confirm among those that save link energy: the best within the bound;
    if fewer than ``k`` are, the rest spread evenly over the others from most to least
    saving (the bound is an upper bound: settings beyond it may still fit the budget, and
    the simulation decides)."""
    saving = screened[screened["link_saving_pct"] > 0]
    safe = saving[saving["within_bound"]].head(k)
    beyond = saving[~saving["within_bound"]]
    n = min(k - len(safe), len(beyond))
    picks: np.ndarray = np.unique(np.round(np.linspace(0, len(beyond) - 1, n)).astype(int))
    return pd.concat([safe, beyond.iloc[picks]]).reset_index(drop=True)


def _padded_base(config: Config, kinds: Sequence[str]) -> dict[str, Any]:
    """The configuration with a ``[power]`` table for every tuned class (empty tables inherit
    ``[power.links]``), so each variant can set fields by dotted path."""
    d = config.to_dict()
    power = d.setdefault("power", {})
    for kind in kinds:
        path = class_path(kind)
        if "[" in path:
            name, index = path[len("power.") :].rstrip("]").split("[")
            arr = power.setdefault(name, [])
            arr.extend({} for _ in range(int(index) + 1 - len(arr)))
        else:
            power.setdefault(path[len("power.") :], {})
    return d


def _every_kind(
    kinds: Sequence[str], settings: Mapping[str, Mapping[str, Any] | None]
) -> dict[str, Mapping[str, Any] | None]:
    """A candidate over every screened link kind: the kinds it leaves out always-on (as the
    confirming sweep runs them, and as the fragment must say)."""
    full: dict[str, Mapping[str, Any] | None] = dict.fromkeys(kinds)
    full.update(settings)
    return full


def _sets(settings: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any]:
    """Dotted overrides of a candidate; ``None`` settings: that class always-on. A setting
    without ``policy`` is a timeout's."""
    out: dict[str, Any] = {}
    for kind, s in settings.items():
        path = class_path(kind)
        if s is None:
            out[f"{path}.policy"] = "always_on"
            continue
        out[f"{path}.policy"] = s.get("policy", "timeout")
        for field, value in s.items():
            if field == "policy" or value is None:
                continue
            out[f"{path}.{field}"] = value if isinstance(value, str) else float(value)
    return out


def _sweep_description(config: Config) -> str:
    return f"confirming tuned link settings of {config.source}"


def _check_runs_dir(out_dir: str | Path, config: Config) -> Path:
    """Checks the confirming sweep's directory before the screening run: new, empty, or the
    confirming sweep of an earlier tune of the same configuration (resumed: its runs are found
    again, and its dataset is replaced by this tune's candidates)."""
    out: Path = sweep.check_out_dir(out_dir, "--runs")
    meta_path = out / "sweep.json"
    if not meta_path.is_file():
        return out
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{meta_path}: cannot read the sweep there: {e}") from e
    if not isinstance(meta, dict) or meta.get("description") != _sweep_description(config):
        name = meta.get("name") if isinstance(meta, dict) else None
        raise ConfigError(
            f"{out}: holds another sweep (`{name}`), not the confirming sweep of a tune of "
            f"{config.source}; give a new or empty directory for --runs"
        )
    return out


def sweep_spec(
    config: Config,
    kinds: Sequence[str],
    candidates: Sequence[Mapping[str, Any]],
    network: str = "packet",
) -> dict[str, Any]:
    """The confirming sweep on the network model ``network``: one cell, a variant ``c1``,
    ``c2``, ... per candidate (every class not in its settings always-on) and the ``always_on``
    baseline."""
    base = _padded_base(config, kinds)
    if network != "packet":
        base.setdefault("machine", {})["network"] = network
    else:
        base.get("machine", {}).pop("network", None)
    variants = [
        {
            "name": "always_on",
            "set": {"power.links.policy": "always_on", **_sets(dict.fromkeys(kinds))},
        }
    ]
    for i, settings in enumerate(candidates, 1):
        variants.append({"name": f"c{i}", "set": _sets(_every_kind(kinds, settings))})
    return {
        "name": "tune",
        "description": _sweep_description(config),
        "base": base,
        "baseline": "always_on",
        "variants": variants,
    }


@dataclass(frozen=True)
class TuneResult:
    """The candidates (screened, and confirmed where simulated: ``saving_pct`` whole machine,
    ``slowdown_pct``), the chosen one's index in them (None: no candidate saves energy within
    the budget), the budget, and the link kinds screened (those a candidate leaves out are
    always-on), and the network models that screened and confirmed them."""

    candidates: pd.DataFrame
    chosen: int | None
    slowdown_pct: float
    kinds: tuple[str, ...] = ()
    networks: tuple[str, str] = ("packet", "packet")

    @property
    def settings(self) -> dict[str, dict[str, Any]]:
        """The chosen setting per link kind ({} when nothing was chosen)."""
        if self.chosen is None:
            return {}
        return dict(self.candidates["settings"].iloc[self.chosen])

    def fragment(self) -> str:
        """The chosen setting as a TOML configuration fragment (see :func:`apply_fragment`)."""
        tables: dict[str, dict[int, list[str]]] = {}
        for key, value in _sets(_every_kind(self.kinds, self.settings)).items():
            table, field = key.rsplit(".", 1)
            name, _, index = table.partition("[")
            entry = tables.setdefault(name, {}).setdefault(int(index.rstrip("]") or -1), [])
            entry.append(f"{field} = {_toml_value(value)}")
        sets, body = [], []
        for name, entries in tables.items():
            if -1 in entries:
                sets += [f"{name}.{field}" for field in entries[-1]]
                body += ["", f"[{name}]", *entries[-1]]
                continue
            # An array of tables: the untuned entries before a tuned one stay empty; as --set,
            # the whole array (replacing the configuration's own).
            array = [entries.get(i, []) for i in range(max(entries) + 1)]
            sets.append(f"{name} = [" + ", ".join("{" + ", ".join(e) + "}" for e in array) + "]")
            for e in array:
                body += ["", f"[[{name}]]", *e]
        return (
            "\n".join(
                [
                    f"# Tuned link power settings (slowdown budget {self.slowdown_pct:g} %).",
                    "# Load with tracewatt.analysis.tuning.apply_fragment(config, path), or"
                    " pass each",
                    "# line below as --set 'LINE' (an array replaces the configuration's own):",
                    *(f"#   {x.replace(' = ', '=', 1)}" for x in sets),
                    *body,
                ]
            )
            + "\n"
        )


def _toml_value(v: Any) -> str:
    return f'"{v}"' if isinstance(v, str) else repr(v)


def _leaves(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{path}.{k}" if path else k))
        return out
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(_leaves(v, f"{path}[{i}]"))
        return out
    return {path: value}


def apply_fragment(config: Config, path: str | Path) -> Config:
    """``config`` with a fragment written by :meth:`TuneResult.fragment` (any TOML
    configuration fragment) applied field by field: its tables merge into the configuration's,
    its arrays of tables entry by entry."""
    p = Path(path)
    try:
        fragment = tomllib.loads(read_text(p, "tuned fragment"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: cannot read the tuned fragment: {e}") from e
    d = config.to_dict()
    # Arrays of tables the fragment reaches into get empty entries up to its length.
    for dotted, value in _leaves(fragment, "").items():
        parts = dotted.replace("]", "").split(".")
        node: Any = d
        for part in parts[:-1]:
            name, _, index = part.partition("[")
            if index:
                arr = node.setdefault(name, [])
                arr.extend({} for _ in range(int(index) + 1 - len(arr)))
                node = arr[int(index)]
            else:
                node = node.setdefault(name, {})
        node[parts[-1]] = value
    return Config.from_dict(d, source=config.source)


def tune(
    config: ConfigLike,
    slowdown_pct: float,
    *,
    timeouts_us: Sequence[float] = DEFAULT_TIMEOUTS_US,
    wakes_us: Sequence[float] | None = None,
    controls: Sequence[str] | None = None,
    k: int = 4,
    out_dir: str | Path,
    workers: int | None = None,
    policies: Sequence[str] = ("timeout",),
    confirm: str | None = None,
) -> TuneResult:
    """Screens from one always-on run, confirms the ``k`` best timeout candidates and the
    candidates of the other ``policies`` (:func:`policy_candidates`) through the sweep
    machinery in ``out_dir`` (resumable) on the network model ``confirm`` (default: ``packet``
    when the configuration's is ``flow``, else its own), and picks the confirmed one with the
    largest whole-machine saving whose slowdown is within ``slowdown_pct``."""
    if not (math.isfinite(slowdown_pct) and slowdown_pct >= 0):
        raise ValueError(f"slowdown: expected a non-negative percentage, got {slowdown_pct}")
    if k < 1:
        raise ValueError(f"k: expected at least 1 candidate, got {k}")
    policies = check_policies(policies)
    config = as_config(config)
    if confirm not in (None, "packet", "flow"):
        raise ValueError(f"confirm: expected packet or flow, got {confirm!r}")
    screened_on = config.to_dict().get("machine", {}).get("network", "packet")
    confirm = confirm or ("packet" if screened_on == "flow" else screened_on)
    out = _check_runs_dir(out_dir, config)
    run = simulate(_screening_config(config, timeouts_us))
    kinds = sorted(set(run.links["kind"]))
    parts = []
    if "timeout" in policies:
        screened = screen_candidates(run, slowdown_pct, timeouts_us, wakes_us, controls)
        parts.append(pick_candidates(screened, k))
    others = policy_candidates(policies, slowdown_pct, kinds)
    if others:
        # Only a simulation prices them: no screened figures.
        nan = [math.nan] * len(others)
        parts.append(
            pd.DataFrame(
                {
                    "settings": others,
                    "link_saving_pct": nan,
                    "penalty_bound_pct": nan,
                    "wakes": nan,
                    "within_bound": [False] * len(others),
                }
            )
        )
    parts = [p for p in parts if not p.empty]
    top = (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame({"settings": [], "link_saving_pct": []})
    )
    if top.empty:
        return TuneResult(
            top.assign(saving_pct=[], slowdown_pct=[]),
            None,
            slowdown_pct,
            tuple(kinds),
            (screened_on, confirm),
        )
    spec = sweep.SweepSpec.from_dict(
        sweep_spec(config, kinds, list(top["settings"]), confirm), f"{config.source} (tune)"
    )
    # Another tune's candidates replace its dataset: _check_runs_dir let only this
    # configuration's confirming sweeps through.
    data = sweep.run(spec, out, workers=workers, replace=True).set_index("variant")
    top["variant"] = [f"c{i}" for i in range(1, len(top) + 1)]
    top["saving_pct"] = [float(data.loc[v, "saving_pct"]) for v in top["variant"]]
    top["slowdown_pct"] = [float(data.loc[v, "slowdown_pct"]) for v in top["variant"]]
    ok = top[(top["slowdown_pct"] <= slowdown_pct) & (top["saving_pct"] > 0)]
    chosen = None if ok.empty else int(ok.index[int(ok["saving_pct"].to_numpy().argmax())])
    return TuneResult(top, chosen, slowdown_pct, tuple(kinds), (screened_on, confirm))
