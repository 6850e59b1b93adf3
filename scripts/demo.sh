#!/usr/bin/env bash
# The README's main job: set up (system packages, npm deps, build) and run the demo.
# Options are passed to the demo: --keep leaves it running, --teardown removes a kept demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node dist/demo/demo.js "$@"
