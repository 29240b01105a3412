/**
 * A node:test reporter that writes how long each test file took, slowest first, to the file named
 * by BRIDGELINE_TEST_TIMES: the duration of the file's own test (the runner runs each file as one,
 * in a process of its own, from start to exit). Events of the tests inside a file name the file
 * where each was declared (a describe made by a helper names the helper), so only the file's own
 * test is read. scripts/run-tests.sh adds it beside the spec reporter when that variable is set,
 * to see where the suite's time goes. The table is rewritten as files finish (not once at the end)
 * because --test-force-exit ends the runner before reporters finish.
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
  if (destination === undefined) return;
  // The file's own test is reported complete (not passed or failed) when its process ends.
  if (event.type !== "test:complete") return;
  const { file, name, nesting, details } = event.data;
  if (file === undefined || name !== file || nesting !== 0) return;
  files.set(file, { ms: details?.duration_ms ?? 0, failed: details?.passed === false });
  writeFileSync(destination, table(Date.now() - started));
}

function table(elapsed) {
  const rows = [...files].sort(([, a], [, b]) => b.ms - a.ms);
  const total = rows.reduce((sum, [, entry]) => sum + entry.ms, 0);
  const lines = [
    `${(elapsed / 1000).toFixed(1)} s so far, ${rows.length} files, ${(total / 1000).toFixed(1)} s in all`,
    "     s  file",
  ];
  for (const [file, entry] of rows) {
    const failed = entry.failed ? "  (failed)" : "";
    lines.push(
      `${(entry.ms / 1000).toFixed(1).padStart(6)}  ${file.replace(`${process.cwd()}/`, "")}${failed}`,
    );
  }
  return `${lines.join("\n")}\n`;
}
