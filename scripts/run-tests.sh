#!/usr/bin/env bash
# Runs every test once. Tests run on the embedded SQLite store; the store's tests loop over SQLite
# and PostgreSQL, and the tests of several instances on one database run on PostgreSQL
# (test/helpers/databases.ts). When no PostgreSQL is reachable those are skipped with the reason,
# except under CI, where they fail the run.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${BRIDGELINE_TEST_DATABASE_URL:=postgres://postgres@127.0.0.1:5432/test}"
export BRIDGELINE_TEST_DATABASE_URL
# Node 20's test runner takes no globs: list the files (or run the ones given as arguments).
if (($#)); then files=("$@"); else mapfile -t files < <(find test -name '*.test.ts' | sort); fi
# The files that call real peers (SIPp, baresip, Kamailio, dnsmasq, tshark, Chromium) wait on real
# time and on each other's CPU: they run two at a time. The rest (over fakes, inject() or a service
# alone) mostly wait on timers and sockets: four at a time.
# Every benchmark's smoke run (test/bench/benches.test.ts) runs three benchmarks at once, several of
# them checking real-time behaviour: it runs alone, after the other real-peer files.
peer_files=()
unit_files=()
bench_files=()
for file in "${files[@]}"; do
  if [[ $file == test/bench/benches.test.ts ]]; then
    bench_files+=("$file")
  elif grep -qE 'helpers/(sipp|baresip|wire|kamailio|browser|dnsmasq)\.js' "$file"; then
    peer_files+=("$file")
  else
    unit_files+=("$file")
  fi
done
status=0

# The tests that start `bin/bridgeline.js` run the compiled service in dist/: bring it up to date
# with the sources first (esbuild, about a second; the types are checked by `npm run typecheck`).
# A failed build fails the run.
echo "== building dist/"
npm run --silent build:service || status=1
# The TypeScript is transpiled once for the run (scripts/build-tests.mjs): the tests run as plain
# JavaScript in .test-build/tree, a copy of the tree, instead of each process loading tsx.
echo "== building .test-build/"
node scripts/build-tests.mjs || exit 1
cd .test-build/tree

# BRIDGELINE_TEST_TIMES=file writes each file's time to that file (scripts/test-times.mjs).
reporters=()
if [[ -n "${BRIDGELINE_TEST_TIMES:-}" ]]; then
  reporters=(--test-reporter=spec --test-reporter-destination=stdout
    --test-reporter=./scripts/test-times.mjs --test-reporter-destination=/dev/null)
fi
# A test that waits forever fails after 5 minutes (the longest takes about 30 s), a test file whose
# process would stay alive after its tests is ended, and a group past 15 minutes (the suite takes
# about 5) is stopped: one stuck peer fails the run instead of hanging it.
run_group() {
  local name=$1 concurrency=$2
  shift 2
  (($#)) || return 0
  echo "== $name: $# files, $concurrency at a time"
  BRIDGELINE_TEST_TIMES=${BRIDGELINE_TEST_TIMES:+$BRIDGELINE_TEST_TIMES.$name} \
    timeout --kill-after=30 900 node --enable-source-maps --test --test-concurrency="$concurrency" \
    --test-timeout=300000 --test-force-exit "${reporters[@]}" "${@/%.ts/.js}" || status=1
}
run_group real-peers 2 "${peer_files[@]}"
run_group benches 1 "${bench_files[@]}"
run_group others 4 "${unit_files[@]}"
exit $status
