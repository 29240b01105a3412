/**
 * Where a webhook's requests go, checked against server-side request forgery: the host is resolved,
 * and a URL with any address in a private, loopback, link-local (and like) range is refused, unless
 * BRIDGELINE_WEBHOOK_ALLOW_PRIVATE allows them. Checked when a webhook is created or its URL changed,
 * and again at each delivery, where the connection is made only to the addresses just checked (no
 * second DNS answer can move it: DNS rebinding).
 */
import dns from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { refusedAddressKind, refusedAddressMessage, urlHost } from "../domain/webhook.js";

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

export interface DestinationPolicy {
  /** Private, loopback and link-local destinations allowed (a service that calls its own network). */
  readonly allowPrivate: boolean;
  /** Host names to addresses; the system's resolver unless a test gives its own. */
  readonly resolve?: Resolver;
}

/** The addresses to connect to, checked; or why the URL may not be called. */
export type Destination = { readonly addresses: ResolvedAddress[] } | { readonly problem: string };

/**
 * Resolves the URL's host and checks every address. With private destinations allowed nothing is
 * resolved here: the request's own lookup does it (addresses is empty).
 */
export async function checkDestination(url: URL, policy: DestinationPolicy): Promise<Destination> {
  if (policy.allowPrivate) return { addresses: [] };
  const host = urlHost(url);
  const family = isIP(host);
  let addresses: ResolvedAddress[];
  if (family !== 0) addresses = [{ address: host, family }];
  else {
    try {
      addresses = await (policy.resolve ?? systemResolver)(host);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      return { problem: `url: the host ${host} cannot be resolved (${String(code ?? error)})` };
    }
    if (addresses.length === 0) return { problem: `url: the host ${host} has no address` };
  }
  for (const { address } of addresses) {
    const kind = refusedAddressKind(address);
    if (kind !== undefined) return { problem: refusedAddressMessage(host, address, kind) };
  }
  return { addresses };
}

/** The problem with the URL's destination, for a 422; undefined when it may be called. */
export async function destinationProblem(
  url: string,
  policy: DestinationPolicy,
): Promise<string | undefined> {
  const destination = await checkDestination(new URL(url), policy);
  return "problem" in destination ? destination.problem : undefined;
}

/**
 * A lookup for the request that answers with the checked addresses only, in both of the forms Node
 * asks for (one address, or all of them when it races IPv6 and IPv4).
 */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const usable = addresses.filter((entry) => !options.family || entry.family === options.family);
    const [first] = usable;
    if (first === undefined) {
      const error: NodeJS.ErrnoException = new Error("no checked address of the family asked for");
      error.code = "ENOTFOUND";
      callback(error, "");
    } else if (options.all)
      callback(
        null,
        usable.map((entry) => ({ ...entry })),
      );
    else callback(null, first.address, first.family);
  };
}
