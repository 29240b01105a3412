import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  formatReason,
  listItemEnd,
  parseCSeq,
  parseIdentity,
  parseMediaType,
  parseMinSe,
  parseNameAddr,
  parseRAck,
  parseReason,
  parseRetryAfter,
  parseRSeq,
  parseSessionExpires,
  parseSipUri,
  parseVia,
  reasonCause,
  unescapeUriPart,
} from "../../../../src/telephony/sip/message/header-values.js";

/** The trimmed items of a list-valued field, cut where listItemEnd says. */
function splitHeaderList(value: string): string[] {
  const items: string[] = [];
  for (let start = 0; ; ) {
    const end = listItemEnd(value, start, value.length);
    items.push(value.slice(start, end).trim());
    if (end >= value.length) return items;
    start = end + 1;
  }
}

describe("listItemEnd", () => {
  it("splits at commas outside quoted strings and angle brackets", () => {
    assert.deepEqual(splitHeaderList(' "Doe, John" <sip:a@b;x=1,2>;q=0.5 , <sip:c@d> ,sip:e@f'), [
      '"Doe, John" <sip:a@b;x=1,2>;q=0.5',
      "<sip:c@d>",
      "sip:e@f",
    ]);
  });
  it("does not end a quoted string at an escaped quote", () => {
    assert.deepEqual(splitHeaderList('"a \\", b" <sip:x@y>, <sip:z@w>'), [
      '"a \\", b" <sip:x@y>',
      "<sip:z@w>",
    ]);
  });
  it("keeps empty items so that validators can refuse them", () => {
    assert.deepEqual(splitHeaderList("a,,b,"), ["a", "", "b", ""]);
  });
});

describe("parseNameAddr", () => {
  it("reads a quoted display name with escapes, the URI and the parameters", () => {
    const nameAddr = parseNameAddr('"J Rosenberg \\\\\\""  <sip:jdrosen@example.com> ; tag = 98asjd8;lr');
    assert.equal(nameAddr?.displayName, 'J Rosenberg \\"');
    assert.equal(nameAddr?.uri, "sip:jdrosen@example.com");
    assert.deepEqual(
      [...(nameAddr?.params ?? [])],
      [
        ["tag", "98asjd8"],
        ["lr", undefined],
      ],
    );
  });
  it("reads token display names, with or without LWS before <", () => {
    assert.equal(parseNameAddr("Alice Smith <sip:a@b>")?.displayName, "Alice Smith");
    assert.equal(parseNameAddr("caller<sip:caller@example.com>;tag=323")?.displayName, "caller");
  });
  it("treats parameters after an addr-spec as header parameters", () => {
    const nameAddr = parseNameAddr("sip:+19725552222@gw1.example.net;unknownparam");
    assert.equal(nameAddr?.uri, "sip:+19725552222@gw1.example.net");
    assert.ok(nameAddr?.params.has("unknownparam"));
    assert.equal(parseNameAddr("<sip:x@y;unknownparam>")?.params.size, 0);
  });
  it("reads the tag parameter, and a range of a longer text", () => {
    assert.equal(parseNameAddr("<sip:a@b>;TAG=x1;q=0.5")?.tag, "x1");
    assert.equal(parseNameAddr("<sip:a@b;tag=in-uri>")?.tag, undefined);
    assert.equal(parseNameAddr("<sip:a@b>;tag")?.tag, undefined);
    const text = "To: <sip:bob@example.com>;tag=t9\r\n";
    const nameAddr = parseNameAddr(text, 4, text.length - 2);
    assert.equal(nameAddr?.uri, "sip:bob@example.com");
    assert.equal(nameAddr?.tag, "t9");
  });
  it("keeps a repeated parameter in its first place with its last value, as a Map would", () => {
    const params = parseNameAddr("<sip:a@b>;x=1;Y;x=2")?.params;
    assert.deepEqual(
      [...(params ?? [])],
      [
        ["x", "2"],
        ["y", undefined],
      ],
    );
    assert.equal(params?.size, 2);
    assert.deepEqual(
      new Map(params),
      new Map<string, string | undefined>([
        ["x", "2"],
        ["y", undefined],
      ]),
    );
  });
  it("accepts any absolute URI and quoted parameter values", () => {
    assert.equal(parseNameAddr("<http://www.example.com>")?.uri, "http://www.example.com");
    assert.equal(parseNameAddr('<sip:a@b>;p="x;y"')?.params.get("p"), '"x;y"');
  });
  it("refuses the malformed forms of RFC 4475", () => {
    assert.equal(parseNameAddr('"Mr. J. User <sip:j.user@example.com>'), undefined); // unbalanced quote
    assert.equal(parseNameAddr('"Watson" < sip:t.watson@example.org >'), undefined); // LWS inside <>
    assert.equal(parseNameAddr("Bell, Alexander <sip:a.g.bell@example.com>"), undefined); // ',' in token name
    assert.equal(parseNameAddr("sip:user@example.com?Route=%3Csip:x%3E"), undefined); // '?' outside <>
    assert.equal(parseNameAddr('"Joe" <sip:joe@example.org>;;;;'), undefined); // empty parameters
    assert.equal(parseNameAddr("<sip:a@b"), undefined);
    assert.equal(parseNameAddr(""), undefined);
  });
});

