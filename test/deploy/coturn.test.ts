/**
 * The coturn example shipped in deploy/coturn, run by coturn itself on loopback (its ports, relay
 * range, secret and Bridgeline's address changed, nothing else), with the credentials Bridgeline
 * gives browsers (browserIceServers): a TURN client written from RFC 8656 allocates a relay with
 * them and sends through it to a socket standing in for Bridgeline's media and back; a wrong or
 * expired credential is refused 401, and the relay reaches no other address than Bridgeline's.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { browserIceServers } from "../../src/api/ice-servers.js";
import { waitFor } from "../helpers/raw-udp.js";
import { findBinary, freePorts } from "../helpers/sipp.js";
import { relayedAddress, type TransportAddress, TurnClient } from "../helpers/turn-client.js";
import { until } from "../helpers/until.js";

const EXAMPLE = fileURLToPath(new URL("../../deploy/coturn/turnserver.conf", import.meta.url));
/** The relay ports the loopback copy may use. */
const RELAY_PORTS = 16;

/**
 * The example with each `key=value` of `changes` in place of the example's own line for that key
 * (which must be there, once), and `added` lines after it: only what running on loopback needs.
 */
function changed(example: string, changes: Record<string, string>, added: string[]): string {
  let config = example;
  for (const [key, value] of Object.entries(changes)) {
    const line = new RegExp(`^${key}=.*$`, "gm");
    assert.equal(config.match(line)?.length, 1, `the example sets ${key} once`);
    config = config.replace(line, `${key}=${value}`);
  }
  return `${config}\n${added.join("\n")}\n`;
}

/** coturn's `turn:` URL as given to browsers: its host and port. */
function serverOf(url: string): TransportAddress {
  const match = /^turn:([\d.]+):(\d+)\?transport=udp$/.exec(url);
  assert.ok(match, `a turn: URL over UDP: ${url}`);
  return { address: match[1] as string, port: Number(match[2]) };
}

