#!/usr/bin/env bash
# Installs tracewatt and runs the main job: the default study (the TraceRP machines x workloads),
# printing its table and writing every run's results, sweep.parquet, sweep.json and report.html
# (the figures) under ./study-results/.
# Works as root on a fresh Debian/Ubuntu machine with Python >= 3.11 and pip, without a venv.
set -euo pipefail
cd "$(dirname "$0")/.."

export PIP_ROOT_USER_ACTION=ignore
export PIP_BREAK_SYSTEM_PACKAGES=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "==> installing the Rust toolchain (rustup)" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi

PYTHON="${PYTHON:-python3}"
echo "==> installing tracewatt" >&2
"$PYTHON" -m pip install --quiet .

echo "==> tracewatt study -o study-results" >&2
"$PYTHON" -m tracewatt study -o study-results "$@"
"$PYTHON" -m tracewatt report study-results
