/**
 * The greeting of a dialled attendee when the conference does not dial direct: press 1 to join (two
 * tries of six seconds: an answering machine never presses it), a polite goodbye otherwise, and, when
 * the conference announces attendees, the caller's name recorded after a chime.
 */
import type { CallMenu } from "./call-menu.js";
import type { Sound } from "./ports.js";

/** Tries of the "press 1 to join" greeting before a polite goodbye. */
export const INVITATION_TRIES = 2;
export const INVITATION_WAIT_MS = 6_000;
export const NAME_RECORDING_MS = 4_000;

/** Whether the caller pressed 1. */
export async function askToJoin(menu: CallMenu, invitation: Sound): Promise<boolean> {
  for (let attempt = 0; attempt < INVITATION_TRIES; attempt++) {
    menu.play(invitation);
    const keys = await menu.collect({ maxKeys: 1, timeoutMs: INVITATION_WAIT_MS });
    menu.stopPlaying();
    if (keys === "1") return true;
  }
  return false;
}

/** "We did not hear your choice. Goodbye.", heard to the end. */
export async function sayNoResponse(menu: CallMenu): Promise<void> {
  menu.play({ prompts: ["no-response", "goodbye"] });
  await menu.drained();
}

/** "Say your name after the tone" and the chime, then up to four seconds of it ended by `#`; null for nothing. */
export async function recordName(menu: CallMenu): Promise<Int16Array | null> {
  menu.play({ prompts: ["record-name"] });
  await menu.drained();
  menu.play({ tone: "entry" });
  await menu.drained();
  const name = await menu.record(NAME_RECORDING_MS, "#");
  return name.length > 0 ? name : null;
}
