/**
 * JSON beside XML: the same requests in both representations get the same statuses, errors and
 * documents (the XML read with its type attributes: integers, floats, booleans, nil), on every
 * resource; every JSON answer is valid against the schema /openapi.json gives for it.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { loadConfig } from "../../src/config.js";
import { type InProcessTestApi, startTestApi, type TestResponse } from "../helpers/service.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Auth = [string, string];

/** A parsed XML element as the JSON document it stands for, by its type and nil attributes. */
function typed(node: unknown): Json {
  if (typeof node === "string") return node;
  const element = node as Record<string, unknown>;
  if (element["@_nil"] === "true") return null;
  const type = element["@_type"];
  const text = element["#text"] as string | undefined;
  if (type === "integer" || type === "float") return Number(text);
  if (type === "boolean") return text === "true";
  if (type === "datetime") return text ?? "";
  const children = Object.keys(element).filter((key) => !key.startsWith("@_") && key !== "#text");
  if (type === "array") {
    const [itemName] = children;
    if (itemName === undefined) return [];
    return ([] as unknown[]).concat(element[itemName]).map(typed);
  }
  if (children.length === 0) return text ?? "";
  return Object.fromEntries(children.map((key) => [key, typed(element[key])]));
}

/** The XML answer's document (its root's content) as JSON. */
function xmlDocument(response: TestResponse): Json {
  const [root] = Object.keys(response.xml).filter((key) => !key.startsWith("?"));
  assert.ok(root !== undefined, `no XML document: ${response.status} ${response.text}`);
  return typed(response.xml[root]);
}

/** A request body as an XML document: numbers and booleans typed, null nil, lists type="array". */
function xmlBody(root: string, value: Record<string, Json>): string {
  const element = (name: string, item: Json): string => {
    if (item === null) return `<${name} nil="true"/>`;
    if (typeof item === "number") return `<${name} type="integer">${item}</${name}>`;
    if (typeof item === "boolean") return `<${name} type="boolean">${item}</${name}>`;
    if (typeof item === "string")
      return `<${name}>${item.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</${name}>`;
    if (Array.isArray(item)) {
      const itemName = name === "event-types" ? "event-type" : name.replace(/s$/, "");
      return `<${name} type="array">${item.map((entry) => element(itemName, entry)).join("")}</${name}>`;
    }
    return `<${name}>${Object.entries(item)
      .map(([key, child]) => element(key, child))
      .join("")}</${name}>`;
  };
  return `<?xml version="1.0" encoding="UTF-8"?>\n${element(root, value)}`;
}

/** Fields that differ between two resources made by the same request, or one changed twice. */
const VOLATILE = new Set([
  "id",
  "created-at",
  "updated-at",
  "lock-version",
  "email",
  "member-pin",
  "moderator-pin",
  "secret",
]);

function withoutVolatile(document: Json): Json {
  if (Array.isArray(document)) return document.map(withoutVolatile);
  if (document === null || typeof document !== "object") return document;
  return Object.fromEntries(
    Object.entries(document)
      .filter(([key]) => !VOLATILE.has(key))
      .map(([key, value]) => [key, withoutVolatile(value)]),
  );
}

