/**
 * Mutations: random ones on bytes, and structure-aware ones on SIP messages (start line, header
 * fields, Content-Length, folding, body), on SDP lines and on XML elements. Each takes a valid input
 * and returns a damaged copy; a few rounds are stacked for deeper damage.
 */
import type { Random } from "./random.js";

const INTERESTING_BYTES = [
  0x00, 0x01, 0x0a, 0x0d, 0x20, 0x7f, 0x80, 0xfe, 0xff, 0x3a, 0x3b, 0x2c, 0x3c, 0x22,
];

/** Values that break parsers: limits, signs, encodings, separators, lengths. */
const INTERESTING_TEXT = [
  "",
  " ",
  "0",
  "-1",
  "-0",
  "65535",
  "65536",
  "4294967295",
  "4294967296",
  "9007199254740993",
  "99999999999999999999999999",
  "1e309",
  "NaN",
  "Infinity",
  "0x10",
  "%00",
  "%",
  "\u0000",
  "\u00ff\u00fe",
  "\u2028",
  "\uffff",
  "\ud800",
  "é",
  ";",
  ",",
  ":",
  "<",
  ">",
  '"',
  "\\",
  "@",
  "=",
  "\r\n",
  "\n",
  "\r\n ",
  "\t",
  "sip:",
  "sips:",
  "tel:",
  "<sip:a@b>;tag=",
  ";branch=",
  ";tag=x;tag=y",
  "SIP/2.0/UDP",
  "SIP/3.0",
  "1.1.1.1:99999",
  "[::1",
  "[::1]:5060",
  "255.255.255.255",
  "\u0000\u0000\u0000\u0000",
];

export function interestingText(rng: Random): string {
  return rng.pick(INTERESTING_TEXT);
}

/** A long value: one character repeated, or random printable text. */
export function hugeText(rng: Random): string {
  const length = rng.pick([256, 1024, 4096, 16_384, 65_536, 70_000]);
  if (rng.chance(0.5)) return rng.pick(["a", "9", ";", ",", " ", "%", "<", "=", "\\"]).repeat(length);
  let text = "";
  while (text.length < length) text += rng.uint32().toString(36);
  return text.slice(0, length);
}

/** Random damage to bytes: flips, overwrites, insertions, deletions, duplications, truncation. */
export function mutateBytes(rng: Random, input: Buffer, rounds = 1 + rng.below(4)): Buffer {
  let bytes = Buffer.from(input);
  for (let round = 0; round < rounds; round++) {
    const at = bytes.length === 0 ? 0 : rng.below(bytes.length);
    switch (rng.below(9)) {
      case 0:
        if (bytes.length > 0) bytes[at] = (bytes[at] as number) ^ (1 << rng.below(8));
        break;
      case 1:
        if (bytes.length > 0) bytes[at] = rng.chance(0.5) ? rng.pick(INTERESTING_BYTES) : rng.below(256);
        break;
      case 2:
        bytes = Buffer.concat([bytes.subarray(0, at), rng.bytes(rng.length(256)), bytes.subarray(at)]);
        break;
      case 3:
        bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1 + rng.length(64))]);
        break;
      case 4: {
        const end = Math.min(bytes.length, at + 1 + rng.length(128));
        const copies = rng.chance(0.9) ? 1 : rng.between(2, 64);
        const chunk = bytes.subarray(at, end);
        bytes = Buffer.concat([
          bytes.subarray(0, end),
          ...Array<Buffer>(copies).fill(chunk),
          bytes.subarray(end),
        ]);
        break;
      }
      case 5:
        bytes = bytes.subarray(0, at);
        break;
      case 6:
        bytes = Buffer.concat([bytes, rng.bytes(rng.length(512))]);
        break;
      case 7: {
        // A 16- or 32-bit field set to an edge value.
        if (bytes.length >= at + 4) {
          const value = rng.pick([0, 0xffffffff, 0x7fffffff, 0x80000000, 0xffff, 1]);
          if (rng.chance(0.5)) bytes.writeUInt32BE(value >>> 0, at);
          else bytes.writeUInt16BE(value & 0xffff, at);
        }
        break;
      }
      default:
        if (bytes.length > 1) {
          const other = rng.below(bytes.length);
          const saved = bytes[at] as number;
          bytes[at] = bytes[other] as number;
          bytes[other] = saved;
        }
    }
  }
  return bytes;
}

