/**
 * The call records API: a conference's calls and one attendee's, as XML and as a CSV export, read
 * from records the store wrote as a room writes them (store/call-records.ts recordCall).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parse } from "csv-parse/sync";
import type { NewCallRecord } from "../../src/domain/call-record.js";
import { recordCall } from "../../src/store/call-records.js";
import type { Store } from "../../src/store/database.js";
import { createUser, startTestService, type TestService } from "../helpers/service.js";
import { type Auth, itemsOf, textOf, type XmlNode } from "../helpers/xml.js";

const ANSWERED: NewCallRecord = {
  attendeeId: 0,
  direction: "outbound",
  number: "+16045550111",
  route: "sip:carrier.example;transport=tls",
  instance: "bridgeline-a",
  invitedAt: "2030-01-01T10:00:00.250Z",
  answeredAt: "2030-01-01T10:00:04.750Z",
  endedAt: "2030-01-01T10:02:05.100Z",
  sipStatus: 200,
  sipReason: "OK",
  cause: { protocol: "Q.850", cause: 16, text: "Normal call clearing" },
  hungUpBy: "attendee",
  endReason: "BYE",
  codec: "G722",
  srtp: true,
  tls: true,
  quality: {
    packetsSent: 6000,
    packetsReceived: 5820,
    lossShare: 0.03,
    remoteLossShare: 0.0291234,
    jitterMs: 21.34,
    remoteJitterMs: 18,
    roundTripMs: 42.5,
    concealmentShare: 0.031,
    mos: 3.912,
  },
  callerVerification: null,
};

const BUSY: NewCallRecord = {
  ...ANSWERED,
  direction: "inbound",
  callerVerification: { status: "failed", attestation: null, reason: "the signature does not verify" },
  answeredAt: null,
  endedAt: "2030-01-01T10:00:03.000Z",
  sipStatus: 486,
  sipReason: "Busy Here",
  cause: { protocol: "Q.850", cause: 17, text: 'User busy, "really"' },
  // What a caller or carrier chose, as a spreadsheet would run it.
  number: '=HYPERLINK("http://evil.example")',
  hungUpBy: null,
  endReason: "@SUM(1+1)",
  codec: null,
  srtp: false,
  quality: null,
};

describe("call records API", () => {
  let api: TestService;
  let alice: { id: number; auth: Auth };
  let bob: { id: number; auth: Auth };
  let conferenceId: number;
  let attendeeIds: number[];

  function withStore<T>(use: (store: Store) => Promise<T>): Promise<T> {
    return api.inspect((db) => use({ db, dialect: "sqlite", close: async () => {} }));
  }

  before(async () => {
    api = await startTestService();
    alice = await createUser(api);
    bob = await createUser(api);
    const created = await api.request("POST", `/users/${alice.id}/conferences`, {
      auth: alice.auth,
      body: '<conference><name>Calls</name><scheduled-to-start-at>2030-01-01T10:00:00Z</scheduled-to-start-at><no-moderator type="boolean">true</no-moderator></conference>',
    });
    assert.equal(created.status, 201, created.text);
    conferenceId = Number(textOf(created.xml.conference as XmlNode, "id"));
    attendeeIds = [];
    for (const number of ["6045550111", "6045550122"]) {
      const response = await api.request("POST", `/users/${alice.id}/conferences/${conferenceId}/attendees`, {
        auth: alice.auth,
        body: `<attendee><phone-number>${number}</phone-number></attendee>`,
      });
      assert.equal(response.status, 201, response.text);
      attendeeIds.push(Number(textOf(response.xml.attendee as XmlNode, "id")));
    }
    const scope = { userId: alice.id, conferenceId };
    await withStore(async (store) => {
      await recordCall(store, scope, { ...ANSWERED, attendeeId: attendeeIds[0] as number }, new Date());
      await recordCall(store, scope, { ...BUSY, attendeeId: attendeeIds[1] as number }, new Date());
    });
  });
  after(() => api?.close());

  const callsPath = () => `/users/${alice.id}/conferences/${conferenceId}/calls`;

  it("lists a conference's calls, oldest first, with outcome, cause and quality", async () => {
    const response = await api.request("GET", callsPath(), { auth: alice.auth });
    assert.equal(response.status, 200, response.text);
    const [answered, busy] = itemsOf(response, "calls", "call");
    assert.ok(answered && busy);
    assert.equal(textOf(answered, "attendee-id"), String(attendeeIds[0]));
    assert.equal(textOf(answered, "direction"), "outbound");
    assert.equal(textOf(answered, "route"), "sip:carrier.example;transport=tls");
    assert.equal(textOf(answered, "answered-at"), "2030-01-01T10:00:04Z");
    assert.equal(textOf(answered, "duration"), "120");
    assert.equal(textOf(answered, "sip-status"), "200");
    assert.equal(textOf(answered, "hung-up-by"), "attendee");
    assert.equal(textOf(answered, "codec"), "G722");
    assert.equal(textOf(answered, "srtp"), "true");
    const cause = answered.cause as XmlNode;
    assert.equal(textOf(cause, "protocol"), "Q.850");
    assert.equal(textOf(cause, "code"), "16");
    const quality = answered.quality as XmlNode;
    assert.equal((quality["loss-share"] as XmlNode)["@_type"], "float");
    assert.equal(textOf(quality, "remote-loss-share"), "0.0291");
    assert.equal(textOf(quality, "mos"), "3.91");
    assert.equal(textOf(quality, "packets-received"), "5820");

    assert.equal(textOf(busy, "sip-status"), "486");
    assert.equal(textOf(busy, "answered-at"), null);
    assert.equal(textOf(busy, "duration"), "0");
    assert.equal(textOf(busy, "hung-up-by"), null);
    assert.equal((busy.quality as XmlNode)["@_nil"], "true");
    const verification = busy["caller-verification"] as XmlNode;
    assert.equal(textOf(verification, "status"), "failed");
    assert.equal(textOf(verification, "attestation"), null);
    assert.equal(textOf(verification, "reason"), "the signature does not verify");
    assert.equal((answered["caller-verification"] as XmlNode)["@_nil"], "true");
  });

  it("lists one attendee's calls; an unknown attendee is 404", async () => {
    const one = await api.request(
      "GET",
      `${callsPath().replace(/calls$/, "")}attendees/${attendeeIds[1]}/calls.xml`,
      {
        auth: alice.auth,
      },
    );
    assert.equal(one.status, 200, one.text);
    const calls = itemsOf(one, "calls", "call");
    assert.deepEqual(
      calls.map((call) => textOf(call, "sip-status")),
      ["486"],
    );
    const missing = await api.request("GET", `${callsPath().replace(/calls$/, "")}attendees/999999/calls`, {
      auth: alice.auth,
    });
    assert.equal(missing.status, 404, missing.text);
  });

  it("exports the calls as CSV with milliseconds kept and quoted text", async () => {
    const response = await api.request("GET", `${callsPath()}.csv`, {
      auth: alice.auth,
      headers: { accept: "text/csv" },
    });
    assert.equal(response.status, 200, response.text);
    assert.match(String(response.headers["content-type"]), /^text\/csv/);
    assert.match(
      String(response.headers["content-disposition"]),
      /attachment; filename="conference-\d+-calls\.csv"/,
    );
    const rows = parse(response.text, { columns: true }) as Record<string, string>[];
    assert.equal(rows.length, 2);
    assert.equal(rows[0]?.invited_at, "2030-01-01T10:00:00.250Z");
    assert.equal(rows[0]?.loss_share, "0.03");
    assert.equal(rows[0]?.mos, "3.912");
    assert.equal(rows[1]?.cause_text, 'User busy, "really"');
    assert.equal(rows[1]?.number, `'=HYPERLINK("http://evil.example")`, "no formula a spreadsheet would run");
    assert.equal(rows[1]?.end_reason, "'@SUM(1+1)");
    assert.equal(rows[1]?.sip_reason, "Busy Here");
    assert.equal(rows[0]?.number, "+16045550111", "a telephone number stays as it is");
    assert.equal(rows[1]?.answered_at, "");
    assert.equal(rows[1]?.mos, "");
    assert.equal(rows[1]?.verification_status, "failed");
    assert.equal(rows[0]?.verification_status, "");
  });

  it("searches as the other lists do: by status, cause, who hung up; an unknown attribute is 400", async () => {
    const statuses = async (query: string, path = callsPath()) => {
      const response = await api.request("GET", `${path}?${query}`, { auth: alice.auth });
      assert.equal(response.status, 200, response.text);
      return itemsOf(response, "calls", "call").map((call) => textOf(call, "sip-status"));
    };
    assert.deepEqual(await statuses("sip_status=486"), ["486"]);
    assert.deepEqual(await statuses("sip_status_gte=300"), ["486"]);
    assert.deepEqual(await statuses("cause=16"), ["200"]);
    assert.deepEqual(await statuses("cause_protocol=q.850&cause=17"), ["486"]);
    assert.deepEqual(await statuses("hung_up_by=attendee"), ["200"]);
    assert.deepEqual(await statuses("srtp=true"), ["200"]);
    assert.deepEqual(await statuses("direction=inbound"), ["486"]);
    assert.deepEqual(await statuses("verification_status=failed"), ["486"]);
    assert.deepEqual(
      await statuses(
        "sip_status=200",
        `${callsPath().replace(/calls$/, "")}attendees/${attendeeIds[1]}/calls`,
      ),
      [],
      "the attendee's own calls, filtered",
    );
    const unknown = await api.request("GET", `${callsPath()}?mos=4`, { auth: alice.auth });
    assert.equal(unknown.status, 400, unknown.text);
    assert.match(unknown.text, /unknown search attribute "mos"/);
    const csv = await api.request("GET", `${callsPath()}.csv?sip_status=486`, {
      auth: alice.auth,
      headers: { accept: "text/csv" },
    });
    const rows = parse(csv.text, { columns: true }) as Record<string, string>[];
    assert.deepEqual(
      rows.map((row) => row.sip_status),
      ["486"],
    );
  });

  it("is the owner's alone: another user's request is refused", async () => {
    const response = await api.request("GET", callsPath(), { auth: bob.auth });
    assert.ok(response.status === 403 || response.status === 404, `${response.status} ${response.text}`);
    const csv = await api.request("GET", `${callsPath()}.csv`, {
      auth: bob.auth,
      headers: { accept: "text/csv" },
    });
    assert.ok(csv.status === 403 || csv.status === 404, `${csv.status}`);
    // Bob's own path, Alice's conference: not his.
    const own = await api.request("GET", `/users/${bob.id}/conferences/${conferenceId}/calls`, {
      auth: bob.auth,
    });
    assert.equal(own.status, 404, own.text);
    const attendee = await api.request(
      "GET",
      `/users/${bob.id}/conferences/${conferenceId}/attendees/${attendeeIds[0]}/calls`,
      { auth: bob.auth },
    );
    assert.equal(attendee.status, 404, attendee.text);
  });

  it("says which method it allows", async () => {
    const response = await api.request("POST", callsPath(), { auth: alice.auth, body: "<call/>" });
    assert.equal(response.status, 405, response.text);
  });
});
