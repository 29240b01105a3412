/**
 * A caller who dials an access number: PIN prompt (keys typed during it count), three tries, then
 * into the room the PIN opens as member or moderator, matched to a dial-in attendee by caller ID or
 * added as one, so that the API and the console see everyone in the room. When the room runs on
 * another instance, the caller is carried there: an internal call to that instance, showing a
 * one-time handoff token, relayed packet for packet with the caller's.
 */
import type { Clock } from "../domain/clock.js";
import { admittedByEncryption, type CallEncryption, callEncryption } from "../domain/encryption.js";
import { normalizeNanpNumber } from "../domain/phone.js";
import type { PromptName } from "../domain/prompt.js";
import { CallMenu } from "./call-menu.js";
import type { RoomLogger } from "./conference-room.js";
import type { ConferenceCall, ConferenceStore, IncomingConferenceCall, Telephone } from "./ports.js";

/** What dial-in needs of a running room. */
export interface DialInRoom {
  readonly conferenceId: number;
  readonly ended: boolean;
  readonly conference: {
    readonly userId: number;
    readonly dialInLocked: boolean;
    readonly encryptedOnly: boolean;
  };
  admit(call: ConferenceCall, attendeeId: number, moderator: boolean, encryption: CallEncryption): void;
}

export interface DialInOptions {
  readonly store: ConferenceStore;
  readonly logger: RoomLogger;
  /** What the PIN prompt's waits run on, and what now is. */
  readonly clock: Clock;
  /** Places the internal call to a room on another instance. */
  readonly telephone: Pick<Telephone, "callUri">;
  /** The room of a conference this instance runs, if it does. */
  readonly roomOf: (conferenceId: number) => DialInRoom | undefined;
  /** Told of each wrong PIN (throttling across calls). */
  readonly onWrongPin?: () => void;
}

/** The header of the internal call that names the handoff it carries. */
export const HANDOFF_HEADER = "X-Bridgeline-Handoff";

/**
 * How long the instance running the room has to answer the internal call: it answers at once, so
 * longer means it is gone (its conference not yet recovered), and the caller is told at once.
 */
export const HANDOFF_ANSWER_TIMEOUT_MS = 5_000;

/** Where a room is: here, or at another instance's SIP URI. */
export type RoomPlace = { readonly room: DialInRoom } | { readonly sipUri: string };

export const PIN_TRIES = 3;
const MAX_PIN_KEYS = 12;
export const PIN_TIMEOUT_MS = 10_000;

/**
 * Answers a caller and takes it through the PIN prompt into its room. Every await may outlast the
 * call (the caller hangs up while a prompt plays or the store answers): after each, the call's state
 * is looked at again, and nothing is written or joined for a call that is over.
 */
