import { randomInt } from "node:crypto";

export const PIN_LENGTH = 6;

/** A uniformly random PIN; uniqueness is the store's job (a unique key on live PINs). */
export function randomPin(length = PIN_LENGTH): string {
  let pin = "";
  for (let i = 0; i < length; i++) pin += randomInt(10).toString();
  return pin;
}
