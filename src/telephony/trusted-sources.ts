/**
 * Whom SIP requests are taken from: the configured peers (trunks, edges, BRIDGELINE_SIP_TRUSTED) and
 * the other instances, and which trunks must present a certificate when they connect.
 */
import { BlockList, isIPv6 } from "node:net";
import type { DialPlan } from "./dial-plan.js";
import { destinationOf } from "./sip/dialog/dialog.js";
import type { MutualTlsPeer } from "./sip/transport/sip-transport.js";

/** Addresses and CIDRs as a BlockList. */
export function blockListOf(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = "", prefix] = entry.split("/");
    const family = isIPv6(address) ? "ipv6" : "ipv4";
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return list;
}

/**
 * The trunks that must present a certificate when they connect to us (`mutualTls`): each by its
 * servers' addresses and the name its certificate must bear, its URI's host.
 */
export function mutualTlsPeers(dialPlan: DialPlan, servers: ReadonlyMap<string, string[]>): MutualTlsPeer[] {
  return dialPlan.trunks
    .filter((trunk) => trunk.mutualTls === true)
    .map((trunk) => ({
      sources: blockListOf(servers.get(trunk.uri) ?? []),
      name: destinationOf(trunk.uri)?.host ?? "",
    }));
}

/** The sources configured (or the trunks'), and the other instances' addresses as they change. */
export class TrustedSources {
  readonly #configured: BlockList;
  #instances = new BlockList();

  constructor(configured: BlockList) {
    this.#configured = configured;
  }

  check(address: string, family: "ipv4" | "ipv6"): boolean {
    return this.#configured.check(address, family) || this.#instances.check(address, family);
  }

  /** Replaces the instances' addresses. */
  setInstances(addresses: readonly string[]): void {
    const list = new BlockList();
    for (const address of addresses) list.addAddress(address, isIPv6(address) ? "ipv6" : "ipv4");
    this.#instances = list;
  }
}
