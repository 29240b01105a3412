// Pragmatic rather than RFC 5322: a local part without spaces or @, and a dotted host name with a
// letters-only top-level domain.
const EMAIL = /^[^\s@]+@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}$/i;

/** 254 characters is the longest address an SMTP path can carry. */
export function isValidEmail(input: string): boolean {
  return input.length <= 254 && EMAIL.test(input);
}
