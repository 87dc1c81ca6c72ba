#!/usr/bin/env bash
# Runs every check and test: lint, contract bundle, types check, docs test in Chromium, mock test,
# engine, server (SQLite and PostgreSQL, the log's Go interop test, nginx in front of it, promtool on the
# alert rules), client pack test
# and the contract suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
if [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium for the docs test" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "The docs test needs Chromium: install Debian's 'chromium' package or set CHROMIUM_PATH." >&2
    exit 1
  fi
fi
# The log's interop test verifies with Go's golang.org/x/mod/sumdb (tlog, note), built offline in GOPATH mode.
if ! command -v go >/dev/null 2>&1 || [ ! -d /usr/share/gocode/src/golang.org/x/mod/sumdb ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's golang-go and golang-golang-x-mod-dev for the log interop test" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go golang-golang-x-mod-dev >/dev/null
  else
    echo "The log interop test needs Go: install Debian's 'golang-go' and 'golang-golang-x-mod-dev'." >&2
    exit 1
  fi
fi
# The reverse-proxy test runs the nginx example of deploy/ in front of the built server.
if [ -z "${NGINX_PATH:-}" ] && ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's nginx for the reverse-proxy test" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
  else
    echo "The reverse-proxy test needs nginx: install Debian's 'nginx' package or set NGINX_PATH." >&2
    exit 1
  fi
fi
# The Prometheus rules test runs promtool (check rules, test rules) on deploy/prometheus/.
if [ -z "${PROMTOOL_PATH:-}" ] && ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's prometheus (promtool) for the alert rules test" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
  else
    echo "The alert rules test needs promtool: install Debian's 'prometheus' package or set PROMTOOL_PATH." >&2
    exit 1
  fi
fi
exec npm test
