#!/usr/bin/env bash
# Builds and tests the variants deploy/test.sh does not cover, one after the
# other, and prints one summary line per variant:
#   portable   NEARDUP_PORTABLE (no x86 intrinsics, no -march): build and run the
#              tests of the code with CPU-specific kernels (tests/unit/dedup/ and
#              tests/unit/stream/scan/: target neardup_portable_tests)
#   tsan       ThreadSanitizer: build and run the tests of code that starts
#              threads (every integration test and the unit tests
#              tests/CMakeLists.txt lists: target neardup_threads_tests;
#              TSAN_OPTIONS with tests/tsan.supp come from the test preset;
#              not the fuzz replays: the decoders they replay start no threads)
# Neither runs layout.check_layout, a check of the sources the main run makes.
# ctest -L runs the tests of the binaries built: one not built is a placeholder
# test without a label.
#   clang-tsa  clang -Wthread-safety -Werror=thread-safety: libraries and neardup compile
# Exits non-zero if any variant fails; a variant's full output is in
# build/<preset>/test-variants.log, and its last lines are printed on failure.
#   deploy/test-variants.sh                 # all three
#   deploy/test-variants.sh tsan clang-tsa  # some of them
#   NEARDUP_JOBS=2 deploy/test-variants.sh  # parallel jobs (default: every core)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

jobs=${NEARDUP_JOBS:-$(nproc 2>/dev/null || echo 2)}
variants=("$@")
[ ${#variants[@]} -eq 0 ] && variants=(portable tsan clang-tsa)

# The steps of one variant, each a command line; they stop at the first failure.
steps_of() {
  case "$1" in
    portable)
      echo "cmake --preset portable"
      echo "cmake --build --preset portable -j $jobs --target neardup_portable_tests"
      echo "ctest --preset portable -j $((jobs * 2)) --timeout 600 -L unit -E ^layout\\."
      ;;
    tsan)
      echo "cmake --preset tsan"
      echo "cmake --build --preset tsan -j $jobs --target neardup_threads_tests"
      echo "ctest --preset tsan -j $((jobs * 2)) --timeout 600 -L unit|integration -E ^(layout|fuzz)\\."
      ;;
    clang-tsa)
      echo "cmake --preset clang-tsa"
      echo "cmake --build --preset clang-tsa -j $jobs"
      ;;
    *) return 1 ;;
  esac
}

summary=()
failed=0
for variant in "${variants[@]}"; do
  if ! steps_of "$variant" >/dev/null; then
    echo "unknown variant '$variant' (portable, tsan, clang-tsa)" >&2
    exit 2
  fi
  mkdir -p "build/$variant"
  log="build/$variant/test-variants.log"
  : >"$log"
  started=$SECONDS
  status="ok"
  while read -r step; do
    echo "== $step" >>"$log"
    echo "[$variant] $step"
    # shellcheck disable=SC2086  # a step is a plain command line
    if ! $step >>"$log" 2>&1; then
      status="FAILED at: $step"
      break
    fi
  done < <(steps_of "$variant")
  elapsed=$((SECONDS - started))
  if [ "$status" != ok ]; then
    failed=1
    echo "---- last lines of $log" >&2
    tail -n 40 "$log" >&2
  fi
  summary+=("$(printf '%-10s %-4s %4d s  %s' "$variant" "$([ "$status" = ok ] && echo pass || echo FAIL)" "$elapsed" \
    "$([ "$status" = ok ] && echo "$log" || echo "$status (see $log)")")")
done

echo
printf '%-10s %-4s %6s  %s\n' variant ok? time details
printf '%s\n' "${summary[@]}"
exit "$failed"