/** A SIP message taken apart at its line ends: start line, header lines, body. */
interface SipParts {
  startLine: string;
  headers: string[];
  body: string;
}

function splitSip(text: string): SipParts {
  const end = text.indexOf("\r\n\r\n");
  const head = end < 0 ? text : text.slice(0, end);
  const body = end < 0 ? "" : text.slice(end + 4);
  const [startLine = "", ...headers] = head.split("\r\n");
  return { startLine, headers, body };
}

function joinSip(parts: SipParts, lineEnd = "\r\n"): string {
  return [parts.startLine, ...parts.headers, "", parts.body].join(lineEnd);
}

const COMPACT_FORMS: Record<string, string> = {
  via: "v",
  from: "f",
  to: "t",
  "call-id": "i",
  contact: "m",
  "content-length": "l",
  "content-type": "c",
  supported: "k",
  subject: "s",
};

const EXTRA_HEADERS = [
  "Route: <sip:127.0.0.1;lr>",
  "Record-Route: <sip:10.0.0.1;lr>",
  "Require: 100rel",
  "Require: timer, foo",
  "Supported: replaces, timer",
  "Session-Expires: 90;refresher=uac",
  "Min-SE: 1",
  "Expires: 4294967296",
  "Max-Forwards: 0",
  "Proxy-Require: bar",
  'Authorization: Digest username="a", realm="b", nonce="c", uri="sip:x", response="d"',
  "Content-Encoding: gzip",
  "Content-Disposition: session;handling=required",
  "Accept: application/sdp",
  "Replaces: abc;to-tag=1;from-tag=2",
  "Refer-To: <sip:x@y>",
  "Event: dialog",
  "RSeq: 1",
  "RAck: 1 1 INVITE",
  "Allow-Events: talk",
  "X-Bridgeline-Handoff: 0000",
  "P-Asserted-Identity: <sip:+16045550100@x>",
];

