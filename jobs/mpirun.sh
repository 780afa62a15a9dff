#!/bin/bash
# Batch run without a scheduler: simulate, gradient and optimize under mpirun.
#
#   jobs/mpirun.sh CONFIG [NPROCS] [--set k=v ...]
#
# Writes OUT/<name>.h5 (trajectory), OUT/<name>-gradient.json and the optimization
# record OUT/<name>-opt.h5 (+ .png) next to each other; re-running continues the
# optimization (--restart) instead of starting over.  Kill it at any time.
set -euo pipefail
CONFIG=${1:?usage: jobs/mpirun.sh CONFIG [NPROCS] [--set k=v ...]}
shift
NP=2
if [[ ${1:-} =~ ^[0-9]+$ ]]; then NP=$1; shift; fi
OUT=${OUT:-out}
PARMBS=${PARMBS:-parmbs}
MPIRUN=${MPIRUN:-mpirun}
NAME=$(basename "$CONFIG" .toml)
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}

# an interrupted run left OUT.h5.partial (renamed onto OUT.h5 when complete): continue it
if [ -e "$OUT/$NAME.h5.partial" ]; then SIM=(--restart "$OUT/$NAME.h5"); else SIM=(-o "$OUT/$NAME.h5"); fi
$MPIRUN -n "$NP" $PARMBS simulate "$CONFIG" "${SIM[@]}" --plot "$OUT/$NAME.png" "$@"
$MPIRUN -n "$NP" $PARMBS gradient "$CONFIG" --json "$OUT/$NAME-gradient.json" "$@"
if [ -s "$OUT/$NAME-opt.h5.partial" ] || [ -s "$OUT/$NAME-opt.h5" ]; then MODE=(--restart "$OUT/$NAME-opt.h5")
else MODE=(-o "$OUT/$NAME-opt.h5"); fi
$MPIRUN -n "$NP" $PARMBS optimize "$CONFIG" "${MODE[@]}" "$@"
