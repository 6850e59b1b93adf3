#!/usr/bin/env bash
# `npm test`: builds the program (dist/) and the tests (dist-test/), runs the unit tests, then the integration
# tests in real network namespaces against the binaries we ship (dist/bin: the standalone build when Bun is
# there), then the unit tests once more against the plain Node build, the fallback. No system setup here: as a
# normal user with only Node, the unit tests run and the integration tests are skipped with one reason; a
# fresh machine is prepared by scripts/setup.sh (scripts/test.sh runs both). Under CI=true nothing may be skipped
# for a missing prerequisite. With the C launcher built, the integration tests run twice: in exec mode, then with
# resident servers up (every call a test host makes goes to its own server).
# Plugins start a resident server by themselves when none answers (resident mode's default): the exec pass turns
# that off (TSCNI_RESIDENT=exec), the resident pass uses the servers it starts and starts none (manual); the
# auto-start tests (src/integration/resident-autostart.test.ts) set their own mode for their own socket.
set -euo pipefail
cd "$(dirname "$0")/.."
export TSCNI_RESIDENT=exec
# What to undo on the way out, whatever stops the run (one EXIT trap runs them all).
on_exit=()
run_on_exit() { for action in "${on_exit[@]}"; do eval "$action" || true; done; }
trap run_on_exit EXIT
# A test that builds a plugin's environment from scratch loses TSCNI_RESIDENT: the node's socket directory is made
# nobody's for the run (where none exists), so no server can be started there whatever a test forgets.
if [ "$(id -u)" -eq 0 ] && [ ! -e /run/tscni ]; then
  mkdir /run/tscni && chown 65534:65534 /run/tscni
  on_exit+=("rm -rf /run/tscni")
fi
# A run killed before its cleanup (SIGKILL, a VM stopped mid-run) leaves its test namespaces, all named tscni-<kind>-
# <run tag>...; those older than two hours (no run lasts that long) are removed first. The demo's and the bench's
# namespaces (demo, cluster demo, bench, bench:kill) are left: --keep keeps them on purpose.
if [ "$(id -u)" -eq 0 ] && [ -d /run/netns ]; then
  find /run/netns -maxdepth 1 -name 'tscni-*' ! -name 'tscni-demo-*' ! -name 'tscni-cluster-*' ! -name 'tscni-bench*' ! -name 'tscni-kill-*' -mmin +120 -printf '%f\n' |
    while read -r ns; do ip netns delete "$ns" 2>/dev/null && echo "removed test namespace $ns, left by a run that was killed"; done
fi
echo "== formatting and lint (biome.jsonc)"
npm run --silent lint
npm run --silent build
npm run --silent build:test

# Integration tests: everything under dist-test/integration and any *.integration.test.js; the rest are unit tests.
mapfile -t unit < <(find dist-test -name '*.test.js' -not -path 'dist-test/integration/*' -not -name '*.integration.test.js' | sort)
mapfile -t integration < <(find dist-test -name '*.test.js' \( -path 'dist-test/integration/*' -o -name '*.integration.test.js' \) | sort)
shipped=$(readlink dist/bin/bridge)

echo "== unit tests (${#unit[@]} files; plugins: ${shipped})"
node --test --test-concurrency=2 "${unit[@]}"

echo "== crash simulator (docs/state.md)"
bash scripts/crash.sh
echo "== the crash simulator's mutants: each a crash-recovery bug it must catch (scripts/crash-mutants/)"
bash scripts/crash.sh --mutants

if [ "$(id -u)" -ne 0 ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "== integration tests: CI=true, but they need root (network namespaces)" >&2
    exit 1
  fi
  echo "== integration tests skipped (${#integration[@]} files): they need root (network namespaces)"
else
  echo "== integration tests (${#integration[@]} files; plugins: ${shipped})"
  node --test --test-concurrency=1 "${integration[@]}"
  if [ -x dist/tscni ]; then
    # The same suite again in resident mode: a server for this namespace (podman's and containerd's calls) and
    # one per test host namespace (src/testing/resident-host.ts); the results must not change.
    echo "== integration tests again, served by resident servers (cnitool daemon)"
    rsdir=$(mktemp -d /run/tscni-test-resident.XXXXXX)
    # (a short warm-up: the default one costs each server ~1 s of CPU)
    dist/bin/cnitool daemon --warm-up 20 --socket "$rsdir/plugins.sock" 2>>"$rsdir/daemon.log" &
    rspid=$!
    stop_server() { kill -TERM "$rspid" 2>/dev/null && wait "$rspid" || true; umount /run/tscni-test-mnt 2>/dev/null || true; rmdir /run/tscni-test-mnt 2>/dev/null || true; }
    on_exit+=(stop_server)
    for _ in $(seq 200); do [ -S "$rsdir/plugins.sock" ] && break; sleep 0.01; done
    TSCNI_RESIDENT=manual TSCNI_TEST_RESIDENT=1 TSCNI_TEST_RESIDENT_LOG="$rsdir/served" TSCNI_RESIDENT_SOCKET="$rsdir/plugins.sock" \
      node --test --test-concurrency=1 "${integration[@]}"
    dist/bin/cnitool daemon status --socket "$rsdir/plugins.sock" >"$rsdir/status"
    stop_server
    node scripts/resident-summary.mjs "$rsdir/status" "$rsdir/served" "$rsdir/daemon.log"
    rm -rf "$rsdir"
  fi
  # No test may have left a server on the node's own socket (one started there would serve the next tests).
  if [ -S /run/tscni/plugins.sock ] && dist/bin/cnitool daemon stop >/dev/null 2>&1; then
    echo "== a resident server was left running on /run/tscni/plugins.sock by the tests (stopped now)" >&2
    exit 1
  fi
fi

if [ "$shipped" != "../cli/main.js" ]; then
  echo "== unit tests against the Node fallback build"
  on_exit+=("node scripts/link-bins.mjs >/dev/null")
  TSCNI_BUILD=node node scripts/link-bins.mjs
  node --test --test-concurrency=2 "${unit[@]}"
fi
