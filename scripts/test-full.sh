#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine with Node 20, then runs it:
# typecheck, lint and every test. `.ci/run` and the README's Quick start call this same script.
set -euo pipefail
cd "$(dirname "$0")/.."

# better-sqlite3 compiles from source where no prebuilt binary can be fetched.
missing=()
for tool in python3 make g++; do command -v "$tool" >/dev/null || missing+=("$tool");done
if ((${#missing[@]})); then
  echo "installing build tools for native modules: ${missing[*]}"
  apt-get update -qq && apt-get install -y -qq python3 make g++ >/dev/null
fi

npm install --no-audit --no-fund
npm test
