/**
 * A caller who joins from a browser (the join page): the PIN typed in the page opens a room as it
 * would on the telephone (the same PINs, lock, encrypted-only rule and wrong-PIN throttle, counted
 * by the page's address), the page's WebRTC offer is answered with a call whose media is next to the
 * room's, and the call is admitted as a dial-in attendee added for it. A room on another instance is
 * reached as a phone's is: an internal call carrying the browser's, relayed packet for packet.
 *
 * Every await may outlast the call (the page closes while the store answers): after each, the call's
 * state is looked at again, and nothing is written or joined for a call that is over.
 */
import { randomBytes } from "node:crypto";
import type {
  BrowserJoined,
  BrowserJoinRefusal,
  BrowserJoinRequest,
  BrowserParticipant,
} from "../domain/browser-join.js";
import type { Clock } from "../domain/clock.js";
import { admittedByEncryption, callEncryption } from "../domain/encryption.js";
import type { RoomLogger } from "./conference-room.js";
import { carry, type DialInRoom, placeOf, roomUri } from "./dial-in.js";
import type { AdmittedCaller, ConferenceCall, ConferenceStore, RoomMedia, Telephone } from "./ports.js";

/** What a browser's join needs of a running room: a phone's, and its audio to open the call next to. */
export interface BrowserJoinRoom extends DialInRoom {
  readonly media: RoomMedia;
}

export interface BrowserJoinOptions {
  readonly store: ConferenceStore;
  readonly logger: RoomLogger;
  readonly clock: Clock;
  readonly telephone: Pick<Telephone, "answerBrowser" | "callUri">;
  readonly roomOf: (conferenceId: number) => BrowserJoinRoom | undefined;
  /**
   * Takes one PIN try under this source's key and the service's (the limits dial-in has): counted
   * before the PIN is looked up, so that tries sent at once cannot all pass a count read before any
   * of them was made; refused past either limit. A right PIN gives its try back.
   */
  readonly takePinTry: (key: string) => Promise<BrowserJoinRefusal | PinTry>;
}

/** A PIN try taken: given back (the PIN was right, or could not be looked up), or wrong (it stays counted). */
export interface PinTry {
  giveBack(): void;
  wrong(): void;
}

/** The calls joined from browsers on this instance, by their pages' tokens. */
export class BrowserParticipants {
  readonly #byToken = new Map<string, BrowserParticipant & { readonly call: ConferenceCall }>();

  /** Keeps the participant until its call ends; returns its page's token. */
  add(participant: BrowserParticipant, call: ConferenceCall): string {
    const token = randomBytes(24).toString("base64url");
    // A call already over (ended as it was admitted) has had its end: kept, it would never go.
    if (call.state !== "answered") return token;
    this.#byToken.set(token, { ...participant, call });
    const forget = () => this.#byToken.delete(token);
    call.on("ended", forget);
    call.on("failed", forget);
    return token;
  }

  get(token: string): BrowserParticipant | undefined {
    const found = this.#byToken.get(token);
    if (found === undefined || found.call.state !== "answered") return undefined;
    const { userId, conferenceId, attendeeId, moderator } = found;
    return { userId, conferenceId, attendeeId, moderator };
  }

  /** Hangs the participant's call up; false when unknown or over. */
  leave(token: string): boolean {
    const found = this.#byToken.get(token);
    if (found === undefined || found.call.state !== "answered") return false;
    found.call.hangup();
    return true;
  }

  /** Browser calls in progress here. */
  get size(): number {
    return this.#byToken.size;
  }
}

/** The wrong-PIN key of a page: its address, as dial-in's callers without a number are counted. */
export function browserWrongPinKey(source: string): string {
  return `wrong-pin:source:${source}`;
}

/**
 * Joins the page's caller to the room its PIN opens; resolves with the answer to its offer and its
 * token, or why it was refused.
 */
export async function joinFromBrowser(
  request: BrowserJoinRequest,
  participants: BrowserParticipants,
  options: BrowserJoinOptions,
): Promise<BrowserJoined | BrowserJoinRefusal> {
  const { store, logger, telephone } = options;
  const now = () => new Date(options.clock.now());
  const key = browserWrongPinKey(request.source);
  const pinTry = await options.takePinTry(key);
  if ("refused" in pinTry) return pinTry;
  let target: Awaited<ReturnType<ConferenceStore["findPinTarget"]>>;
  try {
    target = await store.findPinTarget(request.pin);
  } catch (error) {
    // Not looked up, so neither right nor wrong: the page may try again.
    pinTry.giveBack();
    throw error;
  }
  if (target === undefined) {
    // Warned with the source address: the line fail2ban-style tools match, as for dial-in.
    logger.warn({ source: request.source }, "browser join: wrong PIN");
    pinTry.wrong();
    return { refused: "wrong-pin" };
  }
  pinTry.giveBack();
  const conferenceId = target.conferenceId;
  const place = conferenceId === undefined ? undefined : await placeOf(conferenceId, options);
  if (conferenceId === undefined || place === undefined) return { refused: "not-started" };
  const moderator = target.role === "moderator";
  if (!moderator && place.dialInLocked) return { refused: "locked" };
  const encryption = callEncryption({ signallingTls: request.signallingTls, encrypted: true });
  if (!admittedByEncryption(place.encryptedOnly, encryption)) return { refused: "encrypted-only" };

  const here = "room" in place.where ? (place.where.room as BrowserJoinRoom) : undefined;
  const answered = await telephone.answerBrowser(request.offer, {
    signallingTls: request.signallingTls,
    room: here?.media,
  });
  if ("refused" in answered) return { refused: "bad-offer", reason: answered.refused };
  const { call } = answered;
  let admitted: AdmittedCaller | undefined;
  let handoff: string | undefined;
  // A page that does not reach the room leaves no attendee (nor handoff) behind it.
  const withdraw = () =>
    store
      .withdrawAdmission(handoff, admitted?.added === true ? admitted.attendee.id : null, now())
      .catch((error: unknown) =>
        logger.warn({ err: error, conferenceId }, "browser join: the admission could not be withdrawn"),
      );
  try {
    admitted = await store.admitCaller(conferenceId, null, moderator, now());
    if (admitted !== undefined && here === undefined)
      handoff = await store.createHandoff(
        { conferenceId, attendeeId: admitted.attendee.id, moderator, encryption },
        now(),
      );
  } catch (error) {
    // The page is told to try again: its answered call is not left running, nor its admission kept.
    call.hangup();
    if (admitted !== undefined) void withdraw();
    throw error;
  }
  if (admitted === undefined) {
    call.hangup();
    return { refused: "full" };
  }
  const { attendee } = admitted;
  // The page may have closed, or the room ended, while the store answered.
  if (call.state !== "answered" || here?.ended === true) {
    const roomEnded = call.state === "answered";
    call.hangup();
    void withdraw();
    return roomEnded ? { refused: "not-started" } : { refused: "unavailable", retryAfterSeconds: 1 };
  }
  if (here !== undefined) here.admit(call, attendee.id, moderator, encryption);
  else {
    const sipUri = (place.where as { readonly sipUri: string }).sipUri;
    carry(
      call,
      `browser ${request.source}`,
      roomUri(sipUri, conferenceId),
      handoff as string,
      withdraw,
      options,
    );
  }
  logger.info(
    { conferenceId, attendeeId: attendee.id, moderator, source: request.source },
    "browser join: admitted",
  );
  const participant = { userId: place.userId, conferenceId, attendeeId: attendee.id, moderator };
  return { ...participant, answer: answered.answer, token: participants.add(participant, call) };
}
