// The image's HEALTHCHECK asks the services of ours it finds in /proc: the health server, and every bridge on its
// loopback --listen address; nothing else (sbx-server is not ours to judge).
import assert from "node:assert/strict";
import { test } from "node:test";
import { targetsOf } from "../../bridge/healthcheck.ts";

const dir = "/opt/chat-ui-agent";

test("finds the health server on $PORT and each bridge on its --listen address; ignores everything else", () => {
  const processes = [
    ["/usr/bin/tini", "--", "sbx-server"],
    ["sbx-server", "--port", "7860"],
    ["node", `${dir}/health-server.mjs`],
    ["/usr/local/bin/node", `${dir}/bridge.mjs`, "--listen", "127.0.0.1:8790", "--cwd", "/workspace"],
    ["node", `${dir}/bridge.mjs`, "--listen=[::1]:8791"],
    // Stdio mode has no address; a non-loopback address is never the bridge's (it refuses one).
    ["node", `${dir}/bridge.mjs`, "--mode", "rpc"],
    ["node", `${dir}/bridge.mjs`, "--listen", "10.0.0.1:80"],
    ["node", "/workspace/bridge.mjs", "--listen", "127.0.0.1:9999"],
  ];
  assert.deepEqual(targetsOf(processes, { PORT: "7861" }, dir), [
    { what: "the health server", url: "http://127.0.0.1:7861/health" },
    { what: "the bridge on 127.0.0.1:8790", url: "http://127.0.0.1:8790/v1/health" },
    { what: "the bridge on [::1]:8791", url: "http://[::1]:8791/v1/health" },
  ]);
  assert.deepEqual(targetsOf([["sbx-server"]], {}, dir), [], "none of ours: nothing to ask");
  assert.equal(
    targetsOf([["node", `${dir}/health-server.mjs`]], { HOST: "0.0.0.0" }, dir)[0]?.url,
    "http://127.0.0.1:7860/health",
  );
});
