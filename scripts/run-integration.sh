#!/usr/bin/env bash
# scripts/run-integration.sh — run tests/integration/*.sh in name order.
#
# Usage: scripts/run-integration.sh [SCRIPT...]     (make test-integration)
#   Each script is run as `bash SCRIPT <repo root>` from the repo root; it starts its
#   own clusters with scripts/cluster.sh. All scripts run even if one fails; the exit
#   status is non-zero if any failed. Clusters that were not running before and are
#   still running afterwards are stopped (clusters you had running, e.g. demo, are left alone).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CL=$ROOT/scripts/cluster.sh

running() { "$CL" list | awk '$2 == "running" { print $1 }'; }
before=$(running)
stop_new() {
    local c
    for c in $(running); do
        grep -qxF "$c" <<<"$before" || "$CL" stop "$c" fast || true
    done
}
trap stop_new EXIT

if [ $# -gt 0 ]; then scripts=("$@"); else
    shopt -s nullglob
    scripts=(tests/integration/*.sh)
fi
[ ${#scripts[@]} -gt 0 ] || { echo "integration: no scripts under tests/integration/"; exit 0; }

failed=()
for t in "${scripts[@]}"; do
    echo "--- $t"
    start=$SECONDS
    if bash "$t" "$ROOT"; then
        echo "--- $t: ok ($((SECONDS - start)) s)"
    else
        echo "--- $t: FAILED ($((SECONDS - start)) s)"
        failed+=("$t")
    fi
    stop_new
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "integration: ${#failed[@]} of ${#scripts[@]} failed: ${failed[*]}"
    exit 1
fi
echo "integration: all ${#scripts[@]} script(s) passed"
