# Shared by the e2e scripts (source it after setting `name`): a scratch folder
# removed on exit, every process whose pid is in `pids` stopped on exit,
# bounded waits, and the pass/fail lines ctest reads.
work=$(mktemp -d)
pids=()
passed=0
# ours PID: the process is still a child of this test (a pid that ended may
# belong to another test's process by now: tests run side by side).
ours() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  read -r -a stat <<<"${stat##*) }" # state, parent, ...
  [ "${stat[0]}" != Z ] && [ "${stat[1]}" = "$$" ]
}
cleanup() {
  for pid in "${pids[@]}"; do ours "$pid" && kill -TERM "$pid" 2>/dev/null && kill -CONT "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "${NEARDUP_TEST_KEEP:-}" ]; then echo "$name: scratch folder kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
# fail MESSAGE: says why, shows the end of the service's log ($work/run.err), exits 1.
fail() { echo "$name: FAIL: $*"; echo "--- run log"; tail -30 "$work/run.err" 2>/dev/null; exit 1; }
pass() { passed=$((passed + 1)); }
# require TOOL...: exits 1 naming the first tool that is not installed.
require() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$name: $tool is not installed (deploy/install-deps.sh)"; exit 1; }
  done
}
# wait_for SECONDS COMMAND...: polls the command until it succeeds or time runs out.
wait_for() {
  local limit=$1; shift
  local deadline=$((SECONDS + limit))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}
# A free loopback port (the kernel's pick; closed again at once).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# stop_gracefully PID: SIGTERM, then the process must exit 0 within 10 s (flush, commit, leave the group).
stop_gracefully() {
  local pid=$1 status
  kill -TERM "$pid"
  local deadline=$((SECONDS + 10))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "neardup run did not exit within 10 s of SIGTERM"
    sleep 0.1
  done
  wait "$pid" && status=0 || status=$?
  [ "$status" -eq 0 ] || fail "neardup run exited $status after SIGTERM"
}
