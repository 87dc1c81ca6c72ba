#!/usr/bin/env bash
# Prints the path of a Node 22 binary, installing it once into .tools/node22 from the npm registry's `node`
# package (it ships the binary, like scripts/node24.sh). The tests that check what a consumer on an older
# Node sees (the client's pack test, the server's version check) run it.
set -euo pipefail
NODE22_VERSION="22.23.3"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.tools/node22/node_modules/node/bin/node"
if [ -x "$bin" ] && [ "$("$bin" --version)" != "v$NODE22_VERSION" ]; then
  rm -rf "$root/.tools/node22" # another version: replaced below
fi
if [ ! -x "$bin" ]; then
  echo "scenario-scoring: installing Node $NODE22_VERSION into .tools/node22" >&2
  # Into a folder of its own, then renamed into place: tests in two packages may ask at the same time, and
  # the one that finishes second keeps the first one's copy (mv -T refuses to replace a folder).
  mkdir -p "$root/.tools"
  staging="$root/.tools/node22.$$"
  npm install --silent --no-save --no-package-lock --no-audit --no-fund \
    --prefix "$staging" "node@$NODE22_VERSION" >&2
  mv -T "$staging" "$root/.tools/node22" 2>/dev/null || rm -rf "$staging"
fi
echo "$bin"