describe("parseVia", () => {
  it("reads sent-protocol, sent-by and the well-known parameters", () => {
    const via = parseVia("SIP/2.0/udp 192.0.2.1:5062;branch=z9hG4bK776;received=192.0.2.9;rport=5070");
    assert.equal(via?.protocol, "SIP");
    assert.equal(via?.version, "2.0");
    assert.equal(via?.transport, "UDP");
    assert.equal(via?.host, "192.0.2.1");
    assert.equal(via?.port, 5062);
    assert.equal(via?.branch, "z9hG4bK776");
    assert.equal(via?.received, "192.0.2.9");
    assert.equal(via?.rport, 5070);
  });
  it("allows LWS around '/', ';' and '=' and an IPv6 sent-by", () => {
    const via = parseVia("SIP  /   2.0 / TCP     [2001:db8::1]:5060   ;  branch  =   z9hG4bK9ikj8 ; rport");
    assert.equal(via?.transport, "TCP");
    assert.equal(via?.host, "[2001:db8::1]");
    assert.equal(via?.port, 5060);
    assert.equal(via?.branch, "z9hG4bK9ikj8");
    assert.equal(via?.rport, true);
  });
  it("refuses malformed values", () => {
    assert.equal(parseVia("SIP/2.0/UDP 192.0.2.15;;"), undefined);
    assert.equal(parseVia("SIP/2.0 192.0.2.15"), undefined);
    assert.equal(parseVia("SIP/2.0/UDP host:99999"), undefined);
    assert.equal(parseVia("SIP/2.0/UDP"), undefined);
    assert.equal(parseVia("SIP/2.0/UDP host;rport=x"), undefined);
  });
});

describe("parseCSeq", () => {
  it("reads the number (leading zeros allowed) and the method", () => {
    assert.deepEqual(parseCSeq("0009 INVITE"), { seq: 9, method: "INVITE" });
    assert.deepEqual(parseCSeq("4294967295  ACK"), { seq: 4294967295, method: "ACK" });
  });
  it("allows white space around the value, Unicode white space included", () => {
    assert.deepEqual(parseCSeq(" 1 ACK\t"), { seq: 1, method: "ACK" });
    assert.deepEqual(parseCSeq("\u00a01 ACK\u00a0"), { seq: 1, method: "ACK" });
    assert.deepEqual(parseCSeq("CSeq: 7 BYE", 5), { seq: 7, method: "BYE" });
  });
  it("refuses a method that is not a token", () => {
    assert.equal(parseCSeq("1 INVIT\u00c9"), undefined);
    assert.equal(parseCSeq("1 IN VITE"), undefined);
  });
  it("refuses numbers above 2**32-1 and missing parts", () => {
    assert.equal(parseCSeq("36893488147419103232 REGISTER"), undefined);
    assert.equal(parseCSeq("4294967296 INVITE"), undefined);
    assert.equal(parseCSeq("INVITE"), undefined);
    assert.equal(parseCSeq("12"), undefined);
    assert.equal(parseCSeq("-1 INVITE"), undefined);
  });
});

