#!/usr/bin/env bash
# Lints the Dockerfile with dockerfile-utils (Debian has no hadolint package, and no Docker engine runs
# here to build it). dockerfile-utils exits 0 even when it warns, so any finding fails this check.
set -euo pipefail
cd "$(dirname "$0")/.."
findings="$(node_modules/.bin/dockerfile-utils lint Dockerfile)"
if [ -n "$findings" ]; then
  echo "Dockerfile: dockerfile-utils found problems:" >&2
  echo "$findings" >&2
  exit 1
fi
echo "Dockerfile: no problems (dockerfile-utils lint)"
