/** The store's functions a conference uses, bound to one store (see ConferenceStore in ports.ts). */
import {
  endConference,
  loadRoom,
  ownerName,
  recordAttendeeCall,
  recordAttendeeControls,
  recordConferenceControls,
} from "../store/conference-runtime.js";
import type { Store } from "../store/database.js";
import {
  admitCaller,
  createHandoff,
  findPinTarget,
  roomLocation,
  takeHandoff,
  withdrawAdmission,
} from "../store/dial-in.js";
import { appendEvent } from "../store/events.js";
import { roomEvent } from "../store/live-events.js";
import { endPlacedCall, reservePlacedCalls } from "../store/placed-calls.js";
import { setRecordingFile } from "../store/recordings.js";
import type { ConferenceStore } from "./ports.js";

export function conferenceStore(store: Store): ConferenceStore {
  return {
    loadRoom: (conferenceId) => loadRoom(store, conferenceId),
    ownerName: (userId) => ownerName(store, userId),
    recordAttendeeCall: (scope, attendeeId, event, at) =>
      recordAttendeeCall(store, scope, attendeeId, event, at),
    recordAttendeeControls: (scope, attendeeId, controls, at) =>
      recordAttendeeControls(store, scope, attendeeId, controls, at),
    recordConferenceControls: (scope, controls, at, reason) =>
      recordConferenceControls(store, scope, controls, at, reason),
    endConference: (scope, reason, at) => endConference(store, scope, reason, at),
    reservePlacedCalls: (scope, attendeeIds, policy, at) =>
      reservePlacedCalls(store, scope, attendeeIds, policy, at),
    endPlacedCall: (placedCallId, at) => endPlacedCall(store, placedCallId, at),
    appendEvent: (scope, attendeeId, type, at) => appendEvent(store, roomEvent(scope, type, attendeeId), at),
    setRecordingFile: (conferenceId, fileName) => setRecordingFile(store, conferenceId, fileName),
    findPinTarget: (pin) => findPinTarget(store, pin),
    admitCaller: (conferenceId, caller, moderator, at) =>
      admitCaller(store, conferenceId, caller, moderator, at),
    roomLocation: (conferenceId) => roomLocation(store, conferenceId),
    createHandoff: (handoff, at) => createHandoff(store, handoff, at),
    takeHandoff: (token, at) => takeHandoff(store, token, at),
    withdrawAdmission: (token, addedAttendeeId, at) => withdrawAdmission(store, token, addedAttendeeId, at),
  };
}
