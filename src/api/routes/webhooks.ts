import type { FastifyInstance } from "fastify";
import { ValidationFailed } from "../../domain/errors.js";
import { parseSearch } from "../../domain/search.js";
import { readWebhookChanges, type WebhookChanges } from "../../domain/webhook.js";
import {
  createWebhook,
  DELIVERY_SEARCH,
  deleteWebhook,
  getDelivery,
  getWebhook,
  listDeliveries,
  listWebhooks,
  updateWebhook,
  WEBHOOK_SEARCH,
} from "../../store/webhooks.js";
import { type DestinationPolicy, destinationProblem } from "../../webhooks/destination.js";
import { newSecret } from "../../webhooks/signature.js";
import { Documents, deliveryDocument, webhookDocument } from "../representations.js";
import { Delivery, ListOf, Webhook, WebhookUpdate, WebhookWrite } from "../schemas.js";
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

/** A new or changed URL must lead somewhere webhooks may call (server-side request forgery). */
async function checkUrl(changes: WebhookChanges, destinations: DestinationPolicy): Promise<void> {
  if (changes.url === undefined) return;
  const problem = await destinationProblem(changes.url, destinations);
  if (problem !== undefined) throw new ValidationFailed([problem]);
}

export async function webhookRoutes(
  app: FastifyInstance,
  { destinations, ...api }: ApiContext & { destinations: DestinationPolicy },
): Promise<void> {
  resource(
    app,
    "/users/:userId/webhooks",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const webhooks = await listWebhooks(
          api.store,
          userId,
          parseSearch(searchQuery(request), WEBHOOK_SEARCH),
        );
        return sendDocument(
          reply,
          200,
          Documents.webhooks,
          webhooks.map((webhook) => webhookDocument(webhook)),
        );
      },
      POST: async (request, reply) => {
        const userId = await api.owner(request);
        const changes = readWebhookChanges(readBody(request, WebhookWrite), "create");
        await checkUrl(changes, destinations);
        const secret = newSecret();
        const webhook = await createWebhook(
          api.store,
          userId,
          changes as typeof changes & { url: string },
          secret,
          new Date(),
        );
        return sendCreated(
          reply,
          `/users/${userId}/webhooks/${webhook.id}`,
          Documents.webhook,
          webhookDocument(webhook, secret),
        );
      },
    },
    {
      GET: {
        summary: "List the user's webhooks",
        answer: ListOf("webhooks", Webhook),
        search: WEBHOOK_SEARCH,
      },
      POST: {
        summary: "Add a webhook (its signing secret is in this answer only)",
        body: WebhookWrite,
        status: 201,
        answer: Webhook,
      },
    },
  );

  resource(
    app,
    "/users/:userId/webhooks/:webhookId",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const webhook = await getWebhook(api.store, userId, idParam(request, "webhookId"));
        return sendDocument(reply, 200, Documents.webhook, webhookDocument(webhook));
      },
      PUT: async (request, reply) => {
        const userId = await api.owner(request);
        const id = idParam(request, "webhookId");
        const input = readBody(request, WebhookUpdate);
        const lockVersion = readLockVersion(input);
        const changes = readWebhookChanges(input, "update");
        const current = await getWebhook(api.store, userId, id);
        // Only a new URL is checked: one that was accepted is not refused again for a DNS hiccup.
        if (changes.url !== current.url) await checkUrl(changes, destinations);
        const webhook = await updateWebhook(api.store, userId, id, changes, lockVersion, new Date());
        return sendDocument(reply, 200, Documents.webhook, webhookDocument(webhook));
      },
      DELETE: async (request, reply) => {
        const userId = await api.owner(request);
        await deleteWebhook(api.store, userId, idParam(request, "webhookId"));
        return reply.status(204).send();
      },
    },
    {
      GET: { summary: "Get a webhook", answer: Webhook },
      PUT: {
        summary: "Change a webhook (enabled: true re-enables one disabled)",
        body: WebhookUpdate,
        answer: Webhook,
      },
      DELETE: { summary: "Delete a webhook" },
    },
  );

  resource(
    app,
    "/users/:userId/webhooks/:webhookId/deliveries",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const deliveries = await listDeliveries(
          api.store,
          userId,
          idParam(request, "webhookId"),
          parseSearch(searchQuery(request), DELIVERY_SEARCH),
        );
        return sendDocument(reply, 200, Documents.deliveries, deliveries.map(deliveryDocument));
      },
    },
    {
      GET: {
        summary: "A webhook's deliveries, newest first",
        answer: ListOf("deliveries", Delivery),
        search: DELIVERY_SEARCH,
      },
    },
  );

  resource(
    app,
    "/users/:userId/webhooks/:webhookId/deliveries/:deliveryId",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        const delivery = await getDelivery(
          api.store,
          userId,
          idParam(request, "webhookId"),
          idParam(request, "deliveryId"),
        );
        return sendDocument(reply, 200, Documents.delivery, deliveryDocument(delivery));
      },
    },
    { GET: { summary: "A delivery with every attempt", answer: Delivery } },
  );
}
