// Protocol 2's mutual authentication, shared by the bridge, the typed client and the tests. Each side proves it
// knows the token without sending it: a key derived once from the token (PBKDF2), then an HMAC over both sides'
// fresh nonces, the client id and (for the bridge) the epoch. A listener that does not know the token can neither
// pass as the bridge nor replay what a client sent it to the real bridge (the bridge's nonce is fresh).
import { createHmac, pbkdf2, randomBytes, timingSafeEqual } from "node:crypto";

export const KEY_SALT = "chat-ui-agent-bridge/v2";
export const KEY_ITERATIONS = 100_000;
export const KEY_BYTES = 32;

const CLIENT_LABEL = "chat-ui-agent/v2/client";
const BRIDGE_LABEL = "chat-ui-agent/v2/bridge";

/** The key both sides derive from the token; it stands for the token in every proof. */
export type AuthKey = Buffer & { readonly __authKey: unique symbol };

/** PBKDF2-HMAC-SHA256(token, salt, 100000, 32): computed once per token on each side (off the event loop). */
export function deriveKey(token: string): Promise<AuthKey> {
  return new Promise((resolve, reject) => {
    pbkdf2(Buffer.from(token, "utf8"), KEY_SALT, KEY_ITERATIONS, KEY_BYTES, "sha256", (err, key) => {
      if (err) reject(err);
      else resolve(key as AuthKey);
    });
  });
}

/** 32 random bytes as 64 lowercase hex characters. */
export function newNonce(): string {
  return randomBytes(32).toString("hex");
}

export interface ClientProofInput {
  bridgeNonce: string;
  clientNonce: string;
  clientId: string;
}

export interface BridgeProofInput extends ClientProofInput {
  epoch: string;
}

function hmac(key: AuthKey, text: string): string {
  return createHmac("sha256", key).update(text, "utf8").digest("hex");
}

/** What the client sends in its hello. */
export function clientProof(key: AuthKey, input: ClientProofInput): string {
  return hmac(key, `${CLIENT_LABEL}\n${input.bridgeNonce}\n${input.clientNonce}\n${input.clientId}`);
}

/** What the bridge sends in its welcome: it also covers the epoch the client will resume against. */
export function bridgeProof(key: AuthKey, input: BridgeProofInput): string {
  return hmac(
    key,
    `${BRIDGE_LABEL}\n${input.bridgeNonce}\n${input.clientNonce}\n${input.clientId}\n${input.epoch}`,
  );
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Constant-time comparison of two proofs; anything that is not 64 hex characters never matches. */
export function proofMatches(expected: string, given: unknown): boolean {
  const candidate = typeof given === "string" && HEX64.test(given) ? given : "0".repeat(64);
  const same = timingSafeEqual(Buffer.from(expected, "hex"), Buffer.from(candidate, "hex"));
  return same && candidate === given;
}
