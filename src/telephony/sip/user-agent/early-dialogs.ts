/**
 * The early dialogs of one INVITE we sent (RFC 3261 section 12.1.2, 13.2.2.4; RFC 3262 section 4): a
 * forking proxy's branches each answer with a To tag of their own, and each tag is an early dialog
 * with its own route set, remote target and RSeq space. The 2xx confirms the early dialog of the tag
 * it carries.
 */
import { Dialog } from "../dialog/dialog.js";
import type { SipRequest, SipResponse } from "../message/sip-message.js";

/** One branch's early dialog. */
export class EarlyDialog {
  /** The RSeq of the last reliable provisional response PRACKed in it; undefined before the first. */
  #lastRSeq: number | undefined;

  constructor(readonly dialog: Dialog) {}

  /**
   * RFC 3262 section 4: whether a reliable provisional response with this RSeq is to be PRACKed: the
   * first sets the dialog's sequence, a later one only when one higher (in order). A retransmission
   * of one already PRACKed is not (the PRACK's own transaction retransmits until answered), nor is one
   * out of order.
   */
  takeRSeq(rseq: number): boolean {
    if (this.#lastRSeq !== undefined && rseq !== this.#lastRSeq + 1) return false;
    this.#lastRSeq = rseq;
    return true;
  }
}

export class EarlyDialogs {
  readonly #byTag = new Map<string, EarlyDialog>();

  /**
   * A provisional response: the early dialog of its To tag, made by the first response that carries
   * it (section 12.1.2: its Record-Route reversed is the route set, its Contact the remote target).
   * Undefined for a response without a To tag (a 100) or one that cannot make a dialog.
   */
  receive(invite: SipRequest, provisional: SipResponse): EarlyDialog | undefined {
    const tag = provisional.headers.to?.tag;
    if (tag === undefined) return undefined;
    let early = this.#byTag.get(tag);
    if (early === undefined) {
      const dialog = Dialog.forUac(invite, provisional);
      if (dialog === undefined) return undefined;
      early = new EarlyDialog(dialog);
      this.#byTag.set(tag, early);
    }
    return early;
  }

  /**
   * Section 13.2.2.4: the dialog a 2xx confirms: the early dialog of its To tag, with its route set
   * and remote target recomputed from the 2xx; without one, a new dialog made from the 2xx.
   */
  confirm(invite: SipRequest, success: SipResponse): Dialog | undefined {
    const tag = success.headers.to?.tag;
    const early = tag === undefined ? undefined : this.#byTag.get(tag)?.dialog;
    if (early === undefined) return Dialog.forUac(invite, success);
    early.confirmWith(success);
    return early;
  }

  /** A new attempt (a new transaction) starts with no early dialog. */
  clear(): void {
    this.#byTag.clear();
  }
}
