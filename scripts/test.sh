#!/usr/bin/env bash
# The whole test suite from a fresh clone: set up (system packages, npm deps, build), then unit tests, then
# integration tests in real network namespaces (root; they skip with a printed reason otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# Integration tests: everything under dist/integration and any *.integration.test.js; the rest are unit tests.
mapfile -t unit < <(find dist -name '*.test.js' -not -path 'dist/integration/*' -not -name '*.integration.test.js' | sort)
mapfile -t integration < <(find dist -name '*.test.js' \( -path 'dist/integration/*' -o -name '*.integration.test.js' \) | sort)

echo "== unit tests (${#unit[@]} files)"
node --test --test-concurrency=2 "${unit[@]}"
echo "== integration tests (${#integration[@]} files)"
node --test --test-concurrency=1 "${integration[@]}"
