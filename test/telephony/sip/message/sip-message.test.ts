import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseCSeq, parseNameAddr, parseVia } from "../../../../src/telephony/sip/message/header-values.js";
import { parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import { SipHeaders } from "../../../../src/telephony/sip/message/sip-message.js";

const INVITE = [
  "INVITE sip:bob@example.com SIP/2.0",
  "v: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK1;rport, SIP/2.0/TCP proxy.example.com;branch=z9hG4bK0",
  "Max-Forwards: 70",
  'From: "Alice" <sip:alice@example.com>;tag=a1',
  "To: <sip:bob@example.com>",
  "Call-ID: c1@192.0.2.1",
  "CSeq: 0009 INVITE",
  "Contact: <sip:alice@192.0.2.1>;expires=60, <sip:alice@198.51.100.1>",
  "Content-Length: 0",
  "",
  "",
].join("\r\n");

function received(): SipHeaders {
  const result = parseMessage(Buffer.from(INVITE), { stream: false });
  assert.ok(result.ok);
  return result.message.headers;
}

describe("SipHeaders accessors", () => {
  it("read a received message's fields with their grammars", () => {
    const headers = received();
    const via = parseVia("SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK1;rport");
    assert.deepEqual(headers.via, via);
    assert.deepEqual([...(headers.via?.params ?? [])], [...(via?.params ?? [])]);
    assert.equal(headers.via?.branch, "z9hG4bK1");
    assert.equal(headers.via?.rport, true);
    assert.equal(headers.from?.displayName, "Alice");
    assert.equal(headers.from?.tag, "a1");
    assert.equal(headers.to?.uri, "sip:bob@example.com");
    assert.equal(headers.to?.tag, undefined);
    assert.equal(headers.callId, "c1@192.0.2.1");
    assert.deepEqual(headers.cseq, { seq: 9, method: "INVITE" });
    assert.equal(headers.contact?.uri, "sip:alice@192.0.2.1");
    assert.equal(headers.contact?.params.get("expires"), "60");
  });

  it("parse a field once: every read returns the same value", () => {
    const headers = received();
    assert.equal(headers.via, headers.via);
    assert.equal(headers.cseq, headers.cseq);
    const built = new SipHeaders([
      ["CSeq", "2 BYE"],
      ["To", "<sip:bob@example.com>;tag=b2"],
    ]);
    const cseq = built.cseq;
    assert.deepEqual(cseq, { seq: 2, method: "BYE" });
    assert.equal(built.cseq, cseq);
    assert.equal(built.to, built.to);
    assert.equal(built.to?.tag, "b2");
  });

  it("give undefined for absent and malformed fields, as the grammars do", () => {
    const headers = new SipHeaders([
      ["Via", "SIP/2.0/UDP host:99999"],
      ["From", "Bell, Alexander <sip:a.g.bell@example.com>"],
      ["To", "<sip:bob@example.com>;tag"],
      ["CSeq", "INVITE 1"],
      ["Contact", "*"],
    ]);
    assert.equal(headers.via, undefined);
    assert.equal(headers.via, undefined); // a malformed value is not parsed again, and stays undefined
    assert.equal(headers.from, undefined);
    assert.equal(headers.to?.tag, undefined); // a tag without a value
    assert.ok(headers.to?.params.has("tag"));
    assert.equal(headers.cseq, undefined);
    assert.equal(headers.contact, undefined);
    assert.equal(new SipHeaders().callId, undefined);
    assert.equal(new SipHeaders().via, undefined);
  });

  it("keep to the first field of a name when more are appended", () => {
    const headers = new SipHeaders([["Via", "SIP/2.0/UDP a.example.com;branch=z9hG4bKa"]]);
    assert.equal(headers.via?.host, "a.example.com");
    headers.append("Via", "SIP/2.0/UDP b.example.com;branch=z9hG4bKb");
    assert.equal(headers.via?.host, "a.example.com");
    const later = new SipHeaders([["Max-Forwards", "70"]]);
    assert.equal(later.cseq, undefined);
    later.append("CSeq", "3 OPTIONS");
    assert.deepEqual(later.cseq, { seq: 3, method: "OPTIONS" });
  });
});

describe("SipHeaders by index", () => {
  it("gives each field's name and value in message order, as iteration does", () => {
    const headers = received();
    const fields = [...headers];
    assert.equal(headers.size, fields.length);
    for (let i = 0; i < headers.size; i++) {
      assert.equal(headers.nameAt(i), fields[i]?.[0]);
      assert.equal(headers.valueAt(i), fields[i]?.[1]);
    }
    assert.equal(headers.nameAt(0), "Via"); // the compact "v" under its full name
    assert.equal(headers.nameAt(headers.size), undefined);
  });
});

describe("SipHeaders.withFirst", () => {
  it("replaces the first field of the name and keeps what was parsed from the others", () => {
    const headers = received();
    const cseq = headers.cseq;
    const copy = headers.withFirst("Via", "SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK1;rport=5062");
    assert.equal(copy.via?.rport, 5062);
    assert.deepEqual(copy.getAll("Via").slice(1), headers.getAll("Via").slice(1));
    assert.equal(copy.cseq, cseq);
    assert.equal(headers.via?.rport, true); // the original is left as it was
    assert.deepEqual(
      [...copy].map(([name]) => name),
      [...headers].map(([name]) => name),
    );
  });

  it("puts the field first when there is none", () => {
    const headers = new SipHeaders([["CSeq", "1 INVITE"]]);
    const cseq = headers.cseq;
    const copy = headers.withFirst("v", "SIP/2.0/TCP 192.0.2.1;branch=z9hG4bK2");
    assert.deepEqual(
      [...copy],
      [
        ["Via", "SIP/2.0/TCP 192.0.2.1;branch=z9hG4bK2"],
        ["CSeq", "1 INVITE"],
      ],
    );
    assert.equal(copy.via?.transport, "TCP");
    assert.equal(copy.cseq, cseq);
  });
});

describe("the parser's values", () => {
  it("are what the grammars yield for the field values as received", () => {
    const headers = received();
    assert.deepEqual(headers.from, parseNameAddr('"Alice" <sip:alice@example.com>;tag=a1'));
    assert.deepEqual(headers.cseq, parseCSeq("0009 INVITE"));
    assert.deepEqual(headers.contact, parseNameAddr("<sip:alice@192.0.2.1>;expires=60"));
    assert.deepEqual([...(headers.contact?.params ?? [])], [["expires", "60"]]);
  });
});

const RELIABLE_183 = [
  "SIP/2.0 183 Session Progress",
  "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK1",
  "From: <sip:alice@example.com>;tag=a1",
  "To: <sip:bob@example.com>;tag=b1",
  "Call-ID: c1@192.0.2.1",
  "CSeq: 1 INVITE",
  "Require: 100rel",
  "Supported: Timer, replaces",
  "Allow: INVITE, ACK, update",
  "rseq: 0042",
  "x: 600 ; Refresher = UAS",
  "Min-SE: 90",
  "c: Application/SDP; charset=utf-8",
  "Content-Length: 0",
  "",
  "",
].join("\r\n");

describe("the extension fields' accessors (RFC 4028, RFC 3262)", () => {
  it("give Session-Expires, Min-SE, RSeq and Content-Type as their grammars read them, compact and odd spellings too", () => {
    const result = parseMessage(Buffer.from(RELIABLE_183), { stream: false });
    assert.ok(result.ok);
    const { headers } = result.message;
    assert.deepEqual(headers.sessionExpires, { interval: 600, refresher: "uas" });
    assert.equal(headers.sessionExpires, headers.sessionExpires);
    assert.equal(headers.minSe, 90);
    assert.equal(headers.rseq, 42);
    assert.equal(headers.contentType?.mediaType, "application/sdp");
    assert.equal(headers.contentType?.params.get("charset"), "utf-8");
  });

  it("answer whether Require, Supported and Allow list a token, in any case and across commas", () => {
    const result = parseMessage(Buffer.from(RELIABLE_183), { stream: false });
    assert.ok(result.ok);
    const { headers } = result.message;
    assert.equal(headers.requires("100rel"), true);
    assert.equal(headers.requires("timer"), false);
    assert.equal(headers.supports("timer"), true);
    assert.equal(headers.allows("UPDATE"), true);
    assert.equal(headers.allows("PRACK"), false);
    assert.equal(new SipHeaders([["Supported", "timer, 100rel"]]).supports("100rel"), true);
  });

  it("read an RAck, and give undefined for malformed extension fields without refusing the message", () => {
    const built = new SipHeaders([
      ["RAck", " 776656  1 INVITE "],
      ["Session-Expires", "soon"],
      ["RSeq", "0"],
    ]);
    assert.deepEqual(built.rack, { rseq: 776656, cseq: 1, method: "INVITE" });
    assert.equal(built.sessionExpires, undefined);
    assert.equal(built.rseq, undefined);
    const odd = RELIABLE_183.replace("rseq: 0042", "RSeq: x").replace("Min-SE: 90", "Min-SE: ;");
    const result = parseMessage(Buffer.from(odd), { stream: false });
    assert.ok(result.ok);
    assert.equal(result.message.headers.rseq, undefined);
    assert.equal(result.message.headers.minSe, undefined);
  });
});
