import { useEffect, useState } from "preact/hooks";
import { MIN_PASSWORD_LENGTH } from "../../src/domain/user.js";
import { type BillingPackage, listBillingPackages, type Session, signIn, signUp } from "./api.js";
import { Problems } from "./problems.js";
import { TextInput } from "./text-input.js";
import { browserZoneName, TimeZoneOptions } from "./time-zones.js";
import { messagesOf, useMounted, useSubmit, useViewHeading } from "./view.js";

/**
 * A new account, as POST /users takes it, then signed in with the same e-mail and password. When the
 * account is made but the sign-in fails (too many attempts, the network), the form remembers it, and
 * the next press only signs in: sending the sign-up again would be refused, the e-mail being taken.
 */
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
  /** The e-mail address of the account this form made, while it is not signed in yet. */
  const [createdFor, setCreatedFor] = useState<string | null>(null);
  const { busy, submit } = useSubmit();
  const mounted = useMounted();
  const heading = useViewHeading("Create an account");
  const created = createdFor !== null && createdFor === email;

  useEffect(() => {
    listBillingPackages().then(
      (found) => {
        if (!mounted()) return;
        setPackages(found);
        setBillingPackage((chosen) => chosen || String(found[0]?.id ?? ""));
      },
      (caught) => mounted() && setProblems(messagesOf(caught)),
    );
  }, [mounted]);

  const createAndSignIn = async () => {
    setProblems([]);
    if (!created) {
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
      } catch (caught) {
        if (mounted()) setProblems(messagesOf(caught));
        return;
      }
      setCreatedFor(email);
    }
    try {
      const session = await signIn(email, password);
      if (mounted()) onSignedIn(session);
    } catch (caught) {
      if (mounted())
        setProblems([
          `The account is created, but signing in failed: ${messagesOf(caught).join(" ")}`,
          "Press Sign in to try again.",
        ]);
    }
  };

  return (
    <main class="sign-in">
      <h1 ref={heading} tabIndex={-1}>
        Create an account
      </h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          submit(createAndSignIn);
        }}
        aria-describedby="sign-up-problems"
      >
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
          At least {MIN_PASSWORD_LENGTH} characters.
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
        <button type="submit" class="primary" aria-disabled={busy}>
          {created
            ? busy
              ? "Signing in…"
              : "Sign in"
            : busy
              ? "Creating the account…"
              : "Create the account"}
        </button>
        <Problems id="sign-up-problems" messages={problems} />
      </form>
      <p>
        <a href="#/">I have an account: sign in</a>
      </p>
    </main>
  );
}