describe("parseSipUri", () => {
  it("reads every component and resolves escapes", () => {
    const uri = parseSipUri(
      "sips:al%69ce:se%63ret@Example.COM:5061;transport=tls;%6C%72?subject=hi%20there&x=1",
    );
    assert.equal(uri?.scheme, "sips");
    assert.equal(uri?.user, "alice");
    assert.equal(uri?.password, "secret");
    assert.equal(uri?.host, "Example.COM");
    assert.equal(uri?.port, 5061);
    assert.deepEqual(
      [...(uri?.params ?? [])],
      [
        ["transport", "tls"],
        ["lr", undefined],
      ],
    );
    assert.deepEqual(
      [...(uri?.headers ?? [])],
      [
        ["subject", "hi there"],
        ["x", "1"],
      ],
    );
  });
  it("keeps ';' in the user part and NULs from %00", () => {
    assert.equal(parseSipUri("sip:user;par=u%40example.net@example.com")?.user, "user;par=u@example.net");
    assert.equal(parseSipUri("sip:%00%00@example.com")?.user, "\0\0");
    assert.equal(parseSipUri("sip:example.com")?.user, undefined);
  });
  it("reads IPv6 references and tel URIs", () => {
    const ipv6 = parseSipUri("sip:bob@[2001:db8::10]:5070;maddr=[2001:db8::1]");
    assert.equal(ipv6?.host, "[2001:db8::10]");
    assert.equal(ipv6?.port, 5070);
    assert.equal(ipv6?.params.get("maddr"), "[2001:db8::1]");
    const tel = parseSipUri("tel:+1-201-555-0123;phone-context=example.com");
    assert.equal(tel?.scheme, "tel");
    assert.equal(tel?.user, "+1-201-555-0123");
    assert.equal(tel?.params.get("phone-context"), "example.com");
  });
  it("refuses other schemes and malformed URIs", () => {
    assert.equal(parseSipUri("http://example.com"), undefined);
    assert.equal(parseSipUri("sipx"), undefined); // no scheme at all
    assert.equal(parseSipUri("sip:a@b;"), undefined); // an empty parameter
    assert.equal(parseSipUri("sip:a@b?"), undefined); // an empty header
    assert.equal(parseSipUri("sip:a@b?=x"), undefined);
    assert.equal(parseSipUri("sip:"), undefined);
    assert.equal(parseSipUri("sip:a b@example.com"), undefined);
    assert.equal(parseSipUri("sip:a%zz@example.com"), undefined);
    assert.equal(parseSipUri("sip:@example.com"), undefined);
    assert.equal(parseSipUri("sip:[::1"), undefined);
    assert.equal(parseSipUri("sip:host:port"), undefined);
  });
});

describe("unescapeUriPart", () => {
  it("decodes UTF-8 escapes and leaves plain text alone", () => {
    assert.equal(unescapeUriPart("caf%C3%A9"), "café");
    assert.equal(unescapeUriPart("plain"), "plain");
    assert.equal(unescapeUriPart("%"), undefined);
  });
});

describe("parseSessionExpires and parseMinSe (RFC 4028 sections 4 and 5)", () => {
  it("read the interval with and without a refresher, and Min-SE", () => {
    assert.deepEqual(parseSessionExpires("1800;refresher=uas"), { interval: 1800, refresher: "uas" });
    assert.deepEqual(parseSessionExpires(" 90 ; refresher = UAC ;x=1"), { interval: 90, refresher: "uac" });
    assert.deepEqual(parseSessionExpires("600"), { interval: 600, refresher: undefined });
    assert.deepEqual(parseSessionExpires("600;refresher=both"), { interval: 600, refresher: undefined });
    assert.equal(parseSessionExpires("soon"), undefined);
    assert.equal(parseSessionExpires("600;"), undefined);
    assert.equal(parseMinSe("90"), 90);
    assert.equal(parseMinSe("90;x"), 90);
    assert.equal(parseMinSe("x"), undefined);
  });
});

