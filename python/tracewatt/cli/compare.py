"""``tracewatt compare``: a configuration against its always-on baseline."""

from __future__ import annotations

import argparse
import sys

from tracewatt.cli.common import (
    EXIT_OK,
    UsageError,
    empty_output,
    load_config,
    output_dir,
    run_timing,
    warn_summary,
    write_timing,
)
from tracewatt.cli.progress import sim_progress
from tracewatt.compare import (
    POLICIES_FILE,
    compare,
    compare_policies,
    comparison_json,
    link_policy_config,
)
from tracewatt.config import Config
from tracewatt.errors import ConfigError
from tracewatt.report.texts import compare_text, policies_text


def policy_names(cfg: Config, text: str) -> list[str]:
    """The link policies of ``--policies``, each checked by building its configuration: an
    unknown name is a usage error naming the option and the valid names."""
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise UsageError(f"--policies {text!r}: expected a comma-separated list of link policies")
    for name in dict.fromkeys(names):
        try:
            link_policy_config(cfg, name)
        except ConfigError as e:
            # The core's message names the field and the policies it knows.
            message = str(e).removeprefix(f"{cfg.source}: ")
            raise UsageError(f"--policies {name!r}: {message}") from None
    return names


def cmd_compare(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if args.policies is not None:
        return _compare_policies(args, cfg)
    out = output_dir(args)
    bar = sim_progress(args, cfg)
    try:
        c = compare(cfg, progress=bar.sim if bar else None)
    finally:
        if bar:
            bar.clear()
    wall_s = c.policy_wall_s
    timing = run_timing(c.policy.summary, wall_s) if wall_s is not None else None
    if not args.quiet:
        warn_summary(c.policy.summary)
    if out is not None:
        empty_output(out)
        c.baseline.write(out / "baseline")
        c.policy.write(out)
        # The policy's summary, extended with the baseline and the savings, replaces its own.
        (out / "summary.json").write_text(comparison_json(c))
        if timing is not None:
            write_timing(out, timing)
    if args.json:
        sys.stdout.write(comparison_json(c))
    elif not args.quiet:
        sys.stdout.write(compare_text(c, timing))
    return EXIT_OK


def _compare_policies(args: argparse.Namespace, cfg: Config) -> int:
    names = policy_names(cfg, args.policies)
    out = output_dir(args)
    bar = sim_progress(args, cfg)
    try:
        c = compare_policies(cfg, names, progress=bar.sim if bar else None)
    finally:
        if bar:
            bar.clear()
    if not args.quiet:
        for res in c.runs.values():
            warn_summary(res.summary)
    if out is not None:
        empty_output(out)
        c.table.to_parquet(out / POLICIES_FILE, index=False)
    if args.json:
        sys.stdout.write(c.table.to_json(orient="records", indent=2) + "\n")
    elif not args.quiet:
        sys.stdout.write(policies_text(c.table, c.has_oracle))
    return EXIT_OK
