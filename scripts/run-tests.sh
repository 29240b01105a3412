#!/usr/bin/env bash
# Runs every test on the embedded SQLite store, then again on PostgreSQL the tests whose worth there
# is their SQL (store_test below). When no PostgreSQL is reachable the PostgreSQL half is skipped
# with one line saying so, and under CI that fails the run.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${BRIDGELINE_TEST_DATABASE_URL:=postgres://postgres@127.0.0.1:5432/test}"
export BRIDGELINE_TEST_DATABASE_URL
# Node 20's test runner takes no globs: list the files (or run the ones given as arguments).
if (($#)); then files=("$@"); else mapfile -t files < <(find test -name '*.test.ts' | sort); fi
status=0

# The tests that start `bin/bridgeline.js` run the compiled service in dist/: bring it up to date
# with the sources first (esbuild, about a second; the types are checked by `npm run typecheck`).
# A failed build fails the run.
echo "== building dist/"
npm run --silent build:service || status=1

run_suite() {
  local store=$1
  shift
  echo "== tests on $store"
  # BRIDGELINE_TEST_TIMES=prefix writes each file's time on this store to prefix-$store.txt.
  local reporters=()
  if [[ -n "${BRIDGELINE_TEST_TIMES:-}" ]]; then
    reporters=(--test-reporter=spec --test-reporter-destination=stdout
      --test-reporter=./scripts/test-times.mjs --test-reporter-destination=/dev/null)
  fi
  # A test that waits forever fails after 5 minutes (the longest takes about 30 s), a test file
  # whose process would stay alive after its tests is ended, and a half that runs past 20 minutes
  # (it takes about 5) is stopped: one stuck peer fails the run instead of hanging it.
  BRIDGELINE_TEST_TIMES=${BRIDGELINE_TEST_TIMES:+$BRIDGELINE_TEST_TIMES-$store.txt} \
  BRIDGELINE_TEST_STORE=$store timeout --kill-after=30 1200 node --import tsx --test --test-concurrency=2 \
    --test-timeout=300000 --test-force-exit "${reporters[@]}" "$@" || status=1
}

# The store's own tests, the API's (every request is SQL), the outboxes', the scheduler's, the
# conference runtime's store, the fuzzers', PostgreSQL's faults, a kill mid-write, and the tests of
# several instances on one database (only PostgreSQL can be shared; they skip on SQLite). The rest
# (rules over fakes, media, SIP, the real phones, deployment) runs once, on SQLite: the store
# queries the real-phone tests make are the conference runtime's, tested here by
# test/conference/runtime.test.ts and test/store/*.
store_test() {
  case "$1" in
    test/api/xml.test.ts | test/api/passwords.test.ts) return 1 ;;
    test/store/* | test/api/* | test/notify/* | test/outbox/* | test/webhooks/migration.test.ts | test/scheduler/*) return 0 ;;
    test/conference/runtime.test.ts | test/conference/pin-prompt-limit.test.ts | test/fuzz/*) return 0 ;;
    test/faults/postgres-*.test.ts | test/faults/sigkill.test.ts) return 0 ;;
    test/telephony/conference/cross-instance.test.ts | test/telephony/conference/separate-addresses.test.ts) return 0 ;;
    test/telephony/conference/edge.test.ts) return 0 ;;
  esac
  return 1
}
store_files=()
for file in "${files[@]}"; do
  if store_test "$file"; then store_files+=("$file"); fi
done

run_suite sqlite "${files[@]}"
if node -e '
  const pg = require("pg");
  const client = new pg.Client({ connectionString: process.env.BRIDGELINE_TEST_DATABASE_URL, connectionTimeoutMillis: 3000 });
  client.connect().then(() => client.end(), () => process.exit(1));
'; then
  if ((${#store_files[@]})); then run_suite postgres "${store_files[@]}"; fi
else
  echo "SKIPPED: the PostgreSQL half of the suite: no PostgreSQL reachable at ${BRIDGELINE_TEST_DATABASE_URL}"
  if [[ "${CI:-}" == "true" ]]; then status=1; fi
fi
exit $status