/** Structure-aware damage to a SIP message (text), then sometimes a few random byte mutations. */
export function mutateSip(rng: Random, message: string, rounds = 1 + rng.below(3)): Buffer {
  const parts = splitSip(message);
  let lineEnd = "\r\n";
  let raw: Buffer | undefined;
  for (let round = 0; round < rounds; round++) {
    const index = parts.headers.length === 0 ? 0 : rng.below(parts.headers.length);
    const header = parts.headers[index] ?? "";
    const colon = header.indexOf(":");
    const name = colon < 0 ? header : header.slice(0, colon);
    const value = colon < 0 ? "" : header.slice(colon + 1).trim();
    switch (rng.below(20)) {
      case 0:
        parts.headers.splice(index, 1);
        break;
      case 1:
        parts.headers.splice(index, 0, header);
        break;
      case 2:
        parts.headers[index] = `${name}: ${interestingText(rng)}`;
        break;
      case 3:
        parts.headers[index] = `${name}: ${hugeText(rng)}`;
        break;
      case 4: {
        // Content-Length wrong: too small, too large, negative, not a number, repeated.
        const wrong = rng.pick(["0", "1", "-1", "99999999999", "abc", "4294967296", " 10 ", "1e3", ""]);
        const at = parts.headers.findIndex((line) => /^(content-length|l)\s*:/i.test(line));
        const line = `Content-Length: ${rng.chance(0.5) ? String(Buffer.byteLength(parts.body) + rng.between(-20, 20)) : wrong}`;
        if (at < 0 || rng.chance(0.2)) parts.headers.push(line);
        else parts.headers[at] = line;
        break;
      }
      case 5:
        // Folded onto continuation lines (RFC 3261 7.3.1), sometimes on many.
        if (colon >= 0) {
          const folds = rng.chance(0.9) ? 1 : rng.between(2, 200);
          parts.headers[index] = `${name}:${`\r\n${rng.pick([" ", "\t", "  "])}`.repeat(folds)}${value}`;
        }
        break;
      case 6:
        parts.headers.push(rng.pick(EXTRA_HEADERS));
        break;
      case 7: {
        // The same header many times.
        const copies = rng.pick([2, 10, 100, 1000]);
        parts.headers.splice(index, 0, ...Array<string>(copies).fill(header));
        break;
      }
      case 8: {
        const words = parts.startLine.split(" ");
        const at = rng.below(words.length);
        words[at] = rng.chance(0.5)
          ? interestingText(rng)
          : rng.chance(0.5)
            ? hugeText(rng)
            : `${words[at]}${interestingText(rng)}`;
        parts.startLine = words.join(rng.chance(0.9) ? " " : rng.pick(["  ", "\t", ""]));
        break;
      }
      case 9:
        // A parameter added, doubled or broken.
        parts.headers[index] =
          `${header}${rng.pick([";", ";x", ";x=", ";=y", ";x=y;x=z", ";tag=", ";branch=z9hG4bK", ";received=", ";rport=99999", ";maddr=[::1", ";ttl=999", `;p=${hugeText(rng)}`])}`;
        break;
      case 10:
        lineEnd = rng.pick(["\n", "\r", "\r\r\n", "\n\r"]);
        break;
      case 11:
        parts.body = rng.chance(0.5) ? hugeText(rng) : `${parts.body}${interestingText(rng)}`;
        break;
      case 12: {
        const compact = COMPACT_FORMS[name.toLowerCase()];
        if (compact !== undefined) parts.headers[index] = `${compact}:${value}`;
        else parts.headers[index] = `${name.toUpperCase()} :${value}`;
        break;
      }
      case 13:
        // The header line without its colon, or with a name that is not a token.
        parts.headers[index] = rng.chance(0.5)
          ? header.replace(":", " ")
          : `${name}${rng.pick(["@", " x", "\u0000", "é"])}: ${value}`;
        break;
      case 14: {
        const other = rng.below(Math.max(1, parts.headers.length));
        const saved = parts.headers[index] ?? "";
        parts.headers[index] = parts.headers[other] ?? "";
        parts.headers[other] = saved;
        break;
      }
      case 15:
        // A value cut in the middle, or with a quote or angle bracket left open.
        parts.headers[index] = rng.chance(0.5)
          ? header.slice(0, rng.below(header.length + 1))
          : `${header}${rng.pick(['"', "<", ">", "(", "\\", "[", "%"])}`;
        break;
      case 16:
        // Blank lines or whitespace-only lines in the head.
        parts.headers.splice(index, 0, rng.pick(["", " ", "\t"]));
        break;
      case 17:
        // A different method in CSeq than in the request line, or an odd number.
        parts.headers.push(
          `CSeq: ${rng.pick(["0", "4294967295", "4294967296", "-1", "1 1", "1"])} ${rng.pick(["INVITE", "ACK", "BYE", "CANCEL", "OPTIONS", "FOO", ""])}`,
        );
        break;
      case 18:
        raw = mutateBytes(rng, Buffer.from(joinSip(parts, lineEnd), "latin1"));
        break;
      default:
        // Truncated somewhere.
        raw = Buffer.from(joinSip(parts, lineEnd), "latin1");
        raw = raw.subarray(0, rng.below(raw.length + 1));
    }
  }
  return raw ?? Buffer.from(joinSip(parts, lineEnd), "utf8");
}

