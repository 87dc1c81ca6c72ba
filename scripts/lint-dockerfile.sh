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
# The dependency layer is cached only if every workspace's package.json is copied before `npm install`.
missing=""
for manifest in $(node -e '
  const fs = require("node:fs"), path = require("node:path");
  for (const pattern of require("./package.json").workspaces) {
    const dirs = pattern.endsWith("/*")
      ? fs.readdirSync(pattern.slice(0, -2)).map((d) => path.join(pattern.slice(0, -2), d))
      : [pattern];
    for (const dir of dirs) if (fs.existsSync(path.join(dir, "package.json"))) console.log(path.join(dir, "package.json"));
  }'); do
  grep -q "^COPY $manifest $(dirname "$manifest")/\$" Dockerfile || missing="$missing $manifest"
done
if [ -n "$missing" ]; then
  echo "Dockerfile: copy these manifests before npm install (COPY <dir>/package.json <dir>/):$missing" >&2
  exit 1
fi
echo "Dockerfile: no problems (dockerfile-utils lint; every workspace manifest copied before npm install)"
