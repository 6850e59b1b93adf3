#!/usr/bin/env bash
# The README's main job: set up (system packages, npm deps, build) and run the demo.
# Options are passed to the demo (--help lists them and the plugins): --keep leaves it running, --teardown removes a kept demo, --cluster runs the
# cluster-ipam demo (a local 3-member etcd, three simulated nodes sharing one address space).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node dist/demo/demo.js "$@"
