#!/usr/bin/env bash
# Starts the server on the embedded database (SQLite in ./data), installing and building what it needs
# first (the server, and the client the README's examples import).
# The last step is `exec node`: the server replaces this shell, so SIGTERM and Ctrl-C reach it and it
# drains and exits, instead of a wrapper dying and leaving the server holding its port.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
npx turbo run build --filter=@scenario-scoring/server --filter=@scenario-scoring/client --output-logs=errors-only
exec node apps/server/dist/main.js
