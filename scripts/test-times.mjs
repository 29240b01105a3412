/**
 * A node:test reporter that writes how long each test file took, slowest first, to the file named
 * by BRIDGELINE_TEST_TIMES: the wall time from its first event to its last, and the sum of its
 * top-level tests' durations. scripts/run-tests.sh adds it beside the spec reporter when that
 * variable is set, to see where the suite's time goes. The table is rewritten as files finish (not
 * once at the end) because --test-force-exit ends the runner before reporters finish.
 */
import { writeFileSync } from "node:fs";
import { Transform } from "node:stream";

const destination = process.env.BRIDGELINE_TEST_TIMES;
const files = new Map();
const started = Date.now();

export default new Transform({
  writableObjectMode: true,
  transform(event, _encoding, done) {
    record(event);
    done();
  },
});

function record(event) {
  const file = event.data?.file;
  if (destination === undefined || file === undefined) return;
  // Every file is enqueued when the run starts: its time starts when it is dequeued (started).
  if (event.type === "test:enqueue" && event.data.name === file) return;
  const now = Date.now();
  let entry = files.get(file);
  if (entry === undefined) {
    entry = { first: now, last: now, tests: 0, failed: 0 };
    files.set(file, entry);
  }
  entry.last = now;
  if ((event.type === "test:pass" || event.type === "test:fail") && event.data.nesting === 0) {
    entry.tests += event.data.details?.duration_ms ?? 0;
    if (event.type === "test:fail") entry.failed += 1;
    writeFileSync(destination, table(files, now - started));
  }
}

function table(files, elapsed) {
  const rows = [...files].sort(([, a], [, b]) => b.last - b.first - (a.last - a.first));
  const lines = [`${(elapsed / 1000).toFixed(1)} s so far, ${rows.length} files`, "wall s  tests s  file"];
  for (const [file, entry] of rows) {
    const wall = ((entry.last - entry.first) / 1000).toFixed(1).padStart(6);
    const tests = (entry.tests / 1000).toFixed(1).padStart(7);
    const failed = entry.failed ? `  (${entry.failed} failed)` : "";
    lines.push(`${wall}  ${tests}  ${file.replace(`${process.cwd()}/`, "")}${failed}`);
  }
  return `${lines.join("\n")}\n`;
}
