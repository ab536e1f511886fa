// The egress proxy's destinations: one canonical host, decided on and connected to, whatever the spelling.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { POLICY_MODES } from "../../agent-runtime/policy/policy-modes.ts";
import { isInternalAddress } from "../../bridge/egress/address-class.ts";
import { hostMatches, parseAuthority, parseHttpUrl } from "../../bridge/egress/destination.ts";
import { DEFAULT_REGISTRIES, RegistriesFile, registryOf } from "../../bridge/egress/registries.ts";
import { EGRESS_RULES, egressRule, NETWORK_MODES } from "../../bridge/egress/rules.ts";

function host(authority: string): string {
  const parsed = parseAuthority(authority);
  assert.ok(parsed.ok, `${authority}: ${parsed.ok ? "" : parsed.problem}`);
  return parsed.destination.host;
}

function refused(authority: string): void {
  const parsed = parseAuthority(authority);
  assert.equal(parsed.ok, false, `${JSON.stringify(authority)} should be refused`);
}

describe("destinations", () => {
  it("canonicalises names: case, a trailing dot, IDNA, percent-escapes", () => {
    assert.equal(host("Registry.NPMJS.org.:443"), "registry.npmjs.org");
    assert.equal(host("bücher.example:443"), "xn--bcher-kva.example");
    assert.equal(host("xn--bcher-kva.example:443"), "xn--bcher-kva.example");
    assert.equal(host("registry.npmjs%2Eorg:443"), "registry.npmjs.org");
  });

  it("reads IPv4 number forms as the resolver would, and IPv6 in brackets", () => {
    assert.equal(host("0x7f.1:80"), "127.0.0.1");
    assert.equal(host("2130706433:80"), "127.0.0.1");
    assert.equal(parseAuthority("[::1]:443").ok && host("[::1]:443"), "::1");
    assert.equal(host("[::FFFF:127.0.0.1]:443"), "::ffff:7f00:1");
  });

  it("refuses NUL, blanks, credentials, paths, empty labels and bad ports", () => {
    for (const bad of [
      "evil.com\u0000.registry.npmjs.org:443",
      "evil.com%00.registry.npmjs.org:443",
      "registry.npmjs.org :443",
      "user@registry.npmjs.org:443",
      "registry.npmjs.org/x:443",
      "a..b:443",
      ".:443",
      "registry.npmjs.org",
      "registry.npmjs.org:0",
      "registry.npmjs.org:65536",
      "registry.npmjs.org:+443",
      "[1.2.3.4]:443",
      "-evil.com:443",
    ])
      refused(bad);
  });

  it("matches patterns on label boundaries, never on raw suffixes", () => {
    const d = (authority: string) => {
      const parsed = parseAuthority(authority);
      assert.ok(parsed.ok);
      return parsed.destination;
    };
    assert.equal(hostMatches("*.pythonhosted.org", d("files.pythonhosted.org:443")), true);
    assert.equal(hostMatches("*.pythonhosted.org", d("evilpythonhosted.org:443")), false);
    assert.equal(hostMatches("*.pythonhosted.org", d("pythonhosted.org:443")), false);
    assert.equal(hostMatches("registry.npmjs.org", d("registry.npmjs.org.evil.com:443")), false);
    assert.equal(hostMatches("registry.npmjs.org", d("REGISTRY.npmjs.org.:443")), true);
  });

  it("parses absolute http URLs and refuses other schemes and credentials", () => {
    const ok = parseHttpUrl("http://Example.com./a?b");
    assert.ok(ok.ok);
    assert.deepEqual(ok.destination, { host: "example.com", kind: "name", port: 80 });
    assert.equal(parseHttpUrl("https://example.com/").ok, false);
    assert.equal(parseHttpUrl("http://u:p@example.com/").ok, false);
    assert.equal(parseHttpUrl("/relative").ok, false);
  });
});

describe("internal addresses", () => {
  it("covers loopback, private, link-local, CGNAT, multicast and mapped forms; not public or test nets", () => {
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "::1",
      "fe80::1",
      "fd00::1",
      "::ffff:10.0.0.1",
      "::ffff:7f00:1",
      "224.0.0.1",
      "0.0.0.0",
    ])
      assert.equal(isInternalAddress(a), true, a);
    for (const a of ["203.0.113.5", "198.51.100.7", "8.8.8.8", "2606:4700::1111"])
      assert.equal(isInternalAddress(a), false, a);
  });
});

describe("registries and rules", () => {
  it("the default registries are valid data, and a registry matches by host and port", () => {
    assert.ok(RegistriesFile.safeParse({ registries: DEFAULT_REGISTRIES }).success);
    const npm = parseAuthority("registry.npmjs.org:443");
    assert.ok(npm.ok);
    assert.equal(registryOf(DEFAULT_REGISTRIES, npm.destination)?.name, "npm");
    const wrongPort = parseAuthority("registry.npmjs.org:8443");
    assert.ok(wrongPort.ok);
    assert.equal(registryOf(DEFAULT_REGISTRIES, wrongPort.destination), undefined);
  });

  it("an operator's registries file is validated: canonical hosts only", () => {
    assert.equal(
      RegistriesFile.safeParse({ registries: [{ name: "x", hosts: ["Registry.Test."] }] }).success,
      false,
    );
    assert.equal(
      RegistriesFile.safeParse({ registries: [{ name: "x", hosts: ["registry.test"] }] }).success,
      true,
    );
    assert.equal(
      RegistriesFile.safeParse({ registries: [{ name: "x", hosts: ["*.registry.test"], ports: [8080] }] })
        .success,
      true,
    );
  });

  it("every mode × policy × destination has exactly the rule the table gives", () => {
    const actions: Record<string, string> = {};
    for (const mode of NETWORK_MODES)
      for (const policy of POLICY_MODES)
        for (const dest of ["granted", "registry", "other"] as const)
          actions[`${mode}/${policy}/${dest}`] = egressRule(mode, policy, dest).action;
    for (const policy of POLICY_MODES)
      for (const dest of ["granted", "registry", "other"]) {
        assert.equal(actions[`lockdown/${policy}/${dest}`], "deny");
        assert.equal(actions[`open/${policy}/${dest}`], "allow");
      }
    assert.equal(actions["registries/read-only/granted"], "deny");
    assert.equal(actions["registries/auto/registry"], "allow");
    assert.equal(actions["registries/ask/registry"], "ask");
    assert.equal(actions["registries/auto/other"], "ask");
    assert.equal(actions["registries/ask/granted"], "allow");
    assert.equal(EGRESS_RULES.at(-1)?.action, "deny");
  });
});
