/**
 * The import rule of biome.json (noRestrictedImports, README's Development section) on the real tree:
 * files placed for the length of the test in src/conference, src/scheduler, src/outbox,
 * src/api/routes and src/store, each importing across a boundary or within it, are linted with
 * src/ as it is; the crossings fail and nothing else in src/ does.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIOME = path.join(ROOT, "node_modules/.bin/biome");
const RULE = "lint/style/noRestrictedImports";

interface Probe {
  /** Where it is placed, from the repository's root. */
  readonly file: string;
  readonly source: string;
  /** The lines the rule must flag (1-based); none for imports it must allow. */
  readonly flagged: readonly number[];
}

const tag = `import-rule-probe-${process.pid}`;
const PROBES: Record<string, Probe> = {
  conference: {
    file: `src/conference/${tag}.ts`,
    source: 'import { openStore } from "../store/database.js";\nexport const open = openStore;\n',
    flagged: [1],
  },
  // Even a type, even of the adapter that implements its own port.
  scheduler: {
    file: `src/scheduler/${tag}.ts`,
    source:
      'import type { schedulerStore } from "../store/scheduler-store.js";\nexport type Adapter = typeof schedulerStore;\n',
    flagged: [1],
  },
  outbox: {
    file: `src/outbox/${tag}.ts`,
    source: 'import { migrate } from "../store/database.js";\nexport const run = migrate;\n',
    flagged: [1],
  },
  route: {
    file: `src/api/routes/${tag}.ts`,
    source: [
      'import { getUser } from "../../store/users.js";',
      'import { requestConferenceEnd } from "../../store/live-control.js";',
      'import type { Database } from "../../store/schema.js";',
      'import { compiledOnce } from "../../store/compiled-query.js";',
      'import { conferenceStore } from "../../store/conference-store.js";',
      "export const used = [getUser, requestConferenceEnd, compiledOnce, conferenceStore];",
      "export type Tables = Database;",
      "",
    ].join("\n"),
    flagged: [3, 4, 5],
  },
  store: {
    file: `src/store/${tag}.ts`,
    source: [
      'import type { ConferenceStore } from "../conference/ports.js";',
      'import { ConferenceRoom } from "../conference/conference-room.js";',
      "export type Port = ConferenceStore;",
      "export const room = ConferenceRoom;",
      "",
    ].join("\n"),
    flagged: [2],
  },
};

interface Diagnostic {
  readonly category: string;
  readonly location: { readonly path: string; readonly start: { readonly line: number } };
}

/** src/outbox may not exist yet: made for its probe, and removed after when made here. */
let madeOutbox = false;
let linted: { status: number | null; diagnostics: Diagnostic[] };

before(() => {
  const outbox = path.join(ROOT, "src/outbox");
  madeOutbox = !fs.existsSync(outbox);
  if (madeOutbox) fs.mkdirSync(outbox);
  for (const probe of Object.values(PROBES)) fs.writeFileSync(path.join(ROOT, probe.file), probe.source);
  const run = spawnSync(
    BIOME,
    ["lint", "--reporter=json", "--max-diagnostics=none", `--only=${RULE.replace("lint/", "")}`, "src"],
    { cwd: ROOT, encoding: "utf8" },
  );
  const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
  linted = { status: run.status, diagnostics: report.diagnostics };
});

after(() => {
  for (const probe of Object.values(PROBES)) fs.rmSync(path.join(ROOT, probe.file), { force: true });
  if (madeOutbox) fs.rmSync(path.join(ROOT, "src/outbox"), { recursive: true, force: true });
});

function flaggedLines(file: string): number[] {
  return linted.diagnostics
    .filter((diagnostic) => diagnostic.category === RULE && diagnostic.location.path === file)
    .map((diagnostic) => diagnostic.location.start.line)
    .sort((a, b) => a - b);
}

for (const [where, probe] of Object.entries(PROBES)) {
  test(`${where}: the rule flags exactly the imports across the boundary`, () => {
    assert.deepEqual(flaggedLines(probe.file), probe.flagged);
  });
}

test("a crossing fails the lint, and src/ itself crosses nowhere", () => {
  assert.notEqual(linted.status, 0, "biome lint exits non-zero on a crossing");
  const probes = new Set(Object.values(PROBES).map((probe) => probe.file));
  const elsewhere = linted.diagnostics.filter((diagnostic) => !probes.has(diagnostic.location.path));
  assert.deepEqual(elsewhere, []);
});
