import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { type Conference, listConferences, type SessionUser, userEventsUrl } from "./api.js";
import { dateTimeFormat, lasted } from "./format.js";
import { useDebounced, useEventStream } from "./live.js";
import { StreamState } from "./stream-state.js";
import { useLatest, useViewHeading } from "./view.js";

const GROUPS: Array<{ title: string; states: string[]; empty: string }> = [
  { title: "Live", states: ["started"], empty: "No conference is running." },
  { title: "Upcoming", states: ["new", "pending"], empty: "No conference is planned." },
  { title: "Past", states: ["ended"], empty: "No conference has ended yet." },
];

function when(conference: Conference): Date | null {
  return conference.endedAt ?? conference.startedAt ?? conference.scheduledToStartAt;
}

export function ConferenceList({ user }: { user: SessionUser }) {
  const [conferences, setConferences] = useState<Conference[] | null>(null);
  const [error, setError] = useState("");
  const format = useMemo(() => dateTimeFormat(user.timeZone), [user.timeZone]);
  const heading = useViewHeading("Conferences");
  const beginRead = useLatest();

  const load = useCallback(async () => {
    const latest = beginRead();
    try {
      const read = await listConferences(user.id);
      if (!latest()) return;
      setConferences(read);
      setError("");
    } catch (caught) {
      if (latest()) setError(`The conferences could not be read: ${(caught as Error).message}`);
    }
  }, [user.id, beginRead]);
  useEffect(() => {
    load();
  }, [load]);
  const reload = useDebounced(load, 100);
  // The list shows when conferences start and end; what happens inside them is the live view's.
  const status = useEventStream(
    userEventsUrl(user.id),
    (event) => {
      if (event.type === "conference-started" || event.type === "conference-ended") reload();
    },
    reload,
  );

  return (
    <main>
      <div class="title-row">
        <h1 ref={heading} tabIndex={-1}>
          Conferences
        </h1>
        <StreamState status={status} />
      </div>
      <p>
        <a class="button" href="#/conferences/new">
          New conference
        </a>
      </p>
      <p class="hint">Times are shown in {user.timeZone ?? "UTC (no time zone is set: see Settings)"}.</p>
      {error !== "" && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {conferences === null
        ? error === "" && <p>Loading…</p>
        : GROUPS.map((group) => {
            const listed = conferences
              .filter((conference) => group.states.includes(conference.state))
              .sort((a, b) => {
                const difference = (when(a)?.getTime() ?? 0) - (when(b)?.getTime() ?? 0);
                // Past conferences latest first; the others soonest first.
                return group.title === "Past" ? -difference : difference;
              });
            const headingId = `group-${group.title.toLowerCase()}`;
            return (
              <section key={group.title} aria-labelledby={headingId}>
                <h2 id={headingId}>
                  {group.title} <span class="count">({listed.length})</span>
                </h2>
                {listed.length === 0 ? (
                  <p class="hint">{group.empty}</p>
                ) : (
                  <ul class="conferences">
                    {listed.map((conference) => {
                      const moment = when(conference);
                      const duration = lasted(conference);
                      const label =
                        conference.state === "ended"
                          ? "Ended"
                          : conference.state === "started"
                            ? "Started"
                            : conference.state === "pending"
                              ? "Starts"
                              : "Scheduled (not yet confirmed)";
                      return (
                        <li key={conference.id}>
                          <a href={`#/conferences/${conference.id}`}>{conference.name}</a>
                          <span class="hint">
                            {label}
                            {moment === null ? "" : ` ${format.format(moment)}`}
                            {duration !== null && `, lasted ${duration}`}
                          </span>
                        </li>
                      );
                    })}
                  </ul>
                )}
              </section>
            );
          })}
    </main>
  );
}
