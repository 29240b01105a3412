import type { Ref } from "preact";
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { RecoveryDetails } from "../../src/domain/event.js";
import {
  ApiError,
  type Attendee,
  type AttendeeChanges,
  accessNumbers,
  addAttendee,
  type Call,
  ChangedElsewhere,
  type Conference,
  type ConferenceChanges,
  type ConferenceState,
  type Contact,
  callAttendee,
  callsCsvUrl,
  conferenceEventsUrl,
  deleteConference,
  endConference,
  getConference,
  hasRecording,
  listAttendees,
  listCalls,
  listContacts,
  type NewAttendee,
  recordingUrl,
  removeAttendee,
  type SessionUser,
  updateAttendee,
  updateConference,
} from "./api.js";
import { EditSchedule } from "./conference-form.js";
import { clock, dateTimeFormat, lasted, milliseconds, percent } from "./format.js";
import { type LiveEvent, useDebounced, useEventStream } from "./live.js";
import { Problems } from "./problems.js";
import { StreamState } from "./stream-state.js";
import { TextInput } from "./text-input.js";
import { focusAfterRender, messagesOf, useLatest, useMounted, useSubmit, useViewHeading } from "./view.js";

interface Notice {
  text: string;
  error: boolean;
}

/** A confirmation asked for, and the conference's state it was asked in: a change of state closes it. */
interface Confirming {
  action: "end" | "delete";
  state: ConferenceState;
}

/** What a change refused for a stale lock-version says (the view reads the conference again). */
const CHANGED_ELSEWHERE =
  "the conference was changed elsewhere meanwhile; it is read again and shown as it is now";

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

