import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Dialog, destinationOf } from "../../../../src/telephony/sip/dialog/dialog.js";
import {
  SIP_VERSION,
  SipHeaders,
  type SipRequest,
  type SipResponse,
} from "../../../../src/telephony/sip/message/sip-message.js";

function headers(fields: Array<[string, string]>): SipHeaders {
  return new SipHeaders(fields);
}

const invite: SipRequest = {
  kind: "request",
  method: "INVITE",
  uri: "sip:+16045550123@trunk.example",
  version: SIP_VERSION,
  headers: headers([
    ["Via", "SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKa"],
    ["From", "<sip:+16045550100@192.0.2.1>;tag=ours"],
    ["To", "<sip:+16045550123@trunk.example>"],
    ["Call-ID", "call-1"],
    ["CSeq", "7 INVITE"],
    ["Contact", "<sip:bridgeline@192.0.2.1:5060>"],
  ]),
  body: Buffer.alloc(0),
};

function ok(extra: Array<[string, string]>): SipResponse {
  return {
    kind: "response",
    status: 200,
    reason: "OK",
    version: SIP_VERSION,
    headers: headers([
      ["Via", "SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKa"],
      ["From", "<sip:+16045550100@192.0.2.1>;tag=ours"],
      ["To", "<sip:+16045550123@trunk.example>;tag=theirs"],
      ["Call-ID", "call-1"],
      ["CSeq", "7 INVITE"],
      ...extra,
    ]),
    body: Buffer.alloc(0),
  };
}

const VIA = "SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKnew";
const CONTACT = "<sip:bridgeline@192.0.2.1:5060>";

