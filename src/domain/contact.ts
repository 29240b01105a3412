import { isValidEmail } from "./email.js";
import { FieldReader, type InputMap } from "./input.js";
import { CONTACT_TIME_ZONES, IM_NETWORKS } from "./reference-data.js";
import type { Versioned } from "./user.js";

export interface Contact extends Versioned {
  name: string;
  email: string | null;
  phoneNumber: string | null;
  im: string | null;
  imNetwork: string | null;
  timeZone: string | null;
}

export type ContactChanges = Partial<Omit<Contact, keyof Versioned>>;

const PHONE_TEXT = /^[0-9+()\-.\s#*xext]{3,40}$/i;

/** On update only name, email and phone-number are accepted (the spec's update form). */
export function readContactChanges(input: InputMap, mode: "create" | "update"): ContactChanges {
  const reader = new FieldReader(input);
  const changes: ContactChanges = {};
  const name = mode === "create" ? reader.requiredText("name") : reader.text("name");
  if (name === null) reader.fail("name can't be blank");
  else if (name !== undefined) changes.name = name;

  const email = reader.text("email");
  if (email != null && !isValidEmail(email)) reader.fail(`email is not a valid e-mail address: "${email}"`);
  else if (email !== undefined) changes.email = email;

  const phoneNumber = reader.text("phone-number");
  if (phoneNumber != null && !PHONE_TEXT.test(phoneNumber)) {
    reader.fail(`phone-number is not a phone number: "${phoneNumber}"`);
  } else if (phoneNumber !== undefined) changes.phoneNumber = phoneNumber;

  if (mode === "create") {
    const im = reader.text("im");
    if (im !== undefined) changes.im = im;
    const imNetwork = reader.text("im-network");
    if (imNetwork != null && !IM_NETWORKS.has(imNetwork)) {
      reader.fail(`im-network must be one of ${[...IM_NETWORKS].join(", ")}, got "${imNetwork}"`);
    } else if (imNetwork !== undefined) changes.imNetwork = imNetwork;
    const timeZone = reader.text("time-zone");
    if (timeZone != null && !CONTACT_TIME_ZONES.has(timeZone)) {
      reader.fail(`time-zone must be one of ${[...CONTACT_TIME_ZONES].join(", ")}, got "${timeZone}"`);
    } else if (timeZone !== undefined) changes.timeZone = timeZone;
  }
  reader.check();
  return changes;
}
