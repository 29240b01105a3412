import { useEffect, useState } from "preact/hooks";
import { getUserSettings, type SessionUser, type UserSettings, updateTimeZone } from "./api.js";
import { Problems } from "./problems.js";
import { ianaZoneOf, TimeZoneOptions } from "./time-zones.js";
import { messagesOf, useMounted, useSubmit, useViewHeading } from "./view.js";

/** The user's own settings: the time zone start times are read and shown in, and their own PINs. */
export function Settings({
  user,
  onUserChanged,
}: {
  user: SessionUser;
  onUserChanged: (user: SessionUser) => void;
}) {
  const [settings, setSettings] = useState<UserSettings | null>(null);
  const [timeZone, setTimeZone] = useState("");
  const [problems, setProblems] = useState<string[]>([]);
  const [notice, setNotice] = useState("");
  const { busy, submit } = useSubmit();
  const mounted = useMounted();
  const heading = useViewHeading("Settings");

  useEffect(() => {
    getUserSettings(user.id).then(
      (read) => {
        if (!mounted()) return;
        setSettings(read);
        setTimeZone(read.timeZone ?? "");
      },
      (caught) => mounted() && setProblems(messagesOf(caught)),
    );
  }, [user.id, mounted]);

  const save = async () => {
    setProblems([]);
    setNotice("");
    try {
      const saved = await updateTimeZone(user.id, timeZone === "" ? null : timeZone);
      if (!mounted()) return;
      setSettings(saved);
      // The rest of the console shows times in the session's zone: it follows at once.
      onUserChanged({ ...user, timeZone: ianaZoneOf(saved.timeZone) });
      setNotice(`Saved: times are read and shown in ${saved.timeZone ?? "UTC"}.`);
    } catch (caught) {
      if (mounted()) setProblems(messagesOf(caught));
    }
  };

  return (
    <main>
      <h1 ref={heading} tabIndex={-1}>
        Settings
      </h1>
      <p class="notice" role="status" aria-live="polite">
        {notice}
      </p>
      {settings === null ? (
        problems.length === 0 && <p>Loading…</p>
      ) : (
        <>
          <dl class="facts">
            <dt>Name</dt>
            <dd>{settings.name}</dd>
            <dt>E-mail address</dt>
            <dd>{settings.email}</dd>
          </dl>
          <section aria-labelledby="zone-heading">
            <h2 id="zone-heading">Time zone</h2>
            <form
              class="add"
              onSubmit={(event) => {
                event.preventDefault();
                submit(save);
              }}
              aria-describedby="settings-problems"
            >
              <div>
                <label for="settings-time-zone">Time zone</label>
                <select
                  id="settings-time-zone"
                  aria-describedby="settings-time-zone-hint"
                  value={timeZone}
                  onChange={(event) => setTimeZone(event.currentTarget.value)}
                >
                  <TimeZoneOptions />
                </select>
              </div>
              <button type="submit" class="primary" aria-disabled={busy}>
                Save time zone
              </button>
            </form>
            <p id="settings-time-zone-hint" class="hint">
              Start times you type ("tomorrow 9am") are read in this zone, and every time is shown in it.
            </p>
          </section>
          <section aria-labelledby="pins-heading">
            <h2 id="pins-heading">Your PINs</h2>
            <p class="hint">
              Callers to an access number who enter one of these join whichever of your conferences is taking
              place. The service chooses them, unique among all users and conferences.
            </p>
            <dl class="facts">
              <dt>Member PIN</dt>
              <dd class="pin">{settings.memberPin}</dd>
              <dt>Moderator PIN</dt>
              <dd class="pin">{settings.moderatorPin}</dd>
            </dl>
          </section>
        </>
      )}
      <Problems id="settings-problems" messages={problems} />
    </main>
  );
}
