import assert from "node:assert/strict";
import { scryptSync, timingSafeEqual, X509Certificate } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import tls from "node:tls";
import Database from "better-sqlite3";
import { PASSWORD_COST } from "../../src/api/passwords.js";
import { signupXml, startTestService, type TestResponse, type TestService } from "../helpers/service.js";
import type { Auth } from "../helpers/xml.js";

/** Every row of every table, by table name. */
type StoreRows = Record<string, Record<string, unknown>[]>;

const PASSWORD = "first secret pass";
const NEW_PASSWORD = "second secret pass";
const WRONG_PASSWORD = "guessed secret pass";
const CARD_NUMBER = "4111111111111111";
const NEW_CARD_NUMBER = "5555555555554444";
const INVALID_CARD_NUMBER = "4111111111111112";
const SECURITY_CODE = "737";
const CARD_YEAR = new Date().getUTCFullYear() + 2;

/** Elements that must never be written: password, confirmation, card number and code, package. */
const WRITE_ONLY_ELEMENT = /<(password|password-confirmation|number|security-code|billing-package)[\s/>]/;

const cardXml = (number: string, securityCode: string) => `<credit-card>
  <name>Card Holder</name>
  <number>${number}</number>
  <security-code>${securityCode}</security-code>
  <expiry-month type="integer">11</expiry-month>
  <expiry-year type="integer">${CARD_YEAR}</expiry-year>
</credit-card>`;

const signupBody = (email: string, card = cardXml(CARD_NUMBER, SECURITY_CODE)) =>
  signupXml(email, PASSWORD, card);

const basic = ([email, password]: Auth) => Buffer.from(`${email}:${password}`).toString("base64");

function assertNoSecrets(response: TestResponse, label: string): void {
  assert.doesNotMatch(response.text, WRITE_ONLY_ELEMENT, label);
  for (const secret of [PASSWORD, NEW_PASSWORD, CARD_NUMBER, NEW_CARD_NUMBER, INVALID_CARD_NUMBER]) {
    assert.ok(!response.text.includes(secret), `${label} leaks ${secret}`);
  }
}

