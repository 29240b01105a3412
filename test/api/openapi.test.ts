/**
 * /openapi.json and /docs: the document is valid OpenAPI 3.1 (swagger-parser) with nothing
 * Redocly's recommended rules object to; it describes exactly the routes the API has (as a service
 * with default settings has them: browser joins on); console/src/api-schema.ts is what
 * `npm run openapi:types` makes of it now; and /docs serves Redoc's page from this service alone,
 * which Chromium renders without asking any other host for anything.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import type { OpenAPI3 } from "openapi-typescript";
import { request } from "undici";
import { API_SCHEMA, apiSchemaSource, buildServedApi } from "../../scripts/openapi-types.js";
import { DOCS_CONTENT_SECURITY_POLICY } from "../../src/api/routes/docs.js";
import { openStore, type Store } from "../../src/store/database.js";
import { fillDataDir } from "../helpers/databases.js";

const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"];

/**
 * The routes that are not operations of the API: the pages' own files, and the console's sign-in
 * session, which only the console's page uses.
 */
const NOT_OPERATIONS = [
  "GET /console",
  "GET /console/assets/:file",
  "POST /console/session",
  "GET /console/session",
  "DELETE /console/session",
  "GET /join/assets/:file",
  "GET /docs/assets/:file",
];

describe("OpenAPI document and API reference", () => {
  let dataDir: string;
  let store: Store;
  let app: Awaited<ReturnType<typeof buildServedApi>>;
  let url: string;
  let document: OpenAPI3;

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-openapi-"));
    await fillDataDir(dataDir);
    store = await openStore({ databaseUrl: null, dataDir });
    app = await buildServedApi(store, dataDir);
    await app.listen({ host: "127.0.0.1", port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`;
    const response = await request(`${url}/openapi.json`);
    assert.equal(response.statusCode, 200);
    document = (await response.body.json()) as OpenAPI3;
  });
  after(async () => {
    await app.close();
    await store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** "GET /users/:userId", for each operation of the document. */
  function documentedOperations(): string[] {
    return Object.entries(document.paths ?? {}).flatMap(([documentPath, item]) =>
      Object.keys(item)
        .filter((key) => METHODS.includes(key))
        .map((method) => `${method.toUpperCase()} ${documentPath.replace(/\{(\w+)\}/g, ":$1")}`),
    );
  }

  it("is valid OpenAPI 3.1 (swagger-parser)", async () => {
    assert.equal(document.openapi, "3.1.0");
    // validate() dereferences what it is given: a copy.
    await SwaggerParser.validate(structuredClone(document) as never);
  });

  it("has nothing Redocly's recommended rules object to", async () => {
    const config = await createConfig({
      extends: ["recommended"],
      rules: {
        // The tags are the resources' names (users, conferences...): their operations say the rest.
        "tag-description": "off",
        // The service is not published under a license (package.json: UNLICENSED).
        "info-license": "off",
      },
    });
    const problems = await lintFromString({
      source: JSON.stringify(document),
      absoluteRef: `${url}/openapi.json`,
      config,
    });
    assert.deepEqual(
      problems.map((problem) => `${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer}`),
      [],
    );
  });

  it("describes every route the API answers, and nothing else", async () => {
    // Every method of every path Fastify routes: resource()'s own answer to the methods a resource
    // does not have is 405, so whatever answers otherwise has a handler of its own.
    const answered: string[] = [];
    for (const [routePath, methods] of routeTable(app.printRoutes({ commonPrefix: false })))
      for (const method of methods) {
        const withBody = method === "POST" || method === "PUT" || method === "PATCH";
        const response = await app.inject({
          method: method as "GET",
          url: routePath.replace(/:(\w+)/g, "1"),
          headers: { accept: "*/*", ...(withBody && { "content-type": "application/json" }) },
          ...(withBody && { payload: "{}" }),
        });
        if (response.statusCode !== 405) answered.push(`${method} ${routePath}`);
      }
    const operations = answered.filter(
      (route) => !route.startsWith("HEAD ") && !NOT_OPERATIONS.includes(route),
    );
    for (const excluded of NOT_OPERATIONS) assert.ok(answered.includes(excluded), `${excluded} is answered`);
    // Joins and the reference page are there: the document is a default service's.
    for (const expected of ["POST /join/calls", "GET /docs", "GET /openapi.json"])
      assert.ok(operations.includes(expected), expected);
    assert.deepEqual(documentedOperations().sort(), operations.sort());
    // The document says HEAD is answered wherever GET is.
    for (const operation of operations.filter((name) => name.startsWith("GET ")))
      assert.ok(answered.includes(operation.replace(/^GET /, "HEAD ")), `HEAD of ${operation}`);
  });

  it("is what console/src/api-schema.ts was generated from (npm run openapi:types)", async () => {
    assert.equal(
      await apiSchemaSource(document),
      fs.readFileSync(API_SCHEMA, "utf8"),
      "console/src/api-schema.ts is stale: run npm run openapi:types",
    );
  });

  it("serves /docs and its files from this service, under a Content-Security-Policy", async () => {
    const page = await request(`${url}/docs`, { headers: { accept: "text/html" } });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers["content-type"]), /^text\/html/);
    assert.equal(page.headers["content-security-policy"], DOCS_CONTENT_SECURITY_POLICY);
    const html = await page.body.text();
    const sources = [...html.matchAll(/<script[^>]* src="([^"]+)"/g)].map((match) => match[1] as string);
    assert.deepEqual(sources, ["/docs/assets/redoc.standalone.js", "/docs/assets/docs.js"]);
    for (const source of sources) {
      const asset = await request(`${url}${source}`);
      assert.equal(asset.statusCode, 200, source);
      assert.match(String(asset.headers["content-type"]), /^text\/javascript/, source);
      assert.equal(asset.headers["content-security-policy"], DOCS_CONTENT_SECURITY_POLICY, source);
      const script = await asset.body.text();
      // The one address the bundle would load by itself (its menu's logo) is taken out by the build.
      assert.ok(!script.includes("cdn.redoc.ly"), `${source} loads nothing from Redocly's CDN`);
      assert.doesNotMatch(
        script,
        /\/\/# sourceMappingURL=\S+\s*$/,
        `${source} names no map it does not ship`,
      );
    }
    const missing = await request(`${url}/docs/assets/console.js`);
    assert.equal(missing.statusCode, 404);
    await missing.body.dump();
  });
});

/**
 * Fastify's routes as printRoutes({ commonPrefix: false }) draws them: a tree whose lines are
 * `│   ├── /segment (GET, HEAD)`, four characters a level. Each path with its methods.
 */
function routeTable(printed: string): Map<string, string[]> {
  const table = new Map<string, string[]>();
  const segments: string[] = [];
  for (const line of printed.split("\n")) {
    const match = /^((?:│ {3}| {4})*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (match === null) continue;
    segments.length = (match[1] as string).length / 4;
    segments.push(match[2] as string);
    if (match[3] !== undefined) table.set(segments.join(""), match[3].split(", "));
  }
  return table;
}
