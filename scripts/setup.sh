#!/usr/bin/env bash
# Source this file: Node 24 on PATH, then the workspace's dependencies installed.
# Used by scripts/start.sh, scripts/test.sh and .ci/run, so a fresh clone needs nothing else.
_ss_setup_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/node24.sh
source "$_ss_setup_root/scripts/node24.sh" || return 1 2>/dev/null || exit 1
if [ ! -d "$_ss_setup_root/node_modules/.bin" ] || [ "$_ss_setup_root/package-lock.json" -nt "$_ss_setup_root/node_modules/.package-lock.json" ] \
  || [ "$_ss_setup_root/package.json" -nt "$_ss_setup_root/node_modules/.package-lock.json" ]; then
  # `npm install`, not `npm ci`: this registry has no macOS/Windows builds of turbo, which `npm ci` insists on.
  (cd "$_ss_setup_root" && npm install --no-audit --no-fund --loglevel=error) || return 1 2>/dev/null || exit 1
fi
unset _ss_setup_root