describe("JSON beside XML", () => {
  let api: InProcessTestApi;
  let validate: (schemaRef: string, document: unknown) => string | undefined;
  let openApi: { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
  let users = 0;

  before(async () => {
    api = await startTestApi({ sip: { ...loadConfig({}).sip, accessNumbers: ["+16045550199"] } });
    const described = await api.request("GET", "/openapi.json", { headers: { accept: "application/json" } });
    assert.equal(described.status, 200);
    openApi = JSON.parse(described.text);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema(openApi, "openapi.json");
    validate = (schemaRef, document) => {
      const check = ajv.getSchema(`openapi.json#${schemaRef}`);
      assert.ok(check, `no schema at ${schemaRef}`);
      return check(document) ? undefined : ajv.errorsText(check.errors);
    };
  });
  after(() => api.close());

  // Every POST and PUT declares its type, bodiless ones too (the API's defence against cross-site forms).
  const declares = (method: string, body: unknown) =>
    body !== undefined || method === "POST" || method === "PUT";
  const json = (method: string, path: string, auth?: Auth, body?: Record<string, Json>) =>
    api.request(method, path, {
      ...(auth && { auth }),
      headers: {
        accept: "application/json",
        ...(declares(method, body) && { "content-type": "application/json" }),
      },
      ...(body && { body: JSON.stringify(body) }),
    });
  const xml = (method: string, path: string, root: string, auth?: Auth, body?: Record<string, Json>) =>
    api.request(method, path, {
      ...(auth && { auth }),
      ...(declares(method, body) && { headers: { "content-type": "application/xml" } }),
      ...(body && { body: xmlBody(root, body) }),
    });

  /**
   * The request in XML and in JSON: the status expected (default 201 for a POST, 204 for a
   * DELETE, else 200) and the same errors for both, and (`same`) the same document,
   * or the same but for the fields two resources made alike differ in. Returns the JSON answer's.
   */
  async function both(
    method: string,
    path: string,
    options: {
      root?: string;
      auth?: Auth;
      body?: Record<string, Json>;
      same?: "exactly";
      status?: number;
    } = {},
  ): Promise<{ xml: Json; json: Json; jsonResponse: TestResponse }> {
    const xmlAnswer = await xml(method, path, options.root ?? "x", options.auth, options.body);
    const jsonAnswer = await json(method, path, options.auth, options.body);
    const expected = options.status ?? (method === "POST" ? 201 : method === "DELETE" ? 204 : 200);
    assert.equal(xmlAnswer.status, expected, `${method} ${path}: ${xmlAnswer.text}`);
    assert.equal(jsonAnswer.status, expected, `${method} ${path}: ${jsonAnswer.text}`);
    if (xmlAnswer.status === 204) {
      assert.equal(jsonAnswer.text, "");
      return { xml: null, json: null, jsonResponse: jsonAnswer };
    }
    assert.match(String(jsonAnswer.headers["content-type"]), /^application\/json; charset=utf-8/);
    const xmlValue = xmlDocument(xmlAnswer);
    const jsonValue = JSON.parse(jsonAnswer.text) as Json;
    if (xmlAnswer.status >= 400) {
      const errors = (xmlAnswer.xml.errors as { error?: string | string[] } | undefined)?.error ?? [];
      const messages = ([] as string[]).concat(errors);
      assert.deepEqual(jsonValue, { errors: messages }, `${method} ${path}`);
      assert.equal(validate("/components/schemas/Errors", jsonValue), undefined);
    } else {
      if (options.same === "exactly") assert.deepEqual(jsonValue, xmlValue, `${method} ${path}`);
      else assert.deepEqual(withoutVolatile(jsonValue), withoutVolatile(xmlValue), `${method} ${path}`);
      const template = templateOf(path);
      const responses = openApi.paths[template]?.[method.toLowerCase()]?.responses;
      assert.ok(responses, `${method} ${template} is not in /openapi.json`);
      const schemaPath = `/paths/${template.replace(/~/g, "~0").replace(/\//g, "~1")}/${method.toLowerCase()}/responses/${xmlAnswer.status}/content/application~1json/schema`;
      assert.equal(validate(schemaPath, jsonValue), undefined, `${method} ${path} against its schema`);
    }
    return { xml: xmlValue, json: jsonValue, jsonResponse: jsonAnswer };
  }

  /** /users/{userId}/conferences/{conferenceId} of /users/3/conferences/7. */
  function templateOf(path: string): string {
    const names: Record<string, string> = {
      users: "userId",
      conferences: "conferenceId",
      attendees: "attendeeId",
      contacts: "contactId",
      webhooks: "webhookId",
      deliveries: "deliveryId",
    };
    const segments = path.split("?")[0]?.split("/") ?? [];
    return segments
      .map((segment, index) => {
        if (!/^\d+$/.test(segment)) return segment;
        return `{${names[segments[index - 1] ?? ""] ?? "id"}}`;
      })
      .join("/");
  }

  const signup = (extra: Record<string, Json> = {}): Record<string, Json> => {
    users += 1;
    return {
      name: "Jay Son",
      email: `json${users}-${process.pid}@example.com`,
      password: "correct horse",
      "password-confirmation": "correct horse",
      "terms-of-service": true,
      "billing-package": { id: 1 },
      ...extra,
    };
  };

  async function newUser(): Promise<{ id: number; auth: Auth }> {
    const body = signup();
    const created = await json("POST", "/users", undefined, body);
    assert.equal(created.status, 201, created.text);
    return { id: JSON.parse(created.text).id, auth: [body.email as string, "correct horse"] };
  }

  it("signs up, reads and changes a user alike, and refuses alike", async () => {
    const xmlSignup = await xml(
      "POST",
      "/users",
      "user",
      undefined,
      signup({ "time-zone": "Pacific Time (US & Canada)" }),
    );
    const jsonSignup = await json(
      "POST",
      "/users",
      undefined,
      signup({ "time-zone": "Pacific Time (US & Canada)" }),
    );
    assert.equal(xmlSignup.status, 201);
    assert.equal(jsonSignup.status, 201, jsonSignup.text);
    assert.deepEqual(withoutVolatile(JSON.parse(jsonSignup.text)), withoutVolatile(xmlDocument(xmlSignup)));
    const user = JSON.parse(jsonSignup.text);
    assert.equal(typeof user.id, "number");
    assert.equal(user["terms-of-service"], true);
    assert.equal(user["credit-card"], null);
    assert.match(user["created-at"], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(String(jsonSignup.headers.location), /^\/users\/\d+$/);
    const auth: Auth = [user.email, "correct horse"];

    await both("GET", `/users/${user.id}`, { auth, same: "exactly" });
    await both("GET", "/current", { auth, same: "exactly" });
    await both("PUT", `/users/${user.id}`, {
      root: "user",
      auth,
      body: { im: "jay", "im-network": "xmpp" },
    });
    await both("POST", "/users", {
      root: "user",
      body: { name: "", email: "not an address", password: "x" },
      status: 422,
    });
    await both("PUT", `/users/${user.id}`, {
      root: "user",
      auth,
      body: { "lock-version": 99, name: "Stale" },
      status: 409,
    });
    await both("GET", "/users/999999", { auth, status: 404 });
    await both("GET", `/users/${user.id}`, { status: 401 });
    await both("GET", "/billing-packages", { same: "exactly" });
    await both("GET", "/billing-packages?name=Basic", { same: "exactly" });
    await both("GET", "/billing-packages?colour=red", { status: 400 });
    await both("GET", "/access-numbers", { same: "exactly" });
  });

  it("schedules, lists, changes and deletes conferences and attendees alike, basic and extended", async () => {
    const owner = await newUser();
    const { auth } = owner;
    const base = `/users/${owner.id}/conferences`;
    const conference = {
      name: "Planning",
      "scheduled-to-start-at": "tomorrow at 9am",
      "accounting-code": 42,
      "record-audio": true,
    };
    const created = await both("POST", base, { root: "conference", auth, body: conference });
    const id = (created.json as { id: number }).id;
    assert.equal((created.json as Record<string, Json>)["accounting-code"], 42);
    assert.equal((created.json as Record<string, Json>)["send-notification-emails"], false);
    await both("POST", `${base}?representation=basic`, { root: "conference", auth, body: conference });
    await both("GET", base, { auth, same: "exactly" });
    await both("GET", `${base}?representation=basic&name_contains=plan`, { auth, same: "exactly" });
    await both("GET", `${base}/${id}`, { auth, same: "exactly" });
    await both("GET", `${base}/${id}?representation=basic`, { auth, same: "exactly" });
    await both("POST", base, {
      root: "conference",
      auth,
      body: { name: "", "scheduled-to-start-at": "whenever it suits" },
      status: 422,
    });
    await both("PUT", `${base}/${id}`, {
      root: "conference",
      auth,
      body: { "lock-version": 99, name: "Stale" },
      status: 409,
    });
    await both("PUT", `${base}/${id}`, { root: "conference", auth, body: { state: "started" }, status: 422 });

    const preview = await both("GET", `/users/${owner.id}/start-time?text=tomorrow%20at%209am`, {
      auth,
      same: "exactly",
    });
    assert.equal(
      (preview.json as Record<string, Json>)["scheduled-to-start-at"],
      (created.json as Record<string, Json>)["scheduled-to-start-at"],
    );
    await both("GET", `/users/${owner.id}/start-time?text=whenever`, { auth, status: 422 });

    const attendees = `${base}/${id}/attendees`;
    const attendee = await both("POST", attendees, {
      root: "attendee",
      auth,
      body: { "phone-number": "+1 604 555 0101", name: "Ann", moderator: false },
    });
    const attendeeId = (attendee.json as { id: number }).id;
    await both("POST", attendees, {
      root: "attendee",
      auth,
      body: { "phone-number": "+1 900 555 0101" },
      status: 422,
    });
    await both("POST", attendees, { root: "attendee", auth, body: { "phone-number": "12" }, status: 422 });
    await both("GET", attendees, { auth, same: "exactly" });
    await both("GET", `${attendees}?representation=basic`, { auth, same: "exactly" });
    await both("GET", `${attendees}/${attendeeId}`, { auth, same: "exactly" });
    await both("GET", `${attendees}/${attendeeId}?representation=basic`, { auth, same: "exactly" });
    await both("GET", `${attendees}/${attendeeId}/calls`, { auth, same: "exactly" });
    await both("GET", `${base}/${id}/calls`, { auth, same: "exactly" });
    await both("POST", `${attendees}/${attendeeId}/call`, { auth, status: 409 });
    await both("POST", `${base}/${id}/end`, { auth, status: 409 });
    const moved = await both("PUT", `${base}/${id}`, {
      root: "conference",
      auth,
      body: { state: "pending" },
    });
    assert.equal((moved.json as { state: string }).state, "pending");

    // One each, so that the second DELETE of the pair finds something to delete.
    const spare = await json("POST", attendees, auth, { "phone-number": "+1 604 555 0102" });
    const xmlGone = await xml("DELETE", `${attendees}/${attendeeId}`, "x", auth);
    const jsonGone = await json("DELETE", `${attendees}/${JSON.parse(spare.text).id}`, auth);
    assert.deepEqual([xmlGone.status, jsonGone.status, jsonGone.text], [204, 204, ""], xmlGone.text);
    await both("GET", `${attendees}/${attendeeId}`, { auth, status: 404 });
  });

  it("keeps contacts and webhooks alike, and refuses JSON of the wrong type with every field named", async () => {
    const owner = await newUser();
    const { auth } = owner;
    const contacts = `/users/${owner.id}/contacts`;
    const contact = await both("POST", contacts, {
      root: "contact",
      auth,
      body: { name: "Bea", email: "bea@example.com", "phone-number": "+1 604 555 0111" },
    });
    const contactId = (contact.json as { id: number }).id;
    await both("GET", contacts, { auth, same: "exactly" });
    await both("GET", `${contacts}?name=Bea`, { auth, same: "exactly" });
    await both("GET", `${contacts}/${contactId}`, { auth, same: "exactly" });
    await both("PUT", `${contacts}/${contactId}`, {
      root: "contact",
      auth,
      body: { "time-zone": "Eastern Time (US & Canada)" },
    });
    await both("PUT", `${contacts}/${contactId}`, {
      root: "contact",
      auth,
      body: { email: "nope" },
      status: 422,
    });

    const webhooks = `/users/${owner.id}/webhooks`;
    const hook = await both("POST", webhooks, {
      root: "webhook",
      auth,
      body: { url: "https://93.184.215.14/hook", "event-types": ["conference-started"] },
    });
    const webhookId = (hook.json as { id: number }).id;
    assert.equal(typeof (hook.json as { secret: unknown }).secret, "string");
    await both("GET", webhooks, { auth, same: "exactly" });
    await both("GET", `${webhooks}/${webhookId}`, { auth, same: "exactly" });
    await both("PUT", `${webhooks}/${webhookId}`, {
      root: "webhook",
      auth,
      body: { enabled: false, "event-types": null },
    });
    await both("GET", `${webhooks}/${webhookId}/deliveries`, { auth, same: "exactly" });
    await both("GET", `${webhooks}/${webhookId}/deliveries/1`, { auth, status: 404 });

    const wrongTypes = await json("POST", `/users/${owner.id}/conferences`, auth, {
      name: 7,
      "scheduled-to-start-at": "tomorrow",
      "record-audio": "yes",
      "accounting-code": "12",
    } as Record<string, Json>);
    assert.equal(wrongTypes.status, 422);
    assert.deepEqual(JSON.parse(wrongTypes.text).errors, [
      "name must be a string, not a number",
      "record-audio must be true or false, not a string",
      "accounting-code must be an integer (a JSON number) or null, not a string",
    ]);
    const wrapped = await json("POST", contacts, auth, { contact: { name: "Wrapped" } });
    assert.equal(wrapped.status, 400);
    assert.match(JSON.parse(wrapped.text).errors[0], /at the top level/);
    const malformed = await api.request("POST", contacts, {
      auth,
      body: '{"name": "Half',
      headers: { accept: "application/json", "content-type": "application/json" },
    });
    assert.equal(malformed.status, 400);
    assert.deepEqual(JSON.parse(malformed.text), { errors: ["The body is not valid JSON"] });
    const escaped = await json("POST", contacts, auth, { name: "nul\u0000here" });
    assert.equal(escaped.status, 400, escaped.text);
  });

  it("refuses JSON a stranger could break it with: built-in member names, deep nesting (400, never 500)", async () => {
    for (const body of [
      '{"name":"x","constructor":"y"}',
      '{"__proto__":{"name":"p"},"name":"ok"}',
      '{"billing-package":{"toString":1}}',
    ]) {
      const refused = await api.request("POST", "/users", {
        body,
        headers: { accept: "application/json", "content-type": "application/json" },
      });
      assert.equal(refused.status, 400, `${body}: ${refused.text}`);
      assert.match(
        JSON.parse(refused.text).errors[0],
        /names "(constructor|__proto__|toString)", which is no field/,
      );
    }
    for (const depth of [30, 20_000]) {
      const deep = `{"name":"x","junk":${"[".repeat(depth)}${"]".repeat(depth)}}`;
      const refused = await api.request("POST", "/users", {
        body: deep,
        headers: { accept: "application/json", "content-type": "application/json" },
      });
      assert.equal(refused.status, 400, `${depth} deep: ${refused.text.slice(0, 200)}`);
    }
  });

  it("lets a suffix choose over Accept, reads no suffix in the query, and marks answers Vary: Accept", async () => {
    const owner = await newUser();
    const asXml = await api.request("GET", `/users/${owner.id}.xml`, {
      auth: owner.auth,
      headers: { accept: "application/json, */*;q=0.5" },
    });
    assert.match(asXml.text, /^<\?xml/);
    assert.equal(asXml.headers.vary, "accept");
    const contact = await json("POST", `/users/${owner.id}/contacts`, owner.auth, { name: "report.json" });
    assert.equal(contact.status, 201);
    const found = await api.request("GET", `/users/${owner.id}/contacts?name=report.json`, {
      auth: owner.auth,
    });
    assert.match(found.text, /^<\?xml/, "the query's .json is a value, not a suffix");
    assert.match(found.text, /<name>report\.json<\/name>/);
    // Quality values outside RFC 9110's grammar are not read as 1.
    const loose = await api.request("GET", "/billing-packages", {
      headers: { accept: "application/json;q=0.0001, application/xml;q=0.5" },
    });
    assert.match(String(loose.headers["content-type"]), /^application\/xml/);
    // A route of another media type refuses in JSON to a client that prefers it.
    const noRecording = await api.request("GET", `/users/${owner.id}/conferences/999/recording`, {
      auth: owner.auth,
      headers: { accept: "audio/wav, application/json" },
    });
    assert.equal(noRecording.status, 404);
    assert.deepEqual(JSON.parse(noRecording.text), { errors: ["conference not found"] });
    const form = await api.request("POST", `/users/${owner.id}/contacts`, {
      auth: owner.auth,
      body: "name=x",
      headers: { accept: "application/json", "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(form.status, 415);
    assert.match(JSON.parse(form.text).errors[0], /XML or JSON/);
  });

  it("answers JSON to a .json suffix as to Accept, and errors before routing in JSON", async () => {
    const owner = await newUser();
    const byAccept = await json("GET", `/users/${owner.id}`, owner.auth);
    const bySuffix = await api.request("GET", `/users/${owner.id}.json`, { auth: owner.auth });
    assert.equal(bySuffix.status, 200);
    assert.equal(bySuffix.text, byAccept.text);
    const xmlSuffix = await api.request("GET", `/users/${owner.id}.xml`, {
      auth: owner.auth,
      headers: { accept: "*/*" },
    });
    assert.match(xmlSuffix.text, /^<\?xml/);
    await both("GET", "/no/such/route", { status: 404 });
    await both("DELETE", "/billing-packages", { status: 405 });
  });
});