describe("Dialog (RFC 3261 section 12)", () => {
  it("UAC: the route set is the 2xx's Record-Route reversed, the remote target its Contact (12.1.2)", () => {
    const dialog = Dialog.forUac(
      invite,
      ok([
        ["Record-Route", "<sip:proxy2.example;lr>"],
        ["Record-Route", "<sip:proxy1.example;lr>"],
        ["Contact", "<sip:gw@198.51.100.9:5070>"],
      ]),
    );
    assert.ok(dialog);
    assert.equal(dialog.id, "call-1|ours|theirs");
    const bye = dialog.createRequest("BYE", { via: VIA, contact: CONTACT });
    assert.equal(bye.uri, "sip:gw@198.51.100.9:5070", "loose routing: the Request-URI is the remote target");
    assert.deepEqual(bye.headers.getAll("Route"), ["<sip:proxy1.example;lr>", "<sip:proxy2.example;lr>"]);
    assert.equal(bye.headers.get("CSeq"), "8 BYE", "the local CSeq goes on from the INVITE's");
    assert.equal(bye.headers.get("From"), "<sip:+16045550100@192.0.2.1>;tag=ours");
    assert.equal(bye.headers.get("To"), "<sip:+16045550123@trunk.example>;tag=theirs");
    assert.deepEqual(dialog.destination, { host: "proxy1.example", port: 5060, transport: "UDP" });
  });

  it("ACK reuses the INVITE's CSeq number; later requests increment it", () => {
    const dialog = Dialog.forUac(invite, ok([["Contact", "<sip:gw@198.51.100.9>"]]));
    assert.ok(dialog);
    assert.equal(
      dialog.createRequest("ACK", { via: VIA, contact: CONTACT, cseq: 7 }).headers.get("CSeq"),
      "7 ACK",
    );
    assert.equal(
      dialog.createRequest("INVITE", { via: VIA, contact: CONTACT }).headers.get("CSeq"),
      "8 INVITE",
    );
    assert.equal(dialog.createRequest("BYE", { via: VIA, contact: CONTACT }).headers.get("CSeq"), "9 BYE");
  });

  it("a strict first route becomes the Request-URI and the remote target goes last (12.2.1.1)", () => {
    const dialog = Dialog.forUac(
      invite,
      ok([
        ["Record-Route", "<sip:strict.example>"],
        ["Contact", "<sip:gw@198.51.100.9>"],
      ]),
    );
    assert.ok(dialog);
    const bye = dialog.createRequest("BYE", { via: VIA, contact: CONTACT });
    assert.equal(bye.uri, "sip:strict.example");
    assert.deepEqual(bye.headers.getAll("Route"), ["<sip:gw@198.51.100.9>"]);
  });

  it("UAS: a caller behind NAT (Contact elsewhere than its packets' source, no proxy) is reached at the source", () => {
    const received = (contact: string, recordRoute?: string): SipRequest => ({
      ...invite,
      headers: headers([
        ["Via", "SIP/2.0/UDP 10.0.0.5:5060;branch=z9hG4bKn;rport=40123;received=203.0.113.7"],
        ...(recordRoute === undefined ? [] : ([["Record-Route", recordRoute]] as [string, string][])),
        ["From", "<sip:phone@10.0.0.5>;tag=phone"],
        ["To", "<sip:+16045550199@192.0.2.1>"],
        ["Call-ID", "nat-1"],
        ["CSeq", "1 INVITE"],
        ["Contact", contact],
      ]),
    });
    const source = { host: "203.0.113.7", port: 40123, transport: "UDP" as const };
    assert.deepEqual(
      Dialog.forUas(received("<sip:phone@10.0.0.5:5060>"), "mine", source)?.destination,
      source,
    );
    assert.deepEqual(
      Dialog.forUas(received("<sip:phone@203.0.113.7:40123>"), "mine", source)?.destination,
      source,
    );
    assert.deepEqual(
      Dialog.forUas(received("<sip:phone@10.0.0.5:5060>", "<sip:edge.example;lr>"), "mine", source)
        ?.destination,
      {
        host: "edge.example",
        port: 5060,
        transport: "UDP",
      },
    );
    assert.deepEqual(Dialog.forUas(received("<sip:phone@10.0.0.5:5060>"), "mine")?.destination, {
      host: "10.0.0.5",
      port: 5060,
      transport: "UDP",
    });
  });

  it("UAS: the route set is the request's Record-Route in order; lower CSeqs are refused; re-INVITE refreshes the target", () => {
    const received: SipRequest = {
      ...invite,
      headers: headers([
        ["Via", "SIP/2.0/UDP 198.51.100.9:5070;branch=z9hG4bKb"],
        ["Record-Route", "<sip:p1.example;lr>"],
        ["Record-Route", "<sip:p2.example;lr>"],
        ["From", "<sip:caller@198.51.100.9>;tag=caller"],
        ["To", "<sip:+16045550199@192.0.2.1>"],
        ["Call-ID", "call-2"],
        ["CSeq", "100 INVITE"],
        ["Contact", "<sip:caller@198.51.100.9:5070>"],
      ]),
    };
    const dialog = Dialog.forUas(received, "mine");
    assert.ok(dialog);
    assert.equal(dialog.id, "call-2|mine|caller");
    const bye = dialog.createRequest("BYE", { via: VIA, contact: CONTACT });
    assert.deepEqual(bye.headers.getAll("Route"), ["<sip:p1.example;lr>", "<sip:p2.example;lr>"]);
    assert.equal(bye.headers.get("From"), "<sip:+16045550199@192.0.2.1>;tag=mine");
    assert.equal(bye.headers.get("To"), "<sip:caller@198.51.100.9>;tag=caller");

    const inDialog = (method: string, cseq: number, contact?: string): SipRequest => ({
      ...received,
      method,
      headers: headers([
        ["CSeq", `${cseq} ${method}`],
        ...(contact === undefined ? [] : ([["Contact", contact]] as Array<[string, string]>)),
      ]),
    });
    assert.equal(
      dialog.receiveRequest(inDialog("INVITE", 100)),
      false,
      "the same CSeq again is out of order",
    );
    assert.equal(dialog.receiveRequest(inDialog("INVITE", 101, "<sip:caller@198.51.100.10:5072>")), true);
    assert.equal(
      dialog.createRequest("BYE", { via: VIA, contact: CONTACT }).uri,
      "sip:caller@198.51.100.10:5072",
    );
    assert.equal(dialog.receiveRequest(inDialog("BYE", 99)), false);
  });

  it("is not made from a response without a To tag", () => {
    const untagged = ok([]);
    const noTag: SipResponse = {
      ...untagged,
      headers: headers(
        [...untagged.headers].map(([name, value]) => (name === "To" ? [name, "<sip:x@y>"] : [name, value])),
      ),
    };
    assert.equal(Dialog.forUac(invite, noTag), undefined);
  });

  it("resolves a URI to a destination: port, transport parameter, maddr", () => {
    assert.deepEqual(destinationOf("sip:127.0.0.1:5070"), {
      host: "127.0.0.1",
      port: 5070,
      transport: "UDP",
    });
    assert.deepEqual(destinationOf("sip:trunk.example;transport=tcp"), {
      host: "trunk.example",
      port: 5060,
      transport: "TCP",
    });
    assert.deepEqual(destinationOf("sip:a@example.com;maddr=192.0.2.5"), {
      host: "192.0.2.5",
      port: 5060,
      transport: "UDP",
    });
    assert.equal(destinationOf("tel:+16045550123"), undefined);
  });
});
