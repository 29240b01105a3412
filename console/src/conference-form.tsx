import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import {
  type ConferenceChanges,
  createConference,
  readStartTime,
  type SessionUser,
  type StartTime,
} from "./api.js";
import { dateTimeFormat, wallClock } from "./format.js";
import { Problems } from "./problems.js";
import { TextInput } from "./text-input.js";
import { messagesOf, useViewHeading } from "./view.js";

/** How long typing pauses before the start time is read (one request per pause, not per key). */
const PREVIEW_DELAY_MS = 250;

type Preview =
  | { kind: "empty" }
  | { kind: "read"; read: StartTime }
  | { kind: "refused"; messages: string[] };

/**
 * The start time as the service reads it, following what is typed: each pause in typing asks the
 * service (GET /users/{id}/start-time), so the preview is the reading a save gets, not a guess.
 */
function useStartTimePreview(userId: number, text: string): Preview {
  const [preview, setPreview] = useState<Preview>({ kind: "empty" });
  // Only the latest text's answer is shown, however the answers arrive.
  const latest = useRef(0);
  useEffect(() => {
    const asked = ++latest.current;
    if (text.trim() === "") {
      setPreview({ kind: "empty" });
      return;
    }
    const timer = setTimeout(async () => {
      try {
        const read = await readStartTime(userId, text);
        if (asked === latest.current) setPreview({ kind: "read", read });
      } catch (caught) {
        if (asked === latest.current) setPreview({ kind: "refused", messages: messagesOf(caught) });
      }
    }, PREVIEW_DELAY_MS);
    return () => clearTimeout(timer);
  }, [userId, text]);
  return preview;
}

/** The start-time field: free-form text, with how the service reads it announced beneath. */
export function StartTimeField({
  id,
  userId,
  value,
  onInput,
}: {
  id: string;
  userId: number;
  value: string;
  onInput: (value: string) => void;
}) {
  const preview = useStartTimePreview(userId, value);
  const format = useMemo(
    () => (preview.kind === "read" ? dateTimeFormat(preview.read.timeZone) : null),
    [preview],
  );
  return (
    <div>
      <label for={id}>Start time</label>
      <input
        id={id}
        required
        autocomplete="off"
        aria-describedby={`${id}-hint ${id}-preview`}
        value={value}
        onInput={(event) => onInput(event.currentTarget.value)}
      />
      <p id={`${id}-hint`} class="hint">
        As you would say it: "next Tuesday at 3pm", "tomorrow 9am", "in 2 hours", or 2026-12-01 09:30.
      </p>
      <p
        id={`${id}-preview`}
        class={preview.kind === "refused" ? "preview error" : "preview"}
        role="status"
        aria-live="polite"
      >
        {preview.kind === "read" && format !== null ? (
          <>
            Read as{" "}
            <time dateTime={preview.read.scheduledToStartAt.toISOString()}>
              {format.format(preview.read.scheduledToStartAt)}
            </time>{" "}
            <span class="hint">({preview.read.timeZone})</span>
          </>
        ) : preview.kind === "refused" ? (
          preview.messages.join(" ")
        ) : (
          ""
        )}
      </p>
    </div>
  );
}

/** A new conference: its name, its start time (read as typed) and how attendees join. */
export function NewConference({ user }: { user: SessionUser }) {
  const [name, setName] = useState("");
  const [startTime, setStartTime] = useState("");
  const [directDial, setDirectDial] = useState(false);
  const [recordAudio, setRecordAudio] = useState(false);
  const [problems, setProblems] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const heading = useViewHeading("New conference");

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setProblems([]);
    try {
      const created = await createConference(user.id, { name, startTime, directDial, recordAudio });
      location.hash = `#/conferences/${created.id}`;
    } catch (caught) {
      setProblems(messagesOf(caught));
      setBusy(false);
    }
  };

  return (
    <main>
      <p>
        <a href="#/">← All conferences</a>
      </p>
      <h1 ref={heading} tabIndex={-1}>
        New conference
      </h1>
      <form class="stacked" onSubmit={submit} aria-describedby="new-conference-problems">
        <div>
          <TextInput
            id="new-conference-name"
            label="Name"
            required
            autocomplete="off"
            value={name}
            onValue={setName}
          />
        </div>
        <StartTimeField id="new-conference-start" userId={user.id} value={startTime} onInput={setStartTime} />
        <div class="check">
          <input
            id="new-conference-direct-dial"
            type="checkbox"
            aria-describedby="new-conference-direct-dial-hint"
            checked={directDial}
            onChange={(event) => setDirectDial(event.currentTarget.checked)}
          />
          <label for="new-conference-direct-dial">Direct dial</label>
          <span id="new-conference-direct-dial-hint" class="hint">
            Attendees join as they answer, without pressing 1.
          </span>
        </div>
        <div class="check">
          <input
            id="new-conference-record"
            type="checkbox"
            checked={recordAudio}
            onChange={(event) => setRecordAudio(event.currentTarget.checked)}
          />
          <label for="new-conference-record">Record the conference</label>
        </div>
        <p class="hint">You are added as its moderator. Add attendees on the next page.</p>
        <div>
          <button type="submit" class="primary" disabled={busy}>
            {busy ? "Creating…" : "Create conference"}
          </button>
        </div>
        <Problems id="new-conference-problems" messages={problems} />
      </form>
    </main>
  );
}

/** A planned conference's name and start time, changed in place. */
export function EditSchedule({
  user,
  name: currentName,
  scheduledToStartAt,
  save,
}: {
  user: SessionUser;
  name: string;
  scheduledToStartAt: Date | null;
  save: (changes: ConferenceChanges) => Promise<void>;
}) {
  // The current start on the owner's wall clock, which the service reads back as the same instant;
  // with no zone of the owner's (the service reads in UTC), the instant itself.
  const currentStart =
    scheduledToStartAt === null
      ? ""
      : user.timeZone === null
        ? `${scheduledToStartAt.toISOString().slice(0, 19)}Z`
        : wallClock(scheduledToStartAt, user.timeZone);
  const [name, setName] = useState(currentName);
  const [startTime, setStartTime] = useState(currentStart);
  const [problems, setProblems] = useState<string[]>([]);
  // Saved (or changed elsewhere): the fields show the conference as it now is.
  useEffect(() => {
    setName(currentName);
    setStartTime(currentStart);
  }, [currentName, currentStart]);

  const submit = async (event: Event) => {
    event.preventDefault();
    setProblems([]);
    try {
      const changes: ConferenceChanges = {};
      if (name !== currentName) changes.name = name;
      // Sent only when changed: "now" typed again would otherwise move the start each time.
      if (startTime !== currentStart) changes.startTime = startTime;
      await save(changes);
    } catch (caught) {
      setProblems(messagesOf(caught));
    }
  };

  return (
    <section aria-labelledby="schedule-heading">
      <h2 id="schedule-heading">Name and start time</h2>
      <form class="stacked" onSubmit={submit} aria-describedby="schedule-problems">
        <div>
          <TextInput
            id="schedule-name"
            label="Conference name"
            required
            autocomplete="off"
            value={name}
            onValue={setName}
          />
        </div>
        <StartTimeField id="schedule-start" userId={user.id} value={startTime} onInput={setStartTime} />
        <div>
          <button type="submit" class="primary">
            Save name and start time
          </button>
        </div>
        <Problems id="schedule-problems" messages={problems} />
      </form>
    </section>
  );
}
