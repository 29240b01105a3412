/**
 * SIGKILL of the service mid-load, and its restart on the same database: the scenario shared by the
 * suite's short test (test/faults/sigkill.test.ts) and the benchmark's longer runs (bench/faults).
 *
 * The compiled service (`bin/bridgeline.js start`, so `npm run build:service` first) runs as a
 * process of its own, its trunk a SIPp that answers every call and holds it until hung up. Rooms of
 * such attendees are live; writers sign up and then create conferences, add attendees and rename
 * the conferences through the API, each keeping the writes that were answered 2xx. Once enough have
 * been, the service is killed with SIGKILL, writes still in flight, and started again on the same
 * database and data directory as the same instance (BRIDGELINE_INSTANCE_ID): it takes its own
 * running conferences over and calls their attendees back. What the restarted service then shows is returned, for the
 * caller to judge: the acknowledged writes read back, the rooms and their take-over, each live
 * attendee's calls since the kill (counted at the trunk) and state, and whether it takes new work.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { RecoveryDetails } from "../../src/domain/event.js";
import { createTestDatabase, type StoreKind, type TestDatabase } from "../helpers/databases.js";
import { EventStream } from "../helpers/event-stream.js";
import { signupXml } from "../helpers/service.js";
import { freePorts, rtpPortRange } from "../helpers/sipp.js";
import { until } from "../helpers/until.js";
import {
  ApiWriters,
  type Auth,
  dialled,
  liveRoom,
  ServiceProcess,
  serviceEnv,
  signUp,
  Trunk,
} from "./service-processes.js";

export interface KillOptions {
  readonly store: StoreKind;
  /** Writers running at once, each a user of its own. */
  readonly writers: number;
  /** The service is killed once this many writes were answered 2xx. */
  readonly writesBeforeKill: number;
  /** Live conferences when it is killed, and the attendees connected in each (50 in all at most). */
  readonly rooms: number;
  readonly attendeesPerRoom: number;
}

export interface KillOutcome {
  /** Writes answered 2xx before the kill. */
  readonly acknowledged: number;
  /** Requests cut by the kill (their outcome unknown to the client, so not counted). */
  readonly cut: number;
  /** Acknowledged writes the restarted service does not show, described. */
  readonly lost: readonly string[];
  /**
   * Each live room after the restart: its state, and the take-over its conference-recovered event
   * tells (undefined: none within 5 s of the restart).
   */
  readonly rooms: readonly { state: string; recovery: RecoveryDetails | undefined }[];
  /** Each live room's attendee: the calls the trunk was offered for it since the kill, and its state. */
  readonly attendees: readonly { number: string; callsSinceKill: number; state: string }[];
  /** From the kill to the first of those calls (a phone ringing again); NaN when there was none. */
  readonly ringMs: number;
  /** Whether the restarted service logged the conferences it took over. */
  readonly takeOverLogged: boolean;
  /** From the restart's spawn to its "bridgeline started". */
  readonly restartMs: number;
  /**
   * After the restart a sign-up must be answered 201 and a new conference's attendee connect: what
   * failed of that, or empty.
   */
  readonly notServedAfterwards: string;
}

/** The name of the instance killed and started again. */
export const INSTANCE = "killed-and-restarted";