describe("parseRSeq and parseRAck (RFC 3262 section 7)", () => {
  it("read response-num from 1 to 2**32-1, and RAck's three parts", () => {
    assert.equal(parseRSeq(" 4294967295 "), 4294967295);
    assert.equal(parseRSeq("0"), undefined);
    assert.equal(parseRSeq("4294967296"), undefined);
    assert.equal(parseRSeq("1 2"), undefined);
    assert.deepEqual(parseRAck("1 314 INVITE"), { rseq: 1, cseq: 314, method: "INVITE" });
    assert.equal(parseRAck("1 INVITE"), undefined);
    assert.equal(parseRAck("1 2 3 4"), undefined);
  });
});

describe("parseMediaType (RFC 3261 section 20.15)", () => {
  it("reads type/subtype lower-cased, with parameters", () => {
    assert.equal(parseMediaType("application/sdp")?.mediaType, "application/sdp");
    assert.equal(parseMediaType("Application / DTMF-Relay ;x=1")?.mediaType, "application/dtmf-relay");
    assert.equal(parseMediaType("text/plain;charset=utf-8")?.params.get("charset"), "utf-8");
    assert.equal(parseMediaType("application"), undefined);
    assert.equal(parseMediaType("application/sdp;"), undefined);
  });
});

describe("parseReason, reasonCause and formatReason (RFC 3326 section 2)", () => {
  it("reads each value of a list: protocol, cause and unquoted text, white space around ';' allowed", () => {
    assert.deepEqual(parseReason('SIP ;cause=200 ;text="Call completed elsewhere", Q.850;cause=16'), [
      { protocol: "SIP", cause: 200, text: "Call completed elsewhere" },
      { protocol: "Q.850", cause: 16, text: undefined },
    ]);
    assert.deepEqual(parseReason("preemption ;cause=1 ;text=UA-preemption;extra"), [
      { protocol: "preemption", cause: 1, text: "UA-preemption" },
    ]);
    assert.deepEqual(parseReason("SIP"), [{ protocol: "SIP", cause: undefined, text: undefined }]);
  });

  it("resolves the text's quoted-pairs, and a comma inside it does not split the list", () => {
    assert.deepEqual(parseReason('Q.850;cause=17;text="Busy, \\"really\\" \\\\ here"'), [
      { protocol: "Q.850", cause: 17, text: 'Busy, "really" \\ here' },
    ]);
  });

  it("refuses malformed values, without throwing", () => {
    for (const bad of [
      "",
      ";cause=16",
      "Q.850;cause=sixteen",
      'Q.850;cause="16"',
      'Q.850;cause=16;text="unterminated',
      "Q.850 cause=16",
      "Q.850;cause=16,",
      "Q.850;;cause=16",
      "Q.850;cause=99999999999999999999",
    ])
      assert.equal(parseReason(bad), undefined, bad);
  });

  it("takes the Q.850 cause before the SIP one, whichever field or place it is in", () => {
    assert.deepEqual(reasonCause(['SIP;cause=486;text="Busy Here"', 'Q.850;cause=17;text="User busy"']), {
      protocol: "Q.850",
      cause: 17,
      text: "User busy",
    });
    assert.deepEqual(reasonCause(["SIP;cause=600, q.850;cause=21"]), {
      protocol: "Q.850",
      cause: 21,
      text: null,
    });
    assert.deepEqual(reasonCause(["sip;cause=480"]), { protocol: "SIP", cause: 480, text: null });
  });

  it("passes over malformed fields, other protocols, values without a cause and causes out of range", () => {
    assert.deepEqual(
      reasonCause([
        "Q.850;cause=x",
        "preemption;cause=1",
        'Q.850;text="no cause"',
        "Q.850;cause=0",
        "Q.850;cause=128",
        "SIP;cause=99",
        "SIP;cause=700",
        "SIP;cause=503",
      ]),
      { protocol: "SIP", cause: 503, text: null },
    );
    assert.equal(reasonCause([]), null);
    assert.equal(reasonCause(["garbage here", 'Q.850;cause=16;text="']), null);
  });

  it("writes what it reads back: the same cause, the text escaped, control characters as spaces", () => {
    for (const cause of [
      { protocol: "Q.850", cause: 16, text: "Normal call clearing" },
      { protocol: "SIP", cause: 408, text: "Session timeout" },
      { protocol: "Q.850", cause: 31, text: null },
      { protocol: "SIP", cause: 503, text: 'a "quoted", back\\slashed; text=odd' },
      { protocol: "Q.850", cause: 41, text: "über, ça va" },
    ] as const)
      assert.deepEqual(reasonCause([formatReason(cause)]), cause, formatReason(cause));
    assert.equal(
      formatReason({ protocol: "Q.850", cause: 16, text: "Normal call clearing" }),
      'Q.850;cause=16;text="Normal call clearing"',
    );
    const written = formatReason({ protocol: "SIP", cause: 480, text: "line\r\nbreak\u0000" });
    assert.equal(written, 'SIP;cause=480;text="line  break "');
    assert.deepEqual(reasonCause([written]), { protocol: "SIP", cause: 480, text: "line  break " });
  });
});

