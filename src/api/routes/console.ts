/**
 * The moderator console: its sign-in session (JSON) and its built pages, served from console/dist
 * with a strict Content-Security-Policy (no inline script or style: the build emits files only).
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { USER_TIME_ZONES } from "../../domain/reference-data.js";
import { getUser } from "../../store/users.js";
import { type Authenticator, SESSION_COOKIE } from "../authentication.js";
import { HttpError } from "../http-errors.js";
import { type ApiContext, boundedMessage, describeError, JSON_TYPE } from "../server.js";

/** Where `npm install` (prepare: build:console) writes the console. */
export const CONSOLE_DIST = fileURLToPath(new URL("../../../console/dist/", import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
};
/** What the build also writes gzipped (scripts/build-console.mjs). */
const COMPRESSED_EXTENSIONS = new Set([".js", ".css"]);
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
export const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
};
/** The cookie lives as long as the browser session; the server ends it after 12 idle hours. */
const COOKIE_OPTIONS = { path: "/", httpOnly: true, secure: true, sameSite: "strict" } as const;

/** The console's routes, as a plugin of their own: JSON bodies and errors, security headers. */
export function consoleRoutes(
  api: ApiContext,
  authenticator: Authenticator,
  distDir = CONSOLE_DIST,
): FastifyPluginAsync {
  return async (scope) => {
    scope.addHook("onSend", async (_request, reply) => {
      reply.headers(SECURITY_HEADERS);
    });
    // The API's registry decides status, words and headers, as for the XML; only the shape is JSON.
    scope.setErrorHandler((error, request, reply) => {
      const { code, status, messages, headers } = describeError(error);
      if (status >= 500) request.log.error({ err: error, code }, "console request failed");
      return reply
        .status(status)
        .headers(headers)
        .type(JSON_TYPE)
        .send({ error: boundedMessage(messages.join(" ")), code });
    });

    const session = { produces: ["application/json"] };
    const sessionBody = async (userId: number, csrfToken: string) => {
      const user = await getUser(api.store, userId);
      if (user === undefined) throw new HttpError("BL_ERR_NOT_SIGNED_IN", "The account no longer exists");
      return {
        user: {
          id: user.id,
          name: user.name,
          email: user.email,
          timeZone: user.timeZone === null ? null : (USER_TIME_ZONES.get(user.timeZone) ?? null),
        },
        csrfToken,
      };
    };
    scope.post("/console/session", { config: session }, async (request, reply) => {
      const body = request.body as { email?: unknown; password?: unknown } | undefined;
      if (typeof body?.email !== "string" || typeof body.password !== "string")
        throw new HttpError(
          "BL_ERR_MALFORMED_INPUT",
          'The body must be JSON {"email": "...", "password": "..."}',
        );
      const opened = await authenticator.openSession(body.email, body.password, request);
      reply.setCookie(SESSION_COOKIE, opened.token, COOKIE_OPTIONS);
      return reply.type(JSON_TYPE).send(await sessionBody(opened.userId, opened.csrfToken));
    });
    scope.get("/console/session", { config: session }, async (request, reply) => {
      const current = await authenticator.session(request);
      if (current === undefined) throw new HttpError("BL_ERR_NOT_SIGNED_IN");
      return reply.type(JSON_TYPE).send(await sessionBody(current.userId, current.csrfToken));
    });
    scope.delete("/console/session", { config: session }, async (request, reply) => {
      // The CSRF check: another site must not be able to sign the moderator out.
      await authenticator.authenticateRequest(request);
      await authenticator.closeSession(request);
      reply.clearCookie(SESSION_COOKIE, COOKIE_OPTIONS);
      return reply.status(204).send();
    });

    scope.get("/console", { config: { produces: ["text/html"] } }, (request, reply) =>
      sendFile(request, reply, distDir, "index.html"),
    );
    scope.get(
      "/console/assets/:file",
      {
        config: {
          produces: [...new Set(Object.values(CONTENT_TYPES).map((type) => type.split(";")[0] as string))],
        },
      },
      (request, reply) => {
        const file = (request.params as { file: string }).file;
        if (
          !ASSET_NAME.test(file) ||
          file === "index.html" ||
          CONTENT_TYPES[path.extname(file)] === undefined
        )
          throw new HttpError("BL_ERR_NO_SUCH_FILE");
        return sendFile(request, reply, distDir, file);
      },
    );
  };
}

/** Accept-Encoding admits gzip (named, and not with q=0). */
const ACCEPTS_GZIP = /(?:^|,)\s*gzip\s*(?:,|$|;(?!\s*q\s*=\s*0(?:\.0*)?\s*(?:,|$)))/i;

/**
 * A file of the built console, with an ETag so browsers revalidate cheaply (no-cache); gzipped
 * when the build wrote a .gz beside it (its scripts and styles) and the browser takes gzip.
 */
export async function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  distDir: string,
  file: string,
): Promise<FastifyReply> {
  let content: Buffer | undefined;
  const compressible = COMPRESSED_EXTENSIONS.has(path.extname(file));
  if (compressible) reply.header("vary", "accept-encoding");
  if (compressible && ACCEPTS_GZIP.test(String(request.headers["accept-encoding"] ?? ""))) {
    try {
      content = await readFile(path.join(distDir, `${file}.gz`));
      reply.header("content-encoding", "gzip");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  try {
    content ??= await readFile(path.join(distDir, file));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    if (path.extname(file) === ".html")
      return reply.status(503).type("text/plain; charset=utf-8").send("console not built: run npm install");
    throw new HttpError("BL_ERR_NO_SUCH_FILE");
  }
  const etag = `"${createHash("sha256").update(content).digest("base64url").slice(0, 27)}"`;
  reply.header("etag", etag).header("cache-control", "no-cache");
  if (request.headers["if-none-match"] === etag) return reply.status(304).send();
  return reply.type(CONTENT_TYPES[path.extname(file)] ?? "application/octet-stream").send(content);
}
