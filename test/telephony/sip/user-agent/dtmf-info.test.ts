/** The keys SIP INFO bodies carry (application/dtmf-relay and application/dtmf). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { dtmfKeyOf } from "../../../../src/telephony/sip/user-agent/dtmf-info.js";

describe("dtmfKeyOf", () => {
  it("reads Signal= of application/dtmf-relay, in any case and spacing, beside Duration", () => {
    assert.equal(dtmfKeyOf("application/dtmf-relay", "Signal=5\r\nDuration=160\r\n"), "5");
    assert.equal(dtmfKeyOf("application/dtmf-relay", "Duration=250\r\nsignal = #\r\n"), "#");
    assert.equal(dtmfKeyOf("application/dtmf-relay", "Signal=*"), "*");
    assert.equal(dtmfKeyOf("application/dtmf-relay", "Signal=b"), "B");
  });

  it("reads the key of application/dtmf, and RFC 4733 event codes 10-15 as *, #, A-D", () => {
    assert.equal(dtmfKeyOf("application/dtmf", "7\r\n"), "7");
    assert.equal(dtmfKeyOf("application/dtmf", "10"), "*");
    assert.equal(dtmfKeyOf("application/dtmf", "12"), "A");
    assert.equal(dtmfKeyOf("application/dtmf-relay", "Signal=11"), "#");
  });

  it("finds no key in anything else", () => {
    assert.equal(dtmfKeyOf("application/dtmf-relay", "Duration=160"), undefined);
    assert.equal(dtmfKeyOf("application/dtmf-relay", "Signal=16"), undefined);
    assert.equal(dtmfKeyOf("application/dtmf", "E"), undefined);
    assert.equal(dtmfKeyOf("application/dtmf", "0x1"), undefined);
  });
});
