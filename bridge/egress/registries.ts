// The package registries that `auto` lets the tools reach without a dialog (network mode `registries`), as data.
// An operator replaces the list with a JSON file of the same shape (--registries-file): validated here, bounded.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import * as z from "zod/mini";
import english from "zod/v4/locales/en.js";
import { type Destination, hostMatches, parseHostPort } from "./destination.ts";

const HostPattern = z.string().check(
  z.minLength(1),
  z.maxLength(253),
  z.refine((pattern) => {
    const name = pattern.startsWith("*.") ? pattern.slice(2) : pattern;
    const parsed = parseHostPort(name, "443");
    return parsed.ok && parsed.destination.host === name;
  }, "a canonical host name (lowercase ASCII, no trailing dot), an IP address, or *.suffix"),
);

export const Registry = z.strictObject({
  name: z.string().check(z.minLength(1), z.maxLength(64)),
  hosts: z.array(HostPattern).check(z.minLength(1), z.maxLength(64)),
  ports: z._default(
    z.array(z.number().check(z.int(), z.minimum(1), z.maximum(65535))).check(z.minLength(1), z.maxLength(16)),
    [443],
  ),
});
export type Registry = z.infer<typeof Registry>;

export const RegistriesFile = z.strictObject({ registries: z.array(Registry).check(z.maxLength(256)) });

/** The default list: registries package managers fetch from, over HTTPS. */
export const DEFAULT_REGISTRIES: readonly Registry[] = [
  { name: "npm", hosts: ["registry.npmjs.org", "registry.yarnpkg.com"], ports: [443] },
  { name: "PyPI", hosts: ["pypi.org", "files.pythonhosted.org"], ports: [443] },
  { name: "crates.io", hosts: ["crates.io", "index.crates.io", "static.crates.io"], ports: [443] },
  { name: "Go module proxy", hosts: ["proxy.golang.org", "sum.golang.org"], ports: [443] },
  { name: "RubyGems", hosts: ["rubygems.org", "index.rubygems.org"], ports: [443] },
  { name: "Maven Central", hosts: ["repo.maven.apache.org", "repo1.maven.org"], ports: [443] },
];

/** The registry a destination belongs to, if any. */
export function registryOf(registries: readonly Registry[], destination: Destination): Registry | undefined {
  return registries.find(
    (registry) =>
      registry.ports.includes(destination.port) &&
      registry.hosts.some((pattern) => hostMatches(pattern, destination)),
  );
}

/** Largest registries file read (it is a short list). */
export const MAX_REGISTRIES_FILE_BYTES = 64 * 1024;

/**
 * The operator's registries file (--registries-file): a regular file, opened without blocking, bounded, JSON of
 * the RegistriesFile shape. Any problem is an error naming the file: the bridge refuses to start on it rather
 * than guess a list.
 */
export function readRegistriesFile(file: string): Registry[] {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    throw new Error(`--registries-file ${file}: cannot open (${(error as NodeJS.ErrnoException).code})`);
  }
  let text: string;
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`--registries-file ${file}: not a regular file`);
    const buffer = Buffer.alloc(MAX_REGISTRIES_FILE_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > MAX_REGISTRIES_FILE_BYTES)
      throw new Error(`--registries-file ${file}: larger than ${MAX_REGISTRIES_FILE_BYTES} bytes`);
    text = buffer.subarray(0, length).toString("utf8");
  } finally {
    closeSync(fd);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`--registries-file ${file}: not JSON (${(error as Error).message.slice(0, 200)})`);
  }
  // zod/mini loads no locale: the operator reads the English messages the full zod would give.
  const parsed = RegistriesFile.safeParse(json, { error: english().localeError });
  if (!parsed.success)
    throw new Error(`--registries-file ${file}: ${z.prettifyError(parsed.error).slice(0, 1000)}`);
  return parsed.data.registries;
}
