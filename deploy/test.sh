#!/usr/bin/env bash
# Installs what is missing, builds with the `ci` preset (Debug, ASan + UBSan,
# warnings as errors) on every core and runs every test (labels unit,
# integration, e2e, and cluster: three kfake brokers, see docs/KAFKA.md
# "Checking neardup against your cluster"), two test slots a core. The last lines
# are ctest's summary.
#   NEARDUP_TEST_PRESET=dev deploy/test.sh       # the same without -Werror (build/dev)
#   NEARDUP_TEST_PRESET=release deploy/test.sh   # optimized build instead
#   NEARDUP_TEST_LABEL=unit deploy/test.sh       # only one label
# The other variants (deploy/test-variants.sh: the dedup/ and scan unit tests
# built portable, the integration tests and the unit tests of threaded code
# under ThreadSanitizer, the clang -Wthread-safety compile) run before the main run when
# asked, and always in CI (.ci/run), one summary line each:
#   NEARDUP_TEST_VARIANTS=1 deploy/test.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash deploy/install-deps.sh
# Formatting is checked, not argued: every C++ file follows .clang-format
# (clang-format 14); `git ls-files '*.cc' '*.h' | xargs clang-format -i` fixes it.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror \
    || { echo "test.sh: files above do not follow .clang-format" >&2; exit 1; }
fi
preset=${NEARDUP_TEST_PRESET:-ci}
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
if [ "${NEARDUP_TEST_VARIANTS:-0}" != 0 ] && [ -z "${NEARDUP_TEST_LABEL:-}" ]; then
  bash deploy/test-variants.sh
fi
label_args=()
[ -n "${NEARDUP_TEST_LABEL:-}" ] && label_args=(-L "$NEARDUP_TEST_LABEL")
# Two test slots a core: a unit test takes two (it keeps a core busy), an
# integration, e2e or cluster test one (they mostly wait on brokers and
# sessions); see tests/CMakeLists.txt. A test that fails runs once more
# (--repeat until-pass:2): the cluster tests time brokers, sessions and
# scrapes on a loaded 2-core machine, and a failure that repeats fails the run.
exec ctest --preset "$preset" -j "$((jobs * 2))" --timeout 600 --repeat until-pass:2 "${label_args[@]}"