export function ConferenceView({ user, conferenceId }: { user: SessionUser; conferenceId: number }) {
  const [conference, setConference] = useState<Conference | null>(null);
  const [attendees, setAttendees] = useState<Attendee[]>([]);
  const [calls, setCalls] = useState<Call[]>([]);
  const [recording, setRecording] = useState(false);
  const [talking, setTalking] = useState<ReadonlySet<number>>(new Set());
  const [loadError, setLoadError] = useState("");
  const [notice, setNotice] = useState<Notice>({ text: "", error: false });
  const [confirming, setConfirming] = useState<Confirming | null>(null);
  const [now, setNow] = useState(Date.now());
  const [numbers, setNumbers] = useState<string[] | null>(null);
  const format = useMemo(() => dateTimeFormat(user.timeZone), [user.timeZone]);
  // One heading, loading or loaded, so that the focus it takes as the view opens stays on it.
  const heading = useViewHeading(conference?.name ?? "Conference");
  const noticeText = useRef<HTMLParagraphElement>(null);
  const endButton = useRef<HTMLButtonElement>(null);
  const confirmButton = useRef<HTMLButtonElement>(null);
  const deleteButton = useRef<HTMLButtonElement>(null);
  const confirmDeleteButton = useRef<HTMLButtonElement>(null);
  const { busy, submit } = useSubmit();
  const mounted = useMounted();
  const beginRead = useLatest();

  const load = useCallback(async () => {
    const latest = beginRead();
    try {
      const [one, all, recorded, records] = await Promise.all([
        getConference(user.id, conferenceId),
        listAttendees(user.id, conferenceId),
        hasRecording(user.id, conferenceId),
        listCalls(user.id, conferenceId),
      ]);
      if (!latest()) return;
      setConference(one);
      setAttendees(all);
      setRecording(recorded);
      setCalls(records);
      setNow(all[0]?.readAt ?? Date.now());
      setLoadError("");
    } catch (caught) {
      if (!latest()) return;
      setLoadError(
        caught instanceof ApiError && caught.status === 404
          ? "There is no such conference."
          : `The conference could not be read: ${(caught as Error).message}`,
      );
    }
  }, [user.id, conferenceId, beginRead]);
  useEffect(() => {
    load();
  }, [load]);
  useEffect(() => {
    accessNumbers().then(
      (found) => mounted() && setNumbers(found),
      () => mounted() && setNumbers([]),
    );
  }, [mounted]);
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
  const status = useEventStream(conferenceEventsUrl(user.id, conferenceId), onEvent, reload);

  // The recording file appears a moment after recording starts, with no event of its own: look again.
  const awaitingRecording = conference?.state === "started" && conference.recordAudio && !recording;
  useEffect(() => {
    if (!awaitingRecording) return;
    const timer = setInterval(async () => {
      if ((await hasRecording(user.id, conferenceId).catch(() => false)) && mounted()) setRecording(true);
    }, 2000);
    return () => clearInterval(timer);
  }, [awaitingRecording, user.id, conferenceId, mounted]);

  const anyoneConnected = attendees.some((attendee) => attendee.state === "connected");
  useEffect(() => {
    if (!anyoneConnected) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [anyoneConnected]);

  // A confirmation is of the state it was asked in: once the conference starts or ends, it is gone.
  const confirmingEnd = confirming?.action === "end" && confirming.state === conference?.state;
  const confirmingDelete = confirming?.action === "delete" && confirming.state === conference?.state;
  useEffect(() => {
    if (confirmingEnd) confirmButton.current?.focus();
  }, [confirmingEnd]);
  useEffect(() => {
    if (confirmingDelete) confirmDeleteButton.current?.focus();
  }, [confirmingDelete]);

  /** Says how a change went; `focus` when the control that made it has gone (or is going) with it. */
  const say = (said: Notice, focus: boolean) => {
    setNotice(said);
    if (focus) focusAfterRender(noticeText);
  };

  /**
   * Runs a change (none while another runs), says how it went, and reads the conference again.
   * `controlGoes`: the change takes its control away (the callout of Set pending, a row removed, a
   * button for a state left), so the notice, which says how it went, takes the focus.
   */
  const act = (done: string, failed: string, change: () => Promise<unknown>, controlGoes = false) =>
    submit(async () => {
      try {
        await change();
        if (mounted()) say({ text: done, error: false }, controlGoes);
      } catch (caught) {
        if (!mounted()) return;
        const why = caught instanceof ChangedElsewhere ? CHANGED_ELSEWHERE : messagesOf(caught).join(" ");
        say({ text: `${failed}: ${why}`, error: true }, controlGoes);
      }
      reload();
    });

  /** Changes the conference as shown (its lock-version sent: a change made elsewhere since is refused). */
  const putConference = async (shown: Conference, changes: ConferenceChanges) => {
    const changed = await updateConference(user.id, shown, changes);
    if (!mounted()) return;
    // Shown at once, with the lock-version the next change sends; reads begun before it are older.
    beginRead();
    setConference(changed);
  };
  const putAttendee = (attendee: Attendee, changes: AttendeeChanges) =>
    updateAttendee(user.id, conferenceId, attendee.id, changes);

  const titleRow = (
    <>
      <p>
        <a href="#/">← All conferences</a>
      </p>
      <div class="title-row">
        <h1 ref={heading} tabIndex={-1}>
          {conference?.name ?? "Conference"}
        </h1>
        <StreamState status={status} />
      </div>
    </>
  );
  if (conference === null) {
    return (
      <main>
        {titleRow}
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
  const planned = conference.state === "new" || conference.state === "pending";
  const moment = (label: string, value: Date | null) =>
    value === null ? null : (
      <>
        <dt>{label}</dt>
        <dd>{format.format(value)}</dd>
      </>
    );

  const duration = lasted(conference);

  return (
    <main>
      {titleRow}
      <dl class="facts">
        <dt>State</dt>
        <dd>
          <span class={`badge state-${conference.state}`}>{conference.state}</span>
        </dd>
        {moment("Scheduled", conference.scheduledToStartAt)}
        {moment("Started", conference.startedAt)}
        {moment("Ended", conference.endedAt)}
        {duration !== null && (
          <>
            <dt>Lasted</dt>
            <dd class="numeric">{duration}</dd>
          </>
        )}
        <dt>Direct dial</dt>
        <dd>
          {conference.directDial ? "on: attendees join as they answer" : "off: attendees press 1 to join"}
        </dd>
      </dl>
      {conference.state === "new" && (
        <div class="callout">
          <p id="pending-hint">
            Planned, not confirmed: nobody is called until you set it pending. Then the service calls every
            attendee at the start time (at once if it has passed).
          </p>
          <button
            type="button"
            class="primary"
            aria-describedby="pending-hint"
            aria-disabled={busy}
            onClick={() =>
              act(
                "Set pending: the attendees are called at the start time.",
                "Could not set the conference pending",
                () => putConference(conference, { state: "pending" }),
                true,
              )
            }
          >
            Set pending
          </button>
        </div>
      )}
      {conference.state === "pending" && (
        <p class="hint">Pending: the service calls the attendees at the start time.</p>
      )}
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
      <p
        ref={noticeText}
        class={notice.error ? "notice error" : "notice"}
        role="status"
        aria-live="polite"
        tabIndex={-1}
      >
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
                          aria-disabled={busy}
                          onClick={() =>
                            act(
                              `${attendee.muted ? "Unmuted" : "Muted"} ${name}.`,
                              `Could not ${attendee.muted ? "unmute" : "mute"} ${name}`,
                              () => putAttendee(attendee, { muted: !attendee.muted }),
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
                          aria-disabled={busy}
                          onClick={() =>
                            act(
                              `Lowered ${name}'s hand.`,
                              `Could not lower ${name}'s hand`,
                              () => putAttendee(attendee, { handUp: false }),
                              true,
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
                          aria-disabled={busy}
                          onClick={() =>
                            act(
                              `Hung up ${name} and removed them from the conference.`,
                              `Could not hang up ${name}`,
                              () => removeAttendee(user.id, conferenceId, attendee.id),
                              true,
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
                          aria-disabled={busy}
                          onClick={() =>
                            act(
                              `Calling ${name}.`,
                              `Could not call ${name}`,
                              () => callAttendee(user.id, conferenceId, attendee.id),
                              true,
                            )
                          }
                        >
                          {attendee.state === "new" ? "Call now" : "Call again"}
                        </button>
                      )}
                      {planned && !attendee.moderator && (
                        <button
                          type="button"
                          aria-label={`Remove ${name}`}
                          aria-disabled={busy}
                          onClick={() =>
                            act(
                              `Removed ${name}.`,
                              `Could not remove ${name}`,
                              () => removeAttendee(user.id, conferenceId, attendee.id),
                              true,
                            )
                          }
                        >
                          Remove
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
        <Calls
          csvUrl={callsCsvUrl(user.id, conferenceId)}
          calls={calls}
          attendees={attendees}
          format={format}
          ended={ended}
        />
      )}

      {!ended && (
        <AddAttendee
          add={(attendee) => addAttendee(user.id, conferenceId, attendee)}
          added={(label) => {
            setNotice({ text: started ? `Added ${label}; calling now.` : `Added ${label}.`, error: false });
            reload();
          }}
          busy={busy}
          submit={submit}
          userId={user.id}
          started={started}
        />
      )}

      {planned && (
        <EditSchedule
          user={user}
          name={conference.name}
          scheduledToStartAt={conference.scheduledToStartAt}
          busy={busy}
          submit={submit}
          save={async (changes) => {
            if (Object.keys(changes).length === 0) {
              setNotice({ text: "Nothing to save: the name and start time are as they were.", error: false });
              return;
            }
            try {
              await putConference(conference, changes);
            } catch (caught) {
              if (!(caught instanceof ChangedElsewhere)) throw caught;
              reload();
              throw new Error(
                `Not saved: ${CHANGED_ELSEWHERE}. Save again to replace it with what this form holds.`,
              );
            }
            if (!mounted()) return;
            setNotice({ text: "Saved the name and start time.", error: false });
            reload();
          }}
        />
      )}

      {!ended && (
        <section aria-labelledby="room-heading">
          <h2 id="room-heading">Room</h2>
          <ul class="settings">
            <li>
              <span>Dial-in: {conference.dialInLocked ? "locked (members are refused)" : "open"}</span>
              <button
                type="button"
                aria-disabled={busy}
                onClick={() =>
                  act(
                    conference.dialInLocked ? "Dial-in unlocked." : "Dial-in locked.",
                    "Could not change dial-in",
                    () => putConference(conference, { dialInLocked: !conference.dialInLocked }),
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
                aria-disabled={busy}
                onClick={() =>
                  act(
                    conference.lectureMode ? "Lecture mode off." : "Lecture mode on.",
                    "Could not change lecture mode",
                    () => putConference(conference, { lectureMode: !conference.lectureMode }),
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
                aria-disabled={busy}
                onClick={() =>
                  act(
                    conference.encryptedOnly
                      ? "Unencrypted calls are allowed."
                      : "Only encrypted calls are taken; the others are hung up.",
                    "Could not change encryption",
                    () => putConference(conference, { encryptedOnly: !conference.encryptedOnly }),
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
                aria-disabled={busy}
                onClick={() =>
                  act(
                    conference.recordAudio ? "Recording stopped." : "Recording started.",
                    "Could not change recording",
                    () => putConference(conference, { recordAudio: !conference.recordAudio }),
                  )
                }
              >
                {conference.recordAudio ? "Stop recording" : "Start recording"}
              </button>
            </li>
          </ul>
          {started &&
            (confirmingEnd ? (
              <Confirmation
                question="End the conference for everyone? Every call is hung up."
                confirmLabel="End for everyone"
                confirmRef={confirmButton}
                busy={busy}
                onConfirm={() =>
                  act(
                    "Conference ended.",
                    "Could not end the conference",
                    async () => {
                      // The confirmation stays while the request runs; then the notice says how it went.
                      try {
                        await endConference(user.id, conferenceId);
                      } finally {
                        if (mounted()) setConfirming(null);
                      }
                    },
                    true,
                  )
                }
                onCancel={() => {
                  setConfirming(null);
                  focusAfterRender(endButton);
                }}
              />
            ) : (
              <button
                ref={endButton}
                type="button"
                class="danger"
                onClick={() => setConfirming({ action: "end", state: conference.state })}
              >
                End conference
              </button>
            ))}
        </section>
      )}

      {!ended && (
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
      )}

      <section aria-labelledby="recording-heading">
        <h2 id="recording-heading">Recording</h2>
        {recording ? (
          <>
            {/* biome-ignore lint/a11y/useMediaCaption: a recording of a phone call has no captions to offer */}
            <audio
              controls
              preload="none"
              src={recordingUrl(user.id, conferenceId)}
              aria-label="Conference recording"
            />
            <p>
              <a href={recordingUrl(user.id, conferenceId)} download>
                Download the recording (WAV)
              </a>
            </p>
          </>
        ) : (
          <p class="hint">No recording yet.</p>
        )}
      </section>

      {!started && (
        <section aria-labelledby="delete-heading">
          <h2 id="delete-heading">Delete</h2>
          {confirmingDelete ? (
            <Confirmation
              question={`Delete "${conference.name}" and its attendees for good?`}
              confirmLabel="Delete for good"
              confirmRef={confirmDeleteButton}
              busy={busy}
              onConfirm={() =>
                submit(async () => {
                  try {
                    await deleteConference(user.id, conferenceId);
                    // Back to the list, unless the person has gone to another view meanwhile.
                    if (mounted()) location.hash = "#/";
                  } catch (caught) {
                    if (!mounted()) return;
                    setConfirming(null);
                    say(
                      {
                        text: `Could not delete the conference: ${messagesOf(caught).join(" ")}`,
                        error: true,
                      },
                      true,
                    );
                  }
                })
              }
              onCancel={() => {
                setConfirming(null);
                focusAfterRender(deleteButton);
              }}
            />
          ) : (
            <button
              ref={deleteButton}
              type="button"
              class="danger"
              onClick={() => setConfirming({ action: "delete", state: conference.state })}
            >
              Delete conference
            </button>
          )}
        </section>
      )}
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
  csvUrl,
  calls,
  attendees,
  format,
  ended,
}: {
  csvUrl: string;
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
            <a href={csvUrl} download>
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

/** Attendees added from the user's contacts or by a typed number; the service validates both. */
function AddAttendee({
  add,
  added,
  busy,
  submit,
  userId,
  started,
}: {
  add: (attendee: NewAttendee) => Promise<unknown>;
  /** Told of each attendee added, by the name shown. */
  added: (label: string) => void;
  busy: boolean;
  /** Runs an addition unless a change of the view is running (a second click adds nobody twice). */
  submit: (addition: () => Promise<void>) => Promise<void>;
  userId: number;
  started: boolean;
}) {
  const [contacts, setContacts] = useState<Contact[] | null>(null);
  const [contactId, setContactId] = useState("");
  const [name, setName] = useState("");
  const [number, setNumber] = useState("");
  const [contactProblems, setContactProblems] = useState<string[]>([]);
  const [numberProblems, setNumberProblems] = useState<string[]>([]);
  const mounted = useMounted();

  useEffect(() => {
    listContacts(userId).then(
      // Only contacts with a number can be called.
      (found) => mounted() && setContacts(found.filter((contact) => contact.phoneNumber !== null)),
      (caught) => mounted() && setContactProblems(messagesOf(caught)),
    );
  }, [userId, mounted]);

  /** Adds one; a refusal's messages (the API's own) show beside the form that was refused. */
  const addOne = async (
    label: string,
    attendee: NewAttendee,
    setProblems: (messages: string[]) => void,
  ): Promise<boolean> => {
    setProblems([]);
    try {
      await add(attendee);
    } catch (caught) {
      if (mounted()) setProblems(messagesOf(caught));
      return false;
    }
    if (!mounted()) return false;
    added(label);
    return true;
  };

  const addContact = async () => {
    const contact = contacts?.find((candidate) => String(candidate.id) === contactId);
    if (contact === undefined || contact.phoneNumber === null) return;
    if (
      await addOne(
        contact.name,
        { name: contact.name, email: contact.email, phoneNumber: contact.phoneNumber },
        setContactProblems,
      )
    )
      setContactId("");
  };

  const addNumber = async () => {
    const label = name.trim() || number.trim();
    if (
      await addOne(
        label,
        { name: name.trim() === "" ? null : name.trim(), email: null, phoneNumber: number.trim() },
        setNumberProblems,
      )
    ) {
      setName("");
      setNumber("");
    }
  };

  return (
    <section aria-labelledby="add-heading">
      <h2 id="add-heading">Add an attendee</h2>
      {started && <p class="hint">The service calls the new attendee at once.</p>}
      <h3 id="add-contact-heading">From your contacts</h3>
      {contacts !== null && contacts.length === 0 ? (
        <p class="hint">
          No contact with a phone number yet: <a href="#/contacts">add contacts</a>.
        </p>
      ) : (
        <form
          class="add"
          onSubmit={(event) => {
            event.preventDefault();
            submit(addContact);
          }}
          aria-labelledby="add-contact-heading"
          aria-describedby="add-contact-problems"
        >
          <div>
            <label for="add-contact">Contact</label>
            <select
              id="add-contact"
              required
              value={contactId}
              onChange={(event) => setContactId(event.currentTarget.value)}
            >
              <option value="">Choose a contact…</option>
              {(contacts ?? []).map((contact) => (
                <option key={contact.id} value={String(contact.id)}>
                  {contact.name} ({contact.phoneNumber})
                </option>
              ))}
            </select>
          </div>
          <button type="submit" class="primary" aria-disabled={busy}>
            {started ? "Add contact and call" : "Add contact"}
          </button>
        </form>
      )}
      <Problems id="add-contact-problems" messages={contactProblems} />
      <h3 id="add-number-heading">By number</h3>
      <form
        class="add"
        onSubmit={(event) => {
          event.preventDefault();
          submit(addNumber);
        }}
        aria-labelledby="add-number-heading"
        aria-describedby="add-number-problems"
      >
        <div>
          <TextInput id="add-name" label="Name" autocomplete="off" value={name} onValue={setName} />
        </div>
        <div>
          <TextInput
            id="add-number"
            label="Phone number"
            type="tel"
            required
            autocomplete="off"
            value={number}
            onValue={setNumber}
          />
        </div>
        <button type="submit" class="primary" aria-disabled={busy}>
          {started ? "Add and call" : "Add"}
        </button>
      </form>
      <Problems id="add-number-problems" messages={numberProblems} />
    </section>
  );
}

/**
 * A question with its confirming button and Cancel. Once confirmed, the request runs on: Cancel
 * does nothing meanwhile (it would only seem to stop it).
 */
function Confirmation({
  question,
  confirmLabel,
  confirmRef,
  busy,
  onConfirm,
  onCancel,
}: {
  question: string;
  confirmLabel: string;
  confirmRef: Ref<HTMLButtonElement>;
  busy: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <fieldset class="confirm">
      <legend>{question}</legend>
      <button ref={confirmRef} type="button" class="danger" aria-disabled={busy} onClick={onConfirm}>
        {confirmLabel}
      </button>
      <button type="button" aria-disabled={busy} onClick={() => busy || onCancel()}>
        Cancel
      </button>
    </fieldset>
  );
}
