#!/usr/bin/env bash
# Regenerates testdata/vectors.json with Go's golang.org/x/mod/sumdb/tlog and sumdb/note, from Debian's
# golang-go and golang-golang-x-mod-dev (GOPATH mode: nothing is downloaded). The tests read the committed
# file; Go is needed only to regenerate it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v go >/dev/null 2>&1 || [ ! -d /usr/share/gocode/src/golang.org/x/mod/sumdb ]; then
  echo "generate-vectors: install Debian's 'golang-go' and 'golang-golang-x-mod-dev'" >&2
  exit 1
fi
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS='' GOTOOLCHAIN=local GOCACHE="$cache" \
  go run "$here/scripts/vectors.go" >"$here/testdata/vectors.json.tmp"
mv "$here/testdata/vectors.json.tmp" "$here/testdata/vectors.json"
echo "generate-vectors: wrote $here/testdata/vectors.json"
