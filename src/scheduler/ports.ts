/**
 * What the scheduler needs of the store, in its own types: claiming due conferences so that exactly
 * one instance starts each, the running instance's leases, the due conferences no instance had room
 * for, taking over the conferences of instances that died or stopped, and the instances alive
 * (store/scheduler-store.ts implements it).
 */
import type { Conference } from "../domain/conference.js";
import type { RecoveryDetails } from "../domain/event.js";

/** A conference just claimed, with how many attendees it has (the room it takes). */
export interface ClaimedConference {
  readonly conference: Conference;
  readonly attendees: number;
  /** The lease it is run under: the generation its room writes with (store/leases.ts). */
  readonly lease: number;
}

/** A conference taken over from an instance that fell silent or handed it over. */
export interface TakenOverConference extends ClaimedConference {
  /**
   * The attendees the service had called that were connected when the runner went: the new room
   * calls them back into the room. (Callers who dialled in call again.)
   */
  readonly callBack: readonly number[];
  /** Those it was still calling (ringing, at the greeting): called again as at first. */
  readonly redial: readonly number[];
  readonly recovery: RecoveryDetails;
}

/** A lease this instance still holds, as the store says. */
export interface HeldLease {
  readonly conferenceId: number;
  readonly lease: number;
}

/** Who claims a conference. */
export interface Claimant {
  /** The instance's name as the runner. */
  readonly runner: string;
  /** Where the instance takes calls for its rooms. */
  readonly sipUri: string | null;
  /** Participants it can still take on: it claims only a conference whose attendees fit; null for no limit. */
  readonly room: number | null;
}

/** A due conference that no instance has claimed, each being full. */
export interface DelayedConference {
  readonly id: number;
  readonly attendees: number;
  readonly scheduledToStartAt: string;
}

export interface RecoveredConference {
  id: number;
  name: string;
  runner: string | null;
  disconnectedAttendees: number;
}

export interface SchedulerStore {
  /**
   * Starts the next pending conference whose time has come, if any, with `claimant` as its runner;
   * a conference is claimed by one instance only, and only when its attendees fit the claimant's room.
   */
  claimDueConference(claimant: Claimant, now: Date): Promise<ClaimedConference | undefined>;
  /**
   * Marks the pending conferences due since before `dueBefore` (left by every instance) delayed, once
   * after each scheduled start; returns those marked now.
   */
  markDelayedConferences(dueBefore: Date, now: Date): Promise<DelayedConference[]>;
  /**
   * The running instance says it still runs its conferences (their leases run on from `now`), and
   * learns which it still holds: a conference taken over meanwhile is not among them.
   */
  renewLeases(runner: string, now: Date): Promise<HeldLease[]>;
  /**
   * Takes over the started conferences whose runner is gone, one at a time, as far as `claimant`'s
   * room allows: this instance's own before a restart (`ownRunner`), those handed over, and (with
   * `silentBefore`) those whose runner has been silent since then. One whose runner was last heard of
   * before `endBefore` is ended instead (its calls long gone, nobody is called back).
   */
  takeOverConferences(
    claimant: Claimant,
    gone: { readonly ownRunner?: string; readonly silentBefore?: Date; readonly endBefore: Date },
    now: Date,
  ): Promise<{ takenOver: TakenOverConference[]; ended: RecoveredConference[] }>;
  /**
   * Hands these conferences of `runner`'s over (it is stopping): another instance takes them at
   * once. Their leases end here, so the rooms' own writes are refused from now on.
   */
  releaseLeases(runner: string, leases: readonly HeldLease[], now: Date): Promise<void>;
  /**
   * Records that `instance` is alive at its SIP URI, forgets the instances silent since `staleBefore`,
   * and returns the SIP URIs of the other instances alive.
   */
  renewSipInstance(
    instance: { readonly runner: string; readonly sipUri: string },
    staleBefore: Date,
    now: Date,
  ): Promise<string[]>;
}
