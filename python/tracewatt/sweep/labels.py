"""How a sweep's reports name its axes when the spec gives no ``label``: the names a reader
knows (machine, workload, link policy) and the field's words with its unit."""

from __future__ import annotations

import re

#: Names a reader knows for the fields sweeps vary most (:func:`default_label`).
_KNOWN_LABELS = {
    "machine.preset": "machine",
    "machine": "machine",
    "power.links.policy": "link policy",
    "power.control": "link control",
    "power.links.control": "link control",
    "power.dimms.policy": "DIMM policy",
    "mpi.wait.policy": "MPI wait policy",
}
#: A field's unit suffix and how a label writes it.
_UNITS = {
    "_us": "us",
    "_ns": "ns",
    "_ms": "ms",
    "_s": "s",
    "_gbps": "Gb/s",
    "_bytes": "B",
    "_w": "W",
    "_j": "J",
    "_pct": "%",
}
# Fields named only by their table (`jobs[0].workload.kind` is the workload's kind).
_GENERIC = frozenset({"policy", "kind", "path", "preset", "name"})


def default_label(path: str) -> str:
    """How a report names an axis without a ``label``: a name a reader knows for the usual
    fields (``machine.preset``: machine; ``jobs[0]`` and ``jobs[0].workload``: workload), else
    the field's last name in words with its unit (``power.links.idle_timeout_us``: idle
    timeout (us))."""
    job = re.match(r"jobs(?:\[(\d+)\]|\.(\d+))(?:\.|$)", path)
    rest = path[job.end() :] if job else path
    prefix = (
        f"job {job.group(1) or job.group(2)} "
        if job and (job.group(1) or job.group(2)) != "0"
        else ""
    )
    if job and rest in ("", "workload"):
        return f"{prefix}workload"
    if job and rest in ("trace", "trace.path"):
        return f"{prefix}trace"
    if rest in _KNOWN_LABELS:
        return prefix + _KNOWN_LABELS[rest]
    names = [re.sub(r"\[\d+\]$", "", n) for n in rest.split(".") if n]
    if not names:
        return path
    words = names[-1]
    if words in _GENERIC and len(names) > 1:
        words = f"{names[-2]} {words}"
    unit = next((u for suffix, u in _UNITS.items() if words.endswith(suffix)), None)
    if unit is not None:
        words = words[: words.rindex("_")]
    words = words.replace("_", " ")
    return prefix + (f"{words} ({unit})" if unit is not None else words)
