#!/usr/bin/env bash
# Installs tracewatt with its test tools and runs every check: Rust format, lints and tests;
# Python lint, format, types and tests. This is the README's test command (`.ci/run` runs it).
# Works as root on a fresh Debian/Ubuntu machine with Python >= 3.11 and pip, without a venv.
set -euo pipefail
cd "$(dirname "$0")/.."

export PIP_ROOT_USER_ACTION=ignore        # installing as root without a venv is intended here
export PIP_BREAK_SYSTEM_PACKAGES=1        # Debian marks its Python "externally managed" (PEP 668)
export PIP_DISABLE_PIP_VERSION_CHECK=1

step() { printf '\n==> %s\n' "$*" >&2; }

# System packages: Open MPI and gfortran, to build the PMPI tracer and the MPI test programs it
# traces; HPCC and LAMMPS, real MPI applications the tracer's tests record; Chromium with its
# WebDriver, to open the HTML report headless (the tracer and browser tests skip, saying so,
# only where these cannot be installed).
if ! command -v mpicc >/dev/null 2>&1 || ! command -v gfortran >/dev/null 2>&1 \
  || ! command -v hpcc >/dev/null 2>&1 || ! command -v lmp >/dev/null 2>&1 \
  || ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    step "installing Open MPI, gfortran, hpcc, lammps, Chromium and chromium-driver (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential gfortran openmpi-bin libopenmpi-dev hpcc lammps chromium \
      chromium-driver >/dev/null
  else
    step "warning: Open MPI/gfortran/hpcc/lammps/Chromium/chromium-driver missing and apt-get" \
      "unavailable: their tests skip"
  fi
fi
# Open MPI refuses to run as root, and CI runs as root; the tests allow it explicitly.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Rust toolchain (with rustfmt and clippy), unless one is already installed.
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    step "installing the Rust toolchain (rustup)"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs \
      | sh -s -- -y --profile minimal --component rustfmt,clippy
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi

PYTHON="${PYTHON:-python3}"

step "installing tracewatt and its test tools ($("$PYTHON" --version))"
# A regular (non-editable) install: pip builds the Rust extension in release mode through maturin
# and puts the package in site-packages; the tests import that installed package.
"$PYTHON" -m pip install --quiet '.[test]'

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
cargo test --workspace

# The tracer's tests need Open MPI, so `cargo test` reports them as ignored; run them here.
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  skip=()
  if ! command -v mpif90 >/dev/null 2>&1; then
    step "warning: mpif90 missing: the tracer's Fortran test is not run"
    skip+=(--skip tracer_records_a_fortran_program)
  fi
  for app in hpcc:hpcc lmp:lammps; do
    if ! command -v "${app%%:*}" >/dev/null 2>&1; then
      step "warning: ${app%%:*} missing: the tracer's ${app#*:} test is not run"
      skip+=(--skip "tracer_records_${app#*:}")
    fi
  done
  step "cargo test: the tracer under Open MPI"
  cargo test -p tracewatt-trace --test tracer -- --ignored ${skip[@]+"${skip[@]}"}
else
  step "warning: Open MPI missing: the tracer tests are not run"
fi

step "ruff check"
"$PYTHON" -m ruff check python tests

step "ruff format --check"
"$PYTHON" -m ruff format --check python tests

step "mypy"
"$PYTHON" -m mypy

step "pytest"
# `python/` is not on sys.path under pytest, so this tests the installed package.
"$PYTHON" -m pytest "$@"

step "all checks passed"
