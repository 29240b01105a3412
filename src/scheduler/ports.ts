/**
 * What the scheduler needs of the store, in its own types: claiming due conferences so that exactly
 * one instance starts each, the running instance's heartbeat, the due conferences no instance had
 * room for, the conferences of instances that died, and the instances alive (store/scheduler-store.ts
 * implements it).
 */
import type { Conference } from "../domain/conference.js";

/** A conference just claimed, with how many attendees it has (the room it takes). */
export interface ClaimedConference {
  readonly conference: Conference;
  readonly attendees: number;
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
  /** The running instance says it still runs its conferences. */
  renewHeartbeat(runner: string, now: Date): Promise<void>;
  /**
   * Ends the started conferences whose runner is gone: this instance before a restart (`ownRunner`)
   * or any runner silent since `staleBefore`.
   */
  recoverAbandonedConferences(
    abandoned: { ownRunner?: string; staleBefore: Date },
    now: Date,
  ): Promise<RecoveredConference[]>;
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