/** Opens a TLS connection limited to the given protocol versions; the protocol, or the error code. */
function handshake(port: number, minVersion: tls.SecureVersion, maxVersion: tls.SecureVersion) {
  return new Promise<{ protocol?: string | null; error?: string; socket?: tls.TLSSocket }>((resolve) => {
    const socket = tls.connect({
      host: "127.0.0.1",
      port,
      rejectUnauthorized: false,
      minVersion,
      maxVersion,
      // Lets this client offer TLS 1.0/1.1 at all, so a refusal can only come from the server.
      ciphers: "DEFAULT@SECLEVEL=0",
    });
    socket.once("secureConnect", () => resolve({ protocol: socket.getProtocol(), socket }));
    socket.once("error", (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
  });
}

/** Reads the whole SQLite store of a service with a connection of the test's own. */
function readStore(dataDir: string): StoreRows {
  const rows: StoreRows = {};
  const db = new Database(path.join(dataDir, "bridgeline.sqlite3"), { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all() as { name: string }[];
    for (const { name } of tables)
      rows[name] = db.prepare(`SELECT * FROM "${name}"`).all() as StoreRows[string];
  } finally {
    db.close();
  }
  return rows;
}

async function servedCertificateFingerprint(port: number): Promise<string> {
  const { socket, error } = await handshake(port, "TLSv1.2", "TLSv1.3");
  assert.ok(socket, error);
  const fingerprint = socket.getPeerCertificate().fingerprint256;
  socket.destroy();
  return fingerprint;
}

describe("security", () => {
  let api: TestService;
  let userId: number;
  /** Every response to a request that carried a secret. */
  const responses: Array<[string, TestResponse]> = [];
  const email = `secret-keeper-${process.pid}@example.com`;

  before(async () => {
    // The most verbose level: even then nothing secret may reach the log. Passwords hashed at the
    // cost a deployment uses, which a test below checks.
    api = await startTestService({ logLevel: "trace" }, { passwordCost: PASSWORD_COST });
    const signup = await api.request("POST", "/users", { body: signupBody(email) });
    assert.equal(signup.status, 201, signup.text);
    userId = Number(String(signup.headers.location).split("/").pop());
    responses.push(["sign-up", signup]);
    const auth: Auth = [email, PASSWORD];
    responses.push(["show", await api.request("GET", `/users/${userId}`, { auth })]);
    responses.push(["current", await api.request("GET", "/current", { auth })]);
    responses.push(["failed login", await api.request("GET", "/current", { auth: [email, WRONG_PASSWORD] })]);
    responses.push([
      "refused card",
      await api.request("PUT", `/users/${userId}`, {
        auth,
        body: `<user>${cardXml(INVALID_CARD_NUMBER, "9999")}</user>`,
      }),
    ]);
    responses.push([
      "refused sign-up",
      await api.request("POST", "/users", {
        body: signupBody(email.toUpperCase(), cardXml(NEW_CARD_NUMBER, SECURITY_CODE)),
      }),
    ]);
    responses.push([
      "update",
      await api.request("PUT", `/users/${userId}`, {
        auth,
        body: `<user>
          <password>${NEW_PASSWORD}</password>
          <password-confirmation>${NEW_PASSWORD}</password-confirmation>
          <billing-package><id type="integer">3</id></billing-package>
          ${cardXml(NEW_CARD_NUMBER, SECURITY_CODE)}
        </user>`,
      }),
    ]);
    const newAuth: Auth = [email, NEW_PASSWORD];
    responses.push(["current after update", await api.request("GET", "/current", { auth: newAuth })]);
    responses.push([
      "show after update",
      await api.request("GET", `/users/${userId}.xml`, { auth: newAuth }),
    ]);
  });
  after(() => api.close());

  it("shows no write-only field in any response", () => {
    const statuses = Object.fromEntries(responses.map(([label, response]) => [label, response.status]));
    assert.deepEqual(statuses, {
      "sign-up": 201,
      show: 200,
      current: 200,
      "failed login": 401,
      "refused card": 422,
      "refused sign-up": 422,
      update: 200,
      "current after update": 200,
      "show after update": 200,
    });
    for (const [label, response] of responses) assertNoSecrets(response, label);
    const [, updated] = responses.find(([label]) => label === "update") as [string, TestResponse];
    assert.match(updated.text, /<last-four-digits>4444<\/last-four-digits>/);
  });

  describe("the store", () => {
    let stored: StoreRows;
    before(() => {
      stored = readStore(api.dataDir);
    });

    /** Every stored value with the column it is in. */
    const storedValues = () =>
      Object.entries(stored).flatMap(([table, rows]) =>
        rows.flatMap((row) => Object.entries(row).map(([column, value]) => ({ table, column, value }))),
      );

    it("keeps neither a card number nor a password in the SQLite files", () => {
      const files = ["bridgeline.sqlite3", "bridgeline.sqlite3-wal", "bridgeline.sqlite3-shm"]
        .map((name) => path.join(api.dataDir, name))
        .filter((file) => fs.existsSync(file));
      const bytes = Buffer.concat(files.map((file) => fs.readFileSync(file)));
      assert.ok(bytes.includes(email), "the search must see the stored user");
      for (const secret of [CARD_NUMBER, NEW_CARD_NUMBER, PASSWORD, NEW_PASSWORD]) {
        assert.ok(!bytes.includes(secret), `${secret} is in the database files`);
      }
    });

    it("keeps only brand and last four digits of the card, and no security code", () => {
      assert.deepEqual(
        stored.credit_cards?.map((card) => [card.brand, card.last_four]),
        [["mastercard", "4444"]],
      );
      for (const { table, column, value } of storedValues()) {
        assert.doesNotMatch(column, /security|cvv|cvc|card_number|^number$/i, `${table}.${column}`);
        const text = String(value);
        assert.notEqual(text, SECURITY_CODE, `${table}.${column} holds the security code`);
        for (const number of [CARD_NUMBER, NEW_CARD_NUMBER]) {
          assert.ok(!text.includes(number.slice(0, 12)), `${table}.${column} holds more than the last four`);
        }
      }
    });

    it("stores the password as an scrypt hash of the current password", () => {
      const user = stored.users?.find((row) => row.email === email);
      const hash = String(user?.password_hash);
      const match = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/]+=*)\$([A-Za-z0-9+/]+=*)$/.exec(hash);
      assert.ok(match, hash);
      const [, n, r, p, salt = "", key = ""] = match;
      assert.ok(Number(n) >= 2 ** 14, "a cost of at least 2^14");
      const expected = Buffer.from(key, "base64");
      const derive = (password: string) =>
        scryptSync(password, Buffer.from(salt, "base64"), expected.length, {
          N: Number(n),
          r: Number(r),
          p: Number(p),
          maxmem: 64 * 1024 * 1024,
        });
      assert.ok(timingSafeEqual(derive(NEW_PASSWORD), expected), "the hash is of the new password");
      assert.ok(!timingSafeEqual(derive(PASSWORD), expected));
      for (const { table, column, value } of storedValues()) {
        assert.ok(!String(value).includes("secret pass"), `${table}.${column} holds a password`);
      }
    });
  });

  it("logs neither passwords, nor credentials, nor card numbers", () => {
    const log = api.logs.join("\n");
    assert.ok(
      api.logs.some((line) => line.includes('"method":"PUT"') && line.includes(`/users/${userId}`)),
      "the requests that carried the secrets must have been logged",
    );
    const secrets = [
      PASSWORD,
      NEW_PASSWORD,
      WRONG_PASSWORD,
      CARD_NUMBER,
      NEW_CARD_NUMBER,
      INVALID_CARD_NUMBER,
      basic([email, PASSWORD]),
      basic([email, NEW_PASSWORD]),
      basic([email, WRONG_PASSWORD]),
    ];
    for (const secret of secrets) assert.ok(!log.includes(secret), `the log holds ${secret}`);
  });

  describe("XML entity attacks", () => {
    const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE user [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<user><name>&lol9;</name></user>`;
    const externalEntity = (address: string) => `<?xml version="1.0"?>
<!DOCTYPE user [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<user>
  <name>&xxe;</name>
  <email>${address}</email>
  <password>${PASSWORD}</password>
  <password-confirmation>${PASSWORD}</password-confirmation>
  <terms-of-service type="boolean">true</terms-of-service>
  <billing-package><id type="integer">1</id></billing-package>
</user>`;

    const assertRefusedAndAlive = async (response: TestResponse) => {
      assert.equal(response.status, 400, response.text);
      assert.match(response.text, /<errors>/);
      assert.doesNotMatch(response.text, /root:|lollol/);
      const next = await api.request("GET", "/billing-packages");
      assert.equal(next.status, 200, "the service must still answer");
    };

    it("refuses entity expansion (billion laughs) with 400", async () => {
      await assertRefusedAndAlive(await api.request("POST", "/users", { body: billionLaughs }));
      const put = await api.request("PUT", `/users/${userId}`, {
        auth: [email, NEW_PASSWORD],
        body: billionLaughs,
      });
      await assertRefusedAndAlive(put);
    });

    it("refuses an external entity (XXE) with 400 and stores nothing", async () => {
      const address = `xxe-${process.pid}@example.com`;
      await assertRefusedAndAlive(await api.request("POST", "/users", { body: externalEntity(address) }));
      const login = await api.request("GET", "/current", { auth: [address, PASSWORD] });
      assert.equal(login.status, 401, "the refused sign-up must not have created the user");
    });
  });

  describe("TLS", () => {
    for (const version of ["TLSv1.2", "TLSv1.3"] as const) {
      it(`speaks ${version}`, async () => {
        const { protocol, error, socket } = await handshake(api.service.httpsPort, version, version);
        socket?.destroy();
        assert.equal(protocol, version, error);
      });
    }

    for (const version of ["TLSv1", "TLSv1.1"] as const) {
      it(`refuses ${version}`, async () => {
        const { protocol, error, socket } = await handshake(api.service.httpsPort, version, version);
        socket?.destroy();
        assert.equal(protocol, undefined, `the server accepted ${protocol}`);
        // An alert from the server, not a local refusal to offer the protocol.
        assert.equal(error, "ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION");
      });
    }

    it("answers API requests over HTTPS", async () => {
      const response = await api.request("GET", "/current", { https: true, auth: [email, NEW_PASSWORD] });
      assert.equal(response.status, 200, response.text);
    });

    it("serves the self-signed certificate kept in the data directory, private key owner-only", async () => {
      const certFile = path.join(api.dataDir, "tls", "self-signed-cert.pem");
      const certificate = new X509Certificate(fs.readFileSync(certFile));
      assert.equal(await servedCertificateFingerprint(api.service.httpsPort), certificate.fingerprint256);
      const keyMode = fs.statSync(path.join(api.dataDir, "tls", "self-signed-key.pem")).mode & 0o777;
      assert.equal(keyMode, 0o600);
    });
  });
});

describe("self-signed certificate across restarts", () => {
  let dataDir: string;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-restart-"));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it("is generated on first start and reused on the next", async () => {
    const certFile = path.join(dataDir, "tls", "self-signed-cert.pem");
    assert.equal(fs.existsSync(certFile), false);

    const first = await startTestService({ dataDir });
    const firstPem = fs.readFileSync(certFile, "utf8");
    const firstServed = await servedCertificateFingerprint(first.service.httpsPort);
    await first.close();
    assert.ok(fs.existsSync(certFile), "closing the service keeps the data directory");

    const second = await startTestService({ dataDir });
    try {
      assert.equal(fs.readFileSync(certFile, "utf8"), firstPem);
      assert.equal(await servedCertificateFingerprint(second.service.httpsPort), firstServed);
      assert.equal(new X509Certificate(firstPem).fingerprint256, firstServed);
    } finally {
      await second.close();
    }
  });
});
