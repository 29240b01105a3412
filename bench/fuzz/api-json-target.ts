/**
 * The moderator console's JSON API and its cookie session (docs/console.md). The one JSON body it
 * takes is the sign-in, `POST /console/session` {"email", "password"}: mutated member by member
 * (types changed, members dropped, added, doubled as text, __proto__ and constructor members, deep
 * nesting, huge strings and arrays) and as text (truncated, invalid UTF-8, escapes, other roots, byte
 * damage), sometimes with another content type. Beside it, the requests a signed-in console makes
 * with its cookie: `GET` and `DELETE /console/session`, and the changes it sends to the XML API
 * (mute, add an attendee, lock dial-in) with the CSRF token right, wrong or missing, the cookie
 * damaged, and JSON bodies where XML belongs. A 5xx answer, or none, is a finding.
 */
import { type Agent, request } from "undici";
import { sendApiInput } from "./api-target.js";
import { mutateBytes, mutateJson } from "./mutate.js";
import type { Random } from "./random.js";
import { type ApiFixture, type FuzzContext, Pacer, type Target } from "./target.js";

const SESSION_COOKIE = "bridgeline_session";
const JSON_TYPES = [
  "application/json; charset=utf-8",
  "application/json; charset=latin1",
  "application/JSON",
  "text/json",
  "application/xml",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json;;",
  "",
];

/** The fuzzing user's e-mail and password, from its Basic credentials. */
function credentials(fixture: ApiFixture): { email: string; password: string } {
  const decoded = Buffer.from(fixture.user.auth.replace(/^Basic /, ""), "base64").toString();
  const colon = decoded.indexOf(":");
  return { email: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** A console session: the cookie's token and the CSRF token its changes carry. */
interface Session {
  token: string;
  csrfToken: string;
}

interface Input {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** What the input is, for the report's tally and findings. */
  kind: string;
}

/** A header value HTTP can carry (the client refuses others before sending): printable ASCII. */
function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "");
}

function cookieHeader(rng: Random, session: Session | undefined): string | undefined {
  const token = session?.token ?? "none";
  if (rng.chance(0.7)) return `${SESSION_COOKIE}=${token}`;
  return rng.pick([
    `${SESSION_COOKIE}=${token.slice(0, rng.below(token.length))}`,
    `${SESSION_COOKIE}=`,
    `${SESSION_COOKIE}=${token}; ${SESSION_COOKIE}=x`,
    `${SESSION_COOKIE}="${token}"`,
    `${SESSION_COOKIE}=${"a".repeat(rng.pick([100, 5000, 60_000]))}`,
    `${SESSION_COOKIE}=%ZZ%00`,
    `${SESSION_COOKIE}=${printable(mutateBytes(rng, Buffer.from(token)).toString("latin1")).trim()}`,
    ";;;=;",
    `${SESSION_COOKIE}`,
    `__proto__=1; ${SESSION_COOKIE}=${token}`,
  ]);
}

function csrfHeader(rng: Random, session: Session | undefined): string | undefined {
  const token = session?.csrfToken ?? "none";
  if (rng.chance(0.6)) return token;
  return rng.pick([
    undefined,
    "",
    token.slice(0, -1),
    `${token}x`,
    token.toUpperCase(),
    "a".repeat(rng.pick([1, 43, 10_000])),
    `${token}, ${token}`,
  ]);
}

/** The XML changes the console makes with its cookie, bodies sometimes as JSON instead. */
function consoleChange(
  rng: Random,
  fixture: ApiFixture,
): { method: "POST" | "PUT"; path: string; xml: string } {
  return rng.pick([
    {
      method: "PUT" as const,
      path: fixture.attendeePath,
      xml: '<attendee><muted type="boolean">true</muted></attendee>',
    },
    {
      method: "POST" as const,
      path: `${fixture.conferencePath}/attendees`,
      xml: "<attendee><name>Ann Low</name><phone-number>+1 604 555 0142</phone-number></attendee>",
    },
    {
      method: "PUT" as const,
      path: fixture.conferencePath,
      xml: '<conference><dial-in-locked type="boolean">true</dial-in-locked></conference>',
    },
  ]);
}

