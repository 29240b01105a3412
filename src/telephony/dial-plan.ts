/**
 * Where a placed call goes: the default trunk and the routes by number prefix (the longest prefix
 * wins), and the servers DNS names for each trunk (RFC 3263).
 */
import { destinationOfUri } from "./sip/dialog/dialog.js";
import { parseSipUri, type SipUri } from "./sip/message/header-values.js";
import type { ServerLocator } from "./sip/transport/server-locator.js";
import type { Destination } from "./sip/transport/sip-transport.js";
import { type Trunk, trunkOfUri } from "./trunk.js";

/** A number prefix and the trunk that calls starting with it go through. */
export interface Route<T> {
  readonly prefix: string;
  readonly trunk: T;
}

/** A trunk's or proxy's SIP URI, read once: what a request to it needs of it. */
export interface Hop {
  readonly text: string;
  readonly uri: SipUri;
  readonly destination: Destination;
}

/** A trunk's URIs, read when the dial plan is made rather than for each call placed. */
export interface TrunkHops {
  /** The trunk's own URI: the Request-URI's scheme, host, port and transport. */
  readonly trunk: Hop;
  /** Where its INVITEs go first: the outbound proxy, else the trunk. */
  readonly first: Hop;
}

/**
 * The default trunk and the routes, each as a profile; `trunks` lists each profile once, and `hops`
 * has each one's URIs read (a trunk whose URIs are not SIP URIs has none: calls through it fail).
 */
export interface DialPlan {
  readonly trunk: Trunk | undefined;
  readonly routes: readonly Route<Trunk>[];
  readonly trunks: readonly Trunk[];
  readonly hops: ReadonlyMap<Trunk, TrunkHops>;
}

/** `text` read as a SIP URI and where requests to it go; undefined when it is not one. */
export function hopOf(text: string): Hop | undefined {
  const uri = parseSipUri(text);
  const destination = uri === undefined ? undefined : destinationOfUri(uri);
  return uri === undefined || destination === undefined ? undefined : { text, uri, destination };
}

/** The dial plan of the configured trunk and routes, each given by its SIP URI alone or its profile. */
export function dialPlanOf(
  defaultTrunk: string | Trunk | null | undefined,
  configuredRoutes: readonly Route<string | Trunk>[] | undefined,
): DialPlan {
  // A URI given twice is one trunk: one registration, one profile.
  const byUri = new Map<string, Trunk>();
  const profile = (trunk: string | Trunk): Trunk => {
    if (typeof trunk !== "string") return trunk;
    const known = byUri.get(trunk) ?? trunkOfUri(trunk);
    byUri.set(trunk, known);
    return known;
  };
  const trunk = defaultTrunk == null ? undefined : profile(defaultTrunk);
  const routes = (configuredRoutes ?? []).map((route) => ({
    prefix: route.prefix,
    trunk: profile(route.trunk),
  }));
  const trunks = [
    ...new Set([...(trunk === undefined ? [] : [trunk]), ...routes.map((route) => route.trunk)]),
  ];
  const hops = new Map<Trunk, TrunkHops>();
  for (const each of trunks) {
    const own = hopOf(each.uri);
    const first = each.outboundProxy == null ? own : hopOf(each.outboundProxy);
    if (own !== undefined && first !== undefined) hops.set(each, { trunk: own, first });
  }
  return { trunk, routes, trunks, hops };
}

/**
 * The trunks an E.164 number may be called through, in the order to try them: the matching routes'
 * trunks, longest prefix first, then the default trunk, each once; those in `down` (every server of
 * it found down) last, in the same order (a call is still tried through them when nothing else is).
 */
export function trunkCandidates(
  dialPlan: DialPlan,
  e164: string,
  down: ReadonlySet<Trunk> = new Set(),
): Trunk[] {
  const candidates = [
    ...new Set([
      ...dialPlan.routes
        .filter((route) => e164.startsWith(route.prefix))
        .sort((a, b) => b.prefix.length - a.prefix.length)
        .map((route) => route.trunk),
      ...(dialPlan.trunk === undefined ? [] : [dialPlan.trunk]),
    ]),
  ];
  return [
    ...candidates.filter((trunk) => !down.has(trunk)),
    ...candidates.filter((trunk) => down.has(trunk)),
  ];
}

/**
 * The servers a trunk URI names, in the order to try them (RFC 3263): itself when it is an address
 * or has `maddr`, else what DNS says.
 */
export async function locateTrunk(locator: ServerLocator, hop: Hop): Promise<Destination[]> {
  const { uri, destination } = hop;
  if (uri.params.has("maddr")) return [destination];
  const transport = uri.params.get("transport")?.toUpperCase();
  return locator.locate({
    host: destination.host,
    port: uri.port,
    transport: transport === "UDP" || transport === "TCP" || transport === "TLS" ? transport : undefined,
    secure: uri.scheme === "sips",
  });
}

/**
 * The addresses of every server of each trunk and outbound proxy, by its URI: what DNS names for it
 * (RFC 3263), or its address; looked up once, at start. A URI whose lookup fails has none, and is
 * told to `onLookupFailed`.
 */
export async function trunkServers(
  dialPlan: DialPlan,
  locator: ServerLocator,
  onLookupFailed: (uri: string, error: unknown) => void,
): Promise<Map<string, string[]>> {
  const uris = [
    ...new Set(
      dialPlan.trunks.flatMap((trunk) =>
        trunk.outboundProxy == null ? [trunk.uri] : [trunk.uri, trunk.outboundProxy],
      ),
    ),
  ];
  const found = await Promise.all(
    uris.map(async (uri) => {
      try {
        const hop = hopOf(uri);
        if (hop === undefined) throw new Error(`not a SIP URI: ${uri}`);
        return (await locateTrunk(locator, hop)).map((server) => server.host);
      } catch (error) {
        onLookupFailed(uri, error);
        return [];
      }
    }),
  );
  return new Map(uris.map((uri, index) => [uri, found[index] ?? []]));
}
