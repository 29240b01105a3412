/** Our re-INVITE within a confirmed dialog (RFC 3261 section 14.1): ACKs its 2xx and reports the answer. */
import type { Dialog } from "../dialog/dialog.js";
import type { SipResponse } from "../message/sip-message.js";
import type { InviteResponseHandler } from "./session-host.js";

export class ReinviteClient implements InviteResponseHandler {
  #done = false;

  constructor(
    private readonly dialog: Dialog,
    private readonly session: {
      /** Sends (or sends again) the ACK for the 2xx. */
      acknowledge(): void;
      /** The answer in the 2xx; undefined when the re-INVITE failed (refused, timed out, not sent). */
      finish(answer: string | undefined): void;
    },
  ) {}

  receiveResponse(response: SipResponse): void {
    if (response.status < 200) return;
    if (response.status >= 300) {
      this.#complete(undefined);
      return;
    }
    // Section 12.2.1.2: a 2xx to a target refresh request replaces the remote target.
    this.dialog.receiveTargetRefreshResponse(response);
    this.session.acknowledge();
    this.#complete(response.body.toString());
  }

  onTimeout(): void {
    this.#complete(undefined);
  }

  onTransportError(): void {
    this.#complete(undefined);
  }

  #complete(answer: string | undefined): void {
    if (this.#done) return;
    this.#done = true;
    this.session.finish(answer);
  }
}
