/**
 * Settings for a test service that real SIP peers (SIPp callers, carriers) reach on loopback, for
 * `startTestService`: written once here instead of in each test that starts one.
 */
import { type Config, loadConfig, type SipConfig } from "../../src/config.js";
import { rtpPortRange } from "./sipp.js";

/**
 * The default SIP settings, listening on 127.0.0.1 at a free port with RTP ports from a random range
 * (so that services started at once do not share one), then `overrides`: `accessNumbers` for a
 * service that takes dial-in callers, `routes` for one that places calls, and so on.
 */
export function loopbackSip(overrides: Partial<SipConfig> = {}): SipConfig {
  return { ...loadConfig({}).sip, bindAddress: "127.0.0.1", port: 0, rtpPorts: rtpPortRange(), ...overrides };
}

/** The default conference settings, then `overrides` (a wrong-PIN limit, the PIN prompt's places). */
export function conferenceSettings(overrides: Partial<Config["conferences"]>): Config["conferences"] {
  return { ...loadConfig({}).conferences, ...overrides };
}
