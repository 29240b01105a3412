/**
 * /docs: the API reference, /openapi.json rendered by Redoc in the browser. Its files are built
 * into console/dist/docs by `npm install` (scripts/build-console.mjs) and served from there, so the
 * page loads nothing from another host.
 */
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../http-errors.js";
import { resource } from "../server.js";
import { sendFile } from "./console.js";

/**
 * Where the console build writes the page. Not made from console.ts's CONSOLE_DIST: a module that
 * imports console.ts first reaches this one (through server.ts) before that constant is set.
 */
const DOCS_DIST = fileURLToPath(new URL("../../../console/dist/docs/", import.meta.url));
const DOCS_ASSETS = new Set(["redoc.standalone.js", "docs.js"]);

/**
 * As strict as Redoc lets it be: scripts, the document and everything else from this origin only.
 * Redoc needs three exceptions: inline styles (styled-components writes its CSS into <style>
 * elements at run time), data: images (its CSS's icons) and a worker made from a blob: URL (its
 * search index).
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "worker-src blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export async function docsRoutes(app: FastifyInstance): Promise<void> {
  app.addHook("onSend", async (_request, reply) => {
    reply.headers({
      "content-security-policy": DOCS_CONTENT_SECURITY_POLICY,
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
    });
  });
  resource(
    app,
    "/docs",
    { GET: (request, reply) => sendFile(request, reply, DOCS_DIST, "index.html") },
    {
      GET: {
        summary: "This reference, as a page (HTML): /openapi.json rendered by Redoc",
        access: "public",
        media: { type: "text/html", description: "The page" },
      },
    },
    { produces: ["text/html"] },
  );
  // The page's own files, as the console's and the join page's: not operations of the API.
  app.get("/docs/assets/:file", { config: { produces: ["text/javascript"] } }, (request, reply) => {
    const file = (request.params as { file: string }).file;
    if (!DOCS_ASSETS.has(file)) throw new HttpError("BL_ERR_NO_SUCH_FILE");
    return sendFile(request, reply, DOCS_DIST, file);
  });
}
