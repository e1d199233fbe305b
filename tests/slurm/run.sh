#!/usr/bin/env bash
# The slurm runner's end-to-end tests: starts a one-node cluster (cluster.sh) in a
# temporary directory, runs pytest tests/slurm against it, stops the cluster whatever
# happens. Fails when the cluster cannot start: these tests never pass by skipping.
#   tests/slurm/run.sh [pytest arguments...]
set -uo pipefail
cd "$(dirname "$0")/../.."
cluster=$(mktemp -d /tmp/diagnose-slurm-XXXXXX)
trap 'tests/slurm/cluster.sh stop "$cluster"; rm -rf "$cluster"' EXIT
tests/slurm/cluster.sh start "$cluster" || exit 1
export SLURM_CONF=$cluster/slurm.conf
export DIAGNOSE_BIN=${DIAGNOSE_BIN:-$PWD/build/cli/diagnose}
.venv/bin/python -m pytest tests/slurm -q -p no:cacheprovider "$@"
