#!/usr/bin/env bash
# Run a command with the local AWS up (moto + OpenSearch), then stop it whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
stop() { "$PY" -m localstack.local_aws down || true; }
trap stop EXIT
eval "$("$PY" -m localstack.local_aws up)"
"$@"
