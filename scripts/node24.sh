#!/usr/bin/env bash
# Source this file: it puts Node 24 first on PATH.
# The project targets Node 24 LTS. When the system Node is older, Node 24 is installed into
# .tools/node24 from the npm registry's `node` package (it ships the binary), once, and reused.
NODE24_VERSION="24.21.0"
_ss_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_ss_bin="$_ss_root/.tools/node24/node_modules/node/bin"
_ss_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(_ss_major node)" -lt 24 ]; then
  if [ ! -x "$_ss_bin/node" ] || [ "$(_ss_major "$_ss_bin/node")" -lt 24 ]; then
    echo "scenario-scoring: system Node is $(node --version 2>/dev/null || echo absent); installing Node $NODE24_VERSION into .tools/node24" >&2
    npm install --silent --no-save --no-package-lock --no-audit --no-fund \
      --prefix "$_ss_root/.tools/node24" "node@$NODE24_VERSION" >&2 || return 1 2>/dev/null || exit 1
  fi
  export PATH="$_ss_bin:$PATH"
fi
unset -f _ss_major
unset _ss_root _ss_bin
