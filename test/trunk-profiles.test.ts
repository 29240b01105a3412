import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { ConfigError, loadConfig } from "../src/config.js";
import { parseTrunkProfiles, TrunkProfileError } from "../src/trunk-profiles.js";

const FULL = `# two carriers and a registration account
trunks:
  carrier-a:
    uri: sip:sip.carrier-a.example;transport=tcp
    outbound-proxy: sip:edge.example.net:5062
    username: acct-a
    password: "se:cret#1"
    number-format: e164
    tech-prefix: "0011#"
    caller-id: (604) 555-0100
    caller-name: Example Calls
    asserted-identity: true
    privacy: id
    headers:
      X-Account-Code: 00042
      X-Billing: conference
    codecs: [pcma, PCMU]
    dtmf: info
    srtp: off
    options:
      interval: 10
      timeout: 2.5
      up-after: 2
      down-after: 3
  carrier-b:
    uri: sip:198.51.100.7;srtp=required
    number-format: national
  pbx:
    uri: sip:pbx.example.org
    username: "6045550150"
    password: pw
    register: sip:registrar.example.org
    register-expires: 600
default: carrier-a
routes:
  "+1604": carrier-b
  "+1604555": pbx
`;

describe("trunk profile file", () => {
  it("reads every setting, keeping digits and signs as written", () => {
    const plan = parseTrunkProfiles(FULL);
    assert.deepEqual(plan.trunk, {
      uri: "sip:sip.carrier-a.example;transport=tcp",
      outboundProxy: "sip:edge.example.net:5062",
      credentials: { username: "acct-a", password: "se:cret#1" },
      registration: null,
      numberFormat: "E164",
      techPrefix: "0011#",
      callerId: "+16045550100",
      callerName: "Example Calls",
      assertedIdentity: true,
      privacy: "id",
      headers: [
        ["X-Account-Code", "00042"],
        ["X-Billing", "conference"],
      ],
      codecs: ["PCMA", "PCMU"],
      dtmf: "info",
      srtp: "off",
      mutualTls: false,
      probe: { intervalMs: 10_000, timeoutMs: 2500, upAfter: 2, downAfter: 3 },
    });
    // Longest prefix first; a URI's ;srtp= is the trunk's SRTP when no srtp: says otherwise.
    assert.deepEqual(
      plan.routes.map((route) => [route.prefix, route.trunk.uri, route.trunk.srtp, route.trunk.numberFormat]),
      [
        ["+1604555", "sip:pbx.example.org", undefined, undefined],
        ["+1604", "sip:198.51.100.7;srtp=required", "required", "national"],
      ],
    );
    assert.deepEqual(plan.routes[0]?.trunk.registration, {
      registrar: "sip:registrar.example.org",
      expires: 600,
    });
    assert.deepEqual(plan.routes[0]?.trunk.credentials, { username: "6045550150", password: "pw" });
  });

  it("reads the carrier settings: From domain, user=phone, the P-Asserted-Identity form, session timer, 100rel, the registered Contact user", () => {
    const read = (settings: string) =>
      parseTrunkProfiles(
        `trunks:\n  a:\n    uri: sip:a.example\n    username: u\n    password: p\n    register: true\n${settings}`,
      ).trunk;
    const trunk = read(
      '    from-domain: calls.example.com\n    user-phone: true\n    asserted-identity: tel\n    session-timer: "600"\n    100rel: Required\n    register-contact-user: "+16045550150"\n',
    );
    assert.equal(trunk?.fromDomain, "calls.example.com");
    assert.equal(trunk?.userPhone, true);
    assert.equal(trunk?.assertedIdentity, true);
    assert.equal(trunk?.assertedIdentityForm, "tel");
    assert.equal(trunk?.sessionTimer, 600);
    assert.equal(trunk?.reliableProvisional, "required");
    assert.equal(trunk?.registration?.contactUser, "+16045550150");
    const plain = read("    asserted-identity: e164\n    session-timer: off\n");
    assert.equal(plain?.assertedIdentityForm, "e164");
    assert.equal(plain?.sessionTimer, "off");
    assert.equal(plain?.userPhone, undefined);
    assert.equal(read("    asserted-identity: sip\n")?.assertedIdentityForm, undefined);
  });

  it("follow-redirects: true follows a trunk's 3xx; off by default", () => {
    const read = (settings: string) =>
      parseTrunkProfiles(`trunks:\n  a:\n    uri: sip:a.example\n${settings}`).trunk;
    assert.equal(read("    follow-redirects: true\n")?.followRedirects, true);
    assert.equal(read("    follow-redirects: false\n")?.followRedirects, undefined);
    assert.equal(read("")?.followRedirects, undefined);
  });

  it("reads a trunk's limits: calls-per-second (fractions allowed) and max-channels; none set, none", () => {
    const read = (settings: string) =>
      parseTrunkProfiles(`trunks:\n  a:\n    uri: sip:a.example\n${settings}`).trunk;
    const limited = read("    calls-per-second: 0.5\n    max-channels: 30\n");
    assert.equal(limited?.callsPerSecond, 0.5);
    assert.equal(limited?.maxChannels, 30);
    assert.equal(read('    calls-per-second: "10"\n')?.callsPerSecond, 10);
    const open = read("");
    assert.equal(open !== null && "callsPerSecond" in open, false);
    assert.equal(open !== null && "maxChannels" in open, false);
  });

  it("takes a lone trunk as the default, and register: true registers with the trunk itself for an hour", () => {
    const plan = parseTrunkProfiles(
      "trunks:\n  only:\n    uri: sip:a.example\n    username: u\n    password: p\n    register: true\n",
    );
    assert.equal(plan.trunk?.uri, "sip:a.example");
    assert.deepEqual(plan.trunk?.registration, { expires: 3600 });
    assert.deepEqual(plan.routes, []);
  });

  it("mutual-tls: true on a TLS trunk asks its certificate; on any other trunk it is a mistake", () => {
    const plan = parseTrunkProfiles("trunks:\n  a:\n    uri: sips:a.example\n    mutual-tls: true\n");
    assert.equal(plan.trunk?.mutualTls, true);
    assert.throws(
      () => parseTrunkProfiles("trunks:\n  a:\n    uri: sip:a.example;transport=tcp\n    mutual-tls: true\n"),
      (error) =>
        error instanceof TrunkProfileError &&
        error.line === 4 &&
        /mutual-tls needs a TLS trunk/.test(error.message),
    );
  });

  it("names G.722 and Opus in any case, in the profile's order", () => {
    const plan = parseTrunkProfiles(
      "trunks:\n  a:\n    uri: sip:a.example\n    codecs: [OPUS, g722, Pcmu, pcma]\n",
    );
    assert.deepEqual(plan.trunk?.codecs, ["opus", "G722", "PCMU", "PCMA"]);
    const g722First = parseTrunkProfiles("trunks:\n  a:\n    uri: sip:a.example\n    codecs: [G722, PCMU]\n");
    assert.deepEqual(g722First.trunk?.codecs, ["G722", "PCMU"]);
  });

  const mistakes: [string, string, number, RegExp][] = [
    [
      "bad YAML",
      "trunks:\n  a:\n    uri: sip:a.example\n\tdtmf: info\n",
      4,
      /^line 4: Tabs are not allowed as indentation$/,
    ],
    ["no trunks", "default: a\n", 1, /trunks: is missing/],
    [
      "unknown top-level key",
      "trunks:\n  a:\n    uri: sip:a.example\nroute:\n  '+1': a\n",
      4,
      /unknown setting "route"/,
    ],
    [
      "unknown trunk key",
      "trunks:\n  a:\n    uri: sip:a.example\n    number_format: E164\n",
      4,
      /unknown setting "number_format".*number-format/,
    ],
    ["no uri", "trunks:\n  a:\n    dtmf: info\n", 3, /trunk a: uri: is missing/],
    ["not a SIP URI", "trunks:\n  a:\n    uri: 127.0.0.1:5070\n", 3, /trunk a: uri must be a SIP URI/],
    ["bad ;srtp=", "trunks:\n  a:\n    uri: sip:a.example;srtp=yes\n", 3, /;srtp= must be/],
    [
      "number format",
      "trunks:\n  a:\n    uri: sip:a.example\n    number-format: e.164\n",
      4,
      /number-format must be one of \+E164, E164, 11-digit, national, got "e\.164"/,
    ],
    [
      "password alone",
      "trunks:\n  a:\n    uri: sip:a.example\n    password: p\n",
      4,
      /username and password must be given together/,
    ],
    [
      "register without credentials",
      "trunks:\n  a:\n    uri: sip:a.example\n    register: true\n",
      4,
      /register needs username and password/,
    ],
    [
      "register to a non-URI",
      "trunks:\n  a:\n    uri: sip:a.example\n    username: u\n    password: p\n    register: yes\n",
      6,
      /register must be true, false or a registrar's SIP URI/,
    ],
    [
      "expires without register",
      "trunks:\n  a:\n    uri: sip:a.example\n    register-expires: 60\n",
      4,
      /register-expires is set but register is not/,
    ],
    [
      "expires not a number",
      "trunks:\n  a:\n    uri: sip:a.example\n    username: u\n    password: p\n    register: true\n    register-expires: 1h\n",
      7,
      /register-expires must be a whole number/,
    ],
    [
      "tech prefix with a space",
      "trunks:\n  a:\n    uri: sip:a.example\n    tech-prefix: 12 34\n",
      4,
      /tech-prefix must be digits/,
    ],
    [
      "caller ID a SIP URI",
      "trunks:\n  a:\n    uri: sip:a.example\n    caller-id: sip:me@x\n",
      4,
      /caller-id must be a number/,
    ],
    [
      "a header the stack writes",
      "trunks:\n  a:\n    uri: sip:a.example\n    headers:\n      X-Ok: 1\n      Call-ID: mine\n",
      6,
      /Call-ID is written by Bridgeline itself/,
    ],
    [
      "a header name with a space",
      "trunks:\n  a:\n    uri: sip:a.example\n    headers:\n      X Bad: 1\n",
      5,
      /"X Bad" is not a header name/,
    ],
    [
      "headers as a list",
      "trunks:\n  a:\n    uri: sip:a.example\n    headers: [X-A]\n",
      4,
      /headers must map header names to values/,
    ],
    [
      "an unknown codec",
      "trunks:\n  a:\n    uri: sip:a.example\n    codecs:\n      - PCMU\n      - G729\n",
      6,
      /codecs: "G729" is not one of opus, G722, PCMU, PCMA$/,
    ],
    [
      "G.722 spelt with a dot",
      "trunks:\n  a:\n    uri: sip:a.example\n    codecs: [G.722]\n",
      4,
      /codecs: "G\.722" is not one of opus, G722, PCMU, PCMA$/,
    ],
    [
      "Opus twice, in two cases",
      "trunks:\n  a:\n    uri: sip:a.example\n    codecs: [opus, PCMU, Opus]\n",
      4,
      /codecs names a codec twice/,
    ],
    [
      "a codec twice",
      "trunks:\n  a:\n    uri: sip:a.example\n    codecs: [PCMU, pcmu]\n",
      4,
      /codecs names a codec twice/,
    ],
    [
      "dtmf method",
      "trunks:\n  a:\n    uri: sip:a.example\n    dtmf: 2833\n",
      4,
      /dtmf must be one of rfc4733, info, inband/,
    ],
    [
      "asserted identity",
      "trunks:\n  a:\n    uri: sip:a.example\n    asserted-identity: yes\n",
      4,
      /asserted-identity must be one of true, false/,
    ],
    ["a key given twice", "trunks:\n  a:\n    uri: sip:a.example\n    uri: sip:b.example\n", 4, /unique/i],
    [
      "default names no trunk",
      "trunks:\n  a:\n    uri: sip:a.example\ndefault: b\n",
      4,
      /default: names no trunk: "b" \(trunks: a\)/,
    ],
    [
      "route names no trunk",
      'trunks:\n  a:\n    uri: sip:a.example\nroutes:\n  "+1604": c\n',
      5,
      /route \+1604 names no trunk/,
    ],
    [
      "route prefix not digits",
      "trunks:\n  a:\n    uri: sip:a.example\nroutes:\n  vancouver: a\n",
      5,
      /prefix must be digits/,
    ],
    [
      "a probe timeout longer than its interval",
      "trunks:\n  a:\n    uri: sip:a.example\n    options:\n      interval: 1\n      timeout: 2\n",
      6,
      /trunk a: options: timeout must be at most the interval \(1 s\), got 2/,
    ],
    [
      "a probe interval that is not a number",
      "trunks:\n  a:\n    uri: sip:a.example\n    options:\n      interval: fast\n",
      5,
      /options: interval must be a number of seconds/,
    ],
    [
      "up-after 0",
      "trunks:\n  a:\n    uri: sip:a.example\n    options:\n      up-after: 0\n",
      5,
      /options: up-after must be a whole number of at least 1, got "0"/,
    ],
    [
      "an unknown probe setting",
      "trunks:\n  a:\n    uri: sip:a.example\n    options:\n      retries: 3\n",
      5,
      /unknown setting "retries" \(known: interval, timeout, up-after, down-after\)/,
    ],
    [
      "options that are not a map",
      "trunks:\n  a:\n    uri: sip:a.example\n    options: 30\n",
      4,
      /trunk a: options must map interval/,
    ],
    [
      "a session timer under RFC 4028's 90 s",
      "trunks:\n  a:\n    uri: sip:a.example\n    session-timer: 60\n",
      4,
      /trunk a: session-timer must be whole seconds, at least 90 \(RFC 4028\), or off, got "60"/,
    ],
    [
      "a follow-redirects that is not true or false",
      "trunks:\n  a:\n    uri: sip:a.example\n    follow-redirects: yes\n",
      4,
      /trunk a: follow-redirects must be one of true, false, got "yes"/,
    ],
    [
      "an unknown 100rel choice",
      "trunks:\n  a:\n    uri: sip:a.example\n    100rel: always\n",
      4,
      /trunk a: 100rel must be one of supported, required, off, got "always"/,
    ],
    [
      "a From domain that is not a host name",
      "trunks:\n  a:\n    uri: sip:a.example\n    from-domain: carrier example\n",
      4,
      /trunk a: from-domain must be a host name/,
    ],
    [
      "an unknown asserted-identity form",
      "trunks:\n  a:\n    uri: sip:a.example\n    asserted-identity: pai\n",
      4,
      /asserted-identity must be one of true, false, sip, e164, tel/,
    ],
    [
      "a contact user without registering",
      'trunks:\n  a:\n    uri: sip:a.example\n    register-contact-user: "6045550150"\n',
      4,
      /register-contact-user is set but register is not/,
    ],
    [
      "a contact user that cannot be a URI user",
      "trunks:\n  a:\n    uri: sip:a.example\n    username: u\n    password: p\n    register: true\n    register-contact-user: a b\n",
      7,
      /register-contact-user must be a SIP URI user/,
    ],
    [
      "a rate of 0 calls a second",
      "trunks:\n  a:\n    uri: sip:a.example\n    calls-per-second: 0\n",
      4,
      /trunk a: calls-per-second must be a number of at least 0.001 such as 10 or 0.5, got "0"/,
    ],
    [
      "a rate that is not a number",
      "trunks:\n  a:\n    uri: sip:a.example\n    max-channels: 4\n    calls-per-second: ten\n",
      5,
      /trunk a: calls-per-second must be a number/,
    ],
    [
      "0 channels",
      "trunks:\n  a:\n    uri: sip:a.example\n    max-channels: 0\n",
      4,
      /trunk a: max-channels must be a whole number of at least 1, got "0"/,
    ],
    [
      "a fraction of a channel",
      "trunks:\n  a:\n    uri: sip:a.example\n    max-channels: 2.5\n",
      4,
      /trunk a: max-channels must be a whole number of at least 1, got "2.5"/,
    ],
    [
      "several trunks, nothing says which",
      "trunks:\n  a:\n    uri: sip:a.example\n  b:\n    uri: sip:b.example\n",
      1,
      /default: or routes:/,
    ],
  ];
  for (const [name, text, line, message] of mistakes) {
    it(`refuses ${name}, naming line ${line}`, () => {
      assert.throws(
        () => parseTrunkProfiles(text),
        (error: unknown) =>
          error instanceof TrunkProfileError &&
          error.line === line &&
          message.test(error.message) &&
          error.message.startsWith(`line ${line}: `),
      );
    });
  }
});

