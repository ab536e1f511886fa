// bridge.mjs: owns one patched Pi (with only our approval gate) and fronts it, over a resumable
// WebSocket protocol (--listen) or Pi-compatible NDJSON on stdio.
// Order: the compile cache, so that every module after it loads compiled; then prestart, which checks the
// command line and starts Pi; the rest of the bridge (logger, schemas, WebSocket) loads while Pi boots, which
// keeps the bridge's cold start close to raw Pi's.
import { enableBundleCompileCache } from "../agent-runtime/compile-cache.ts";

enableBundleCompileCache(import.meta.dirname, import.meta.filename);
const prestart = await (await import("./prestart.ts")).prestart(import.meta.dirname);
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
