#!/usr/bin/env bash
# Starts the server on the embedded database (SQLite in ./data), installing and building what it needs
# first (the server, and the client the README's examples import).
# The last step is `exec node`: the server replaces this shell, so SIGTERM and Ctrl-C reach it and it
# drains and exits, instead of a wrapper dying and leaving the server holding its port.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
npx turbo run build --filter=@scenario-scoring/server --filter=@scenario-scoring/client --output-logs=errors-only
# A local start (NODE_ENV unset: the server's default is production) lets webhooks reach a receiver on this
# machine, a newcomer's first receiver; NODE_ENV=production, or WEBHOOK_ALLOWED_CIDRS set (even empty), keeps
# the server's refusal of loopback and private addresses.
if [ -z "${NODE_ENV:-}" ] && [ -z "${WEBHOOK_ALLOWED_CIDRS+set}" ]; then
  export WEBHOOK_ALLOWED_CIDRS=127.0.0.1/32,::1/128
  echo "Local start: webhooks may go to a receiver on this machine (WEBHOOK_ALLOWED_CIDRS=$WEBHOOK_ALLOWED_CIDRS); NODE_ENV=production refuses them." >&2
fi
exec node apps/server/dist/main.js