export async function answerDialIn(call: IncomingConferenceCall, options: DialInOptions): Promise<void> {
  const { logger, store, clock } = options;
  if (!(await call.accept())) return;
  const live = () => call.state === "answered";
  const now = () => new Date(clock.now());
  const menu = new CallMenu(call, clock);
  const farewell = async (...names: PromptName[]) => {
    menu.play({ prompts: [...names, "goodbye"] });
    await menu.drained();
    call.hangup();
  };
  try {
    for (let attempt = 1; attempt <= PIN_TRIES; attempt++) {
      menu.play({ prompts: ["enter-pin"] });
      const pin = await menu.collect({ terminator: "#", maxKeys: MAX_PIN_KEYS, timeoutMs: PIN_TIMEOUT_MS });
      menu.stopPlaying();
      if (!live()) return;
      const target = pin === "" ? undefined : await store.findPinTarget(pin);
      if (!live()) return;
      if (target === undefined) {
        // Warned with the source address and Call-ID: the line fail2ban-style tools match.
        logger.warn(
          { from: call.from, source: call.origin.source, callId: call.origin.callId, attempt },
          "dial-in: wrong PIN",
        );
        options.onWrongPin?.();
        if (attempt < PIN_TRIES) menu.play({ prompts: ["invalid-pin"] });
        continue;
      }
      const conferenceId = target.conferenceId;
      const place = conferenceId === undefined ? undefined : await placeOf(conferenceId, options);
      if (!live()) return;
      if (conferenceId === undefined || place === undefined) {
        logger.info({ from: call.from, conferenceId }, "dial-in: conference not in progress");
        await farewell("not-started");
        return;
      }
      const moderator = target.role === "moderator";
      if (!moderator && place.dialInLocked) {
        logger.info({ from: call.from, conferenceId }, "dial-in: conference locked");
        await farewell("conference-locked");
        return;
      }
      // Known only once the PIN names the room: refused here, before an attendee is written.
      const encryption = callEncryption(call);
      if (!admittedByEncryption(place.encryptedOnly, encryption)) {
        logger.info(
          { from: call.from, conferenceId, encryption },
          "dial-in: caller refused, the conference takes encrypted calls only",
        );
        await farewell("encrypted-only");
        return;
      }
      const nanp = normalizeNanpNumber(call.from);
      const admitted = await store.admitCaller(
        conferenceId,
        nanp === null ? null : { countryCode: nanp.countryCode, subscriberNumber: nanp.subscriberNumber },
        moderator,
        now(),
      );
      if (admitted === undefined) {
        if (live()) await farewell("conference-locked");
        return;
      }
      const { attendee } = admitted;
      let token: string | undefined;
      // A caller who does not reach the room leaves no attendee (nor handoff) behind them.
      const withdraw = () =>
        store
          .withdrawAdmission(token, admitted.added ? attendee.id : null, now())
          .catch((error: unknown) =>
            logger.warn(
              { err: error, conferenceId },
              "dial-in: the caller's admission could not be withdrawn",
            ),
          );
      if (!live()) {
        void withdraw();
        return;
      }
      logger.info({ conferenceId, attendeeId: attendee.id, moderator }, "dial-in: caller admitted");
      if (!("room" in place.where))
        token = await store.createHandoff(
          { conferenceId, attendeeId: attendee.id, moderator, encryption },
          now(),
        );
      menu.play({ prompts: ["joining"] });
      await menu.drained();
      menu.detach();
      // A caller who hung up during the joining prompt is not admitted: its end has been and gone.
      if (!live()) {
        void withdraw();
        return;
      }
      if ("room" in place.where) place.where.room.admit(call, attendee.id, moderator, encryption);
      else
        carry(call, call.from, roomUri(place.where.sipUri, conferenceId), token as string, withdraw, options);
      return;
    }
    logger.info({ from: call.from }, "dial-in: three wrong PINs");
    await farewell();
  } finally {
    menu.detach();
  }
}

/** The room of a started conference: here, or on the instance that runs it; undefined when none. */
export async function placeOf(
  conferenceId: number,
  options: Pick<DialInOptions, "roomOf" | "store">,
): Promise<{ where: RoomPlace; userId: number; dialInLocked: boolean; encryptedOnly: boolean } | undefined> {
  const room = options.roomOf(conferenceId);
  if (room !== undefined && !room.ended) {
    const { userId, dialInLocked, encryptedOnly } = room.conference;
    return { where: { room }, userId, dialInLocked, encryptedOnly };
  }
  const location = await options.store.roomLocation(conferenceId);
  // A room not here, or recorded as here but gone: it has just ended.
  if (location === undefined || location.sipUri === null || room !== undefined) return undefined;
  const { userId, dialInLocked, encryptedOnly } = location;
  return { where: { sipUri: location.sipUri }, userId, dialInLocked, encryptedOnly };
}

/** The internal call's Request-URI: the instance's SIP URI, naming the conference. */
export function roomUri(sipUri: string, conferenceId: number): string {
  return sipUri.replace(/^(sips?:)/i, `$1conference-${conferenceId}@`);
}

/**
 * Carries an admitted caller to their room on another instance: the internal call shows the
 * handoff token and, once answered, the two calls are relayed to each other. Either ending ends the
 * other; an internal call that fails tells the caller the conference is not in progress, and the
 * handoff is withdrawn.
 */
export function carry(
  call: ConferenceCall,
  from: string,
  uri: string,
  token: string,
  withdraw: () => Promise<unknown>,
  options: Pick<DialInOptions, "logger" | "telephone">,
): void {
  const { logger } = options;
  const leg = options.telephone.callUri(uri, {
    headers: [[HANDOFF_HEADER, token]],
    nextTo: call,
    ringTimeoutMs: HANDOFF_ANSWER_TIMEOUT_MS,
  });
  leg.on("answered", () => {
    logger.info({ from, uri }, "dial-in: caller carried to the instance running the room");
    call.relay(leg);
  });
  leg.on("failed", (failure) => {
    logger.warn({ from, uri, status: failure.status }, "dial-in: the room's instance refused the caller");
    void withdraw();
    void call.play({ prompts: ["not-started", "goodbye"] }).then(() => call.hangup());
  });
  leg.on("ended", () => call.hangup());
  call.on("ended", () => leg.hangup());
}
