import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type ParseResult, parseMessage } from "../../../../src/telephony/sip/message/parser.js";
import { serializeMessage } from "../../../../src/telephony/sip/message/serializer.js";
import type { SipMessage, SipRequest } from "../../../../src/telephony/sip/message/sip-message.js";

const BASE_HEADERS = [
  "Via: SIP/2.0/UDP pc33.example.com;branch=z9hG4bK776asdhds",
  "Max-Forwards: 70",
  "To: Bob <sip:bob@example.com>",
  'From: "Alice" <sip:alice@example.com>;tag=1928301774',
  "Call-ID: a84b4c76e66710@pc33.example.com",
  "CSeq: 314159 INVITE",
];

function wire(startLine: string, headers: string[], body = ""): Buffer {
  return Buffer.from(`${startLine}\r\n${headers.join("\r\n")}\r\n\r\n${body}`);
}

function invite(headers: string[] = [], body = ""): Buffer {
  return wire("INVITE sip:bob@example.com SIP/2.0", [...BASE_HEADERS, ...headers], body);
}

function parsed(result: ParseResult): { message: SipMessage; consumed: number } {
  assert.ok(result.ok, `expected a message, got ${JSON.stringify(result)}`);
  return result;
}

function refused(result: ParseResult): Extract<ParseResult, { incomplete: false }> {
  assert.ok(!result.ok && !result.incomplete, `expected a refusal, got ${JSON.stringify(result)}`);
  return result;
}

const datagram = { stream: false };
const stream = { stream: true };

describe("parseMessage: start lines", () => {
  it("reads a request line", () => {
    const { message } = parsed(parseMessage(invite(["Content-Length: 0"]), datagram));
    assert.equal(message.kind, "request");
    const request = message as SipRequest;
    assert.equal(request.method, "INVITE");
    assert.equal(request.uri, "sip:bob@example.com");
    assert.equal(request.version, "SIP/2.0");
  });

  it("reads a status line, including an empty reason phrase", () => {
    const ok = parsed(parseMessage(wire("SIP/2.0 180 Ringing", BASE_HEADERS), datagram)).message;
    assert.ok(ok.kind === "response" && ok.status === 180 && ok.reason === "Ringing");
    const bare = parsed(parseMessage(wire("SIP/2.0 100 ", BASE_HEADERS), datagram)).message;
    assert.ok(bare.kind === "response" && bare.reason === "");
  });

  it("answers an unsupported but well-formed version with 505", () => {
    const result = refused(parseMessage(wire("INVITE sip:bob@example.com SIP/3.0", BASE_HEADERS), datagram));
    assert.equal(result.status, 505);
    assert.equal(result.canRespond, true);
    assert.equal(refused(parseMessage(wire("INVITE sip:b@c SIP/2", BASE_HEADERS), datagram)).status, 400);
  });

  it("refuses status codes outside 100-699 and never offers to answer a response", () => {
    for (const code of ["099", "700", "2000", "20x"]) {
      const result = refused(parseMessage(wire(`SIP/2.0 ${code} Odd`, BASE_HEADERS), datagram));
      assert.equal(result.canRespond, false);
      assert.equal(result.partial, undefined);
    }
  });

  it("ignores CRLFs before the start line and counts them as consumed", () => {
    const bytes = Buffer.concat([Buffer.from("\r\n\r\n"), invite(["Content-Length: 0"])]);
    assert.equal(parsed(parseMessage(bytes, stream)).consumed, bytes.length);
  });
});

