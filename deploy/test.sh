#!/usr/bin/env bash
# Installs what is missing, builds with the `ci` preset (Debug, ASan + UBSan,
# warnings as errors) on every core and runs every test (labels unit,
# integration, e2e), also on every core. The last lines are ctest's summary.
#   NEARDUP_TEST_PRESET=dev deploy/test.sh       # the same without -Werror (build/dev)
#   NEARDUP_TEST_PRESET=release deploy/test.sh   # optimized build instead
#   NEARDUP_TEST_LABEL=unit deploy/test.sh       # only one label
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash deploy/install-deps.sh
preset=${NEARDUP_TEST_PRESET:-ci}
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
label_args=()
[ -n "${NEARDUP_TEST_LABEL:-}" ] && label_args=(-L "$NEARDUP_TEST_LABEL")
exec ctest --preset "$preset" -j "$jobs" --timeout 600 "${label_args[@]}"