function input(rng: Random, fixture: ApiFixture, session: Session | undefined): Input {
  const way = rng.below(100);
  const { email, password } = credentials(fixture);
  if (way < 70) {
    const body = rng.chance(0.9)
      ? mutateJson(rng, { email, password })
      : Buffer.from(JSON.stringify({ email, password }));
    const contentType = rng.chance(0.85) ? "application/json" : rng.pick(JSON_TYPES);
    const headers: Record<string, string> = {
      accept: rng.chance(0.95) ? "application/json" : "application/xml",
    };
    if (contentType !== "") headers["content-type"] = contentType;
    return { method: "POST", path: "/console/session", headers, body, kind: "sign-in" };
  }
  const headers: Record<string, string> = { accept: "application/json" };
  const cookie = cookieHeader(rng, session);
  if (cookie !== undefined) headers.cookie = cookie;
  if (way < 78) return { method: "GET", path: "/console/session", headers, kind: "session" };
  const csrf = csrfHeader(rng, session);
  if (csrf !== undefined) headers["x-csrf-token"] = csrf;
  if (way < 82) return { method: "DELETE", path: "/console/session", headers, kind: "sign-out" };
  const change = consoleChange(rng, fixture);
  headers.accept = "application/xml";
  if (rng.chance(0.5)) {
    // A JSON body where XML belongs.
    headers["content-type"] = rng.pick(["application/json", "application/xml"]);
    return {
      method: change.method,
      path: change.path,
      headers,
      body: mutateJson(rng, { muted: true, name: "Ann Low", "dial-in-locked": true }),
      kind: "change with JSON",
    };
  }
  headers["content-type"] = "application/xml";
  return { method: change.method, path: change.path, headers, body: Buffer.from(change.xml), kind: "change" };
}

/** Signs the fuzzing user in to the console; undefined if it could not (its user was just renewed). */
async function signIn(fixture: ApiFixture, dispatcher: Agent): Promise<Session | undefined> {
  const response = await request(`${fixture.baseUrl}/console/session`, {
    method: "POST",
    headers: { accept: "application/json", "content-type": "application/json" },
    body: JSON.stringify(credentials(fixture)),
    dispatcher,
  });
  const text = await response.body.text();
  if (response.statusCode !== 200) return undefined;
  const setCookie = [response.headers["set-cookie"] ?? []].flat().join("\n");
  const token = new RegExp(`${SESSION_COOKIE}=([^;\\s]+)`).exec(setCookie)?.[1];
  const csrfToken = (JSON.parse(text) as { csrfToken?: string }).csrfToken;
  return token === undefined || csrfToken === undefined ? undefined : { token, csrfToken };
}

export function apiJsonTarget(rng: Random, perSecond: number, dispatcher: Agent): Target {
  return {
    name: "api-json",
    async run(context: FuzzContext, stats) {
      const fixture = context.api;
      const inFlight = new Set<Promise<void>>();
      let session = await signIn(fixture, dispatcher);
      let signingIn: Promise<void> | undefined;
      const again = () => {
        signingIn ??= signIn(fixture, dispatcher)
          .then((opened) => {
            session = opened;
          })
          .catch(() => {})
          .finally(() => {
            signingIn = undefined;
          });
      };
      const pacer = new Pacer(perSecond);
      // At least one input, however long the first sign-in (a password hash) took on a busy machine.
      for (let first = true; first || context.running(); first = false) {
        if (inFlight.size >= 4) await Promise.race(inFlight);
        const sent = input(rng, fixture, session);
        stats.inputs++;
        const done: Promise<void> = sendApiInput(
          { context, stats, dispatcher },
          `${fixture.baseUrl}${sent.path}`,
          sent,
          () =>
            `${sent.method} ${sent.path} (${sent.kind}) to headers ${JSON.stringify(sent.headers).slice(0, 300)} and body ${JSON.stringify(sent.body?.toString("latin1").slice(0, 600) ?? "")}`,
        )
          .then((status) => {
            // The session ended (a sign-out input, a renewed user): sign in again.
            if (
              status === 401 &&
              sent.kind !== "sign-in" &&
              sent.headers.cookie?.endsWith(session?.token ?? "none")
            )
              again();
          })
          .finally(() => inFlight.delete(done));
        inFlight.add(done);
        if (session === undefined) again();
        await pacer.next();
      }
      await Promise.all(inFlight);
      await signingIn;
    },
  };
}
