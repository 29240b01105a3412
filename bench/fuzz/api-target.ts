/**
 * XML request bodies to every API endpoint that takes one (sign-up, user, contacts, conferences,
 * attendees, an attendee's call, a conference's end, webhooks), with the fuzzing user's valid
 * credentials, mutated element by element and byte by byte; sometimes with another content type.
 * A 5xx answer is a finding: a client's bad body must get a 4xx.
 */
import { type Agent, request } from "undici";
import { MAX_BODY_BYTES } from "../../src/api/http-errors.js";
import { mutateXml } from "./mutate.js";
import type { Random } from "./random.js";
import { type ApiFixture, count, type FuzzContext, Pacer, type Target, type TargetStats } from "./target.js";

const FUTURE = "2031-06-01T16:00:00Z";

export function signupBody(email: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<user>
  <name>Fuzz User</name>
  <email>${email}</email>
  <password>correct horse</password>
  <password-confirmation>correct horse</password-confirmation>
  <terms-of-service type="boolean">true</terms-of-service>
  <billing-package><id type="integer">1</id></billing-package>
  <time-zone>Pacific Time (US &amp; Canada)</time-zone>
</user>`;
}

const USER = `<?xml version="1.0" encoding="UTF-8"?>
<user>
  <name>Fuzz B. User</name>
  <im>fuzz@jabber.example.org</im>
  <im-network>xmpp</im-network>
  <time-zone>Eastern Time (US &amp; Canada)</time-zone>
  <credit-card><expiry-year type="integer">2031</expiry-year></credit-card>
  <phone-numbers type="array">
    <phone-number><subscriber-number>604-555-0100</subscriber-number><location>Office</location></phone-number>
  </phone-numbers>
</user>`;

const CONTACT = `<?xml version="1.0" encoding="UTF-8"?>
<contact>
  <name>Bob Builder</name>
  <email>bob@example.com</email>
  <phone-number>+1 604 555 0123</phone-number>
  <im>bob_b</im>
  <im-network>aim</im-network>
  <time-zone>Eastern Time (US &amp; Canada)</time-zone>
</contact>`;

const CONFERENCE = `<?xml version="1.0" encoding="UTF-8"?>
<conference>
  <name>Quarterly review</name>
  <scheduled-to-start-at>${FUTURE}</scheduled-to-start-at>
  <direct-dial type="boolean">false</direct-dial>
  <dial-in-locked type="boolean">false</dial-in-locked>
  <record-audio type="boolean">false</record-audio>
  <lecture-mode type="boolean">false</lecture-mode>
  <accounting-code type="integer">4711</accounting-code>
  <send-notification-emails type="boolean">false</send-notification-emails>
  <announce-attendees type="boolean">false</announce-attendees>
</conference>`;

const ATTENDEE = `<?xml version="1.0" encoding="UTF-8"?>
<attendee>
  <phone-number>(415) 555-0142</phone-number>
  <extension>,,42#</extension>
  <phone-number-location>San Francisco office</phone-number-location>
  <name>Dave Dialer</name>
  <email>dave@example.com</email>
  <moderator type="boolean">false</moderator>
  <muted type="boolean">true</muted>
  <hand-up type="boolean">false</hand-up>
</attendee>`;

const WEBHOOK = `<?xml version="1.0" encoding="UTF-8"?>
<webhook>
  <url>http://127.0.0.1:9/bridgeline</url>
  <event-types type="array">
    <event-type>attendee-added</event-type>
    <event-type>conference-started</event-type>
    <event-type>conference-ended</event-type>
  </event-types>
  <enabled type="boolean">true</enabled>
</webhook>`;

const CONTENT_TYPES = [
  "text/xml",
  "application/json",
  "application/xml; charset=latin1",
  "text/plain",
  "application/x-www-form-urlencoded",
  "application/xml;;",
  "",
];

/** The body-taking endpoints, with a valid body for each. */
function endpoints(
  fixture: ApiFixture,
  rng: Random,
): Array<{ method: "POST" | "PUT"; path: string; body: string; anonymous?: boolean }> {
  const user = `/users/${fixture.user.id}`;
  return [
    { method: "POST", path: "/users", body: signupBody(`fuzz${rng.uint32()}@example.com`), anonymous: true },
    { method: "PUT", path: user, body: USER },
    { method: "POST", path: `${user}/contacts`, body: CONTACT },
    { method: "PUT", path: fixture.contactPath, body: CONTACT },
    { method: "POST", path: `${user}/conferences`, body: CONFERENCE },
    { method: "PUT", path: fixture.conferencePath, body: CONFERENCE },
    { method: "POST", path: `${fixture.conferencePath}/attendees`, body: ATTENDEE },
    { method: "PUT", path: fixture.attendeePath, body: ATTENDEE },
    { method: "POST", path: `${fixture.attendeePath}/call`, body: "<call/>" },
    { method: "POST", path: `${fixture.conferencePath}/end`, body: "<end/>" },
    { method: "POST", path: `${user}/webhooks`, body: WEBHOOK },
    { method: "PUT", path: fixture.webhookPath, body: WEBHOOK },
  ];
}

/** Signs up a user and makes one of each resource the endpoints name. */
export async function apiFixture(baseUrl: string, dispatcher: Agent): Promise<ApiFixture> {
  const send = async (method: string, path: string, body: string, auth?: string) => {
    const response = await request(`${baseUrl}${path}`, {
      method: method as "POST",
      headers: {
        accept: "application/xml",
        "content-type": "application/xml",
        ...(auth && { authorization: auth }),
      },
      body,
      dispatcher,
    });
    const text = await response.body.text();
    if (response.statusCode !== 201)
      throw new Error(`${method} ${path} answered ${response.statusCode}: ${text}`);
    return { location: new URL(String(response.headers.location), baseUrl).pathname, text };
  };
  const fixture: ApiFixture = {
    baseUrl,
    user: { id: 0, auth: "" },
    conferencePath: "",
    attendeePath: "",
    contactPath: "",
    webhookPath: "",
    async renew() {
      const email = `fuzz-owner-${Date.now()}-${Math.floor(Math.random() * 1e9)}@example.com`;
      const signed = await send("POST", "/users", signupBody(email));
      const id = Number(/<id type="integer">(\d+)<\/id>/.exec(signed.text)?.[1]);
      const auth = `Basic ${Buffer.from(`${email}:correct horse`).toString("base64")}`;
      const user = `/users/${id}`;
      this.user = { id, auth };
      this.contactPath = (await send("POST", `${user}/contacts`, CONTACT, auth)).location;
      this.conferencePath = (await send("POST", `${user}/conferences`, CONFERENCE, auth)).location;
      this.attendeePath = (await send("POST", `${this.conferencePath}/attendees`, ATTENDEE, auth)).location;
      this.webhookPath = (await send("POST", `${user}/webhooks`, WEBHOOK, auth)).location;
    },
  };
  await fixture.renew();
  return fixture;
}

export function apiTarget(rng: Random, perSecond: number, dispatcher: Agent): Target {
  return {
    name: "api-xml",
    async run(context: FuzzContext, stats) {
      const fixture = context.api;
      const inFlight = new Set<Promise<void>>();
      let renewing: Promise<void> | undefined;
      const pacer = new Pacer(perSecond);
      while (context.running()) {
        if (inFlight.size >= 4) await Promise.race(inFlight);
        const endpoint = rng.pick(endpoints(fixture, rng));
        const body = rng.chance(0.9) ? mutateXml(rng, endpoint.body) : endpoint.body;
        const contentType = rng.chance(0.9) ? "application/xml" : rng.pick(CONTENT_TYPES);
        const path = `${endpoint.path}${rng.chance(0.1) ? "?representation=basic" : ""}`;
        const headers: Record<string, string> = { accept: "application/xml" };
        if (contentType !== "") headers["content-type"] = contentType;
        if (!endpoint.anonymous) headers.authorization = fixture.user.auth;
        stats.inputs++;
        const done: Promise<void> = sendApiInput(
          { context, stats, dispatcher },
          `${fixture.baseUrl}${path}`,
          { method: endpoint.method, headers, body },
          () => `${endpoint.method} ${endpoint.path} to: ${JSON.stringify(body.slice(0, 600))}`,
        )
          .then((status) => {
            // A fuzzed body changed what the credentials or paths name: start again with a fresh user.
            if (status === 401 && renewing === undefined)
              renewing = fixture.renew().finally(() => {
                renewing = undefined;
              });
          })
          .finally(() => inFlight.delete(done));
        inFlight.add(done);
        await pacer.next();
      }
      await Promise.all(inFlight);
      await renewing;
    },
  };
}

/**
 * Sends one API input and judges it as every API target does: an answer of 500 or more, or no
 * answer at all, is a finding (`what` names the input then); a body over the limit whose connection
 * closed while it was still being sent counts as the 413 it was. Resolves with the status, if any.
 */
export async function sendApiInput(
  to: { readonly context: FuzzContext; readonly stats: TargetStats; readonly dispatcher: Agent },
  url: string,
  init: {
    readonly method: string;
    readonly headers: Record<string, string>;
    readonly body?: string | Buffer;
  },
  what: () => string,
): Promise<number | undefined> {
  const { context, stats } = to;
  try {
    const response = await request(url, {
      method: init.method as "POST",
      headers: init.headers,
      body: init.body,
      dispatcher: to.dispatcher,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await response.body.text();
    stats.answers++;
    count(stats, String(response.statusCode));
    if (response.statusCode >= 500)
      context.found(`${what()}: answered ${response.statusCode} (${text.slice(0, 200)})`);
    return response.statusCode;
  } catch (error) {
    if (Buffer.byteLength(init.body ?? "") > MAX_BODY_BYTES) {
      count(stats, "413 (connection closed)");
      return undefined;
    }
    context.found(`${what()}: got no answer (${String(error)})`);
    return undefined;
  }
}
