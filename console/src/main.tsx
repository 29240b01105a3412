/** The moderator console: sign-in, the user's conferences, and the live view of one (hash routes). */
import { render } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { configureSession, currentSession, type Session, signOut } from "./api.js";
import { ConferenceList } from "./conference-list.js";
import { ConferenceView } from "./conference-view.js";
import { SignIn } from "./sign-in.js";

/** The conference id of `#/conferences/12`, or null for the list. */
function routeOf(hash: string): number | null {
  const match = /^#\/conferences\/(\d+)\/?$/.exec(hash);
  return match === null ? null : Number(match[1]);
}

function useRoute(): number | null {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const follow = () => setRoute(routeOf(location.hash));
    addEventListener("hashchange", follow);
    return () => removeEventListener("hashchange", follow);
  }, []);
  return route;
}

function App() {
  // undefined while the session is being looked up, null when signed out.
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [problem, setProblem] = useState("");
  const conferenceId = useRoute();
  const signedOut = useCallback(() => setSession(null), []);
  configureSession(session ?? null, signedOut);

  useEffect(() => {
    currentSession().then(setSession, (error: Error) => {
      setProblem(`The service could not be reached: ${error.message}`);
      setSession(null);
    });
  }, []);
  useEffect(() => {
    if (conferenceId === null) document.title = "Conferences — Bridgeline console";
  }, [conferenceId]);

  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) {
    return (
      <>
        {problem !== "" && (
          <p class="error" role="alert">
            {problem}
          </p>
        )}
        <SignIn onSignedIn={setSession} />
      </>
    );
  }
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          Bridgeline console
        </a>
        <span class="who">{session.user.name}</span>
        <button
          type="button"
          onClick={async () => {
            await signOut().catch(() => undefined);
            setSession(null);
          }}
        >
          Sign out
        </button>
      </header>
      {conferenceId === null ? (
        <ConferenceList user={session.user} />
      ) : (
        <ConferenceView key={conferenceId} user={session.user} conferenceId={conferenceId} />
      )}
    </>
  );
}

const root = document.getElementById("app");
if (root !== null) render(<App />, root);
