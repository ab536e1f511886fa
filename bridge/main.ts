// bridge.mjs: owns one patched Pi (with only our approval gate) and fronts it, over a resumable
// WebSocket protocol (--listen) or Pi-compatible NDJSON on stdio.
// prestart is evaluated first: it checks the command line and starts Pi; the rest of the bridge (logger,
// schemas, WebSocket) loads while Pi boots, which keeps the bridge's cold start close to raw Pi's.
import { prestart } from "./prestart.ts";

const { runBridge, log } = await import("./run.ts");
try {
  await runBridge(prestart);
} catch (err) {
  log.fatal({ err: err instanceof Error ? err.message : String(err) }, "bridge failed");
  if (prestart.ok) {
    prestart.child.signalGroup("SIGKILL");
    prestart.agent.executor.signalGroup("SIGKILL");
  }
  process.exit(1);
}
