#!/usr/bin/env bash
# e2e: docs and comments speak to users in the present tense (STYLE.md, rule
# 16): deploy/check-history.sh finds no tracked file but CHANGELOG.md that
# names a development round, a session or an issue number. Needs no binary.
set -euo pipefail
name=history_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=${NEARDUP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

bash "$root/deploy/check-history.sh" "$root" >"$work/found" 2>&1 \
  || { cat "$work/found"; fail "lines above name development history (move it to CHANGELOG.md, or say what is true now)"; }
pass

echo "$name: $passed passed, 0 failed"
