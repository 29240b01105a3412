import type { FastifyInstance } from "fastify";
import { readUserChanges } from "../../domain/user.js";
import { createUser, getUser, updateUser } from "../../store/users.js";
import { hashPassword } from "../passwords.js";
import { Documents, userDocument } from "../representations.js";
import { User, UserUpdate, UserWrite } from "../schemas.js";
import {
  type ApiContext,
  readBody,
  readLockVersion,
  resource,
  sendCreated,
  sendDocument,
} from "../server.js";

export async function userRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/users",
    {
      POST: async (request, reply) => {
        const changes = readUserChanges(readBody(request, UserWrite), "create", api.callingPolicy);
        const passwordHash = await hashPassword(changes.password as string, api.passwordCost);
        const user = await createUser(
          api.store,
          changes as typeof changes & { name: string; email: string; billingPackageId: number },
          passwordHash,
          new Date(),
        );
        return sendCreated(reply, `/users/${user.id}`, Documents.user, userDocument(user));
      },
    },
    { POST: { summary: "Sign up", access: "public", body: UserWrite, status: 201, answer: User } },
    // Sign-up needs no credentials, so every attempt counts against its client address instead.
    { rateLimit: api.signupLimit },
  );

  resource(
    app,
    "/users/:userId",
    {
      GET: async (request, reply) => {
        const userId = await api.owner(request);
        return sendDocument(reply, 200, Documents.user, userDocument(await requireUser(api, userId)));
      },
      PUT: async (request, reply) => {
        const userId = await api.owner(request);
        const input = readBody(request, UserUpdate);
        const lockVersion = readLockVersion(input);
        const changes = readUserChanges(input, "update", api.callingPolicy);
        const passwordHash =
          changes.password === undefined ? undefined : await hashPassword(changes.password, api.passwordCost);
        const user = await updateUser(api.store, userId, changes, passwordHash, lockVersion, new Date());
        return sendDocument(reply, 200, Documents.user, userDocument(user));
      },
    },
    {
      GET: { summary: "Get the user", answer: User },
      PUT: { summary: "Change the user (password with its confirmation)", body: UserUpdate, answer: User },
    },
  );

  resource(
    app,
    "/current",
    {
      GET: async (request, reply) => {
        const userId = await api.authenticated(request);
        return sendDocument(reply, 200, Documents.user, userDocument(await requireUser(api, userId)));
      },
    },
    { GET: { summary: "The signed-in user", answer: User } },
  );
}

async function requireUser(api: ApiContext, userId: number) {
  const user = await getUser(api.store, userId);
  // The user was found a moment ago while authenticating; only a concurrent removal gets here.
  if (!user) throw new Error(`user ${userId} vanished`);
  return user;
}
