#!/usr/bin/env bash
# Source this file: Node 24 on PATH, then the workspace's dependencies installed.
# Used by scripts/start.sh, scripts/test.sh and .ci/run, so a fresh clone needs nothing else.
_ss_setup_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/node24.sh
source "$_ss_setup_root/scripts/node24.sh" || return 1 2>/dev/null || exit 1
# The patches (patches/, applied by patch-package after each install) as last installed: when they changed
# since, their packages are installed afresh, so the new patches apply to the original files.
_ss_patches_sum="$(cat "$_ss_setup_root"/patches/*.patch 2>/dev/null | sha256sum | cut -d' ' -f1)"
_ss_patches_stamp="$_ss_setup_root/node_modules/.patches.sha256"
_ss_patches_stale=""
if [ -d "$_ss_setup_root/node_modules" ] && [ "$(cat "$_ss_patches_stamp" 2>/dev/null)" != "$_ss_patches_sum" ]; then
  _ss_patches_stale=1
  # No stamp until the new patches applied: a failed install is retried by the next run.
  rm -f "$_ss_patches_stamp"
  for _ss_patch in "$_ss_setup_root"/patches/*.patch; do
    _ss_package="$(basename "$_ss_patch" | sed -e 's/+[^+]*\.patch$//' -e 's/+/\//')"
    rm -rf "${_ss_setup_root:?}/node_modules/$_ss_package"
  done
fi
if [ ! -d "$_ss_setup_root/node_modules/.bin" ] || [ "$_ss_setup_root/package-lock.json" -nt "$_ss_setup_root/node_modules/.package-lock.json" ] \
  || [ "$_ss_setup_root/package.json" -nt "$_ss_setup_root/node_modules/.package-lock.json" ] || [ -n "$_ss_patches_stale" ]; then
  # `npm install`, not `npm ci`: this registry has no macOS/Windows builds of turbo, which `npm ci` insists on.
  (cd "$_ss_setup_root" && npm install --no-audit --no-fund --loglevel=error) || return 1 2>/dev/null || exit 1
  echo "$_ss_patches_sum" >"$_ss_patches_stamp"
fi
unset _ss_setup_root _ss_patches_sum _ss_patches_stamp _ss_patches_stale _ss_patch _ss_package
