/**
 * The moderator console: sign-in and sign-up, the user's conferences (planned, live and past), one
 * conference's page, a new conference, contacts and settings (hash routes).
 */
import { render } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { configureSession, currentSession, type Session, type SessionUser, signOut } from "./api.js";
import { NewConference } from "./conference-form.js";
import { ConferenceList } from "./conference-list.js";
import { ConferenceView } from "./conference-view.js";
import { Contacts } from "./contacts.js";
import { Settings } from "./settings.js";
import { SignIn } from "./sign-in.js";
import { SignUp } from "./sign-up.js";

type Route =
  | { view: "conferences" }
  | { view: "new-conference" }
  | { view: "conference"; id: number }
  | { view: "contacts" }
  | { view: "settings" }
  | { view: "sign-up" };

function routeOf(hash: string): Route {
  if (/^#\/conferences\/new\/?$/.test(hash)) return { view: "new-conference" };
  const conference = /^#\/conferences\/(\d+)\/?$/.exec(hash);
  if (conference !== null) return { view: "conference", id: Number(conference[1]) };
  if (/^#\/contacts\/?$/.test(hash)) return { view: "contacts" };
  if (/^#\/settings\/?$/.test(hash)) return { view: "settings" };
  if (/^#\/sign-up\/?$/.test(hash)) return { view: "sign-up" };
  return { view: "conferences" };
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const follow = () => setRoute(routeOf(location.hash));
    addEventListener("hashchange", follow);
    return () => removeEventListener("hashchange", follow);
  }, []);
  return route;
}

/** The views a signed-in user moves between, in the header. */
const SECTIONS: Array<{ href: string; label: string; views: Route["view"][] }> = [
  { href: "#/", label: "Conferences", views: ["conferences", "new-conference", "conference"] },
  { href: "#/contacts", label: "Contacts", views: ["contacts"] },
  { href: "#/settings", label: "Settings", views: ["settings"] },
];

function App() {
  // undefined while the session is being looked up, null when signed out.
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [problem, setProblem] = useState("");
  const route = useRoute();
  const signedOut = useCallback(() => setSession(null), []);
  configureSession(session ?? null, signedOut);
  const userChanged = useCallback(
    (user: SessionUser) => setSession((before) => (before ? { ...before, user } : before)),
    [],
  );

  useEffect(() => {
    currentSession().then(setSession, (error: Error) => {
      setProblem(`The service could not be reached: ${error.message}`);
      setSession(null);
    });
  }, []);

  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) {
    const signedIn = (opened: Session) => {
      // A new account lands on its (empty) list of conferences.
      if (route.view === "sign-up") location.hash = "#/";
      setSession(opened);
    };
    return (
      <>
        {problem !== "" && (
          <p class="error" role="alert">
            {problem}
          </p>
        )}
        {route.view === "sign-up" ? <SignUp onSignedIn={signedIn} /> : <SignIn onSignedIn={signedIn} />}
      </>
    );
  }
  const { user } = session;
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          Bridgeline console
        </a>
        <nav aria-label="Sections">
          <ul class="sections">
            {SECTIONS.map((section) => (
              <li key={section.href}>
                <a href={section.href} aria-current={section.views.includes(route.view) ? "page" : undefined}>
                  {section.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">{user.name}</span>
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
      {route.view === "conference" ? (
        <ConferenceView key={route.id} user={user} conferenceId={route.id} />
      ) : route.view === "new-conference" ? (
        <NewConference user={user} />
      ) : route.view === "contacts" ? (
        <Contacts user={user} />
      ) : route.view === "settings" ? (
        <Settings user={user} onUserChanged={userChanged} />
      ) : (
        <ConferenceList user={user} />
      )}
    </>
  );
}

const root = document.getElementById("app");
if (root !== null) render(<App />, root);
