#!/usr/bin/env bash
# Prints the path of another JavaScript runtime's binary, installing it once into .tools/<name> from the
# npm registry (the `bun` and `deno` packages ship their linux binaries as optional dependencies). The
# client's pack test runs the packed client on them. Usage: scripts/js-runtime.sh bun|deno
set -euo pipefail
case "${1:-}" in
  bun) version="1.4.5" ;;
  deno) version="2.9.6" ;;
  *) echo "usage: scripts/js-runtime.sh bun|deno" >&2; exit 2 ;;
esac
name="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.tools/$name-$version"
bin="$dir/node_modules/.bin/$name"
if [ ! -x "$bin" ]; then
  echo "scenario-scoring: installing $name $version into .tools/$name-$version" >&2
  # Into a folder of its own, then renamed into place, so two tests asking at once cannot collide.
  mkdir -p "$root/.tools"
  staging="$dir.$$"
  npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix "$staging" "$name@$version" >&2
  mv -T "$staging" "$dir" 2>/dev/null || rm -rf "$staging"
fi
echo "$bin"
