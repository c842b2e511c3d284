#!/usr/bin/env bash
# Docs and comments speak to users in the present tense: no tracked file but
# CHANGELOG.md names a development round, a session or an issue number
# (STYLE.md, rule 16). Lists every offending file:line and exits 1; exits 0
# when there is none.
#   bash deploy/check-history.sh [SOURCE_DIR]   (default: this repository)
# Reads the files git tracks (every file below SOURCE_DIR when it is not a git
# checkout); skips binary files, node_modules, CHANGELOG.md and this script.
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"

ordinal='first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|[0-9]+(st|nd|rd|th)'
number='one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty'
patterns=(
  '\b(iss[u]e|rou[n]d|sess[i]on)s?[ -]?#?[0-9]+\b'        # a word, then its number (written so that it does not match itself)
  "\\b(issue|round|session)s? ($number)\\b"                # round one
  "\\b($ordinal) (development )?(round|session)s?\\b"      # the third session, the 4th round
  '\b(this|that|the same|previous|earlier|last|next) sessions?\b'  # this session's changes
  '\b(iss[u]e|pr|pull request|bug|ticket|fixes|closes) ?#[0-9]+'  # a word, then #number
  '\(#[0-9]+\)'                                            # (#27)
)
args=()
for p in "${patterns[@]}"; do args+=(-e "$p"); done

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files -z; }
else
  list() { find . -type f -not -path './.git/*' -printf '%P\0'; }
fi

# -I: binary files never match. Files listed but absent (deleted, not yet
# committed) are skipped.
found=$(list | grep -z -v -E '(^|/)node_modules/|^CHANGELOG\.md$|^deploy/check-history\.sh$' |
  xargs -0 -r grep -n -I -i -E -s "${args[@]}" -- || true)

if [ -n "$found" ]; then
  printf '%s\n' "$found"
  echo "check-history: $(printf '%s\n' "$found" | wc -l) line(s) name a round, a session or an issue number;" \
    "say what is true now (history belongs in CHANGELOG.md and commit messages)" >&2
  exit 1
fi
echo "check-history: no development history outside CHANGELOG.md"
