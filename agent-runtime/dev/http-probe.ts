// HTTP probes for the demo, the dev harness and the image tests, on undici: every request has explicit
// connect, header and body deadlines, a bounded body, and its own connection that is closed once answered,
// so a probe never hangs on a half-started server and never holds a socket open to a server being stopped
// (which would slow its graceful close). Loopback targets only: nothing here is meant for the network.
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, request } from "undici";

export interface ProbeOptions {
  method?: "GET" | "HEAD";
  /** Deadline for each phase (connect, headers, body gaps). Default 2 s. */
  timeoutMs?: number;
  /** Longest body kept; a longer one fails the probe. Default 1 MiB. */
  maxBodyBytes?: number;
}

export interface ProbeResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request on a fresh connection; rejects on a connection error, a timeout or an oversized body. */
export async function probe(url: string, options: ProbeOptions = {}): Promise<ProbeResponse> {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const dispatcher = new Agent({ connect: { timeout: timeoutMs }, connections: 1, pipelining: 0 });
  try {
    const response = await request(url, {
      method: options.method ?? "GET",
      dispatcher,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      reset: true, // `connection: close`: nothing pooled, nothing left open
    });
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of response.body) {
      bytes += (chunk as Buffer).length;
      if (bytes > maxBodyBytes) {
        response.body.destroy();
        throw new Error(`${url}: response body over ${maxBodyBytes} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    return {
      status: response.statusCode,
      headers: response.headers,
      body: Buffer.concat(chunks).toString("utf8"),
    };
  } finally {
    await dispatcher.destroy();
  }
}

export interface WaitOptions extends ProbeOptions {
  /** Give up after this long. Default 30 s. */
  deadlineMs?: number;
  /** Pause between attempts. Default 100 ms. */
  intervalMs?: number;
  /** Keep polling until a response satisfies this (default: any response at all). */
  until?: (response: ProbeResponse) => boolean;
}

export interface Waited {
  response: ProbeResponse;
  /** From the call to the accepted response. */
  elapsedMs: number;
  attempts: number;
}

/** Polls `url` until it answers (as `until` wants) or the deadline passes; the error says what was last seen. */
export async function waitForHttp(url: string, options: WaitOptions = {}): Promise<Waited> {
  const started = performance.now();
  const deadline = started + (options.deadlineMs ?? 30_000);
  let attempts = 0;
  let last = "no attempt";
  while (performance.now() < deadline) {
    attempts += 1;
    try {
      const remaining = Math.max(1, Math.ceil(deadline - performance.now()));
      const response = await probe(url, {
        ...options,
        timeoutMs: Math.min(options.timeoutMs ?? 2_000, remaining),
      });
      if (!options.until || options.until(response)) {
        return { response, elapsedMs: performance.now() - started, attempts };
      }
      last = `HTTP ${response.status} ${response.body.slice(0, 200)}`;
    } catch (error) {
      last =
        error instanceof Error
          ? `${(error as { code?: string }).code ?? error.name}: ${error.message}`
          : String(error);
    }
    await sleep(options.intervalMs ?? 100);
  }
  throw new Error(
    `${url} did not answer as expected within ${options.deadlineMs ?? 30_000} ms (${attempts} attempts; last: ${last})`,
  );
}
