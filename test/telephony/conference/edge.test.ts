/**
 * The whole picture of docs/deployment.md on loopback: a carrier trunk (SIPp), Kamailio from
 * deploy/kamailio, two Bridgeline instances (real processes, `bin/bridgeline.js start`, their trunk
 * the edge) on one PostgreSQL database. The conference dials one attendee, which leaves through the
 * edge to the carrier. Ten SIPp callers dial the access number through Kamailio with its PIN: the
 * calls are spread over both instances, every caller is in the room whichever instance answered,
 * and a caller on each instance hears the other (read off the wire). Then the instance not running
 * the room is killed with SIGKILL: new callers reach the room through the survivor within 10 s.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { goertzelLevelDb, tone } from "../../helpers/audio.js";
import { createTestDatabase, postgresOnly } from "../../helpers/databases.js";
import { murmur, sippCaller } from "../../helpers/dial-in-caller.js";
import { Kamailio } from "../../helpers/kamailio.js";
import { signupXml } from "../../helpers/service.js";
import { freePorts, rtpPortRange, Sipp, skipWithout } from "../../helpers/sipp.js";
import { until } from "../../helpers/until.js";
import { WireCapture } from "../../helpers/wire.js";

// Two instances share a database only on PostgreSQL.
const skip = postgresOnly.skip || skipWithout("sipp") || skipWithout("kamailio") || skipWithout("tshark");
const ACCESS_NUMBER = "+16045550199";
const BIN = fileURLToPath(new URL("../../../bin/bridgeline.js", import.meta.url));
/** One tone per caller, none of them a DTMF frequency, quiet enough that nine mixed never clip. */
const TONES_HZ = [300, 400, 500, 600, 1000, 1100, 1600, 1700, 1800, 1900];

const dir = mkdtempSync(join(tmpdir(), "bridgeline-edge-"));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

/** An instance could not bind a port: another test process took it after it was picked. */
class PortTaken extends Error {
  constructor(lines: readonly string[]) {
    super(`a port was taken:\n${lines.join("\n")}`);
  }
}

/** A Bridgeline instance as its own process, its JSON log lines kept. */
class Instance {
  readonly lines: string[] = [];
  readonly exited: Promise<unknown>;

