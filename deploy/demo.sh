#!/usr/bin/env bash
# The README's run command: installs what is missing for building and running
# (install-deps.sh --demo: not the test tools or the accuracy corpora), builds
# the release preset, then runs `neardup demo`: the service on the embedded
# Kafka broker, fed a demo stream with real near-duplicates for 60 s, the page
# on http://127.0.0.1:9464/ and metrics on /metrics.
# Extra arguments go to `neardup demo` (see `neardup demo --help`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash deploy/install-deps.sh --demo  # no test tools or corpora
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc 2>/dev/null || echo 2)" --target neardup
exec build/release/app/neardup demo "$@"
