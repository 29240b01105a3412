import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { ConferenceRoom } from "../../src/conference/conference-room.js";
import type { Speak } from "../../src/conference/ports.js";
import type { Attendee } from "../../src/domain/attendee.js";
import type { Conference } from "../../src/domain/conference.js";
import { type CallingPolicy, type CallNotPlaced, OPEN_CALLING_POLICY } from "../../src/domain/phone.js";
import { FakeClock } from "../helpers/fake-clock.js";
import {
  attendee,
  type FakeCall,
  FakeLogger,
  type FakeRoomMedia,
  FakeStore,
  FakeTelephone,
  flush,
  conference as makeConference,
  numberOf,
} from "./fakes.js";

export const DATA_DIR = path.join(os.tmpdir(), `bridgeline-conference-test-${process.pid}`);

// The recordings folder the rooms make (the media would write the files in it).
process.once("beforeExit", () => void rm(DATA_DIR, { recursive: true, force: true }));

export interface Harness {
  room: ConferenceRoom;
  media: FakeRoomMedia;
  telephone: FakeTelephone;
  store: FakeStore;
  logger: FakeLogger;
  /** The room's and its calls' clock: it stands still until the test moves it. */
  clock: FakeClock;
  /** How often onEnded was called. */
  endedCalls: () => number;
  /** The call placed to attendee `id`. */
  call: (id: number) => FakeCall;
  spoken: string[];
  /** Why each attendee call not placed for the calling policy was not (what the metrics count). */
  notPlaced: CallNotPlaced[];
}

export interface HarnessOptions {
  conference?: Partial<Conference>;
  attendees?: Attendee[];
  speak?: Speak;
  /** Access numbers are configured (default: none, so nobody can dial in). */
  acceptsDialIn?: boolean;
  callingPolicy?: CallingPolicy;
  /** The clock to run on (rooms that share one); default a new one. */
  clock?: FakeClock;
  /** The lease the room runs under (default 1); the store's is set to it. */
  lease?: number;
  /** Done to the store before the room starts. */
  beforeStart?: (store: FakeStore, room: ConferenceRoom) => void;
  /** The room took its conference over: it calls these attendees back. */
  takenOver?: {
    readonly callBack: readonly number[];
    readonly redial?: readonly number[];
    readonly onFirstJoined?: () => void;
  };
}

/** The settings' defaults: two minutes' grace, an hour for the first caller. */
export const EMPTY_PERIODS = { emptyGraceMs: 120_000, noShowMs: 3_600_000 };

/**
 * A room over fakes, started: with the default attendees (1 the moderator, 2 and 3 members) and a
 * conference that dials direct.
 */
export async function startRoom(options: HarnessOptions = {}): Promise<Harness> {
  const clock = options.clock ?? new FakeClock();
  const telephone = new FakeTelephone(clock);
  const store = new FakeStore(
    makeConference(options.conference),
    options.attendees ?? [attendee(1, { moderator: true }), attendee(2), attendee(3)],
  );
  store.lease = options.lease ?? 1;
  const logger = new FakeLogger();
  const spoken: string[] = [];
  const notPlaced: CallNotPlaced[] = [];
  let ended = 0;
  const room = new ConferenceRoom(store.conference as Conference, {
    telephone,
    store,
    instance: "test-instance",
    logger,
    clock,
    dataDir: DATA_DIR,
    acceptsDialIn: options.acceptsDialIn ?? false,
    callingPolicy: options.callingPolicy ?? OPEN_CALLING_POLICY,
    onCallNotPlaced: (reason) => notPlaced.push(reason),
    emptyPeriods: EMPTY_PERIODS,
    reserved: 1,
    lease: store.lease,
    ...(options.takenOver !== undefined && {
      takenOver: {
        callBack: options.takenOver.callBack,
        redial: options.takenOver.redial ?? [],
        onFirstJoined: options.takenOver.onFirstJoined ?? (() => {}),
      },
    }),
    speak:
      options.speak ??
      (async (text) => {
        spoken.push(text);
        return null;
      }),
    onEnded: () => {
      ended++;
    },
  });
  const media = telephone.rooms[0];
  if (media === undefined) throw new Error("the room opened no media");
  options.beforeStart?.(store, room);
  await room.start();
  await flush();
  return {
    room,
    media,
    telephone,
    store,
    logger,
    clock,
    endedCalls: () => ended,
    call: (id) => telephone.callTo(numberOf(id)),
    spoken,
    notPlaced,
  };
}

/** Answers attendees' calls (direct dial: they join at once). */
export async function answer(harness: Harness, ...ids: number[]): Promise<void> {
  for (const id of ids) harness.call(id).answer();
  await flush();
}
