#!/usr/bin/env bash
# The crash simulator (docs/state.md): every state a kill or a power loss can leave of each store, recovered and
# checked. Run by Bun when the build has it (the plugins' locks are flock(2) through its FFI); under Node alone
# each lock would start flock(1), so fewer states are explored (and the 10,000 floor is not asked for).
set -euo pipefail
cd "$(dirname "$0")/.."
# --mutants: the simulator's own test, each patch of scripts/crash-mutants/ applied alone to a copy of the build.
if [ "${1:-}" = "--mutants" ]; then
  shift
  runner=node_modules/.bin/bun
  [ -x "$runner" ] || runner="$(command -v node)"
  exec node scripts/crash-mutants.mjs "$runner" "$@"
fi
if [ -x node_modules/.bin/bun ]; then
  exec node_modules/.bin/bun dist-test/testing/crash/run.js "$@"
fi
echo "crash simulator: Bun is not installed here; a reduced run under Node" >&2
exec node dist-test/testing/crash/run.js --power-per-point 4 --min 0 "$@"