/** Content-Length set to the body's real length, so that a mutated body is read as the body. */
export function withContentLength(message: string): string {
  const end = message.indexOf("\r\n\r\n");
  if (end < 0) return message;
  const body = message.slice(end + 4);
  return `${message.slice(0, end).replace(/\r\nContent-Length:[^\r]*/i, "")}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

const SDP_LINES = [
  "a=rtpmap:0 PCMU/8000",
  "a=rtpmap:8 PCMA/8000/2",
  "a=rtpmap:101 telephone-event/8000",
  "a=rtpmap:96 opus/48000/2",
  "a=rtpmap:101 telephone-event/0",
  "a=rtpmap:300 PCMU/8000",
  "a=rtpmap:0",
  "a=fmtp:101 0-16",
  "a=fmtp:101 0-999999999",
  "a=fmtp:101 16-0,,,",
  "a=ptime:0",
  "a=ptime:-20",
  "a=ptime:99999999",
  "a=maxptime:1",
  "a=sendonly",
  "a=recvonly",
  "a=inactive",
  "a=sendrecv",
  "a=rtcp:0",
  "a=rtcp:65536 IN IP4 1.2.3.4",
  "a=rtcp-mux",
  "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAAA",
  "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz|2^20|1:4",
  "a=crypto:x y z",
  "a=setup:actpass",
  "a=fingerprint:sha-256 00",
  "a=ice-ufrag:x",
  "a=candidate:1 1 UDP 1 127.0.0.1 1 typ host",
  "m=audio 0 RTP/AVP 0",
  "m=audio 9 RTP/SAVP 0 8 101",
  "m=video 5000 RTP/AVP 96",
  "m=audio 5000/2 RTP/AVP 0",
  "m=audio 70000 RTP/AVP 0",
  "m=audio -1 RTP/AVP 0",
  "m=audio 5000 UDP/TLS/RTP/SAVPF 111",
  "m=audio 5000 RTP/AVP",
  "m=image 5000 udptl t38",
  "c=IN IP4 0.0.0.0",
  "c=IN IP6 ::1",
  "c=IN IP4 224.2.1.1/127/3",
  "c=IN IP4 999.1.1.1",
  "c=IN IP4",
  "c=IN XX foo",
  "b=AS:0",
  "b=TIAS:99999999999",
  "t=0 0",
  "t=-1 x",
  "o=- 1 1 IN IP4 127.0.0.1",
  "o=",
  "v=1",
  "s=",
  "k=clear:x",
  "x",
  "=",
  "a=",
  "a=:",
];

/** Structure-aware damage to an SDP body: lines dropped, repeated, replaced, reordered, damaged. */
export function mutateSdp(rng: Random, sdp: string, rounds = 1 + rng.below(4)): string {
  let lines = sdp.split("\r\n").filter((line) => line !== "");
  for (let round = 0; round < rounds; round++) {
    const index = rng.below(Math.max(1, lines.length));
    const line = lines[index] ?? "";
    switch (rng.below(11)) {
      case 0:
        lines.splice(index, 1);
        break;
      case 1:
        lines.splice(index, 0, ...Array<string>(rng.chance(0.9) ? 1 : rng.pick([10, 100, 1000])).fill(line));
        break;
      case 2:
        lines.splice(index, 0, rng.pick(SDP_LINES));
        break;
      case 3:
        lines[index] = rng.pick(SDP_LINES);
        break;
      case 4: {
        // A field of the line replaced.
        const fields = line.split(" ");
        fields[rng.below(fields.length)] = rng.chance(0.7) ? interestingText(rng) : hugeText(rng);
        lines[index] = fields.join(" ");
        break;
      }
      case 5: {
        // A long payload type list, or many media sections.
        if (rng.chance(0.5)) {
          const types = Array.from({ length: rng.pick([20, 128, 1000]) }, () => String(rng.below(300)));
          lines.push(`m=audio ${rng.below(70_000)} RTP/AVP ${types.join(" ")}`);
        } else {
          for (let i = rng.pick([2, 10, 64]); i > 0; i--)
            lines.push(`m=audio ${rng.below(65_536)} RTP/AVP 0 8`);
        }
        break;
      }
      case 6: {
        const other = rng.below(Math.max(1, lines.length));
        [lines[index], lines[other]] = [lines[other] ?? "", line];
        break;
      }
      case 7:
        lines[index] = line.slice(0, rng.below(line.length + 1));
        break;
      case 8:
        lines = lines.map((l) =>
          l.startsWith("m=")
            ? l.replace(/ \d+ /, ` ${rng.pick(["0", "1", "65535", "65536", "99999999", "-5", "x"])} `)
            : l,
        );
        break;
      case 9:
        lines[index] = `${line}${interestingText(rng)}`;
        break;
      default:
        return mutateBytes(rng, Buffer.from(lines.join("\r\n"))).toString("latin1");
    }
  }
  return `${lines.join(rng.chance(0.95) ? "\r\n" : "\n")}\r\n`;
}

/** An XML document's elements as [name, attributes, text or children] for structure-aware edits. */
const XML_TYPES = [
  "integer",
  "boolean",
  "datetime",
  "array",
  "date",
  "float",
  "string",
  "yaml",
  "symbol",
  "",
];

/** Structure-aware damage to an XML body: elements, attributes, text and markup. */
export function mutateXml(rng: Random, xml: string, rounds = 1 + rng.below(3)): string {
  let text = xml;
  for (let round = 0; round < rounds; round++) {
    const elements = [...text.matchAll(/<([a-z][a-z0-9-]*)((?:\s+[a-z]+="[^"]*")*)>([^<]*)<\/\1>/g)];
    const element = elements.length === 0 ? undefined : rng.pick(elements);
    const replaceElement = (replacement: string) => {
      if (element === undefined || element.index === undefined) return;
      text = text.slice(0, element.index) + replacement + text.slice(element.index + element[0].length);
    };
    const name = element?.[1] ?? "x";
    const attributes = element?.[2] ?? "";
    switch (rng.below(16)) {
      case 0:
        replaceElement("");
        break;
      case 1:
        replaceElement((element?.[0] ?? "").repeat(rng.chance(0.8) ? 2 : rng.pick([50, 1000])));
        break;
      case 2:
        replaceElement(`<${name}${attributes}>${interestingText(rng)}</${name}>`);
        break;
      case 3:
        replaceElement(`<${name}${attributes}>${hugeText(rng)}</${name}>`);
        break;
      case 4:
        replaceElement(`<${name} type="${rng.pick(XML_TYPES)}">${element?.[3] ?? ""}</${name}>`);
        break;
      case 5:
        replaceElement(rng.chance(0.5) ? `<${name} nil="true"/>` : `<${name}/>`);
        break;
      case 6:
        replaceElement(
          `<${name}${attributes}>${rng.pick(["-1", "0", "2147483648", "99999999999999999999", "1.5", "1e3", "true", "false", "yes", "2026-02-30T25:61:00Z", "0000-00-00", "9999-12-31T23:59:59Z", "+1 (604) 555-0100", "911", "+19005551234", "x@", "<", "&amp;", "&#0;", "&#x110000;"])}</${name}>`,
        );
        break;
      case 7:
        // Nested deep, or an array of an unexpected element.
        replaceElement(
          rng.chance(0.5)
            ? `${"<a>".repeat(rng.pick([10, 100, 2000]))}${"</a>".repeat(rng.pick([10, 100, 2000]))}`
            : `<${name} type="array">${`<${name}>1</${name}>`.repeat(rng.pick([1, 10, 500]))}</${name}>`,
        );
        break;
      case 8:
        text = text.replace(
          /^(<\?xml[^>]*\?>)?/,
          (declaration) =>
            `${declaration}${rng.pick([
              '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>',
              '<!DOCTYPE x SYSTEM "file:///etc/passwd">',
              "<!-- c -->",
              "<?pi x?>",
              "<![CDATA[x]]>",
              "\ufeff",
            ])}`,
        );
        break;
      case 9:
        replaceElement(`<${name}${attributes}><![CDATA[${interestingText(rng)}]]></${name}>`);
        break;
      case 10:
        // An unknown element, or one of another resource.
        text = text.replace(
          /<\/([a-z-]+)>\s*$/,
          `${rng.pick(["<unknown>1</unknown>", '<id type="integer">1</id>', "<user-id>2</user-id>", "<state>ended</state>", "<state>started</state>", '<lock-version type="integer">-1</lock-version>', "<password>x</password>", '<moderator type="boolean">true</moderator>'])}</$1>`,
        );
        break;
      case 11:
        // The root renamed or a second root.
        text = rng.chance(0.5) ? text.replace(/<([a-z-]+)/, "<$1x") : `${text}<other/>`;
        break;
      case 12:
        replaceElement(
          `<${name}${attributes} ${rng.pick(["type=", 'x="', 'nil="false"', 'a="1" a="2"', `x="${hugeText(rng)}"`])}>${element?.[3] ?? ""}</${name}>`,
        );
        break;
      case 13:
        text = text.slice(0, rng.below(text.length + 1));
        break;
      case 14:
        text = text.replace(
          /encoding="UTF-8"/,
          `encoding="${rng.pick(["UTF-16", "latin1", "x", "EBCDIC"])}"`,
        );
        break;
      default:
        text = mutateBytes(rng, Buffer.from(text)).toString("utf8");
    }
  }
  return text;
}

/** Values of every JSON type, and of the kinds that break parsers and type checks. */
function jsonValue(rng: Random): unknown {
  return rng.pick<() => unknown>([
    () => null,
    () => true,
    () => 0,
    () => -1,
    () => 1e308,
    () => 2 ** 53 + 2,
    () => interestingText(rng),
    () => hugeText(rng),
    () => [],
    () => ({}),
    () => [interestingText(rng)],
    () => ({ toString: "x", valueOf: 1 }),
    () => Array.from({ length: rng.pick([100, 10_000, 100_000]) }, (_, i) => i),
  ])();
}

/** JSON text nested `depth` deep, in arrays or objects. */
function nested(rng: Random, depth: number): string {
  return rng.chance(0.5)
    ? `${"[".repeat(depth)}${"]".repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

/**
 * Structure-aware damage to a JSON object body: members retyped, dropped, added (__proto__,
 * constructor, prototype), duplicated as text (JSON.parse keeps the last), nested deep, made huge;
 * then sometimes the text itself damaged (truncated, invalid UTF-8, other roots, bytes).
 */
export function mutateJson(rng: Random, body: Record<string, unknown>, rounds = 1 + rng.below(3)): Buffer {
  const value: Record<string, unknown> = { ...body };
  for (let round = 0; round < rounds; round++) {
    const keys = Object.keys(value);
    const key = keys.length === 0 ? "email" : rng.pick(keys);
    switch (rng.below(4)) {
      case 0:
        value[key] = jsonValue(rng);
        break;
      case 1:
        delete value[key];
        break;
      case 2:
        value[rng.pick(["x", "", "email ", "EMAIL", "password\u0000", "csrfToken", "userId", "id"])] =
          jsonValue(rng);
        break;
      default:
        value[key] =
          `${typeof value[key] === "string" ? value[key] : JSON.stringify(value[key])}${interestingText(rng)}`;
    }
  }
  let text = JSON.stringify(value);
  const textRounds = rng.chance(0.6) ? 1 : 0;
  for (let round = 0; round < textRounds; round++) {
    switch (rng.below(10)) {
      case 0:
        // __proto__, constructor, prototype as members (JSON.parse makes them own properties).
        text = text.replace(
          /^\{/,
          `{${rng.pick(['"__proto__":{"email":"x","password":"y"}', '"constructor":{"prototype":{"email":"x"}}', '"__proto__":null', '"prototype":1', '"__proto__":[]'])},`,
        );
        break;
      case 1: {
        // A member twice, as text.
        const key = rng.pick(["email", "password"]);
        text = text.replace(/\}$/, `,"${key}":${JSON.stringify(jsonValue(rng))}}`);
        break;
      }
      case 2:
        text = text.replace(/\}$/, `,"deep":${nested(rng, rng.pick([100, 10_000, 500_000]))}}`);
        break;
      case 3:
        text = rng.pick([
          nested(rng, rng.pick([10, 10_000])),
          "null",
          "1",
          '"x"',
          "[]",
          "true",
          "",
          " ",
          "{}",
          "[{}]",
          "\ufeff{}",
          "{,}",
          "{'email':'x'}",
          "NaN",
        ]);
        break;
      case 4:
        text = text.slice(0, rng.below(text.length + 1));
        break;
      case 5:
        text = text.replace(
          /"([^"]*)"/,
          `"$1${rng.pick(["\\u0000", "\\ud800", "\\udfff\\ud800", "\\u", "\\x41", "\\", "\n", "\u2028"])}"`,
        );
        break;
      default: {
        // Invalid UTF-8 inside a string, or damaged bytes anywhere.
        const bytes = Buffer.from(text);
        if (rng.chance(0.5)) {
          const quote = bytes.indexOf(0x22, 1) < 0 ? 1 : bytes.indexOf(0x22, 1);
          return Buffer.concat([
            bytes.subarray(0, quote),
            Buffer.from(
              rng.pick([
                [0xc3, 0x28],
                [0xff, 0xfe],
                [0xc0, 0xaf],
                [0xed, 0xa0, 0x80],
                [0x80],
                [0xf4, 0x90, 0x80, 0x80],
              ]),
            ),
            bytes.subarray(quote),
          ]);
        }
        return mutateBytes(rng, bytes);
      }
    }
  }
  return Buffer.from(text);
}
