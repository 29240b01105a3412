import type { FastifyInstance } from "fastify";
import { parseSearch } from "../../domain/search.js";
import { BILLING_PACKAGE_SEARCH, listBillingPackages } from "../../store/users.js";
import { billingPackageDocument, Documents } from "../representations.js";
import { BillingPackage, ListOf } from "../schemas.js";
import { type ApiContext, resource, searchQuery, sendDocument } from "../server.js";

/** The packages a sign-up may name; public, as sign-up needs no credentials. */
export async function billingPackageRoutes(app: FastifyInstance, api: ApiContext): Promise<void> {
  resource(
    app,
    "/billing-packages",
    {
      GET: async (request, reply) => {
        const filters = parseSearch(searchQuery(request), BILLING_PACKAGE_SEARCH);
        const packages = await listBillingPackages(api.store, filters);
        return sendDocument(reply, 200, Documents.billingPackages, packages.map(billingPackageDocument));
      },
    },
    {
      GET: {
        summary: "The billing packages a sign-up chooses from",
        access: "public",
        answer: ListOf("billing-packages", BillingPackage),
        search: BILLING_PACKAGE_SEARCH,
      },
    },
  );
}
