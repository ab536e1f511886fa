// The one rule for environment variable names that hold credentials. The shell classifier uses it for `$NAME`,
// `${NAME…}`, `printenv NAME`, `declare -p NAME`; keep every other user on this module (one regex, one place).
// Names only: the gate never sees or logs values.

/** Matches names such as GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, OPENAI_KEY, DATABASE_URL, SENTRY_DSN, PGPASSWORD. */
export const CREDENTIAL_VARIABLE =
  /(TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|COOKIE|SESSION|_PAT$|^PAT_|(^|_)KEY($|_)|_DSN$|^DSN$|(DATABASE|DB|REDIS|MONGO(DB)?|POSTGRES(QL)?|PG|MYSQL|MARIADB|AMQP|RABBITMQ|BROKER|CELERY_BROKER|SENTRY|SUPABASE|NEON|KAFKA)_(URL|URI|DSN)$)/i;

export function isCredentialVariable(name: string): boolean {
  return name.length <= 256 && CREDENTIAL_VARIABLE.test(name);
}
