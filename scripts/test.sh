#!/usr/bin/env bash
# The README's test command: prepares a fresh Debian machine (as root: system packages, npm dependencies, build),
# then runs every test (`npm test`: unit tests, then integration tests in real network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CI="${CI:-true}" npm test
