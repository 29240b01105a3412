/**
 * A short fuzzing run of the targets (bench/fuzz, fixed seed, two seconds each, one after another)
 * against the service in a process of its own: the service must not crash, log an error or an
 * unhandled failure, answer a request body with a 5xx, or leave a probe unanswered while any target
 * runs, and its heap must come back after a collection. On SQLite every target; on PostgreSQL the
 * targets whose inputs reach the store (the stores refuse different inputs: a NUL byte was once a
 * 500 on PostgreSQL alone), the media targets never do. The two stores' runs go on at once: each is
 * its own service, inputs and probes, and most of a run is waiting (the targets are paced, the room's
 * callers type their PIN and hear the joining prompt in real time).
 *
 * The service runs as the suite does (transpiled once by scripts/run-tests.sh, under plain node),
 * on a data directory filled from the tests' template.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  type FuzzReport,
  heapGrewTooMuch,
  heapObjects,
  mb,
  runFuzz,
  TARGET_NAMES,
} from "../../bench/fuzz/fuzz.js";
import { createTestDatabase, fillDataDir, forEachStore, type TestDatabase } from "../helpers/databases.js";

const SEED = 20;
/**
 * The targets run here: all but sip-tls, srtp and api-json, which run in the bench only (their TLS
 * handshakes, SRTP call and scrypt sign-ins would add seconds the suite's time budget has not got).
 */
const TARGETS = TARGET_NAMES.filter((name) => !["sip-tls", "srtp", "api-json"].includes(name));
/** What reaches the store: API requests, and SIP to the access number (the dial-in's PIN lookups). */
const STORE_TARGETS = ["api-xml", "sip-udp", "sip-tcp", "sdp"];
describe("fuzzing, both stores at once", { concurrency: true }, () => {
  forEachStore("fuzzing the running service (bench/fuzz, seed 20)", (kind) => {
    const targets = kind === "sqlite" ? TARGETS : TARGETS.filter((name) => STORE_TARGETS.includes(name));
    let report: FuzzReport;
    let database: TestDatabase | null = null;

    before(async () => {
      database = kind === "postgres" ? await createTestDatabase() : null;
      report = await runFuzz({
        seconds: 2,
        seed: SEED,
        only: targets,
        settleSeconds: 1,
        databaseUrl: database?.url,
        service: { prepareDataDir: fillDataDir },
      });
    });
    after(() => database?.drop());

    for (const name of targets) {
      it(`${name}: inputs sent, and every probe answered while they were`, () => {
        const target = report.targets.find((t) => t.name === name);
        assert.ok(target !== undefined && target.stats.inputs > 0, `${name} sent nothing`);
        assert.ok(target.probes.sent > 0, `no probe while ${name} ran`);
        assert.equal(target.probes.answered, target.probes.sent, report.findings.join("\n"));
      });
    }

    it("finds nothing: no crash, no error logged, no unhandled failure, no 5xx", () => {
      assert.deepEqual(report.findings, []);
      assert.deepEqual(report.failures, []);
    });

    it("the heap's objects come back after a collection", () => {
      const { heapBefore, heapAfter } = report;
      assert.ok(heapAfter !== undefined, "the service did not live to the end");
      assert.ok(
        !heapGrewTooMuch(heapBefore, heapAfter),
        `${mb(heapObjects(heapBefore))} MB before, ${mb(heapObjects(heapAfter))} MB after`,
      );
    });
  });
});