describe("BRIDGELINE_SIP_TRUNKS_FILE", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "trunks-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, "trunks.yaml");
  writeFileSync(file, FULL);

  it("gives the default trunk and the routes", () => {
    const config = loadConfig({ BRIDGELINE_SIP_TRUNKS_FILE: file });
    assert.equal(typeof config.sip.trunk === "object" && config.sip.trunk?.techPrefix, "0011#");
    assert.deepEqual(typeof config.sip.trunk === "object" && config.sip.trunk?.probe, {
      intervalMs: 10_000,
      timeoutMs: 2500,
      upAfter: 2,
      downAfter: 3,
    });
    assert.deepEqual(
      config.sip.routes.map((route) => route.prefix),
      ["+1604555", "+1604"],
    );
  });

  it("names the file and the line of a mistake", () => {
    const bad = path.join(dir, "bad.yaml");
    writeFileSync(bad, "trunks:\n  a:\n    uri: sip:a.example\n    dtmf: tones\n");
    assert.throws(
      () => loadConfig({ BRIDGELINE_SIP_TRUNKS_FILE: bad }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          `BRIDGELINE_SIP_TRUNKS_FILE: ${bad} line 4: trunk a: dtmf must be one of rfc4733, info, inband, got "tones"`,
    );
  });

  it("refuses a file that cannot be read", () => {
    assert.throws(
      () => loadConfig({ BRIDGELINE_SIP_TRUNKS_FILE: path.join(dir, "missing.yaml") }),
      /BRIDGELINE_SIP_TRUNKS_FILE: cannot read .*missing\.yaml: ENOENT/,
    );
  });

  it("refuses trunk variables beside it, naming them", () => {
    assert.throws(
      () =>
        loadConfig({
          BRIDGELINE_SIP_TRUNKS_FILE: file,
          BRIDGELINE_SIP_TRUNK: "sip:x.example",
          BRIDGELINE_SIP_ROUTES: "+1=sip:y",
        }),
      /BRIDGELINE_SIP_TRUNKS_FILE: the profile file replaces BRIDGELINE_SIP_TRUNK, BRIDGELINE_SIP_ROUTES: unset them/,
    );
  });
});
