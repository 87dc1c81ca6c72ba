#!/usr/bin/env bash
# Starts the server on the embedded database (SQLite in ./data), installing what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
exec npm start