describe("parseMessage: header fields", () => {
  it("unfolds continuation lines and expands compact and odd-case names", () => {
    const bytes = wire("OPTIONS sip:bob@example.com SIP/2.0", [
      "v: SIP/2.0/UDP host;branch=z9hG4bK1",
      "t: <sip:bob@example.com>",
      "f: <sip:alice@example.com>;",
      "  tag=1",
      "i: abc",
      "cseq: 0009",
      "  OPTIONS",
      "l: 0",
      "x: 1800",
      "NewFangled :  a",
      "\tb",
    ]);
    const { message } = parsed(parseMessage(bytes, datagram));
    assert.deepEqual(
      [...message.headers],
      [
        ["Via", "SIP/2.0/UDP host;branch=z9hG4bK1"],
        ["To", "<sip:bob@example.com>"],
        ["From", "<sip:alice@example.com>; tag=1"],
        ["Call-ID", "abc"],
        ["CSeq", "0009 OPTIONS"],
        ["Content-Length", "0"],
        ["Session-Expires", "1800"],
        ["NewFangled", "a b"],
      ],
    );
    assert.equal(message.headers.get("newfangled"), "a b");
    assert.equal(message.headers.get("session-expires"), "1800");
    assert.equal(message.headers.get("x"), "1800");
  });

  it("splits list-valued fields but not inside quotes or <> and not other fields", () => {
    const { message } = parsed(
      parseMessage(
        invite([
          'Contact: "Doe, John" <sip:j@example.com;a=1,2>, <sip:k@example.com>',
          "Via: SIP/2.0/TCP a.example.com;branch=z9hG4bK2, SIP/2.0/UDP b.example.com",
          "Supported: timer, 100rel",
          "Subject: hello, world",
          "Content-Length: 0",
        ]),
        datagram,
      ),
    );
    assert.deepEqual(message.headers.getAll("Contact"), [
      '"Doe, John" <sip:j@example.com;a=1,2>',
      "<sip:k@example.com>",
    ]);
    assert.equal(message.headers.getAll("Via").length, 3);
    assert.deepEqual(message.headers.getAll("k"), ["timer", "100rel"]);
    assert.deepEqual(message.headers.getAll("Subject"), ["hello, world"]);
  });

  it("refuses missing or duplicated mandatory fields, naming the problem", () => {
    const without = (name: string) => BASE_HEADERS.filter((line) => !line.startsWith(name));
    for (const name of ["Via", "To", "From", "Call-ID", "CSeq"]) {
      const result = refused(parseMessage(wire("INVITE sip:b@example.com SIP/2.0", without(name)), datagram));
      assert.match(result.error, new RegExp(name));
    }
    assert.ok(parseMessage(wire("INVITE sip:b@example.com SIP/2.0", without("Max-Forwards")), datagram).ok);
    refused(parseMessage(invite(["Call-ID: second"]), datagram));
  });

  it("refuses a CSeq method other than the request method and malformed lines", () => {
    refused(parseMessage(wire("OPTIONS sip:b@example.com SIP/2.0", BASE_HEADERS), datagram));
    refused(parseMessage(invite(["no colon here"]), datagram));
    refused(parseMessage(invite(["Bad Name: x"]), datagram));
    const tooManyHops = BASE_HEADERS.map((line) =>
      line.startsWith("Max-Forwards") ? "Max-Forwards: 256" : line,
    );
    refused(parseMessage(wire("INVITE sip:b@example.com SIP/2.0", tooManyHops), datagram));
    refused(parseMessage(Buffer.from("INVITE sip:b@c SIP/2.0\r\n folded\r\n\r\n"), datagram));
  });

  it("returns the fields needed for a 400 with the refusal", () => {
    const result = refused(parseMessage(invite(["Via: SIP/2.0/UDP bad host"]), datagram));
    assert.equal(result.status, 400);
    assert.equal(result.canRespond, true);
    assert.deepEqual(result.partial, {
      via: ["SIP/2.0/UDP pc33.example.com;branch=z9hG4bK776asdhds", "SIP/2.0/UDP bad host"],
      from: '"Alice" <sip:alice@example.com>;tag=1928301774',
      to: "Bob <sip:bob@example.com>",
      callId: "a84b4c76e66710@pc33.example.com",
      cseq: "314159 INVITE",
    });
  });
});

describe("parseMessage: body framing (RFC 3261 18.3)", () => {
  const sdp = "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\n";

  it("frames the body by Content-Length and reports what was consumed", () => {
    const bytes = Buffer.concat([invite([`Content-Length: ${sdp.length}`], sdp), Buffer.from("OPTIONS")]);
    for (const options of [datagram, stream]) {
      const { message, consumed } = parsed(parseMessage(bytes, options));
      assert.equal(message.body.toString(), sdp);
      assert.equal(consumed, bytes.length - "OPTIONS".length);
    }
  });

  it("on a stream, asks for more data until the message is complete", () => {
    const bytes = invite([`Content-Length: ${sdp.length}`], sdp);
    for (const cut of [0, 10, bytes.indexOf("\r\n\r\n") + 2, bytes.length - 1]) {
      assert.deepEqual(parseMessage(bytes.subarray(0, cut), stream), { ok: false, incomplete: true });
    }
    assert.ok(parseMessage(bytes, stream).ok);
  });

  it("on a stream, refuses a message without Content-Length", () => {
    assert.match(refused(parseMessage(invite([], sdp), stream)).error, /Content-Length/);
  });

  it("on a datagram, takes the rest as body without Content-Length, refuses one that is too large", () => {
    assert.equal(parsed(parseMessage(invite([], sdp), datagram)).message.body.toString(), sdp);
    refused(parseMessage(invite(["Content-Length: 9999"], sdp), datagram));
    refused(parseMessage(invite(["Content-Length: -1"], sdp), datagram));
    refused(parseMessage(invite(["Content-Length: 1", "l: 1"], sdp), datagram));
  });

  it("refuses a datagram without the empty line after the header fields", () => {
    const bytes = Buffer.from(`INVITE sip:bob@example.com SIP/2.0\r\n${BASE_HEADERS.join("\r\n")}\r\n`);
    const result = refused(parseMessage(bytes, datagram));
    assert.equal(result.canRespond, true);
    assert.equal(result.partial?.cseq, "314159 INVITE");
  });
});

describe("serializeMessage", () => {
  it("writes one line per value and a correct Content-Length", () => {
    const { message } = parsed(
      parseMessage(invite(["Supported: timer, 100rel", "Content-Length: 3"], "abc"), datagram),
    );
    const changed = { ...message, body: Buffer.from("héllo") };
    const text = serializeMessage(changed).toString();
    assert.ok(text.startsWith("INVITE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP pc33"));
    assert.ok(text.includes("\r\nSupported: timer\r\nSupported: 100rel\r\nContent-Length: 6\r\n\r\nhéllo"));
    const again = parsed(parseMessage(serializeMessage(changed), stream)).message;
    assert.deepEqual([...again.headers].slice(0, -1), [...message.headers].slice(0, -1));
    assert.equal(again.body.toString(), "héllo");
  });

  it("adds Content-Length when the message has none", () => {
    const { message } = parsed(parseMessage(wire("SIP/2.0 200 OK", BASE_HEADERS), datagram));
    const text = serializeMessage(message).toString();
    assert.ok(text.startsWith("SIP/2.0 200 OK\r\n"));
    assert.ok(text.endsWith("Content-Length: 0\r\n\r\n"));
  });
});
