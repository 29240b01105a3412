import { useEffect, useMemo, useState } from "preact/hooks";
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
import { messagesOf, useLatest, useMounted, useSubmit, useViewHeading } from "./view.js";

/** How long typing pauses before the start time is read (one request per pause, not per key). */
const PREVIEW_DELAY_MS = 250;

/** The service's answer for a text, which the preview shows only while the field still holds that text. */
type Answer = { kind: "read"; read: StartTime } | { kind: "refused"; text: string; messages: string[] };

type Preview =
  | { kind: "empty" }
  /** The text has not been read yet (typing, or the answer on its way). */
  | { kind: "reading" }
  | Answer;

/**
 * The start time as the service reads it, following what is typed: each pause in typing asks the
 * service (GET /users/{id}/start-time), so the preview is the reading a save gets, not a guess. An
 * answer is shown only for the text the field holds: while a newer text is read, it says so.
 */
function useStartTimePreview(userId: number, text: string): Preview {
  const [answer, setAnswer] = useState<Answer | null>(null);
  // Only the latest text's answer is kept, however the answers arrive.
  const beginRead = useLatest();
  useEffect(() => {
    const latest = beginRead();
    if (text.trim() === "") return;
    const timer = setTimeout(async () => {
      try {
        const read = await readStartTime(userId, text);
        if (latest()) setAnswer({ kind: "read", read });
      } catch (caught) {
        if (latest()) setAnswer({ kind: "refused", text, messages: messagesOf(caught) });
      }
    }, PREVIEW_DELAY_MS);
    return () => clearTimeout(timer);
  }, [userId, text, beginRead]);
  if (text.trim() === "") return { kind: "empty" };
  if (answer === null || (answer.kind === "read" ? answer.read.text : answer.text) !== text)
    return { kind: "reading" };
  return answer;
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
      <TextInput
        id={id}
        label="Start time"
        required
        autocomplete="off"
        aria-describedby={`${id}-hint ${id}-preview`}
        aria-invalid={preview.kind === "refused"}
        value={value}
        onValue={onInput}
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
        ) : preview.kind === "reading" ? (
          "Reading…"
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
  const { busy, submit } = useSubmit();
  const mounted = useMounted();
  const heading = useViewHeading("New conference");

  const create = async () => {
    setProblems([]);
    try {
      const created = await createConference(user.id, { name, startTime, directDial, recordAudio });
      // Its page opens, unless the person has gone to another view meanwhile.
      if (mounted()) location.hash = `#/conferences/${created.id}`;
    } catch (caught) {
      if (mounted()) setProblems(messagesOf(caught));
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
      <form
        class="stacked"
        onSubmit={(event) => {
          event.preventDefault();
          submit(create);
        }}
        aria-describedby="new-conference-problems"
      >
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
          <button type="submit" class="primary" aria-disabled={busy}>
            {busy ? "Creating…" : "Create conference"}
          </button>
        </div>
        <Problems id="new-conference-problems" messages={problems} />
      </form>
    </main>
  );
}

/**
 * A planned conference's name and start time, changed in place. The form holds only what was typed
 * over them: a field not typed in shows the conference as it now is (saved here or changed
 * elsewhere), and a save sends only the fields typed in, which then show the conference again.
 */
export function EditSchedule({
  user,
  name: currentName,
  scheduledToStartAt,
  busy,
  submit,
  save,
}: {
  user: SessionUser;
  name: string;
  scheduledToStartAt: Date | null;
  busy: boolean;
  /** Runs a save unless a change of the view is running. */
  submit: (save: () => Promise<void>) => Promise<void>;
  /** Sends the changes (none when nothing was changed); throws what to show under the form. */
  save: (changes: ConferenceChanges) => Promise<void>;
}) {
  // The current start on the owner's wall clock (UTC's for an owner with no zone, as the service
  // then reads it), which the service reads back as the same instant.
  const currentStart =
    scheduledToStartAt === null ? "" : wallClock(scheduledToStartAt, user.timeZone ?? "UTC");
  const [typed, setTyped] = useState<{ name?: string; startTime?: string }>({});
  const [problems, setProblems] = useState<string[]>([]);
  const mounted = useMounted();
  const name = typed.name ?? currentName;
  const startTime = typed.startTime ?? currentStart;

  const saveTyped = async () => {
    setProblems([]);
    const changes: ConferenceChanges = {};
    if (name !== currentName) changes.name = name;
    // Sent only when changed: "now" typed again would otherwise move the start each time.
    if (startTime !== currentStart) changes.startTime = startTime;
    try {
      await save(changes);
      // What was sent is now the conference's; anything typed meanwhile stays typed.
      if (mounted())
        setTyped((now) => ({
          ...(now.name !== undefined && now.name !== changes.name && { name: now.name }),
          ...(now.startTime !== undefined &&
            now.startTime !== changes.startTime && { startTime: now.startTime }),
        }));
    } catch (caught) {
      if (mounted()) setProblems(messagesOf(caught));
    }
  };

  return (
    <section aria-labelledby="schedule-heading">
      <h2 id="schedule-heading">Name and start time</h2>
      <form
        class="stacked"
        onSubmit={(event) => {
          event.preventDefault();
          submit(saveTyped);
        }}
        aria-describedby="schedule-problems"
      >
        <div>
          <TextInput
            id="schedule-name"
            label="Conference name"
            required
            autocomplete="off"
            value={name}
            onValue={(value) => setTyped((before) => ({ ...before, name: value }))}
          />
        </div>
        <StartTimeField
          id="schedule-start"
          userId={user.id}
          value={startTime}
          onInput={(value) => setTyped((before) => ({ ...before, startTime: value }))}
        />
        <div>
          <button type="submit" class="primary" aria-disabled={busy}>
            Save name and start time
          </button>
        </div>
        <Problems id="schedule-problems" messages={problems} />
      </form>
    </section>
  );
}
