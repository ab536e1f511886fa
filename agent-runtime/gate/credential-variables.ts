// The one rule for environment variable names that hold credentials. The shell classifier uses it for `$NAME`,
// `${NAME…}`, `printenv NAME`, `declare -p NAME`; keep every other user on this module (one regex, one place).
// Names only: the gate never sees or logs values.

/**
 * Matches names such as GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, OPENAI_KEY, APIKEY, DATABASE_URL, MONGODB_URI,
 * SENTRY_DSN, PGPASSWORD, MYSQL_PWD, SLACK_WEBHOOK_URL, AZURE_STORAGE_CONNECTION_STRING. `PWD` alone is the
 * working directory, not a password.
 */
export const CREDENTIAL_VARIABLE =
  /(TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|SESSION|BEARER|WEBHOOK|_PAT$|^PAT_|KEYS?(_|$)|_PWD$|(^|_)PASS(_|$)|_DSN$|^DSN$|_URI$|CONN(ECTION)?_?STR(ING)?|(DATABASE|DB|REDIS|MONGO(DB)?|POSTGRES(QL)?|PG|MYSQL|MARIADB|AMQP|RABBIT(MQ)?|BROKER|CELERY_BROKER|SENTRY|SUPABASE|NEON|KAFKA|ELASTIC(SEARCH)?|CLICKHOUSE|NEO4J|SQLALCHEMY_DATABASE)_?(URL|URI|DSN)$)/i;

export function isCredentialVariable(name: string): boolean {
  return name.length <= 256 && CREDENTIAL_VARIABLE.test(name);
}

/** A command-line value that looks like it carries a credential (a header, `user:password`, a bearer token). */
export function credentialLike(text: string): boolean {
  return /(token|secret|passw|bearer|authorization|api[-_]?key|cookie)/i.test(text.slice(0, 4096));
}
