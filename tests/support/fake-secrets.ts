// Secret material for tests, in the shape the gate and the filter look for, built at run time from an obvious
// filler: the repository itself holds no literal that looks like a real credential (scanners flag those).

/** `length` characters of "deadbeef…": hex, and plainly fake. */
export function fakeHex(length: number): string {
  return "deadbeef".repeat(Math.ceil(length / 8)).slice(0, length);
}

/** `prefix` and `length` alphanumerics of "FAKE0fake1…" (a known token shape, plainly fake). */
export function fakeToken(prefix: string, length: number): string {
  return prefix + "FAKE0fake1".repeat(Math.ceil(length / 10)).slice(0, length);
}
