"""The arguments of the ``tracewatt`` command line: its parser, declared in one place.

A command's handler is named here and imported when the command runs, so that building the parser
(``--help``, ``--version``, a usage error) imports none of them. See ``docs/cli.md``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from tracewatt._tracewatt import __version__
from tracewatt.cli import trace
from tracewatt.cli.common import EXIT_USAGE, PROG

Handler = Callable[[argparse.Namespace], int]


def _command(module: str, name: str) -> Handler:
    """The handler ``name`` of ``tracewatt.cli.<module>``, imported when it is called."""

    def handler(args: argparse.Namespace) -> int:
        command: Handler = getattr(importlib.import_module(f"tracewatt.cli.{module}"), name)
        return command(args)

    return handler


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


if TYPE_CHECKING:
    # What `add_subparsers` returns (argparse's own class, generic for type checkers only).
    Subcommands = argparse._SubParsersAction[_Parser]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Packet-level simulation of HPC interconnects and their energy.",
        epilog="Exit codes: 0 ok, 1 internal error, 2 usage/config/topology error, "
        "3 workload/trace/deadlock error, 130 interrupted. See docs/cli.md.",
    )
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    _add_run(sub)
    _add_machine(sub)
    _add_presets(sub)
    _add_sweep(sub)
    _add_study(sub)
    _add_compare(sub)
    _add_tune(sub)
    _add_analyze(sub)
    _add_validate(sub)
    _add_report(sub)
    trace.register(sub)
    return p


def _add_force(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--force",
        action="store_true",
        help="empty a non-empty output directory first (without it, one is refused)",
    )


def _add_set(sp: argparse.ArgumentParser, where: str = "") -> None:
    sp.add_argument(
        "--set",
        action="append",
        metavar="PATH=VALUE",
        default=[],
        help=f"override a configuration field{where}; VALUE is a TOML literal "
        "(e.g. --set machine.links.bandwidth_gbps=40 --set 'jobs[0].nodes=4'); repeatable",
    )


#: Where a sweep's ``--set`` applies.
_IN_BASE = " in the spec's base, for every run (an axis or a variant over it still varies it)"


def _add_network(sp: argparse.ArgumentParser, what: str) -> None:
    sp.add_argument(
        "--network",
        choices=("packet", "flow"),
        help=f"the network model of {what}, overriding [machine] network: packet (exact, the "
        "default) or flow (faster: one max-min shared flow per message; docs/config.md)",
    )


def _add_sweep_options(sp: argparse.ArgumentParser) -> None:
    ex = sp.add_mutually_exclusive_group()
    ex.add_argument(
        "-j",
        "--workers",
        type=int,
        metavar="N",
        help="local worker processes (default: one per core)",
    )
    ex.add_argument(
        "--scheduler", metavar="ADDR", help="run on this Dask scheduler (tcp://HOST:PORT)"
    )
    ex.add_argument(
        "--cluster",
        metavar="KIND",
        help="start a Dask cluster: local:N (N worker processes here), slurm or pbs "
        "(worker jobs, docs/cluster.md)",
    )
    jq = sp.add_argument_group("slurm / pbs (per job)")
    jq.add_argument("--queue", metavar="Q", help="queue / partition")
    jq.add_argument("--account", metavar="A", help="account to charge")
    jq.add_argument("--walltime", metavar="HH:MM:SS", help="wall time per job")
    jq.add_argument("--cores", type=int, metavar="N", help="cores per job (= worker processes)")
    jq.add_argument("--memory", metavar="SIZE", help="memory per job, e.g. 16GB")
    jq.add_argument("--jobs", type=int, metavar="N", help="jobs to keep up (default 1)")
    jq.add_argument("--python", metavar="PATH", help="the workers' Python (default: this one)")
    jq.add_argument(
        "--interface", metavar="IFACE", help="network interface of scheduler and workers (ib0)"
    )
    jq.add_argument(
        "--directive",
        dest="directives",
        action="append",
        metavar="TEXT",
        help="an extra job directive, e.g. --directive=--qos=debug (#SBATCH --qos=debug); "
        "repeatable",
    )
    jq.add_argument(
        "--prologue",
        action="append",
        metavar="CMD",
        help="a command the job script runs before the workers (module load ...); repeatable",
    )
    jq.add_argument("--log-dir", metavar="DIR", help="the worker jobs' logs (default DIR/logs)")
    jq.add_argument(
        "--worker-timeout",
        type=float,
        metavar="S",
        help="stop when no worker has connected for S seconds (default: wait)",
    )
    sp.add_argument(
        "--force",
        action="store_true",
        help="replace the sweep DIR holds when it is another one (without it, it is refused)",
    )
    sp.add_argument("--json", action="store_true", help="print the rows as JSON instead")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress, no table")


def _add_run(sub: Subcommands) -> None:
    r = sub.add_parser("run", help="run one simulation", description="Run one simulation.")
    r.add_argument("config", metavar="CONFIG", help="configuration file (.toml or .json)")
    r.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write summary.json and the Parquet tables to DIR (default: write nothing)",
    )
    _add_force(r)
    r.add_argument(
        "--json", action="store_true", help="print summary.json to stdout instead of the table"
    )
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary table")
    r.add_argument("--seed", type=int, metavar="N", help="override the configuration's seed")
    _add_network(r, "the run")
    _add_set(r)
    r.set_defaults(func=_command("run", "cmd_run"))


def _add_machine(sub: Subcommands) -> None:
    m = sub.add_parser(
        "machine", help="describe a configuration's machine", description="Describe the machine."
    )
    m.add_argument("config", metavar="CONFIG", help="configuration file (.toml or .json)")
    m.add_argument("--json", action="store_true", help="print the description as JSON")
    _add_set(m)
    m.set_defaults(func=_command("machine", "cmd_machine"))


def _add_presets(sub: Subcommands) -> None:
    pr = sub.add_parser("presets", help="list the machine presets", description="List presets.")
    pr.add_argument("--json", action="store_true", help="print a JSON list")
    pr.set_defaults(func=_command("presets", "cmd_presets"))


def _add_sweep(sub: Subcommands) -> None:
    sw = sub.add_parser(
        "sweep",
        help="run a sweep spec in parallel (local processes or Dask); resumable",
        description="Run every configuration of a sweep spec (base x axes x variants) on a "
        "local process pool or a Dask cluster. Finished runs in DIR are skipped.",
    )
    sw.add_argument(
        "spec", metavar="SPEC", nargs="?", help="a sweep spec (TOML), or a shipped one's name"
    )
    sw.add_argument(
        "-o", "--output", metavar="DIR", help="the sweep's directory (runs/, sweep.parquet)"
    )
    sw.add_argument(
        "--list", action="store_true", help="list the shipped sweep specs (--json: as JSON)"
    )
    _add_network(
        sw, "every run (set in the spec's base: an axis over machine.network still varies it)"
    )
    _add_set(sw, _IN_BASE)
    _add_sweep_options(sw)
    sw.set_defaults(func=_command("sweep", "cmd_sweep"))


def _add_study(sub: Subcommands) -> None:
    s = sub.add_parser(
        "study",
        help="run the default study (TraceRP machines x workloads, EEE vs always-on)",
        description="Run the shipped sweep spec `default`: the same as `tracewatt sweep "
        "default -o DIR`.",
    )
    s.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="the sweep's directory (default: a temporary one; only the table is kept)",
    )
    _add_set(s, _IN_BASE)
    _add_sweep_options(s)
    s.set_defaults(func=_command("sweep", "cmd_study"))


def _add_compare(sub: Subcommands) -> None:
    c = sub.add_parser(
        "compare",
        help="run a configuration and its always-on baseline; print savings and slowdown",
        description="Run the configuration's power policy and the always-on baseline (at once, on "
        "two threads) and print energy saved and slowdown.",
    )
    c.add_argument("config", metavar="CONFIG", help="configuration file (.toml or .json)")
    c.add_argument(
        "--policies",
        metavar="P,...",
        help="instead, run these link policies (always_on, timeout, adaptive, perfbound, "
        "predictive, oracle) side by side against always-on: a row each",
    )
    c.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write the policy's results to DIR (summary.json gains baseline, saving_pct, "
        "slowdown_pct) and the baseline's to DIR/baseline; with --policies, the table as "
        "DIR/policies.parquet",
    )
    _add_force(c)
    c.add_argument("--json", action="store_true", help="print the comparison summary as JSON")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no table")
    c.add_argument("--seed", type=int, metavar="N", help="override the configuration's seed")
    _add_network(c, "both runs")
    _add_set(c)
    c.set_defaults(func=_command("compare", "cmd_compare"))


def _add_tune(sub: Subcommands) -> None:
    t = sub.add_parser(
        "tune",
        help="the best link idle_timeout (wake_time, control) per link class within a budget",
        description="Screen link settings per link class from one always-on run, confirm the best "
        "by full simulation (a sweep), print the chosen one and write it as a config fragment.",
    )
    t.add_argument("config", metavar="CONFIG", help="configuration file (.toml or .json)")
    t.add_argument(
        "--slowdown", required=True, metavar="PCT", help="slowdown budget, percent (e.g. 1%%)"
    )
    t.add_argument("--timeouts", help="idle_timeout values to screen, us")
    t.add_argument("--wake-time", metavar="US,...", help="also tune wake_time over these, us")
    t.add_argument("--control", metavar="C,...", help="also tune control: paired,independent")
    t.add_argument(
        "--policies",
        default="timeout",
        metavar="P,...",
        help="link policies to search: timeout (screened, the default), adaptive, perfbound "
        "(confirmed at a few parameter values), predictive (confirmed at its defaults)",
    )
    t.add_argument("-k", type=int, default=4, help="candidates confirmed by simulation")
    t.add_argument("-o", "--output", metavar="TOML", help="write the chosen setting there")
    t.add_argument(
        "--runs", metavar="DIR", help="keep the confirming sweep there (default: a temporary one)"
    )
    t.add_argument("-j", "--workers", type=int, metavar="N", help="worker processes")
    t.add_argument("--json", action="store_true", help="print the candidates as JSON")
    t.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    _add_network(t, "the screening run (and of the confirming sweep, unless --confirm)")
    t.add_argument(
        "--confirm",
        choices=("packet", "flow"),
        help="the network model of the confirming sweep (default: packet when screening on "
        "flows, else the screening run's)",
    )
    _add_set(t)
    t.set_defaults(func=_command("tune", "cmd_tune"))


def _add_analyze(sub: Subcommands) -> None:
    a = sub.add_parser("analyze", help="analyses of results", description="Analyses of results.")
    asub = a.add_subparsers(dest="analysis", metavar="ANALYSIS", parser_class=_Parser)
    asub.required = True
    ai = asub.add_parser(
        "idle",
        help="screen idle_timeout / wake_time settings from a run's idle intervals",
        description="From one run's idle intervals (ideally always-on), the wakes, LPI residency, "
        "link energy and penalty bound of every (idle_timeout, wake_time, sleep_time) setting.",
    )
    ai.add_argument("results", metavar="RESULTS", help="a results folder written by run -o")
    ai.add_argument(
        "--timeouts",
        default="10,50,250,600,1250,1600,16000,160000",
        help="idle_timeout values, us, comma-separated",
    )
    ai.add_argument("--wakes", default="5,10,17,170,850,1700", help="wake_time values, us")
    ai.add_argument("--sleeps", help="sleep_time values, us (default: the run's)")
    ai.add_argument(
        "--policy",
        default="timeout",
        metavar="P",
        help="the link policy screened: timeout (default) or oracle (sleeps in every gap past "
        "break-even, no delay; --timeouts play no part)",
    )
    ai.add_argument(
        "--links",
        default="",
        metavar="KINDS",
        help="only links of these kinds, comma-separated (node, local, global, tree1, torus0, ...)",
    )
    ai.add_argument(
        "--control",
        choices=["paired", "independent"],
        help="the candidate control of the screened links (default: the run's)",
    )
    ai.add_argument("-o", "--output", metavar="CSV", help="also write the table as CSV")
    ai.add_argument("--json", action="store_true", help="print the table as JSON")
    ai.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    ai.set_defaults(func=_command("analyze_idle", "cmd_analyze_idle"))
    aj = asub.add_parser(
        "joblog",
        help="DIMM standby energy of the hotplug policies over a cluster job log (SWF)",
        description="From a Standard Workload Format job log (plain or gzip): the share of "
        "node-time whose memory fits the first DIMM of each channel, and the DIMM standby energy "
        "of always_on, bandwidth_preserving and ideal. Settings not given come from --config, "
        "else the paper's CX400 node. See docs/cli.md for the definitions.",
    )
    aj.add_argument("log", metavar="LOG", help="an SWF job log (.swf or .swf.gz)")
    aj.add_argument(
        "--config", metavar="FILE", help="a TOML file with a [joblog] table of these settings"
    )
    aj.add_argument("--channels", type=int, metavar="N", help="memory channels per node (8)")
    aj.add_argument("--dimms-per-channel", type=int, metavar="N", help="DIMMs per channel (2)")
    aj.add_argument("--dimm-gib", type=float, metavar="GIB", help="capacity of a DIMM (8)")
    aj.add_argument(
        "--dimm-standby-w", type=float, metavar="W", help="standby power of a DIMM that is on (0.9)"
    )
    aj.add_argument(
        "--idle-node-gib", type=float, metavar="GIB", help="memory in use on an idle node (2)"
    )
    aj.add_argument(
        "--cores-per-node",
        type=int,
        metavar="N",
        help="processors per node (default: the header's MaxProcs / MaxNodes)",
    )
    aj.add_argument(
        "--nodes", type=int, metavar="N", help="the machine's nodes (default: the header's)"
    )
    aj.add_argument(
        "--assume-gib",
        type=float,
        metavar="GIB",
        help="memory per node of jobs whose line gives none (default: skip them)",
    )
    aj.add_argument("--json", action="store_true", help="print the results as JSON")
    aj.set_defaults(func=_command("analyze_joblog", "cmd_analyze_joblog"))


def _add_validate(sub: Subcommands) -> None:
    v = sub.add_parser(
        "validate",
        help="reproduce the papers' checks; print target beside simulated value",
        description="Run the validation checks of docs/references.md. Exit status 4 if any fails.",
    )
    v.add_argument(
        "--check", action="append", metavar="ID", help="run only this check (repeatable)"
    )
    v.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="also write DIR/validate.json: each check with the data of its figure "
        "(`tracewatt report DIR` draws them)",
    )
    _add_force(v)
    v.add_argument("--json", action="store_true", help="print the checks as a JSON list")
    v.add_argument(
        "--slow",
        action="store_true",
        help="also run the checks' slower parts on the data beside the repository "
        "(checks 5 and mpi-wait: the real NPB class B traces)",
    )
    v.add_argument(
        "--data",
        default="../shared/data",
        metavar="DIR",
        help="where --slow finds that data (default: ../shared/data)",
    )
    _add_network(v, "the checks' simulations (checks that do not apply to it say why)")
    v.add_argument("-v", "--verbose", action="store_true", help="print every check's details")
    v.add_argument("-q", "--quiet", action="store_true", help="print nothing; exit status only")
    v.set_defaults(func=_command("validate", "cmd_validate"))


def _add_report(sub: Subcommands) -> None:
    rp = sub.add_parser(
        "report",
        help="figures and a self-contained HTML report of a results folder",
        description="Write one HTML file (figures embedded, no external links) for a results "
        "folder written by run -o or compare -o; or, with --figures, the figures as files.",
    )
    rp.add_argument(
        "results",
        metavar="RESULTS",
        help="a results folder (run -o, compare -o, sweep -o or study -o)",
    )
    rp.add_argument(
        "-o",
        "--output",
        metavar="HTML",
        help="the HTML file to write (default: RESULTS/report.html; with --figures, none unless "
        "given)",
    )
    rp.add_argument("--figures", metavar="DIR", help="write each figure to DIR/<figure>.FORMAT")
    rp.add_argument(
        "--format", choices=("png", "svg"), help="format of the --figures files (default png)"
    )
    rp.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    rp.set_defaults(func=_command("report", "cmd_report"))
