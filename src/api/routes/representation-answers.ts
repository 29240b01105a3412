import type { FastifyReply } from "fastify";
import type { Attendee } from "../../domain/attendee.js";
import type { Conference } from "../../domain/conference.js";
import {
  attendeeBasicDocument,
  attendeeDocument,
  conferenceBasicDocument,
  conferenceDocument,
  Documents,
  type Representation,
} from "../representations.js";
import { sendDocument } from "../server.js";

/** A conference (200) in the representation asked for (?representation=basic or extended). */
export function sendConference(
  reply: FastifyReply,
  conference: Conference,
  representation: Representation,
): FastifyReply {
  return representation === "basic"
    ? sendDocument(reply, 200, Documents.conferenceBasic, conferenceBasicDocument(conference))
    : sendDocument(reply, 200, Documents.conference, conferenceDocument(conference));
}

/** An attendee (200) in the representation asked for. */
export function sendAttendee(
  reply: FastifyReply,
  attendee: Attendee,
  representation: Representation,
): FastifyReply {
  return representation === "basic"
    ? sendDocument(reply, 200, Documents.attendeeBasic, attendeeBasicDocument(attendee))
    : sendDocument(reply, 200, Documents.attendee, attendeeDocument(attendee));
}
