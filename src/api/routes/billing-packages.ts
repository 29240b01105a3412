import { parseSearch } from "../../domain/search.js";
import { BILLING_PACKAGE_SEARCH, listBillingPackages } from "../../store/users.js";
import { billingPackageElement } from "../representations.js";
import { type ApiContext, searchQuery, sendList } from "../server.js";

/** The packages a sign-up may name; public, as sign-up needs no credentials. */
export function billingPackageRoutes(api: ApiContext): void {
  api.resource("/billing-packages", {
    GET: async (request, reply) => {
      const filters = parseSearch(searchQuery(request), BILLING_PACKAGE_SEARCH);
      const packages = await listBillingPackages(api.store, filters);
      return sendList(reply, "billing-packages", "billing-package", packages.map(billingPackageElement));
    },
  });
}
