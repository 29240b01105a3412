/**
 * Locating SIP servers (RFC 3263 section 4) against dnsmasq on loopback: NAPTR choosing the transport,
 * SRV ordering the servers, A records their addresses, and what a URI's port or transport skips.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { orderSrv, ServerLocator } from "../../../../src/telephony/sip/transport/server-locator.js";
import { Dnsmasq } from "../../../helpers/dnsmasq.js";
import { skipWithout } from "../../../helpers/sipp.js";

const skip = skipWithout("dnsmasq");

describe("ServerLocator", { skip }, () => {
  let dns: Dnsmasq;
  let now = 1_000_000;
  let locator: ServerLocator;

  before(async () => {
    dns = await Dnsmasq.start({
      naptr: [
        // TCP preferred over UDP by order; a service we do not speak is skipped.
        "carrier.test,20,10,S,SIP+D2U,,_sip._udp.carrier.test",
        "carrier.test,10,10,S,SIP+D2T,,_sip._tcp.carrier.test",
        "carrier.test,5,10,S,SIP+D2W,,_sip._ws.carrier.test",
        "carrier.test,30,10,S,SIPS+D2T,,_sips._tcp.carrier.test",
      ],
      srv: [
        "_sip._tcp.carrier.test,edge2.carrier.test,5070,20,10",
        "_sip._tcp.carrier.test,edge1.carrier.test,5060,10,10",
        "_sip._udp.carrier.test,edge1.carrier.test,5060,10,10",
        "_sips._tcp.carrier.test,edge1.carrier.test,5061,10,10",
        "_sip._udp.plain.test,pbx.plain.test,5080,10,10",
      ],
      hosts: [
        "edge1.carrier.test,192.0.2.1",
        "edge2.carrier.test,192.0.2.2",
        "pbx.plain.test,192.0.2.3",
        "carrier.test,192.0.2.9",
      ],
    });
    locator = new ServerLocator({ servers: [dns.server], downForMs: 60_000, now: () => now });
  });

  after(async () => {
    locator.close();
    await dns.stop();
  });

  it("takes the transport NAPTR prefers and the servers its SRV names, in priority order", async () => {
    assert.deepEqual(await locator.locate({ host: "carrier.test", secure: false }), [
      { host: "192.0.2.1", port: 5060, transport: "TCP", serverName: "carrier.test" },
      { host: "192.0.2.2", port: 5070, transport: "TCP", serverName: "carrier.test" },
    ]);
  });

  it("for a SIPS URI takes only SIPS+D2T, over TLS", async () => {
    assert.deepEqual(await locator.locate({ host: "carrier.test", secure: true }), [
      { host: "192.0.2.1", port: 5061, transport: "TLS", serverName: "carrier.test" },
    ]);
  });

  it("without NAPTR asks SRV for UDP then TCP; with a transport parameter, only that one's SRV", async () => {
    assert.deepEqual(await locator.locate({ host: "plain.test", secure: false }), [
      { host: "192.0.2.3", port: 5080, transport: "UDP", serverName: "plain.test" },
    ]);
    assert.deepEqual(await locator.locate({ host: "carrier.test", transport: "UDP", secure: false }), [
      { host: "192.0.2.1", port: 5060, transport: "UDP", serverName: "carrier.test" },
    ]);
  });

  it("with a port, or an address, asks for no NAPTR or SRV", async () => {
    assert.deepEqual(await locator.locate({ host: "carrier.test", port: 5999, secure: false }), [
      { host: "192.0.2.9", port: 5999, transport: "UDP", serverName: "carrier.test" },
    ]);
    assert.deepEqual(await locator.locate({ host: "198.51.100.7", secure: true }), [
      { host: "198.51.100.7", port: 5061, transport: "TLS" },
    ]);
  });

  it("tries a server marked down last, until its time is up", async () => {
    const [first, second] = await locator.locate({ host: "carrier.test", secure: false });
    locator.markDown(first as NonNullable<typeof first>);
    assert.deepEqual(await locator.locate({ host: "carrier.test", secure: false }), [second, first]);
    now += 60_001;
    assert.deepEqual(await locator.locate({ host: "carrier.test", secure: false }), [first, second]);
  });

  it("tries a server marked up again in its own order at once", async () => {
    const [first, second] = await locator.locate({ host: "carrier.test", secure: false });
    locator.markDown(first as NonNullable<typeof first>);
    locator.markUp(first as NonNullable<typeof first>);
    assert.deepEqual(await locator.locate({ host: "carrier.test", secure: false }), [first, second]);
  });

  it("refuses a name with no address", async () => {
    await assert.rejects(
      locator.locate({ host: "nowhere.test", secure: false }),
      /no address found for nowhere\.test/,
    );
  });
});

describe("ServerLocator with the system's DNS", () => {
  it("takes a host's addresses from the system's resolver, its hosts file included", async () => {
    const locator = new ServerLocator();
    const found = await locator.locate({ host: "localhost", port: 5070, secure: false });
    locator.close();
    assert.ok(
      found.some(
        (each) => each.host === "127.0.0.1" && each.port === 5070 && each.serverName === "localhost",
      ),
      JSON.stringify(found),
    );
  });
});

describe("orderSrv (RFC 2782)", () => {
  const records = [
    { priority: 20, weight: 0, port: 3, target: "c" },
    { priority: 10, weight: 10, port: 1, target: "a" },
    { priority: 10, weight: 30, port: 2, target: "b" },
  ];

  it("puts lower priorities first, and picks within one by weight", () => {
    // A draw in the first 10 of 40 picks a; one past it picks b first.
    assert.deepEqual(
      orderSrv(records, () => 0.1).map((record) => record.target),
      ["a", "b", "c"],
    );
    assert.deepEqual(
      orderSrv(records, () => 0.5).map((record) => record.target),
      ["b", "a", "c"],
    );
  });

  it("spreads calls over equal priorities in proportion to weight", () => {
    let firstB = 0;
    for (let i = 0; i < 4000; i++) if (orderSrv(records)[0]?.target === "b") firstB++;
    assert.ok(firstB > 2700 && firstB < 3300, `b first in ${firstB} of 4000 (expected about 3000)`);
  });
});
