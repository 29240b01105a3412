/** RFC 4475 torture messages from shared/sip-torture (see its README.md for the index.json fields). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import { serializeMessage } from "../../../../src/telephony/sip/message/serializer.js";
import type { SipMessage } from "../../../../src/telephony/sip/message/sip-message.js";
import { TORTURE_CASES, tortureBytes } from "../../../helpers/torture.js";

const cases = TORTURE_CASES;

function startLine(message: SipMessage): string {
  return message.kind === "request"
    ? `${message.method} ${message.uri}`
    : `${message.status} ${message.reason}`;
}

/** Header fields other than Content-Length, which serialization always writes from the body. */
function headersOf(message: SipMessage): [string, string][] {
  return [...message.headers].filter(([name]) => name !== "Content-Length").map(([n, v]) => [n, v]);
}

describe("RFC 4475 torture messages", () => {
  it("index.json lists every message", () => {
    assert.equal(cases.length, 49);
  });

  for (const torture of cases) {
    const bytes = tortureBytes(torture);
    const label = `${torture.section} ${torture.name}: ${torture.title}`;

    if (torture.valid) {
      it(`${label}: parses and round-trips`, () => {
        const result = parseMessage(bytes, { stream: false });
        assert.ok(result.ok, `refused: ${JSON.stringify(result)}`);
        const { message } = result;
        assert.equal(message.kind, torture.kind);
        const again = parseMessage(serializeMessage(message), { stream: true });
        assert.ok(again.ok, `serialized form refused: ${JSON.stringify(again)}`);
        assert.equal(startLine(again.message), startLine(message));
        assert.deepEqual(headersOf(again.message), headersOf(message));
        assert.deepEqual(again.message.body, message.body);
        assert.equal(again.message.headers.get("Content-Length"), String(message.body.length));
      });
    } else if (torture.liberal_ok) {
      it(`${label}: refused, or accepted as RFC 4475 lets a liberal element`, () => {
        const result = parseMessage(bytes, { stream: false });
        if (!result.ok) {
          assert.equal(result.incomplete, false);
          if (torture.uas_status.length > 0) assert.ok(torture.uas_status.includes(result.status));
        }
      });
    } else {
      it(`${label}: refused${torture.kind === "request" ? " with an answerable status" : ", not answered"}`, () => {
        const result = parseMessage(bytes, { stream: false });
        assert.ok(!result.ok && !result.incomplete, `accepted: ${JSON.stringify(result)}`);
        if (torture.kind === "response") {
          assert.equal(result.canRespond, false);
        } else {
          assert.equal(result.canRespond, true);
          assert.ok(torture.uas_status.includes(result.status), `status ${result.status}: ${result.error}`);
        }
      });
    }
  }

  it("dblreq: only the REGISTER is taken from the datagram", () => {
    const result = parseMessage(tortureBytes("dblreq"), { stream: false });
    assert.ok(result.ok && result.message.kind === "request");
    assert.equal(result.message.method, "REGISTER");
    assert.equal(result.message.body.length, 0);
  });

  it("clerr: on a stream, Content-Length 9999 means waiting for more data", () => {
    const result = parseMessage(tortureBytes("clerr"), { stream: true });
    assert.deepEqual(result, { ok: false, incomplete: true });
  });

  it("mpart01: the binary body with NULs is framed by Content-Length", () => {
    const result = parseMessage(tortureBytes("mpart01"), { stream: false });
    assert.ok(result.ok);
    assert.equal(result.message.body.length, Number(result.message.headers.get("Content-Length")));
    assert.ok(result.message.body.includes(0));
  });

  it("wsinv: folded, compact and odd-case fields come out canonical", () => {
    const result = parseMessage(tortureBytes("wsinv"), { stream: false });
    assert.ok(result.ok);
    const { headers } = result.message;
    assert.equal(headers.getAll("Via").length, 3);
    assert.equal(headers.get("CSeq"), "0009 INVITE");
    assert.equal(headers.get("Max-Forwards"), "0068");
    assert.equal(headers.get("Subject"), "");
    assert.equal(headers.get("UnknownHeaderWithUnusualValue"), ";;,,;;,;");
    assert.equal(headers.getAll("Contact").length, 1);
  });

  it("esc02: C%6Fntact is an extension header, not Contact", () => {
    const result = parseMessage(tortureBytes("esc02"), { stream: false });
    assert.ok(result.ok);
    assert.equal(result.message.headers.getAll("Contact").length, 2);
    assert.equal(result.message.headers.getAll("C%6Fntact").length, 1);
  });
});
