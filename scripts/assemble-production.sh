#!/usr/bin/env bash
# Assembles the server's production output into OUT_DIR, from a repository where it is built
# (`npx turbo run build --filter=@scenario-scoring/server`): the dist/ of the server and of the workspace
# packages it imports, and their production dependencies only, at the versions of package-lock.json.
# Start it with `node OUT_DIR/apps/server/dist/main.js`. The Dockerfile runs this script, and
# apps/server/test/production-build.test.ts runs it and starts the result, so both ship the same thing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:?usage: scripts/assemble-production.sh OUT_DIR}"
# The server and the workspace packages it depends on at run time.
packages=(packages/api-types packages/engine packages/tlog apps/server)

for package in "${packages[@]}"; do
  if [ ! -d "$root/$package/dist" ]; then
    echo "assemble-production: $package/dist is missing; run: npx turbo run build --filter=@scenario-scoring/server" >&2
    exit 1
  fi
done

rm -rf "$out"
mkdir -p "$out"
cp "$root/package-lock.json" "$root/.npmrc" "$out/"
# A root package.json whose only workspaces are the ones shipped, so npm installs nothing else.
# shellcheck disable=SC2016 # the quotes hold JavaScript, expanded by node
node -e '
  const fs = require("node:fs");
  const [source, target, ...workspaces] = process.argv.slice(1);
  const root = JSON.parse(fs.readFileSync(source, "utf8"));
  const shipped = { name: root.name, private: true, type: root.type, engines: root.engines, workspaces };
  fs.writeFileSync(target, `${JSON.stringify(shipped, null, 2)}\n`);
' "$root/package.json" "$out/package.json" "${packages[@]}"
for package in "${packages[@]}"; do
  mkdir -p "$out/$package"
  cp "$root/$package/package.json" "$out/$package/"
  cp -R "$root/$package/dist" "$out/$package/dist"
done
# --prefer-offline: the npm cache of the build serves what it has; --ignore-scripts: nothing runs.
(cd "$out" && npm install --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error)
# The reviewed patches of patches/ (see docs/benchmarks.md), applied by the build's own patch-package,
# which is a development dependency and so not shipped; --error-on-fail: a patch that no longer applies
# stops the assembly instead of shipping the dependency unpatched.
cp -R "$root/patches" "$out/patches"
(cd "$out" && node "$root/node_modules/patch-package/index.js" --error-on-fail >/dev/null)
rm -rf "$out/patches"
rm -f "$out/.npmrc"
echo "assemble-production: $out ready; start it with: node $out/apps/server/dist/main.js"
