import { useEffect, useState } from "preact/hooks";
import { type BillingPackage, listBillingPackages, type Session, signIn, signUp } from "./api.js";
import { Problems } from "./problems.js";
import { TextInput } from "./text-input.js";
import { browserZoneName, TimeZoneOptions } from "./time-zones.js";
import { messagesOf, useViewHeading } from "./view.js";

/** A new account, as POST /users takes it, then signed in with the same e-mail and password. */
export function SignUp({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [confirmation, setConfirmation] = useState("");
  const [timeZone, setTimeZone] = useState(() => browserZoneName() ?? "");
  const [packages, setPackages] = useState<BillingPackage[]>([]);
  const [billingPackage, setBillingPackage] = useState("");
  const [terms, setTerms] = useState(false);
  const [problems, setProblems] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const heading = useViewHeading("Create an account");

  useEffect(() => {
    listBillingPackages().then(
      (found) => {
        setPackages(found);
        setBillingPackage((chosen) => chosen || String(found[0]?.id ?? ""));
      },
      (caught) => setProblems(messagesOf(caught)),
    );
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setProblems([]);
    try {
      await signUp({
        name,
        email,
        password,
        passwordConfirmation: confirmation,
        timeZone: timeZone === "" ? null : timeZone,
        billingPackageId: Number(billingPackage),
        termsOfService: terms,
      });
      onSignedIn(await signIn(email, password));
    } catch (caught) {
      setProblems(messagesOf(caught));
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1 ref={heading} tabIndex={-1}>
        Create an account
      </h1>
      <form onSubmit={submit} aria-describedby="sign-up-problems">
        <TextInput
          id="sign-up-name"
          label="Name"
          autocomplete="name"
          required
          value={name}
          onValue={setName}
        />
        <TextInput
          id="sign-up-email"
          label="E-mail address"
          type="email"
          autocomplete="email"
          required
          value={email}
          onValue={setEmail}
        />
        <TextInput
          id="sign-up-password"
          label="Password"
          type="password"
          autocomplete="new-password"
          aria-describedby="sign-up-password-hint"
          required
          value={password}
          onValue={setPassword}
        />
        <p id="sign-up-password-hint" class="hint">
          At least 8 characters.
        </p>
        <TextInput
          id="sign-up-confirmation"
          label="Password again"
          type="password"
          autocomplete="new-password"
          required
          value={confirmation}
          onValue={setConfirmation}
        />
        <label for="sign-up-time-zone">Time zone</label>
        <select
          id="sign-up-time-zone"
          aria-describedby="sign-up-time-zone-hint"
          value={timeZone}
          onChange={(event) => setTimeZone(event.currentTarget.value)}
        >
          <TimeZoneOptions />
        </select>
        <p id="sign-up-time-zone-hint" class="hint">
          Start times you type are read in it, and times are shown in it.
        </p>
        <label for="sign-up-package">Billing package</label>
        <select
          id="sign-up-package"
          required
          value={billingPackage}
          onChange={(event) => setBillingPackage(event.currentTarget.value)}
        >
          {packages.map((offered) => (
            <option key={offered.id} value={String(offered.id)}>
              {offered.name}
            </option>
          ))}
        </select>
        <div class="check">
          <input
            id="sign-up-terms"
            type="checkbox"
            checked={terms}
            onChange={(event) => setTerms(event.currentTarget.checked)}
          />
          <label for="sign-up-terms">I accept the terms of service</label>
        </div>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Creating the account…" : "Create the account"}
        </button>
        <Problems id="sign-up-problems" messages={problems} />
      </form>
      <p>
        <a href="#/">I have an account: sign in</a>
      </p>
    </main>
  );
}
