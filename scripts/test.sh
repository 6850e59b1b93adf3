#!/usr/bin/env bash
# The whole test suite from a fresh clone: set up (system packages, npm deps, build), then unit tests and
# integration tests (real network namespaces; root, else they skip with a printed reason) against the
# binaries we ship (dist/bin: the standalone build when Bun is available), then the unit tests once more
# against the plain Node build, the fallback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# Integration tests: everything under dist/integration and any *.integration.test.js; the rest are unit tests.
mapfile -t unit < <(find dist -name '*.test.js' -not -path 'dist/integration/*' -not -name '*.integration.test.js' | sort)
mapfile -t integration < <(find dist -name '*.test.js' \( -path 'dist/integration/*' -o -name '*.integration.test.js' \) | sort)
shipped=$(readlink dist/bin/bridge)

echo "== unit tests (${#unit[@]} files; plugins: ${shipped})"
node --test --test-concurrency=2 "${unit[@]}"
echo "== integration tests (${#integration[@]} files; plugins: ${shipped})"
node --test --test-concurrency=1 "${integration[@]}"

if [ "$shipped" != "../cli/main.js" ]; then
  echo "== unit tests against the Node fallback build"
  restore() { node scripts/link-bins.mjs >/dev/null; }
  trap restore EXIT
  TSCNI_BUILD=node node scripts/link-bins.mjs
  node --test --test-concurrency=2 "${unit[@]}"
fi
