import { useState } from "preact/hooks";
import { ApiError, type Session, signIn } from "./api.js";
import { TextInput } from "./text-input.js";
import { useMounted, useSubmit, useViewHeading } from "./view.js";

export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState("");
  const { busy, submit } = useSubmit();
  const mounted = useMounted();
  const heading = useViewHeading("Sign in");

  const signInOnce = async () => {
    setError("");
    try {
      const session = await signIn(email, password);
      if (mounted()) onSignedIn(session);
    } catch (caught) {
      if (!mounted()) return;
      setError(
        caught instanceof ApiError && caught.status === 401
          ? "Wrong e-mail address or password."
          : caught instanceof Error
            ? caught.message
            : String(caught),
      );
    }
  };

  return (
    <main class="sign-in">
      <h1 ref={heading} tabIndex={-1}>
        Bridgeline console
      </h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          submit(signInOnce);
        }}
        aria-describedby="sign-in-error"
      >
        <TextInput
          id="email"
          label="E-mail address"
          type="email"
          autocomplete="username"
          required
          value={email}
          onValue={setEmail}
        />
        <TextInput
          id="password"
          label="Password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onValue={setPassword}
        />
        <button type="submit" class="primary" aria-disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        <p id="sign-in-error" class="error" role="alert">
          {error}
        </p>
      </form>
      <p>
        New here? <a href="#/sign-up">Create an account</a>
      </p>
    </main>
  );
}
