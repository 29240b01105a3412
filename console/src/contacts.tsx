import type { RefObject } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import {
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
import { messagesOf, useViewHeading } from "./view.js";

const EMPTY: ContactFields = { name: "", email: null, phoneNumber: null };

/** The user's contacts: listed, added, edited (in the same form) and deleted. */
export function Contacts({ user }: { user: SessionUser }) {
  const [contacts, setContacts] = useState<Contact[] | null>(null);
  const [loadError, setLoadError] = useState("");
  const [notice, setNotice] = useState("");
  const [editing, setEditing] = useState<Contact | null>(null);
  const heading = useViewHeading("Contacts");
  const formHeading = useRef<HTMLHeadingElement>(null);

  const load = useCallback(async () => {
    try {
      setContacts(await listContacts(user.id));
      setLoadError("");
    } catch (caught) {
      setLoadError(`The contacts could not be read: ${messagesOf(caught).join(" ")}`);
    }
  }, [user.id]);
  useEffect(() => {
    load();
  }, [load]);

  const edit = (contact: Contact) => {
    setEditing(contact);
    requestAnimationFrame(() => formHeading.current?.focus());
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
      <p class="notice" role="status" aria-live="polite">
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
                      onClick={async () => {
                        try {
                          await deleteContact(user.id, contact.id);
                          setNotice(`Deleted ${contact.name}.`);
                          if (editing?.id === contact.id) setEditing(null);
                        } catch (caught) {
                          setNotice(`Could not delete ${contact.name}: ${messagesOf(caught).join(" ")}`);
                        }
                        load();
                      }}
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
      <ContactForm
        key={editing?.id ?? "new"}
        headingRef={formHeading}
        contact={editing}
        save={async (fields) => {
          const saved =
            editing === null
              ? await createContact(user.id, fields)
              : await updateContact(user.id, editing.id, fields);
          setNotice(editing === null ? `Added ${saved.name}.` : `Saved ${saved.name}.`);
          setEditing(null);
          load();
        }}
        cancel={() => setEditing(null)}
      />
    </main>
  );
}

function ContactForm({
  contact,
  headingRef,
  save,
  cancel,
}: {
  contact: Contact | null;
  headingRef: RefObject<HTMLHeadingElement | null>;
  save: (fields: ContactFields) => Promise<void>;
  cancel: () => void;
}) {
  const initial = contact ?? EMPTY;
  const [name, setName] = useState(initial.name);
  const [email, setEmail] = useState(initial.email ?? "");
  const [phoneNumber, setPhoneNumber] = useState(initial.phoneNumber ?? "");
  const [problems, setProblems] = useState<string[]>([]);
  const title = contact === null ? "Add a contact" : `Edit ${contact.name}`;

  const submit = async (event: Event) => {
    event.preventDefault();
    setProblems([]);
    try {
      await save({
        name: name.trim(),
        email: email.trim() === "" ? null : email.trim(),
        phoneNumber: phoneNumber.trim() === "" ? null : phoneNumber.trim(),
      });
      if (contact === null) {
        setName("");
        setEmail("");
        setPhoneNumber("");
      }
    } catch (caught) {
      setProblems(messagesOf(caught));
    }
  };

  return (
    <section aria-labelledby="contact-form-heading">
      <h2 id="contact-form-heading" ref={headingRef} tabIndex={-1}>
        {title}
      </h2>
      <form class="add" onSubmit={submit} aria-describedby="contact-problems">
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
        <button type="submit" class="primary">
          {contact === null ? "Add contact" : "Save contact"}
        </button>
        {contact !== null && (
          <button type="button" onClick={cancel}>
            Cancel
          </button>
        )}
      </form>
      <Problems id="contact-problems" messages={problems} />
    </section>
  );
}
