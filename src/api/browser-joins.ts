/** What the join page's routes need of the conferences: joining by PIN from a browser. */
import type {
  BrowserJoined,
  BrowserJoinRefusal,
  BrowserJoinRequest,
  BrowserParticipant,
} from "../domain/browser-join.js";

export type { BrowserJoined, BrowserJoinRefusal, BrowserJoinRequest, BrowserParticipant };

export interface BrowserJoins {
  join(request: BrowserJoinRequest): Promise<BrowserJoined | BrowserJoinRefusal>;
  /** The participant a page's token names while its call lasts; undefined when unknown or over. */
  participant(token: string): BrowserParticipant | undefined;
  /** Hangs up the participant's call; false when unknown or already over. */
  leave(token: string): boolean;
}
