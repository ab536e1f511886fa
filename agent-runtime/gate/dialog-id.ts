// The id Pi gives a dialog the gate opens. A grant request must name it (the bridge makes a grant only for the
// dialog it relayed the person's "Allow for this session" answer to), but Pi's extension API does not return it:
// RPC mode draws it from `crypto.randomUUID()` synchronously inside `ctx.ui.select` (rpc-mode.js
// createDialogPromise), before the request is written. So the gate watches that one function (same values,
// nothing else changes) and reads the id drawn while it opened the dialog. Exactly one id drawn, or none is
// believed: without an id the gate does not offer a session grant at all.
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";

let drawn: string[] | undefined;
let installed: boolean | undefined;

/** Starts watching Pi's dialog ids; false when it cannot (then no dialog offers a session grant). */
export function watchDialogIds(): boolean {
  if (installed !== undefined) return installed;
  const original = crypto.randomUUID;
  if (typeof original !== "function") {
    installed = false;
    return false;
  }
  const watched = function randomUUID(this: unknown, ...args: Parameters<typeof crypto.randomUUID>) {
    const id = original.apply(this, args);
    if (drawn && drawn.length < 2) drawn.push(id);
    return id;
  };
  crypto.randomUUID = watched as typeof crypto.randomUUID;
  // Pi's ESM `import * as crypto` sees the builtin's ESM bindings: bring them in line with the object above.
  syncBuiltinESMExports();
  installed = true;
  return true;
}

/** Runs `open` (which must synchronously make Pi draw the dialog's id) and returns the one id it drew. */
export function withDialogId<T>(open: () => T): { value: T; dialogId: string | undefined } {
  drawn = [];
  try {
    const value = open();
    const ids = drawn;
    return { value, dialogId: ids.length === 1 ? ids[0] : undefined };
  } finally {
    drawn = undefined;
  }
}