describe("parseRetryAfter (RFC 3261 section 20.33)", () => {
  it("reads the seconds, past a comment and parameters", () => {
    assert.equal(parseRetryAfter("1"), 1);
    assert.equal(parseRetryAfter(" 18000;duration=3600"), 18000);
    assert.equal(parseRetryAfter("120 (I'm in a meeting (really) \\) )"), 120);
    assert.equal(parseRetryAfter("120 (busy) ;duration=60"), 120);
  });
  it("refuses what is not delta-seconds", () => {
    for (const bad of ["", "soon", "-1", "1.5", "5 (unclosed", "5 ;", "Fri, 27 Nov 2026 22:00:00 GMT"])
      assert.equal(parseRetryAfter(bad), undefined, bad);
  });
});

describe("parseIdentity (RFC 8224 section 4.1)", () => {
  it("reads the JWS, the info URI without its brackets and the other parameters", () => {
    const parsed = parseIdentity(
      "eyJhbGciOiJFUzI1NiJ9.eyJhdHRlc3QiOiJBIn0.c2ln;info=<https://cert.example.org/passport.pem>;alg=ES256;ppt=shaken",
    );
    assert.equal(parsed?.token, "eyJhbGciOiJFUzI1NiJ9.eyJhdHRlc3QiOiJBIn0.c2ln");
    assert.equal(parsed?.info, "https://cert.example.org/passport.pem");
    assert.equal(parsed?.params.get("alg"), "ES256");
    assert.equal(parsed?.params.get("ppt"), "shaken");
  });

  it("takes the compact form, spaces around the separators, names in any case, no info", () => {
    const parsed = parseIdentity(' a..c ; INFO = <https://x.example/a;b=c> ; PPT="shaken"');
    assert.equal(parsed?.token, "a..c");
    assert.equal(parsed?.info, "https://x.example/a;b=c");
    assert.equal(parsed?.params.get("ppt"), '"shaken"');
    assert.equal(parseIdentity("a.b.c")?.info, undefined);
  });

  it("refuses what is not a JWS with parameters", () => {
    for (const bad of [
      "",
      ";info=<https://x>",
      "a.b.c;",
      "a.b.c;info=https://x",
      "a.b.c;info=<https://x",
      "a b",
      "a.b.c;info=<not a uri>",
      "a.b.c;=x",
    ])
      assert.equal(parseIdentity(bad), undefined, bad);
  });
});
