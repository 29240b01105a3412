/**
 * A caller who dials an access number: PIN prompt (keys typed during it count), three tries, then
 * into the room the PIN opens as member or moderator, matched to a dial-in attendee by caller ID or
 * added as one, so that the API and the console see everyone in the room.
 */
import { normalizeNanpNumber } from "../../domain/phone.js";
import type { Store } from "../../store/database.js";
import { admitCaller, findPinTarget } from "../../store/dial-in.js";
import type { IncomingCall } from "../call.js";
import { concatPrompts, prompt } from "../media/prompts.js";
import { CallMenu } from "./call-menu.js";
import type { ConferenceRoom, RoomLogger } from "./conference-room.js";

export interface DialInOptions {
  readonly store: Store;
  readonly logger: RoomLogger;
  /** The room of a conference this instance runs, if it does. */
  readonly roomOf: (conferenceId: number) => ConferenceRoom | undefined;
  /** The menu's 20 ms ticks are the runtime's: it calls the menu's `tick` while it is registered. */
  readonly register: (menu: CallMenu) => () => void;
}

const PIN_TRIES = 3;
const MAX_PIN_KEYS = 12;
const PIN_TIMEOUT_MS = 10_000;

export async function answerDialIn(call: IncomingCall, options: DialInOptions): Promise<void> {
  const { logger } = options;
  if (!(await call.accept())) return;
  const menu = new CallMenu(call);
  const unregister = options.register(menu);
  const farewell = async (...names: Parameters<typeof concatPrompts>[0]) => {
    menu.play(concatPrompts([...names, "goodbye"]));
    await menu.drained();
    call.hangup();
  };
  try {
    for (let attempt = 1; attempt <= PIN_TRIES; attempt++) {
      menu.play(prompt("enter-pin"));
      const pin = await menu.collect({ terminator: "#", maxKeys: MAX_PIN_KEYS, timeoutMs: PIN_TIMEOUT_MS });
      menu.stopPlaying();
      if (call.state !== "answered") return;
      const target = pin === "" ? undefined : await findPinTarget(options.store, pin);
      if (target === undefined) {
        logger.info({ from: call.from, attempt }, "dial-in: wrong PIN");
        if (attempt < PIN_TRIES) menu.play(prompt("invalid-pin"));
        continue;
      }
      const room = target.conferenceId === undefined ? undefined : options.roomOf(target.conferenceId);
      if (room === undefined || room.ended) {
        logger.info(
          { from: call.from, conferenceId: target.conferenceId },
          "dial-in: conference not in progress",
        );
        await farewell("not-started");
        return;
      }
      const moderator = target.role === "moderator";
      if (!moderator && room.conference.dialInLocked) {
        logger.info({ from: call.from, conferenceId: room.conferenceId }, "dial-in: conference locked");
        await farewell("conference-locked");
        return;
      }
      const nanp = normalizeNanpNumber(call.from);
      const attendee = await admitCaller(
        options.store,
        room.conferenceId,
        nanp === null ? null : { countryCode: nanp.countryCode, subscriberNumber: nanp.subscriberNumber },
        moderator,
        new Date(),
      );
      if (attendee === undefined || call.state !== "answered") {
        if (call.state === "answered") await farewell("conference-locked");
        return;
      }
      logger.info(
        { conferenceId: room.conferenceId, attendeeId: attendee.id, moderator },
        "dial-in: caller admitted",
      );
      menu.play(prompt("joining"));
      await menu.drained();
      unregister();
      menu.detach();
      room.admit(call, attendee, moderator);
      return;
    }
    logger.info({ from: call.from }, "dial-in: three wrong PINs");
    await farewell();
  } finally {
    unregister();
    menu.detach();
  }
}
