import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { RecoveryDetails } from "../../src/domain/event.js";
import {
  ApiError,
  type Attendee,
  accessNumbers,
  type Call,
  type Conference,
  escapeXml,
  hasRecording,
  items,
  readAttendee,
  readCall,
  readConference,
  type SessionUser,
  xml,
} from "./api.js";
import { clock, dateTimeFormat, milliseconds, percent } from "./format.js";
import { type LiveEvent, useDebounced, useEventStream } from "./live.js";
import { StreamState } from "./stream-state.js";

interface Notice {
  text: string;
  error: boolean;
}

/**
 * How an attendee's call is protected, shortly (the column is narrow) and in full (its title), and
 * how it is marked: full (TLS and SRTP), part (the voice or its keys can be read on the path), none.
 */
const ENCRYPTION: Record<
  string,
  { label: string; meaning: string; level: "full" | "part" | "none" } | undefined
> = {
  "tls+srtp": { label: "TLS + SRTP", meaning: "Signalling and audio encrypted", level: "full" },
  tls: { label: "TLS only", meaning: "Signalling encrypted, audio not", level: "part" },
  srtp: { label: "SRTP only", meaning: "Audio encrypted, its keys sent in plain SIP", level: "part" },
  none: { label: "None", meaning: "Nothing encrypted", level: "none" },
};

/** Attendee states in which a call is up or being placed, so that it can be hung up. */
const ON_A_CALL = new Set(["calling", "connected"]);

function nameOf(attendee: Attendee): string {
  return attendee.name ?? attendee.number ?? `Attendee ${attendee.id}`;
}

function secondsOnCall(attendee: Attendee, now: number): number | null {
  if (attendee.duration === null) return null;
  const since = attendee.state === "connected" ? (now - attendee.readAt) / 1000 : 0;
  return attendee.duration + Math.max(0, since);
}

/** A take-over as the moderator reads it: who runs the room now, after how long, who is called back. */
function recoveryWords({
  previousInstance,
  instance,
  gapSeconds,
  calledBack,
  cause,
}: RecoveryDetails): string {
  const previous = previousInstance ?? "the instance running it";
  const why =
    cause === "handed-over" ? `${previous} handed it over as it stopped` : `${previous} fell silent`;
  const callBack =
    calledBack === 0
      ? "nobody to call back"
      : `calling back ${calledBack} ${calledBack === 1 ? "attendee" : "attendees"}`;
  return `Taken over by ${instance} after ${gapSeconds} s (${why}); ${callBack}. Callers who dialled in call again.`;
}

function xmlBoolean(element: string, value: boolean): string {
  return `<${element} type="boolean">${value}</${element}>`;
}