describe("deploy/coturn/turnserver.conf, run by coturn", () => {
  const secret = randomBytes(24).toString("hex");
  const dir = mkdtempSync(join(tmpdir(), "coturn-"));
  let turnserver: ChildProcess | undefined;
  let log = "";
  let listeningPort = 0;
  /** Stands in for Bridgeline's media socket: the one peer the example lets relays reach. */
  let bridgeline: dgram.Socket;
  const fromRelay: { data: Buffer; from: TransportAddress }[] = [];
  const clients: TurnClient[] = [];

  async function client(server: TransportAddress): Promise<TurnClient> {
    const opened = await TurnClient.open(server);
    clients.push(opened);
    return opened;
  }

  /** What Bridgeline would give a browser now: one ICE server, the URL and its credentials. */
  function iceServer(now = new Date(), sharedSecret = secret) {
    const [server] = browserIceServers(
      { urls: [`turn:127.0.0.1:${listeningPort}?transport=udp`], secret: sharedSecret, ttlSeconds: 3600 },
      now,
    );
    assert.ok(server?.username !== undefined && server.credential !== undefined, "credentials given");
    return {
      server: serverOf(server.urls[0] as string),
      username: server.username,
      credential: server.credential,
    };
  }

  before(async () => {
    const binary = findBinary("turnserver");
    // Not a skip: the test command installs coturn (scripts/test-full.sh), so missing it is a failure.
    assert.ok(binary, "turnserver is not installed: apt-get install coturn (scripts/test-full.sh does)");
    bridgeline = dgram.createSocket("udp4");
    bridgeline.on("message", (data, from) => fromRelay.push({ data, from }));
    await new Promise<void>((resolve) => bridgeline.bind(0, "127.0.0.1", resolve));
    listeningPort = await freePorts(1);
    const relayMin = await freePorts(RELAY_PORTS - 1);
    const config = changed(
      readFileSync(EXAMPLE, "utf8"),
      {
        "listening-port": String(listeningPort),
        "min-port": String(relayMin),
        "max-port": String(relayMin + RELAY_PORTS - 1),
        "static-auth-secret": secret,
        "allowed-peer-ip": "127.0.0.1",
      },
      [
        "listening-ip=127.0.0.1",
        "relay-ip=127.0.0.1",
        // Bridgeline stands on loopback here, which coturn refuses as a peer unless told.
        "allow-loopback-peers",
        `pidfile=${join(dir, "turnserver.pid")}`,
        `userdb=${join(dir, "turndb")}`,
      ],
    );
    writeFileSync(join(dir, "turnserver.conf"), config);
    const started = spawn(binary, ["-c", join(dir, "turnserver.conf")], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    turnserver = started;
    const collect = (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-100_000);
    };
    started.stdout.on("data", collect);
    started.stderr.on("data", collect);
    // Up once it answers an Allocate at all (a 401: these credentials are not its).
    const probe = await client({ address: "127.0.0.1", port: listeningPort });
    await until(
      "coturn to answer",
      async () => {
        if (started.exitCode !== null) throw new Error(`turnserver exited (${started.exitCode}):\n${log}`);
        return probe.allocate("0:probe", "wrong").catch(() => undefined);
      },
      { detail: () => log },
    );
  });

  after(async () => {
    for (const opened of clients) await opened.close();
    bridgeline?.close();
    const running = turnserver;
    if (running !== undefined && running.exitCode === null && running.signalCode === null) {
      const exited = new Promise((resolve) => running.once("exit", resolve));
      running.kill("SIGTERM");
      const killer = setTimeout(() => running.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("allocates a relay with the credentials Bridgeline gives, and relays to Bridgeline's media and back", async () => {
    const { server, username, credential } = iceServer();
    const browser = await client(server);
    const allocation = await browser.allocate(username, credential);
    assert.ok(
      allocation.ok,
      `allocated: ${allocation.ok ? "" : `${allocation.code} ${allocation.reason}`}\n${log}`,
    );
    const relayed = relayedAddress(allocation);
    assert.ok(relayed, "XOR-RELAYED-ADDRESS in the answer");
    assert.equal(relayed.address, "127.0.0.1");

    const media = { address: "127.0.0.1", port: bridgeline.address().port };
    const permission = await browser.createPermission(media);
    assert.ok(permission.ok, `permission to Bridgeline's address: ${permission.ok ? "" : permission.code}`);
    browser.send(media, Buffer.from("from the browser"));
    await waitFor(() => fromRelay.length > 0, "the datagram relayed to Bridgeline");
    assert.equal(fromRelay[0]?.data.toString(), "from the browser");
    assert.deepEqual(
      { address: fromRelay[0]?.from.address, port: fromRelay[0]?.from.port },
      relayed,
      "it comes from the relayed address",
    );

    bridgeline.send(Buffer.from("from the room"), relayed.port, relayed.address);
    await waitFor(() => browser.received.length > 0, "Bridgeline's answer relayed to the browser");
    assert.equal(browser.received[0]?.data.toString(), "from the room");
    assert.deepEqual(browser.received[0]?.peer, media);
  });

  it("refuses a wrong credential, and an expired one, with 401", async () => {
    const other = iceServer(new Date(), "not-the-shared-secret");
    const wrong = await (await client(other.server)).allocate(other.username, other.credential);
    assert.deepEqual(wrong.ok ? "allocated" : wrong.code, 401, "a credential made under another secret");

    // Made right, under the same secret, but its expiry is an hour ago.
    const expired = iceServer(new Date(Date.now() - 2 * 3_600_000));
    const late = await (await client(expired.server)).allocate(expired.username, expired.credential);
    assert.deepEqual(late.ok ? "allocated" : late.code, 401, "a credential past its expiry");
  });

  it("relays to no other address than Bridgeline's: neither private networks nor loopback", async () => {
    const { server, username, credential } = iceServer();
    const browser = await client(server);
    assert.ok((await browser.allocate(username, credential)).ok, "allocated");
    for (const address of ["10.1.2.3", "192.168.1.10", "127.0.0.2", "198.51.100.20"]) {
      const permission = await browser.createPermission({ address, port: 5004 });
      assert.deepEqual(permission.ok ? "permitted" : permission.code, 403, `no relaying to ${address}`);
    }
  });
});
