import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import {
  ChangedElsewhere,
  type Contact,
  type ContactFields,
  createContact,
  deleteContact,
  listContacts,
  type SessionUser,
  updateContact,
} from "./api.js";
import { Problems } from "./problems.js";
import { TextInput } from "./text-input.js";
import { focusAfterRender, messagesOf, useLatest, useMounted, useSubmit, useViewHeading } from "./view.js";

const EMPTY: ContactFields = { name: "", email: null, phoneNumber: null };

/**
 * The user's contacts: listed, added, edited (in the same form) and deleted, one change at a time.
 * When a control goes away with what it did (a deleted row, the edit form saved or cancelled), the
 * focus moves to what says what happened (the notice) or to the form's heading.
 */
export function Contacts({ user }: { user: SessionUser }) {
  const [contacts, setContacts] = useState<Contact[] | null>(null);
  const [loadError, setLoadError] = useState("");
  const [notice, setNotice] = useState("");
  const [editing, setEditing] = useState<Contact | null>(null);
  const { busy, submit } = useSubmit();
  const mounted = useMounted();
  const beginRead = useLatest();
  const heading = useViewHeading("Contacts");
  const formHeading = useRef<HTMLHeadingElement>(null);
  const noticeText = useRef<HTMLParagraphElement>(null);

  /** Reads the list; what it read, or null when a later read (or leaving the view) overtook it. */
  const load = useCallback(async (): Promise<Contact[] | null> => {
    const latest = beginRead();
    try {
      const read = await listContacts(user.id);
      if (!latest()) return null;
      setContacts(read);
      setLoadError("");
      return read;
    } catch (caught) {
      if (latest()) setLoadError(`The contacts could not be read: ${messagesOf(caught).join(" ")}`);
      return null;
    }
  }, [user.id, beginRead]);
  useEffect(() => {
    load();
  }, [load]);

  const edit = (contact: Contact) => {
    setEditing(contact);
    focusAfterRender(formHeading);
  };

  const remove = async (contact: Contact) => {
    try {
      await deleteContact(user.id, contact.id);
      if (!mounted()) return;
      setNotice(`Deleted ${contact.name}.`);
      if (editing?.id === contact.id) setEditing(null);
    } catch (caught) {
      if (!mounted()) return;
      setNotice(`Could not delete ${contact.name}: ${messagesOf(caught).join(" ")}`);
    }
    // The row and its button are gone (or may be, once read again).
    focusAfterRender(noticeText);
    load();
  };

  /**
   * Saves the form: a new contact's fields, or those an edit changed (the others are left as they
   * are, whoever changed them). Throws what to show under it; resolves true once saved.
   */
  const save = async (fields: ContactFields): Promise<boolean> => {
    try {
      const saved =
        editing === null
          ? await createContact(user.id, fields)
          : await updateContact(user.id, editing, changedFields(editing, fields));
      if (!mounted()) return false;
      setNotice(editing === null ? `Added ${saved.name}.` : `Saved ${saved.name}.`);
      if (editing !== null) {
        // The edit form gives way to the add form: the notice takes the focus.
        // Unless another contact's form was opened meanwhile.
        setEditing((open) => (open?.id === editing.id ? null : open));
        focusAfterRender(noticeText);
      }
      load();
      return true;
    } catch (caught) {
      if (!(caught instanceof ChangedElsewhere) || editing === null) throw caught;
      // Changed by someone else since it was read: the list shows it as it now is, and the form
      // keeps what was typed, to be saved over it (with the lock-version just read) if still wanted.
      const fresh = (await load())?.find((contact) => contact.id === editing.id);
      if (fresh !== undefined && mounted()) setEditing((open) => (open?.id === fresh.id ? fresh : open));
      throw new Error(
        `${editing.name} was changed elsewhere meanwhile: the list shows it as it is now. ` +
          "Save again to replace it with what this form holds.",
      );
    }
  };

  return (
    <main>
      <h1 ref={heading} tabIndex={-1}>
        Contacts
      </h1>
      <p class="hint">People you call often: add them to a conference from its page.</p>
      {loadError !== "" && (
        <p class="error" role="alert">
          {loadError}
        </p>
      )}
      <p ref={noticeText} class="notice" role="status" aria-live="polite" tabIndex={-1}>
        {notice}
      </p>
      {contacts === null ? (
        loadError === "" && <p>Loading…</p>
      ) : contacts.length === 0 ? (
        <p class="hint">No contacts yet.</p>
      ) : (
        <table>
          <caption>Your contacts ({contacts.length})</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">E-mail</th>
              <th scope="col">Phone number</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {contacts.map((contact) => (
              <tr key={contact.id}>
                <th scope="row" data-label="Name">
                  {contact.name}
                </th>
                <td data-label="E-mail">{contact.email ?? "—"}</td>
                <td data-label="Phone number" class="nowrap">
                  {contact.phoneNumber ?? "—"}
                </td>
                <td data-label="Actions">
                  <div class="actions">
                    <button type="button" aria-label={`Edit ${contact.name}`} onClick={() => edit(contact)}>
                      Edit
                    </button>
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Delete ${contact.name}`}
                      aria-disabled={busy}
                      onClick={() => submit(() => remove(contact))}
                    >
                      Delete
                    </button>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <section aria-labelledby="contact-form-heading">
        {/* Outside the form, which starts afresh for each contact: the heading stays, to take the focus. */}
        <h2 id="contact-form-heading" ref={formHeading} tabIndex={-1}>
          {editing === null ? "Add a contact" : `Edit ${editing.name}`}
        </h2>
        <ContactForm
          key={editing?.id ?? "new"}
          contact={editing}
          busy={busy}
          submit={submit}
          save={save}
          cancel={() => {
            setEditing(null);
            focusAfterRender(formHeading);
          }}
        />
      </section>
    </main>
  );
}

function ContactForm({
  contact,
  busy,
  submit,
  save,
  cancel,
}: {
  contact: Contact | null;
  busy: boolean;
  /** Runs a save unless a change is running. */
  submit: (save: () => Promise<void>) => Promise<void>;
  save: (fields: ContactFields) => Promise<boolean>;
  cancel: () => void;
}) {
  const initial = contact ?? EMPTY;
  const [name, setName] = useState(initial.name);
  const [email, setEmail] = useState(initial.email ?? "");
  const [phoneNumber, setPhoneNumber] = useState(initial.phoneNumber ?? "");
  // The contact the fields were filled from: read again (changed elsewhere), the fields nobody
  // typed in follow it, and what was typed stays.
  const [filledFrom, setFilledFrom] = useState(initial);
  if (contact !== null && contact !== filledFrom) {
    if (name === filledFrom.name) setName(contact.name);
    if (email === (filledFrom.email ?? "")) setEmail(contact.email ?? "");
    if (phoneNumber === (filledFrom.phoneNumber ?? "")) setPhoneNumber(contact.phoneNumber ?? "");
    setFilledFrom(contact);
  }
  const [problems, setProblems] = useState<string[]>([]);
  const mounted = useMounted();

  const saveFields = async () => {
    setProblems([]);
    try {
      const saved = await save({
        name: name.trim(),
        email: email.trim() === "" ? null : email.trim(),
        phoneNumber: phoneNumber.trim() === "" ? null : phoneNumber.trim(),
      });
      if (saved && contact === null && mounted()) {
        setName("");
        setEmail("");
        setPhoneNumber("");
      }
    } catch (caught) {
      if (mounted()) setProblems(messagesOf(caught));
    }
  };

  return (
    <>
      <form
        class="add"
        onSubmit={(event) => {
          event.preventDefault();
          submit(saveFields);
        }}
        aria-labelledby="contact-form-heading"
        aria-describedby="contact-problems"
      >
        <div>
          <TextInput
            id="contact-name"
            label="Name"
            required
            autocomplete="off"
            value={name}
            onValue={setName}
          />
        </div>
        <div>
          <TextInput
            id="contact-email"
            label="E-mail"
            type="email"
            autocomplete="off"
            value={email}
            onValue={setEmail}
          />
        </div>
        <div>
          <TextInput
            id="contact-phone"
            label="Phone number"
            type="tel"
            autocomplete="off"
            value={phoneNumber}
            onValue={setPhoneNumber}
          />
        </div>
        <button type="submit" class="primary" aria-disabled={busy}>
          {contact === null ? "Add contact" : "Save contact"}
        </button>
        {contact !== null && (
          <button type="button" onClick={cancel}>
            Cancel
          </button>
        )}
      </form>
      <Problems id="contact-problems" messages={problems} />
    </>
  );
}

/** The fields of `typed` that differ from the contact as read. */
function changedFields(read: ContactFields, typed: ContactFields): Partial<ContactFields> {
  const changed: Partial<ContactFields> = {};
  if (typed.name !== read.name) changed.name = typed.name;
  if (typed.email !== read.email) changed.email = typed.email;
  if (typed.phoneNumber !== read.phoneNumber) changed.phoneNumber = typed.phoneNumber;
  return changed;
}
