#!/bin/sh
# Builds the tracewatt PMPI tracer (libtwtrace.so) and, with --tests, the test MPI programs.
#   tracer/build.sh [OUT_DIR] [--tests]      (default OUT_DIR: tracer/build)
# Needs mpicc (Debian: apt-get install openmpi-bin libopenmpi-dev; mpif90 from gfortran for
# the Fortran test program).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/build}
case "$OUT" in --tests) OUT=$HERE/build ;; esac
mkdir -p "$OUT"
CFLAGS=${CFLAGS:--O2 -g -Wall -Wextra -Wno-unused-parameter}
mpicc $CFLAGS -fPIC -shared -o "$OUT/libtwtrace.so" "$HERE/twtrace.c"
if [ "${2:-}" = "--tests" ] || [ "${1:-}" = "--tests" ]; then
    mpicc -O2 -o "$OUT/ring_c" "$HERE/tests/ring.c"
    mpicc -O2 -o "$OUT/pingpong" "$HERE/tests/pingpong.c"
    if command -v mpif90 >/dev/null 2>&1; then
        mpif90 -O2 -o "$OUT/ring_f" "$HERE/tests/ring.f90"
    fi
fi
echo "$OUT/libtwtrace.so"
