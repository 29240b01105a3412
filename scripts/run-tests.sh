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
# The real-peer files (tens of seconds each) go first, so that the two test processes end together
# instead of one long file running alone at the end.
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(
    find test -name '*.test.ts' | sort |
      awk '{ print (/^test\/(telephony\/(e2e|conference)|console|fuzz|notify|deploy)\//) ? 0 : 1, $0 }' |
      sort -s -k1,1n | cut -d' ' -f2-
  )
fi
status=0

# The tests that start `bin/bridgeline.js` run the compiled service in dist/: bring it up to date
# with the sources first (esbuild, about a second; the types are checked by `npm run typecheck`).
# A failed build fails the run.
echo "== building dist/"
npm run --silent build:service || status=1

echo "== tests"
# BRIDGELINE_TEST_TIMES=file writes each file's time to that file (scripts/test-times.mjs).
reporters=()
if [[ -n "${BRIDGELINE_TEST_TIMES:-}" ]]; then
  reporters=(--test-reporter=spec --test-reporter-destination=stdout
    --test-reporter=./scripts/test-times.mjs --test-reporter-destination=/dev/null)
fi
# A test that waits forever fails after 5 minutes (the longest takes about 30 s), a test file whose
# process would stay alive after its tests is ended, and a run past 20 minutes (it takes about 6) is
# stopped: one stuck peer fails the run instead of hanging it.
timeout --kill-after=30 1200 node --import tsx --test --test-concurrency=2 --test-timeout=300000 \
  --test-force-exit "${reporters[@]}" "${files[@]}" || status=1
exit $status