  constructor(
    readonly name: string,
    readonly sipPort: number,
    readonly httpPort: number,
    readonly rtpPorts: { min: number; max: number },
    private readonly child: ChildProcess,
  ) {
    let partial = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      const text = partial + chunk.toString();
      const lines = text.split("\n");
      partial = lines.pop() ?? "";
      this.lines.push(...lines);
    });
    child.stderr?.on("data", (chunk: Buffer) => this.lines.push(chunk.toString()));
    this.exited = new Promise((resolve) => child.once("exit", resolve));
  }

  static async start(name: string, sipPort: number, databaseUrl: string, trunk: string): Promise<Instance> {
    const httpPort = await freePorts();
    const rtpPorts = rtpPortRange();
    const child = spawn(process.execPath, [BIN, "start"], {
      env: {
        ...process.env,
        BRIDGELINE_DATABASE_URL: databaseUrl,
        BRIDGELINE_DATA_DIR: mkdtempSync(join(dir, `${name}-`)),
        BRIDGELINE_INSTANCE_ID: name,
        BRIDGELINE_HOST: "127.0.0.1",
        BRIDGELINE_HTTPS_PORT: "0",
        BRIDGELINE_HTTP_PORT: String(httpPort),
        BRIDGELINE_SIP_ADDRESS: "127.0.0.1",
        BRIDGELINE_SIP_PORT: String(sipPort),
        BRIDGELINE_RTP_PORTS: `${rtpPorts.min}-${rtpPorts.max}`,
        BRIDGELINE_SIP_TRUNK: trunk,
        BRIDGELINE_ACCESS_NUMBERS: ACCESS_NUMBER,
        BRIDGELINE_MEDIA_THREADS: "1",
        // Ten callers all talk at once here, and any two must hear each other.
        BRIDGELINE_MIX_TALKERS: "10",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const instance = new Instance(name, sipPort, httpPort, rtpPorts, child);
    cleanups.push(() => instance.kill());
    await until(
      "the instance started",
      async () => {
        if (instance.lines.some((line) => line.includes("EADDRINUSE"))) throw new PortTaken(instance.lines);
        return instance.logged("bridgeline started") ? true : undefined;
      },
      {
        detail: () => instance.lines.join("\n"),
      },
    );
    return instance;
  }

  get uri(): string {
    return `sip:127.0.0.1:${this.sipPort}`;
  }

  logged(message: string): boolean {
    return this.lines.some((line) => line.includes(`"msg":"${message}"`));
  }

  /** The numbers of the callers whose call to the access number reached this instance. */
  callersAnswered(): string[] {
    return this.lines
      .filter((line) => line.includes('"msg":"incoming call"') && line.includes(`"to":"${ACCESS_NUMBER}"`))
      .map((line) => String(JSON.parse(line).from));
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    await this.exited;
  }

  async request(method: string, path: string, auth: [string, string] | null, body?: string) {
    const response = await fetch(`http://127.0.0.1:${this.httpPort}${path}`, {
      method,
      headers: {
        Accept: "application/xml",
        "Content-Type": "application/xml",
        ...(auth === null
          ? {}
          : { Authorization: `Basic ${Buffer.from(auth.join(":")).toString("base64")}` }),
      },
      body,
    });
    return {
      status: response.status,
      text: await response.text(),
      location: response.headers.get("location"),
    };
  }
}

describe("Kamailio in front of two instances", { skip }, () => {
  test("spreads callers over both, each reaches the room; after SIGKILL of one, new callers reach it through the survivor", async (t) => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    // The carrier answers the call the conference places; the edge knows the instances' ports
    // before they start (its probes find them up), and is their trunk.
    const carrier = await Sipp.start({ scenario: "uas-routed.xml", timeoutSeconds: 120 });
    cleanups.push(() => carrier.stop());
    // The instances' SIP ports (and the TLS port after each) are picked before Kamailio starts; a
    // parallel test process may take one meanwhile: then everything starts again on other ports.
    let edge: { kamailio: Kamailio; instances: readonly [Instance, Instance] } | undefined;
    for (let attempt = 1; edge === undefined; attempt++) {
      const sipPorts = [await freePorts(1), await freePorts(1)] as const;
      const kamailio = await Kamailio.start({
        trunk: `sip:127.0.0.1:${carrier.sipPort}`,
        instances: sipPorts.map((port) => `sip:127.0.0.1:${port}`),
      });
      cleanups.push(() => kamailio.stop());
      const started: Instance[] = [];
      try {
        for (const [index, port] of sipPorts.entries())
          started.push(
            await Instance.start(`edge-${index === 0 ? "a" : "b"}`, port, database.url, kamailio.uri),
          );
        edge = { kamailio, instances: started as [Instance, Instance] };
      } catch (error) {
        if (!(error instanceof PortTaken) || attempt === 3) throw error;
        for (const instance of started) await instance.kill();
        await kamailio.stop();
      }
    }
    const { kamailio, instances } = edge;
    const [first] = instances;
    const email = `edge-${process.pid}@example.com`;
    const auth: [string, string] = [email, "correct horse"];
    const signup = await first.request("POST", "/users", null, signupXml(email, auth[1]));
    assert.equal(signup.status, 201, signup.text);
    const userPath = new URL(String(signup.location), "http://localhost").pathname;
    const created = await first.request(
      "POST",
      `${userPath}/conferences`,
      auth,
      `<conference><name>Edge</name><scheduled-to-start-at>${new Date().toISOString()}</scheduled-to-start-at><no-moderator type="boolean">true</no-moderator><direct-dial type="boolean">true</direct-dial></conference>`,
    );
    assert.equal(created.status, 201, created.text);
    const path = new URL(String(created.location), "http://localhost").pathname;
    const dialled = await first.request(
      "POST",
      `${path}/attendees`,
      auth,
      "<attendee><phone-number>604-555-0150</phone-number></attendee>",
    );
    assert.equal(dialled.status, 201, dialled.text);
    const pin = /<member-pin>(\d+)<\/member-pin>/.exec(created.text)?.[1] ?? assert.fail("no member PIN");
    assert.equal(
      (await first.request("PUT", path, auth, "<conference><state>pending</state></conference>")).status,
      200,
    );
    const running = await until("one instance runs the conference", async () =>
      instances.find((each) => each.logged("conference started")),
    );
    const survivor = running;
    const doomed = instances.find((each) => each !== running) as Instance;
    const connectedCount = async () =>
      (
        (await survivor.request("GET", `${path}/attendees`, auth)).text.match(/<state>connected<\/state>/g) ??
        []
      ).length;

    const capture = await WireCapture.start(
      instances.map((each) => `udp src portrange ${each.rtpPorts.min}-${each.rtpPorts.max}`).join(" or "),
    );
    cleanups.push(() => capture.dispose());
    const callers: Sipp[] = [];
    const numberOf = (index: number) => `+1604555${String(2000 + index)}`;
    for (const [index, hz] of TONES_HZ.entries()) {
      const caller = await sippCaller({
        sipPort: kamailio.port,
        accessNumber: ACCESS_NUMBER,
        from: numberOf(index),
        dir,
        segments: [{ audio: murmur(1) }, { events: `${pin}#` }, { audio: tone(hz, 10, 0.05) }],
      });
      callers.push(caller);
      cleanups.push(() => caller.stop());
    }
    const detail = () =>
      [
        kamailio.log.slice(-3000),
        (callers[0] as Sipp | undefined)?.report() ?? "",
        ...instances.map((each) =>
          each.lines
            .filter((line) => !line.includes('"req"') && !line.includes('"res"'))
            .slice(-40)
            .join("\n"),
        ),
      ].join("\n");
    await until(
      "the dialled attendee and all ten callers connected",
      async () => ((await connectedCount()) === 11 ? true : undefined),
      {
        timeoutMs: 30_000,
        detail,
      },
    );
    // The placed call left through the edge: the carrier got it from Kamailio.
    const carrierLog = carrier.messages();
    assert.ok(carrierLog.includes("INVITE sip:+16045550150@"), "the carrier got the placed call");
    assert.ok(
      carrierLog.includes(`Via: SIP/2.0/UDP 127.0.0.1:${kamailio.port};`),
      "the placed call came through Kamailio (its Via)",
    );
    const answeredBy = new Map(instances.map((each) => [each, each.callersAnswered()] as const));
    assert.ok((answeredBy.get(survivor)?.length ?? 0) > 0, "the instance running the room answered callers");
    assert.ok((answeredBy.get(doomed)?.length ?? 0) > 0, "the other instance answered callers too");
    assert.equal((answeredBy.get(survivor)?.length ?? 0) + (answeredBy.get(doomed)?.length ?? 0), 10);
    for (const caller of callers) await caller.expectSuccess(60_000);
    await capture.stop();

    // A caller in the room's own instance and one carried from the other hear each other.
    const indexOf = (instance: Instance) =>
      TONES_HZ.findIndex((_, index) => answeredBy.get(instance)?.includes(numberOf(index)));
    const local = indexOf(survivor);
    const carried = indexOf(doomed);
    const heardBy = (index: number) => capture.audioTo((callers[index] as Sipp).mediaPort);
    const level = (index: number, hz: number) => goertzelLevelDb(heardBy(index), hz);
    const localHz = TONES_HZ[local] as number;
    const carriedHz = TONES_HZ[carried] as number;
    assert.ok(
      level(local, carriedHz) > -50,
      `the local caller heard the carried one at ${level(local, carriedHz).toFixed(1)} dBFS`,
    );
    assert.ok(
      level(carried, localHz) > -50,
      `the carried caller heard the local one at ${level(carried, localHz).toFixed(1)} dBFS`,
    );
    assert.ok(
      level(carried, carriedHz) < level(carried, localHz) - 15,
      "the carried caller is not sent its own voice",
    );

    // The instance not running the room dies; callers keep reaching the room through the survivor.
    await doomed.kill();
    const killedAt = Date.now();
    const before = survivor.callersAnswered().length;
    const late: Sipp[] = [];
    for (let index = 0; index < 4; index++) {
      const caller = await sippCaller({
        sipPort: kamailio.port,
        accessNumber: ACCESS_NUMBER,
        from: `+1604555${3000 + index}`,
        dir,
        segments: [{ audio: murmur(1) }, { events: `${pin}#` }, { audio: tone(440, 3, 0.05) }],
      });
      late.push(caller);
      cleanups.push(() => caller.stop());
    }
    await until(
      "the new callers reached the survivor",
      async () => (survivor.callersAnswered().length - before === late.length ? true : undefined),
      { timeoutMs: 15_000, detail },
    );
    const failoverMs = Date.now() - killedAt;
    assert.ok(failoverMs <= 10_000, `the new callers reached the survivor ${failoverMs} ms after the kill`);
    t.diagnostic(
      `callers answered: ${answeredBy.get(survivor)?.length} by the room's instance, ${answeredBy.get(doomed)?.length} carried from the other; after the kill all ${late.length} new callers reached the survivor in ${failoverMs} ms`,
    );
    for (const caller of late) await caller.expectSuccess(60_000);
    const attendees = (await survivor.request("GET", `${path}/attendees`, auth)).text;
    for (let index = 0; index < late.length; index++)
      assert.match(
        attendees,
        new RegExp(`<phone-number-subscriber-number>604555${3000 + index}<`),
        "the new caller was in the room",
      );
  });
});
