/**
 * The join page (/join?conference=12&pin=123456): joins a conference by PIN with this browser's
 * microphone, then shows the room. What it shows (muted, hands, talkers, the room's controls) comes
 * from the conference's event stream; its buttons press the phone's keypad commands over the call.
 */
import { render } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { RUNNER_GONE_REASON } from "../../src/domain/event.js";
import type { KeypadCommand } from "../../src/domain/keypad.js";
import {
  type BrowserCall,
  joinCall,
  type Refusal,
  type RoomAttendee,
  type RoomState,
  roomState,
} from "./browser-call.js";
import { type LiveEvent, useDebounced, useEventStream } from "./live.js";

/** How the page stands, as #status's data-state says it (for people: its text). */
type Phase = "idle" | "joining" | "connecting" | "in-room" | "refused" | "over";

interface Status {
  phase: Phase;
  text: string;
}

/** What a person is told for a wait: "30 seconds", "14 minutes". */
function waitWords(seconds: number | null): string {
  if (seconds === null) return "a little while";
  if (seconds < 90) return `${Math.ceil(seconds)} seconds`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

/** The words for a refusal; `wrongPins` counts this page's wrong PINs so far, this one included. */
function refusalWords(refusal: Refusal, wrongPins: number): string {
  switch (refusal.error) {
    case "wrong-pin":
    case "bad-pin":
      return `That PIN is not right (${wrongPins} wrong ${wrongPins === 1 ? "try" : "tries"}). Check the PIN in your invitation and try again; after too many wrong tries you must wait before trying again.`;
    case "too-many-wrong-pins":
      return `Too many wrong PINs were tried from your network. Try again in ${waitWords(refusal.retryAfterSeconds)}.`;
    case "service-wrong-pins":
      return `The service is refusing PINs for a moment because of many wrong tries. Try again in ${waitWords(refusal.retryAfterSeconds)}.`;
    case "too-many-requests":
      return `Too many attempts to join from your network. Try again in ${waitWords(refusal.retryAfterSeconds)}.`;
    case "not-started":
      return "This conference has not started yet. Try again when it has.";
    case "locked":
      return "The conference is locked: the moderator is letting no one else in.";
    case "full":
      return "The conference is full.";
    case "bad-offer":
      return `Your browser's call could not be set up: ${refusal.message}`;
    case "unavailable":
      return `Joining from a browser is not possible right now. Try again in ${waitWords(refusal.retryAfterSeconds)}.`;
    default:
      return refusal.message;
  }
}

function nameOf(attendee: RoomAttendee, ownId: number): string {
  if (attendee.id === ownId) return "You";
  return attendee.name ?? `Caller ${attendee.id}`;
}

/** The room after one event; undefined when the event changes who is in it (read the room again). */
function applyEvent(room: RoomState, event: LiveEvent): RoomState | undefined {
  const attendee = (change: Partial<RoomAttendee>) => {
    if (!room.attendees.some((one) => one.id === event.attendeeId)) return undefined;
    return {
      ...room,
      attendees: room.attendees.map((one) => (one.id === event.attendeeId ? { ...one, ...change } : one)),
    };
  };
  const controls = (change: Partial<RoomState["controls"]>) => ({
    ...room,
    controls: { ...room.controls, ...change },
  });
  switch (event.type) {
    case "talking-started":
      return attendee({ talking: true });
    case "talking-stopped":
      return attendee({ talking: false });
    case "attendee-muted":
      return attendee({ muted: true, talking: false });
    case "attendee-unmuted":
      return attendee({ muted: false });
    case "hand-raised":
      return attendee({ handUp: true });
    case "hand-lowered":
      return attendee({ handUp: false });
    case "dial-in-locked":
      return controls({ dialInLocked: true });
    case "dial-in-unlocked":
      return controls({ dialInLocked: false });
    case "lecture-mode-on":
      return controls({ lectureMode: true });
    case "lecture-mode-off":
      return controls({ lectureMode: false });
    case "recording-started":
      return controls({ recording: true });
    case "recording-stopped":
      return controls({ recording: false });
    case "encrypted-only-on":
      return controls({ encryptedOnly: true });
    case "encrypted-only-off":
      return controls({ encryptedOnly: false });
    default:
      return undefined;
  }
}

function JoinPage() {
  const query = new URLSearchParams(location.search);
  const conference = query.get("conference");
  const [pin, setPin] = useState(query.get("pin") ?? "");
  const [status, setStatus] = useState<Status>({
    phase: "idle",
    text: "Enter the conference's PIN to join.",
  });
  const [problem, setProblem] = useState("");
  const [call, setCall] = useState<BrowserCall | null>(null);
  /** The call as of now, for the handlers that end it (state is as of the last render). */
  const callRef = useRef<BrowserCall | null>(null);
  const wrongPins = useRef(0);
  const remoteAudio = useRef<HTMLAudioElement>(null);
  const pinInput = useRef<HTMLInputElement>(null);

  useEffect(() => {
    // The PIN is a secret: kept out of the history and of what is shared from the address bar.
    if (query.has("pin")) {
      query.delete("pin");
      const rest = query.toString();
      history.replaceState(null, "", `${location.pathname}${rest === "" ? "" : `?${rest}`}`);
    }
    pinInput.current?.focus();
  }, []);

  const ended = useCallback((how: string) => {
    callRef.current?.close();
    callRef.current = null;
    setCall(null);
    setStatus({ phase: "over", text: how });
    requestAnimationFrame(() => pinInput.current?.focus());
  }, []);

  const join = async (event: Event) => {
    event.preventDefault();
    const audio = remoteAudio.current;
    if (status.phase === "joining" || status.phase === "connecting" || status.phase === "in-room" || !audio)
      return;
    setProblem("");
    // Made in the click, where the browser lets audio start.
    const audioContext = new AudioContext();
    setStatus({ phase: "joining", text: "Joining…" });
    try {
      const outcome = await joinCall(pin.trim(), audio, audioContext, (step) =>
        setStatus({ phase: "joining", text: step }),
      );
      if (!outcome.joined) {
        if (outcome.refusal.error === "wrong-pin" || outcome.refusal.error === "bad-pin")
          wrongPins.current += 1;
        setProblem(refusalWords(outcome.refusal, wrongPins.current));
        setStatus({ phase: "refused", text: "Not joined." });
        pinInput.current?.focus();
        return;
      }
      wrongPins.current = 0;
      const joined = outcome.call;
      callRef.current = joined;
      setCall(joined);
      const connected = () => setStatus({ phase: "in-room", text: "in the room" });
      joined.onConnectionState((state) => {
        if (state === "connected") connected();
        else if (state === "failed") {
          void joined.leave();
          ended("The call's connection was lost. Join again to go back in.");
        }
      });
      if (joined.connectionState === "connected") connected();
      else setStatus({ phase: "connecting", text: "Connecting the audio…" });
    } catch (error) {
      setProblem((error as Error).message);
      setStatus({ phase: "refused", text: "Not joined." });
    }
  };

  useEffect(() => {
    if (call === null) return;
    const leaveWithThePage = () => call.leaveAsThePageCloses();
    addEventListener("pagehide", leaveWithThePage);
    return () => removeEventListener("pagehide", leaveWithThePage);
  }, [call]);

  const inCall = call !== null;
  const busy = status.phase === "joining";
  return (
    <main>
      <h1>Join {conference === null ? "a conference" : `conference ${conference}`}</h1>
      <p id="status" data-state={status.phase} role="status" aria-live="polite">
        {status.text}
      </p>
      {problem !== "" && (
        <p id="problem" class="error" role="alert">
          {problem}
        </p>
      )}
      {!inCall && (
        <form class="join" onSubmit={join}>
          <label for="pin">PIN</label>
          <input
            id="pin"
            ref={pinInput}
            inputMode="numeric"
            autocomplete="off"
            pattern="[0-9]{1,12}"
            maxLength={12}
            required
            aria-describedby="pin-hint"
            value={pin}
            onInput={(event) => setPin(event.currentTarget.value)}
          />
          <p id="pin-hint" class="hint">
            The member or moderator PIN from your invitation. Your browser will ask to use the microphone.
          </p>
          <button id="join" type="submit" class="primary" disabled={busy}>
            {busy ? "Joining…" : "Join"}
          </button>
        </form>
      )}
      {call !== null && (
        <Room
          key={call.token}
          call={call}
          connected={status.phase === "in-room"}
          onOver={ended}
          onLeave={async () => {
            await call.leave();
            ended("You left the conference.");
          }}
        />
      )}
      {/* biome-ignore lint/a11y/useMediaCaption: live call audio has no captions to offer */}
      <audio id="remote-audio" ref={remoteAudio} autoplay />
    </main>
  );
}

function Room({
  call,
  connected,
  onOver,
  onLeave,
}: {
  call: BrowserCall;
  connected: boolean;
  onOver: (how: string) => void;
  onLeave: () => Promise<void>;
}) {
  const [room, setRoom] = useState<RoomState | null>(null);
  /** The room as of the last event, for the next one (state is as of the last render). */
  const roomRef = useRef<RoomState | null>(null);
  const show = useCallback((next: RoomState) => {
    roomRef.current = next;
    setRoom(next);
  }, []);
  const [notice, setNotice] = useState("");
  const [confirmingEnd, setConfirmingEnd] = useState(false);
  const [leaving, setLeaving] = useState(false);
  const [level, setLevel] = useState(0);
  const heading = useRef<HTMLHeadingElement>(null);
  const confirmButton = useRef<HTMLButtonElement>(null);

  const load = useCallback(async () => {
    try {
      const read = await roomState(call);
      if (read === null) onOver("Your call has ended.");
      else show(read);
    } catch (error) {
      setNotice((error as Error).message);
    }
  }, [call, onOver, show]);
  const reload = useDebounced(load, 100);
  useEffect(() => {
    heading.current?.focus();
  }, []);
  useEffect(() => {
    if (confirmingEnd) confirmButton.current?.focus();
  }, [confirmingEnd]);
  useEffect(() => {
    const timer = setInterval(() => setLevel(call.level()), 100);
    return () => clearInterval(timer);
  }, [call]);

  const onEvent = useCallback(
    (event: LiveEvent) => {
      if (event.type === "conference-ended") {
        onOver("The conference has ended.");
        return;
      }
      if (
        event.attendeeId === call.attendeeId &&
        (event.type === "attendee-disconnected" || event.type === "attendee-removed")
      ) {
        onOver(
          event.reason === RUNNER_GONE_REASON
            ? "The service lost your call. Join again to go back in."
            : "Your call was ended by the moderator.",
        );
        return;
      }
      const before = roomRef.current;
      const after = before === null ? undefined : applyEvent(before, event);
      if (after === undefined) reload();
      else show(after);
    },
    [call, onOver, reload, show],
  );
  // The room is read when the view opens, and again whenever the stream comes back (onResync).
  useEventStream(`${call.path}/events`, onEvent, load);
  useEffect(() => {
    load();
  }, [load]);

  const press = (command: KeypadCommand) => {
    setNotice(call.press(command) ? "" : "The call is not connected yet; try again in a moment.");
  };

  const me = room?.attendees.find((attendee) => attendee.id === call.attendeeId);
  const muted = me?.muted === true;
  const handUp = me?.handUp === true;
  const controls = room?.controls;
  const present = room?.attendees.filter((attendee) => attendee.state === "connected") ?? [];
  const talkers = present.filter((attendee) => attendee.talking);
  return (
    <section aria-labelledby="room-heading">
      <h2 id="room-heading" ref={heading} tabIndex={-1}>
        {room?.conferenceName ?? "The conference"}
      </h2>
      {!connected && <p class="hint">Connecting the audio…</p>}
      <p class="notice" role="status" aria-live="polite">
        {notice}
      </p>

      <div class="level">
        <label for="level">Your microphone</label>
        <meter id="level" min={0} max={1} low={0.25} high={0.9} optimum={0.5} value={level} />
        <span>{muted ? "You are muted" : ""}</span>
      </div>

      {/* Toggle buttons: the label stays, aria-pressed (from the events) says whether it is on. */}
      <fieldset class="controls">
        <legend class="visually-hidden">Your call</legend>
        <button id="mute" type="button" aria-pressed={muted} onClick={() => press("toggle-mute")}>
          Mute
        </button>
        <button id="hand" type="button" aria-pressed={handUp} onClick={() => press("toggle-hand")}>
          Raise hand
        </button>
        <button
          id="leave"
          type="button"
          class="danger"
          disabled={leaving}
          onClick={async () => {
            setLeaving(true);
            await onLeave();
          }}
        >
          Leave
        </button>
      </fieldset>
      {controls?.lectureMode && !call.moderator && (
        <p class="hint">Lecture mode: only the moderator speaks. Raise your hand to ask to speak.</p>
      )}

      {call.moderator && controls !== undefined && (
        <fieldset class="controls">
          <legend class="visually-hidden">The room (moderator)</legend>
          <button
            id="lock"
            type="button"
            aria-pressed={controls.dialInLocked}
            onClick={() => press("toggle-lock")}
          >
            Lock the room
          </button>
          <button
            id="lecture"
            type="button"
            aria-pressed={controls.lectureMode}
            onClick={() => press("toggle-lecture")}
          >
            Lecture mode
          </button>
          <button
            id="record"
            type="button"
            aria-pressed={controls.recording}
            onClick={() => press("toggle-recording")}
          >
            Record
          </button>
          {confirmingEnd ? (
            <span class="confirm">
              <button
                id="end-confirm"
                ref={confirmButton}
                type="button"
                class="danger"
                onClick={() => {
                  setConfirmingEnd(false);
                  press("end-conference");
                }}
              >
                End for everyone
              </button>
              <button type="button" onClick={() => setConfirmingEnd(false)}>
                Cancel
              </button>
            </span>
          ) : (
            <button id="end" type="button" class="danger" onClick={() => setConfirmingEnd(true)}>
              End conference
            </button>
          )}
        </fieldset>
      )}
      {controls !== undefined && (
        <p class="hint">
          {controls.dialInLocked ? "Locked" : "Open"} · {controls.recording ? "Recording" : "Not recording"}
          {controls.lectureMode ? " · Lecture mode" : ""}
        </p>
      )}

      <h3 id="talkers-heading">Talking now</h3>
      <ul id="talkers" class="talkers" aria-labelledby="talkers-heading">
        {talkers.map((attendee) => (
          <li key={attendee.id} data-attendee-id={attendee.id}>
            {nameOf(attendee, call.attendeeId)}
          </li>
        ))}
      </ul>
      {talkers.length === 0 && <p class="hint">Nobody is talking.</p>}

      <h3 id="people-heading">In the room ({present.length})</h3>
      <ul id="attendees" class="people" aria-labelledby="people-heading">
        {present.map((attendee) => (
          <li key={attendee.id} data-attendee-id={attendee.id}>
            {nameOf(attendee, call.attendeeId)}
            {attendee.moderator && <span class="badge">moderator</span>}
            {attendee.muted && <span class="badge">muted</span>}
            {attendee.handUp && <span class="badge hand">hand raised</span>}
          </li>
        ))}
      </ul>
    </section>
  );
}

const root = document.getElementById("app");
if (root !== null) render(<JoinPage />, root);
