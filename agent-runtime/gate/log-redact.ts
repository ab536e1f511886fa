// Reasons can quote command fragments; before they reach a log, mask anything that looks like a secret value.
export function redactForLog(text: string): string {
  return text
    .replace(/(bearer|token|basic)\s+\S+/gi, "$1 [redacted]")
    .replace(/([A-Za-z0-9_]*(?:TOKEN|SECRET|PASSW\w*|KEY)[A-Za-z0-9_]*)=\S+/gi, "$1=[redacted]")
    .replace(/[A-Za-z0-9+/_-]{24,}={0,2}/g, "[redacted]")
    .replace(/\/\/[^/\s:@]+:[^/\s@]+@/g, "//[redacted]@");
}
