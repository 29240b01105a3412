/**
 * console/src/api-schema.ts: the API's types (paths, operations, their documents), made by
 * openapi-typescript from the OpenAPI document the service serves at /openapi.json, as a service
 * with its default settings serves it (browser joins on: /join is in it). `npm run openapi:types`
 * writes it; test/api/openapi.test.ts fails when the committed file is not what this makes.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from "openapi-typescript";
import type { BrowserJoins } from "../src/api/browser-joins.js";
import { buildApi } from "../src/api/server.js";
import { createLogger } from "../src/log.js";
import { openStore, type Store } from "../src/store/database.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const API_SCHEMA = path.join(ROOT, "console/src/api-schema.ts");
const BIOME = path.join(ROOT, "node_modules/.bin/biome");

/**
 * The joins of a service whose conferences are not here: the document describes the join routes,
 * which exist only with browser joins, and building it places no call.
 */
const NO_CONFERENCES: BrowserJoins = {
  join: async () => ({ refused: "unavailable", retryAfterSeconds: 60 }),
  participant: () => undefined,
  leave: () => false,
};

/** The API over `store` with every route the default settings give it (browser joins on). */
export function buildServedApi(store: Store, dataDir: string): ReturnType<typeof buildApi> {
  return buildApi({
    store,
    logger: createLogger("silent"),
    failedLoginLimit: 10,
    signupLimit: 20,
    throttleWindowSeconds: 900,
    trustedProxies: null,
    dataDir,
    accessNumbers: [],
    browserJoins: NO_CONFERENCES,
  });
}

/** /openapi.json as the API answers it, built over a throwaway SQLite store. */
export async function servedDocument(): Promise<OpenAPI3> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-openapi-"));
  const store = await openStore({ databaseUrl: null, dataDir });
  const app = await buildServedApi(store, dataDir);
  try {
    const response = await app.inject({ method: "GET", url: "/openapi.json" });
    if (response.statusCode !== 200) throw new Error(`/openapi.json answered ${response.statusCode}`);
    return response.json() as OpenAPI3;
  } finally {
    await app.close();
    await store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The TypeScript source of the document's types, formatted as biome formats the rest. */
export async function apiSchemaSource(document: OpenAPI3): Promise<string> {
  const source = `${COMMENT_HEADER}${astToString(await openapiTS(document, { silent: true }))}`;
  const formatted = spawnSync(BIOME, ["format", `--stdin-file-path=${API_SCHEMA}`], {
    input: source,
    encoding: "utf8",
  });
  if (formatted.status !== 0) throw new Error(`biome format failed: ${formatted.stderr}`);
  return formatted.stdout;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(API_SCHEMA, await apiSchemaSource(await servedDocument()));
  console.log(`wrote ${path.relative(ROOT, API_SCHEMA)}`);
}
