// The policy as the core relays it: the effective policy read for every report, `set_policy` from a client,
// `policy_changed` when it changed (by a client or behind the bridge's back), and the one rule for a person's
// `!` commands (agent-runtime/policy/user-bash-rule.ts, which the gate reads too).
import type { Logger } from "../../agent-runtime/log.ts";
import type {
  EffectivePolicy,
  PolicyMode,
  SetPolicyResult,
} from "../../agent-runtime/policy/policy-store.ts";
import { userBashRefusal } from "../../agent-runtime/policy/user-bash-rule.ts";
import type { PolicyReport } from "../protocol.ts";
import { type Frame, type FrameSink, failure } from "./frames.ts";

export interface PolicyAccess {
  read(): EffectivePolicy;
  set(options: { policy: PolicyMode; expected?: PolicyMode }): Promise<SetPolicyResult>;
}

export class PolicyRelay {
  /** The policy clients last saw (welcome snapshot or policy_changed). */
  private announced: PolicyReport["policy"] | undefined;
  private readonly access: PolicyAccess;
  private readonly sink: FrameSink;
  private readonly log: Logger;

  constructor(options: { access: PolicyAccess; sink: FrameSink; log: Logger }) {
    this.access = options.access;
    this.sink = options.sink;
    this.log = options.log;
    this.announced = this.report()?.policy;
  }

  report(): PolicyReport | null {
    try {
      return this.access.read();
    } catch (err) {
      this.log.error({ err: (err as Error).message }, "cannot read the policy");
      return null;
    }
  }

  /** Pi starts a tool call: the gate rereads the policy for it, so tell clients first if it changed. */
  observe(): void {
    this.note(this.report(), "observed");
  }

  /** Why a person's `!` command may not run now, or undefined. */
  bashRefusal(): string | undefined {
    const policy = this.report()?.policy;
    return policy ? userBashRefusal(policy) : undefined;
  }

  /** Runs set_policy; resolves to the response for the client (with its id). */
  async set(id: string | undefined, policy: PolicyMode, expected: PolicyMode | undefined): Promise<Frame> {
    let result: SetPolicyResult;
    try {
      result = await this.access.set({ policy, ...(expected ? { expected } : {}) });
    } catch (err) {
      result = { ok: false, error: "io_error", message: (err as Error).message };
    }
    if (result.ok) {
      this.log.info({ policy, previous: result.previous.policy }, "policy changed by the client");
      this.announced = result.previous.policy;
      this.note(result.current, "set_policy");
      return {
        type: "response",
        id,
        command: "set_policy",
        success: true,
        data: { previous: result.previous, current: result.current },
      };
    }
    if (result.error === "policy_conflict") {
      return {
        ...failure(
          id,
          "set_policy",
          "policy_conflict",
          `the policy is ${result.current.policy}, not ${expected}`,
        ),
        data: { current: result.current },
      };
    }
    return failure(id, "set_policy", result.error, result.message);
  }

  /** Publishes policy_changed when the effective policy differs from the last one clients were told about. */
  private note(current: PolicyReport | null, cause: "set_policy" | "observed"): void {
    if (!current) return;
    const previous = this.announced;
    this.announced = current.policy;
    if (previous === current.policy) return;
    // The first reading is the baseline (it is in every welcome snapshot); only set_policy announces from none.
    if (previous === undefined && cause === "observed") return;
    this.sink.publish({ type: "policy_changed", previous: previous ?? null, current, cause });
  }
}