/** Runs the scenario; `cleanups` gets what to stop and remove, in the order to undo it. */
export async function killMidLoad(
  options: KillOptions,
  cleanups: Array<() => Promise<unknown>>,
): Promise<KillOutcome> {
  if (options.rooms * options.attendeesPerRoom > 50) throw new Error("50 live attendees at most");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bridgeline-kill-"));
  cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  let database: TestDatabase | undefined;
  if (options.store === "postgres") {
    database = await createTestDatabase();
    cleanups.push(() => (database as TestDatabase).drop());
  }
  const trunk = await Trunk.start();
  cleanups.push(() => trunk.stop());
  const env: Record<string, string> = {
    ...serviceEnv({ dataDir, databaseUrl: database?.url, trunk, rtpPorts: rtpPortRange() }),
    // SIP over TLS takes the SIP port + 1.
    BRIDGELINE_SIP_PORT: String(await freePorts(1)),
    // The restarted service is the same instance, as under systemd.
    BRIDGELINE_INSTANCE_ID: INSTANCE,
  };
  const httpPort = await freePorts();
  let service = await ServiceProcess.start(env, httpPort);
  cleanups.push(() => service.kill("SIGKILL"));

  // The live rooms, each owned by a user of its own (the per-user limits on placed calls apply),
  // each attendee a number of its own (0100 up: the writers' are 0150 and 0151).
  const rooms: { path: string; owner: { path: string; auth: Auth }; numbers: string[] }[] = [];
  for (let room = 0; room < options.rooms; room++) {
    const owner = await signUp(service, `kill-owner-${room}-${process.pid}-${Date.now()}@example.com`);
    const numbers = Array.from(
      { length: options.attendeesPerRoom },
      (_, i) => `604-555-${String(100 + room * options.attendeesPerRoom + i).padStart(4, "0")}`,
    );
    rooms.push({ path: await liveRoom(service, owner, numbers), owner, numbers });
  }
  const statesOf = async (room: (typeof rooms)[number]) => {
    const list = await service.request("GET", `${room.path}/attendees`, room.owner.auth);
    return [...list.text.matchAll(/<state>(\w+)<\/state>/g)].map((match) => match[1] as string);
  };
  let attendeeStates = "";
  await until(
    "every attendee of the live rooms connected",
    async () => {
      const states: string[] = [];
      for (const room of rooms) states.push(`${room.path}: ${(await statesOf(room)).join(" ")}`);
      attendeeStates = states.join("\n");
      const connected = attendeeStates.match(/\bconnected\b/g)?.length ?? 0;
      return connected === rooms.length * options.attendeesPerRoom ? true : undefined;
    },
    {
      timeoutMs: 120_000,
      detail: () => `attendees:\n${attendeeStates}\n${trunk.report().slice(-3000)}\n${service.warnings()}`,
    },
  );

  // The writers, until the service is killed with some of their requests in flight.
  const writers = new ApiWriters(options.writers, () => service, "kill");
  await writers.acknowledgedAtLeast(options.writesBeforeKill);
  const stopped = writers.stop();
  const calledBefore = new Set(trunk.offered().map((call) => call.callId));
  const killedAt = Date.now();
  await service.kill("SIGKILL");
  await stopped;
  if (writers.failures.length > 0) throw new Error(`writers failed: ${writers.failures.join("; ")}`);
  const acknowledgedAtKill = writers.acknowledged.length;

  const restartedAt = Date.now();
  service = await ServiceProcess.start(env, httpPort);
  const restartMs = Date.now() - restartedAt;

  const lost = await writers.lost(service);
  const roomOutcomes: { state: string; recovery: RecoveryDetails | undefined }[] = [];
  for (const { path: room, owner } of rooms) {
    const read = await service.request("GET", room, owner.auth);
    const events = await EventStream.open(`http://127.0.0.1:${httpPort}${room}/events`, {
      auth: owner.auth,
      lastEventId: 0,
    });
    const recovered = await events
      .waitFor("the conference's take-over", (event) => event.type === "conference-recovered", 5_000)
      .catch(() => undefined);
    events.close();
    roomOutcomes.push({
      state: /<state>(\w+)<\/state>/.exec(read.text)?.[1] ?? `unread (${read.status})`,
      recovery: (recovered?.data as { recovery?: RecoveryDetails } | undefined)?.recovery,
    });
  }
  // Each live attendee called back: once its call is offered, it is connected within seconds.
  const numbers = rooms.flatMap((room) => room.numbers);
  const callsSince = () => trunk.offered().filter((call) => !calledBefore.has(call.callId));
  await until(
    "every live attendee called again and connected",
    async () => {
      const called = new Set(callsSince().map((call) => call.number));
      if (!numbers.every((number) => called.has(dialled(number)))) return undefined;
      for (const room of rooms)
        if (!(await statesOf(room)).every((state) => state === "connected")) return undefined;
      return true;
    },
    { timeoutMs: 30_000 },
  ).catch(() => undefined);
  const calls = callsSince();
  const attendees: { number: string; callsSinceKill: number; state: string }[] = [];
  for (const room of rooms) {
    const list = await service.request("GET", `${room.path}/attendees`, room.owner.auth);
    for (const number of room.numbers) {
      // The attendee's element: its number, then (in the order the API lists them) its state.
      const item = [...list.text.matchAll(/<attendee>([\s\S]*?)<\/attendee>/g)].find((match) =>
        match[1]?.includes(`<phone-number-subscriber-number>${number.replace(/\D/g, "")}<`),
      );
      attendees.push({
        number,
        callsSinceKill: calls.filter((call) => call.number === dialled(number)).length,
        state: /<state>(\w+)<\/state>/.exec(item?.[1] ?? "")?.[1] ?? "unlisted",
      });
    }
  }

  const signup = await service.request(
    "POST",
    "/users",
    null,
    signupXml(`kill-after-${process.pid}-${Date.now()}@example.com`),
  );
  const owner = await signUp(service, `kill-fresh-${process.pid}-${Date.now()}@example.com`);
  const fresh = await liveRoom(service, owner, ["604-555-0199"]);
  let freshState = "";
  let notServed = signup.status === 201 ? "" : `sign-up answered ${signup.status} ${signup.text}`;
  await until(
    "the new conference's attendee connected",
    async () => {
      const list = await service.request("GET", `${fresh}/attendees`, owner.auth);
      freshState = list.text;
      return list.text.includes("<state>connected</state>") ? true : undefined;
    },
    {
      timeoutMs: 30_000,
      detail: () => `${freshState}\n${trunk.report().slice(-3000)}\n${service.warnings()}`,
    },
  ).catch((error: Error) => {
    notServed += error.message;
  });
  const takeOverLogged = service.logged("conference taken over");
  await service.kill("SIGTERM");

  return {
    acknowledged: acknowledgedAtKill,
    cut: writers.cut,
    lost,
    rooms: roomOutcomes,
    attendees,
    ringMs: calls.length === 0 ? Number.NaN : Math.min(...calls.map((call) => call.at)) - killedAt,
    takeOverLogged,
    restartMs,
    notServedAfterwards: notServed,
  };
}
