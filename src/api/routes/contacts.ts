import type { FastifyInstance } from "fastify";
import { readContactChanges } from "../../domain/contact.js";
import { parseSearch } from "../../domain/search.js";
import {
  CONTACT_SEARCH,
  createContact,
  deleteContact,
  getContact,
  listContacts,
  updateContact,
} from "../../store/contacts.js";
import { contactDocument, Documents } from "../representations.js";
import { Contact, ContactUpdate, ContactWrite, ListOf } from "../schemas.js";
import {
  type ApiContext,
  idParam,
  readBody,
  readLockVersion,
  resource,
  searchQuery,
  sendCreated,
  sendDocument,
} from "../server.js";

export async function contactRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users/:userId/contacts",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const contacts = await listContacts(
          api.store,
          userId,
          parseSearch(searchQuery(request), CONTACT_SEARCH),
        );
        return sendDocument(reply, 200, Documents.contacts, contacts.map(contactDocument));
      },
      POST: async (request, reply) => {
        const userId = await api.owner(request);
        const changes = readContactChanges(readBody(request, ContactWrite), "create");
        const contact = await createContact(
          api.store,
          userId,
          changes as typeof changes & { name: string },
          new Date(),
        );
        return sendCreated(
          reply,
          `/users/${userId}/contacts/${contact.id}`,
          Documents.contact,
          contactDocument(contact),
        );
      },
    },
    {
      GET: {
        summary: "List the user's contacts",
        answer: ListOf("contacts", Contact),
        search: CONTACT_SEARCH,
      },
      POST: { summary: "Add a contact", body: ContactWrite, status: 201, answer: Contact },
    },
  );

  resource(
    app,
    "/users/:userId/contacts/:contactId",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const contact = await getContact(api.store, userId, idParam(request, "contactId"));
        return sendDocument(reply, 200, Documents.contact, contactDocument(contact));
      },
      PUT: async (request, reply) => {
        const userId = await api.owner(request);
        const id = idParam(request, "contactId");
        const input = readBody(request, ContactUpdate);
        const lockVersion = readLockVersion(input);
        const changes = readContactChanges(input, "update");
        const contact = await updateContact(api.store, userId, id, changes, lockVersion, new Date());
        return sendDocument(reply, 200, Documents.contact, contactDocument(contact));
      },
      DELETE: async (request, reply) => {
        const userId = await api.owner(request);
        await deleteContact(api.store, userId, idParam(request, "contactId"));
        return reply.status(204).send();
      },
    },
    {
      GET: { summary: "Get a contact", answer: Contact },
      PUT: { summary: "Change a contact", body: ContactUpdate, answer: Contact },
      DELETE: { summary: "Delete a contact" },
    },
  );
}