export function ConferenceView({ user, conferenceId }: { user: SessionUser; conferenceId: number }) {
  const path = `/users/${user.id}/conferences/${conferenceId}`;
  const [conference, setConference] = useState<Conference | null>(null);
  const [attendees, setAttendees] = useState<Attendee[]>([]);
  const [calls, setCalls] = useState<Call[]>([]);
  const [recording, setRecording] = useState(false);
  const [talking, setTalking] = useState<ReadonlySet<number>>(new Set());
  const [loadError, setLoadError] = useState("");
  const [notice, setNotice] = useState<Notice>({ text: "", error: false });
  const [confirmingEnd, setConfirmingEnd] = useState(false);
  const [now, setNow] = useState(Date.now());
  const [numbers, setNumbers] = useState<string[] | null>(null);
  const format = useMemo(() => dateTimeFormat(user.timeZone), [user.timeZone]);
  const heading = useRef<HTMLHeadingElement>(null);
  const endButton = useRef<HTMLButtonElement>(null);
  const confirmButton = useRef<HTMLButtonElement>(null);

  const load = useCallback(async () => {
    try {
      const [one, all, recorded, records] = await Promise.all([
        xml("GET", path),
        xml("GET", `${path}/attendees`),
        hasRecording(`${path}/recording`),
        xml("GET", `${path}/calls`),
      ]);
      const readAt = Date.now();
      if (one !== null) setConference(readConference(one));
      setAttendees(items(all).map((element) => readAttendee(element, readAt)));
      setRecording(recorded);
      setCalls(items(records).map(readCall));
      setNow(readAt);
      setLoadError("");
    } catch (caught) {
      setLoadError(
        caught instanceof ApiError && caught.status === 404
          ? "There is no such conference."
          : `The conference could not be read: ${(caught as Error).message}`,
      );
    }
  }, [path]);
  useEffect(() => {
    load();
  }, [load]);
  useEffect(() => {
    accessNumbers().then(setNumbers, () => setNumbers([]));
  }, []);
  const reload = useDebounced(load, 100);

  const onEvent = useCallback(
    (event: LiveEvent) => {
      if (event.type === "talking-started" || event.type === "talking-stopped") {
        const id = event.attendeeId;
        if (id === null) return;
        setTalking((before) => {
          const after = new Set(before);
          if (event.type === "talking-started") after.add(id);
          else after.delete(id);
          return after;
        });
        return;
      }
      if (event.type === "conference-ended") setTalking(new Set());
      else if (event.type === "conference-recovered" && event.recovery !== undefined)
        setNotice({ text: recoveryWords(event.recovery), error: false });
      else if (
        event.attendeeId !== null &&
        (event.type === "attendee-disconnected" ||
          event.type === "attendee-removed" ||
          event.type === "attendee-muted")
      ) {
        const gone = event.attendeeId;
        setTalking((before) => new Set([...before].filter((id) => id !== gone)));
      }
      reload();
    },
    [reload],
  );
  const status = useEventStream(`${path}/events`, onEvent, reload);

  // The recording file appears a moment after recording starts, with no event of its own: look again.
  const awaitingRecording = conference?.state === "started" && conference.recordAudio && !recording;
  useEffect(() => {
    if (!awaitingRecording) return;
    const timer = setInterval(async () => {
      if (await hasRecording(`${path}/recording`).catch(() => false)) setRecording(true);
    }, 2000);
    return () => clearInterval(timer);
  }, [awaitingRecording, path]);

  const anyoneConnected = attendees.some((attendee) => attendee.state === "connected");
  useEffect(() => {
    if (!anyoneConnected) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [anyoneConnected]);

  const title = conference?.name;
  useEffect(() => {
    document.title = `${title ?? "Conference"} — Bridgeline console`;
  }, [title]);
  useEffect(() => {
    heading.current?.focus();
  }, []);
  useEffect(() => {
    if (confirmingEnd) confirmButton.current?.focus();
  }, [confirmingEnd]);

  /** Runs a change, says how it went, and reads the conference again. */
  const act = async (done: string, failed: string, change: () => Promise<unknown>) => {
    try {
      await change();
      setNotice({ text: done, error: false });
    } catch (caught) {
      setNotice({ text: `${failed}: ${(caught as Error).message}`, error: true });
    }
    reload();
  };

  const putConference = (body: string) => xml("PUT", path, `<conference>${body}</conference>`);
  const putAttendee = (attendee: Attendee, body: string) =>
    xml("PUT", `${path}/attendees/${attendee.id}`, `<attendee>${body}</attendee>`);

  if (conference === null) {
    return (
      <main>
        <p>
          <a href="#/">← All conferences</a>
        </p>
        <h1 ref={heading} tabIndex={-1}>
          Conference
        </h1>
        {loadError === "" ? (
          <p>Loading…</p>
        ) : (
          <p class="error" role="alert">
            {loadError}
          </p>
        )}
      </main>
    );
  }

  const started = conference.state === "started";
  const ended = conference.state === "ended";
  const moment = (label: string, value: Date | null) =>
    value === null ? null : (
      <>
        <dt>{label}</dt>
        <dd>{format.format(value)}</dd>
      </>
    );

  return (
    <main>
      <p>
        <a href="#/">← All conferences</a>
      </p>
      <div class="title-row">
        <h1 ref={heading} tabIndex={-1}>
          {conference.name}
        </h1>
        <StreamState status={status} />
      </div>
      <dl class="facts">
        <dt>State</dt>
        <dd>
          <span class={`badge state-${conference.state}`}>{conference.state}</span>
        </dd>
        {moment("Scheduled", conference.scheduledToStartAt)}
        {moment("Started", conference.startedAt)}
        {moment("Ended", conference.endedAt)}
      </dl>
      {started && conference.moderatorPin !== null && (
        <p>
          {/* A link, not a button: it opens the join page, with the moderator PIN filled in. */}
          <a
            id="join-from-browser"
            class="button"
            href={`/join?conference=${conference.id}&pin=${encodeURIComponent(conference.moderatorPin)}`}
            target="_blank"
            rel="noopener noreferrer"
          >
            Join from this browser
          </a>{" "}
          <span class="hint">(opens a new tab, as moderator)</span>
        </p>
      )}
      {loadError !== "" && (
        <p class="error" role="alert">
          {loadError}
        </p>
      )}
      <p class={notice.error ? "notice error" : "notice"} role="status" aria-live="polite">
        {notice.text}
      </p>

      <section aria-labelledby="attendees-heading">
        <h2 id="attendees-heading">Attendees ({attendees.length})</h2>
        {started && <p class="hint">Hang up also removes the attendee from the conference.</p>}
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Number</th>
              <th scope="col">Location</th>
              <th scope="col">State</th>
              <th scope="col">Encryption</th>
              <th scope="col">Time on call</th>
              <th scope="col">Muted</th>
              <th scope="col">Hand</th>
              <th scope="col">Talking</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {attendees.map((attendee) => {
              const name = nameOf(attendee);
              const seconds = secondsOnCall(attendee, now);
              const isTalking = talking.has(attendee.id) && attendee.state === "connected";
              return (
                <tr key={attendee.id} data-attendee={attendee.id}>
                  <th scope="row" data-label="Name">
                    {name}
                    {attendee.moderator && <span class="badge">moderator</span>}
                  </th>
                  <td data-label="Number" class="nowrap">
                    {attendee.number ?? (attendee.dialIn ? "dials in" : "—")}
                  </td>
                  <td data-label="Location">{attendee.location ?? "—"}</td>
                  <td data-label="State">
                    <span class={`badge state-${attendee.state}`}>{attendee.state}</span>
                  </td>
                  <td data-label="Encryption" class="nowrap">
                    {attendee.encryption === null ? (
                      "—"
                    ) : (
                      <span
                        class={`badge encryption-${ENCRYPTION[attendee.encryption]?.level ?? "none"}`}
                        title={ENCRYPTION[attendee.encryption]?.meaning}
                      >
                        {ENCRYPTION[attendee.encryption]?.label ?? attendee.encryption}
                      </span>
                    )}
                  </td>
                  <td data-label="Time on call" class="numeric">
                    {seconds === null ? "—" : clock(seconds)}
                  </td>
                  <td data-label="Muted">
                    {attendee.muted === null ? "—" : attendee.muted ? "Muted" : "No"}
                  </td>
                  <td data-label="Hand">{attendee.handUp ? <span class="badge hand">Raised</span> : "—"}</td>
                  <td data-label="Talking">
                    {isTalking ? (
                      <span class="talking">
                        <span class="bars" aria-hidden="true">
                          <span />
                          <span />
                          <span />
                        </span>
                        Talking
                      </span>
                    ) : (
                      "—"
                    )}
                  </td>
                  <td data-label="Actions">
                    <div class="actions">
                      {started && attendee.state === "connected" && (
                        <button
                          type="button"
                          aria-label={`${attendee.muted ? "Unmute" : "Mute"} ${name}`}
                          onClick={() =>
                            act(
                              `${attendee.muted ? "Unmuted" : "Muted"} ${name}.`,
                              `Could not ${attendee.muted ? "unmute" : "mute"} ${name}`,
                              () => putAttendee(attendee, xmlBoolean("muted", !attendee.muted)),
                            )
                          }
                        >
                          {attendee.muted ? "Unmute" : "Mute"}
                        </button>
                      )}
                      {started && attendee.state === "connected" && attendee.handUp && (
                        <button
                          type="button"
                          aria-label={`Lower ${name}'s hand`}
                          onClick={() =>
                            act(`Lowered ${name}'s hand.`, `Could not lower ${name}'s hand`, () =>
                              putAttendee(attendee, xmlBoolean("hand-up", false)),
                            )
                          }
                        >
                          Lower hand
                        </button>
                      )}
                      {started && ON_A_CALL.has(attendee.state) && (
                        <button
                          type="button"
                          class="danger"
                          aria-label={`Hang up ${name}`}
                          onClick={() =>
                            act(
                              `Hung up ${name} and removed them from the conference.`,
                              `Could not hang up ${name}`,
                              () => xml("DELETE", `${path}/attendees/${attendee.id}`),
                            )
                          }
                        >
                          Hang up
                        </button>
                      )}
                      {started && !ON_A_CALL.has(attendee.state) && attendee.number !== null && (
                        <button
                          type="button"
                          aria-label={`Call ${name} ${attendee.state === "new" ? "now" : "again"}`}
                          onClick={() =>
                            act(`Calling ${name}.`, `Could not call ${name}`, () =>
                              xml("POST", `${path}/attendees/${attendee.id}/call`),
                            )
                          }
                        >
                          {attendee.state === "new" ? "Call now" : "Call again"}
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>

      {(started || ended) && (
        <Calls path={path} calls={calls} attendees={attendees} format={format} ended={ended} />
      )}

      {!ended && <AddAttendee path={path} started={started} act={act} />}

      {!ended && (
        <section aria-labelledby="room-heading">
          <h2 id="room-heading">Room</h2>
          <ul class="settings">
            <li>
              <span>Dial-in: {conference.dialInLocked ? "locked (members are refused)" : "open"}</span>
              <button
                type="button"
                onClick={() =>
                  act(
                    conference.dialInLocked ? "Dial-in unlocked." : "Dial-in locked.",
                    "Could not change dial-in",
                    () => putConference(xmlBoolean("dial-in-locked", !conference.dialInLocked)),
                  )
                }
              >
                {conference.dialInLocked ? "Unlock dial-in" : "Lock dial-in"}
              </button>
            </li>
            <li>
              <span>Lecture mode: {conference.lectureMode ? "on (only the moderator speaks)" : "off"}</span>
              <button
                type="button"
                onClick={() =>
                  act(
                    conference.lectureMode ? "Lecture mode off." : "Lecture mode on.",
                    "Could not change lecture mode",
                    () => putConference(xmlBoolean("lecture-mode", !conference.lectureMode)),
                  )
                }
              >
                {conference.lectureMode ? "Turn lecture mode off" : "Turn lecture mode on"}
              </button>
            </li>
            <li>
              <span>
                Encrypted calls only:{" "}
                {conference.encryptedOnly ? "on (calls not over TLS with SRTP are refused)" : "off"}
              </span>
              <button
                type="button"
                onClick={() =>
                  act(
                    conference.encryptedOnly
                      ? "Unencrypted calls are allowed."
                      : "Only encrypted calls are taken; the others are hung up.",
                    "Could not change encryption",
                    () => putConference(xmlBoolean("encrypted-only", !conference.encryptedOnly)),
                  )
                }
              >
                {conference.encryptedOnly ? "Allow unencrypted calls" : "Take encrypted calls only"}
              </button>
            </li>
            <li>
              <span>Recording: {conference.recordAudio ? "on" : "off"}</span>
              <button
                type="button"
                onClick={() =>
                  act(
                    conference.recordAudio ? "Recording stopped." : "Recording started.",
                    "Could not change recording",
                    () => putConference(xmlBoolean("record-audio", !conference.recordAudio)),
                  )
                }
              >
                {conference.recordAudio ? "Stop recording" : "Start recording"}
              </button>
            </li>
          </ul>
          {started &&
            (confirmingEnd ? (
              <fieldset class="confirm">
                <legend>End the conference for everyone? Every call is hung up.</legend>
                <button
                  ref={confirmButton}
                  type="button"
                  class="danger"
                  onClick={() => {
                    setConfirmingEnd(false);
                    act("Conference ended.", "Could not end the conference", () =>
                      xml("POST", `${path}/end`),
                    );
                  }}
                >
                  End for everyone
                </button>
                <button
                  type="button"
                  onClick={() => {
                    setConfirmingEnd(false);
                    requestAnimationFrame(() => endButton.current?.focus());
                  }}
                >
                  Cancel
                </button>
              </fieldset>
            ) : (
              <button ref={endButton} type="button" class="danger" onClick={() => setConfirmingEnd(true)}>
                End conference
              </button>
            ))}
        </section>
      )}

      <section aria-labelledby="share-heading">
        <h2 id="share-heading">Joining by phone</h2>
        <p class="hint">Callers dial an access number, then enter a PIN followed by #.</p>
        <dl class="facts">
          <dt>Access numbers</dt>
          <dd>
            {numbers === null
              ? "…"
              : numbers.length === 0
                ? "none configured (BRIDGELINE_ACCESS_NUMBERS)"
                : numbers.join(", ")}
          </dd>
          <dt>Member PIN</dt>
          <dd class="pin">{conference.memberPin ?? "—"}</dd>
          <dt>Moderator PIN</dt>
          <dd class="pin">{conference.moderatorPin ?? "—"}</dd>
        </dl>
      </section>

      <section aria-labelledby="recording-heading">
        <h2 id="recording-heading">Recording</h2>
        {recording ? (
          <>
            {/* biome-ignore lint/a11y/useMediaCaption: a recording of a phone call has no captions to offer */}
            <audio controls preload="none" src={`${path}/recording`} aria-label="Conference recording" />
            <p>
              <a href={`${path}/recording`} download>
                Download the recording (WAV)
              </a>
            </p>
          </>
        ) : (
          <p class="hint">No recording yet.</p>
        )}
      </section>
    </main>
  );
}

const DIRECTION: Record<Call["direction"], string> = {
  outbound: "Outbound",
  inbound: "Inbound",
  browser: "Browser",
};

/** How a call ended, line by line: its SIP outcome, the cause given, and who hung up and why. */
function outcomeLines(call: Call): string[] {
  const status = `${call.sipStatus} ${call.sipReason}`;
  const lines = [status];
  const { cause } = call;
  if (cause !== null)
    lines.push(`${cause.protocol} ${cause.cause}${cause.text === null ? "" : `: ${cause.text}`}`);
  // An attendee's BYE is just "hung up": said once.
  if (call.hungUpBy !== null)
    lines.push(`Hung up by the ${call.hungUpBy}${call.endReason === "hung up" ? "" : `: ${call.endReason}`}`);
  else if (call.endReason !== status) lines.push(call.endReason);
  return lines;
}

/** The calls that are over, each with its outcome and how it sounded, and their CSV export. */
function Calls({
  path,
  calls,
  attendees,
  format,
  ended,
}: {
  path: string;
  calls: Call[];
  attendees: Attendee[];
  format: Intl.DateTimeFormat;
  ended: boolean;
}) {
  const names = new Map(attendees.map((attendee) => [attendee.id, nameOf(attendee)]));
  return (
    <section aria-labelledby="calls-heading">
      <h2 id="calls-heading">Calls ({calls.length})</h2>
      {calls.length === 0 ? (
        <p class="hint">{ended ? "No calls were made." : "No call has ended yet."}</p>
      ) : (
        <>
          <p>
            {/* A plain link: the session cookie goes with it, and a browser's Accept admits CSV (by its wildcard). */}
            <a href={`${path}/calls.csv`} download>
              Download the calls (CSV)
            </a>
          </p>
          <table>
            <caption>
              Each call once it is over, oldest first. Loss in: of the attendee's audio; out: of ours, as
              their side reported it.
            </caption>
            <thead>
              <tr>
                <th scope="col">Attendee</th>
                <th scope="col">Direction</th>
                <th scope="col">Started</th>
                <th scope="col">Duration</th>
                <th scope="col">Outcome</th>
                <th scope="col">Codec</th>
                <th scope="col">MOS</th>
                <th scope="col">Loss in / out</th>
                <th scope="col">Jitter</th>
                <th scope="col">Round trip</th>
              </tr>
            </thead>
            <tbody>
              {calls.map((call) => {
                const quality = call.quality;
                return (
                  <tr key={call.id} data-call={call.id}>
                    <th scope="row" data-label="Attendee">
                      {names.get(call.attendeeId) ?? call.number ?? `Attendee ${call.attendeeId}`}
                    </th>
                    <td data-label="Direction">{DIRECTION[call.direction]}</td>
                    <td data-label="Started">{format.format(new Date(call.invitedAt))}</td>
                    <td data-label="Duration" class="numeric">
                      {call.answeredAt === null ? "—" : clock(call.durationSeconds)}
                    </td>
                    <td data-label="Outcome">
                      <div>
                        {outcomeLines(call).map((line) => (
                          <span class="line" key={line}>
                            {line}
                          </span>
                        ))}
                      </div>
                    </td>
                    <td data-label="Codec" class="nowrap">
                      {call.codec === null ? "—" : `${call.codec}, ${call.srtp ? "SRTP" : "no SRTP"}`}
                    </td>
                    <td data-label="MOS" class="numeric">
                      {quality === null || quality.mos === null ? "—" : quality.mos.toFixed(1)}
                    </td>
                    <td data-label="Loss in / out" class="numeric nowrap">
                      {quality === null
                        ? "—"
                        : `${percent(quality.lossShare)} / ${percent(quality.remoteLossShare)}`}
                    </td>
                    <td data-label="Jitter" class="numeric nowrap">
                      {milliseconds(quality?.jitterMs ?? null)}
                    </td>
                    <td data-label="Round trip" class="numeric nowrap">
                      {milliseconds(quality?.roundTripMs ?? null)}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function AddAttendee({
  path,
  started,
  act,
}: {
  path: string;
  started: boolean;
  act: (done: string, failed: string, change: () => Promise<unknown>) => Promise<void>;
}) {
  const [name, setName] = useState("");
  const [number, setNumber] = useState("");

  const submit = async (event: Event) => {
    event.preventDefault();
    const label = name.trim() || number.trim();
    const body = `<attendee>${name.trim() === "" ? "" : `<name>${escapeXml(name.trim())}</name>`}<phone-number>${escapeXml(number.trim())}</phone-number></attendee>`;
    let added = false;
    await act(
      started ? `Added ${label}; calling now.` : `Added ${label}.`,
      `Could not add ${label}`,
      async () => {
        await xml("POST", `${path}/attendees`, body);
        added = true;
      },
    );
    if (added) {
      setName("");
      setNumber("");
    }
  };

  return (
    <section aria-labelledby="add-heading">
      <h2 id="add-heading">Add an attendee</h2>
      {started && <p class="hint">The service calls the new attendee at once.</p>}
      <form class="add" onSubmit={submit}>
        <div>
          <label for="add-name">Name</label>
          <input
            id="add-name"
            autocomplete="off"
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
          />
        </div>
        <div>
          <label for="add-number">Phone number</label>
          <input
            id="add-number"
            type="tel"
            required
            autocomplete="off"
            value={number}
            onInput={(event) => setNumber(event.currentTarget.value)}
          />
        </div>
        <button type="submit" class="primary">
          {started ? "Add and call" : "Add"}
        </button>
      </form>
    </section>
  );
}
