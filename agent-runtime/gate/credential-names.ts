// The one rule for "this variable probably holds a credential", shared by the shell walk (`$OPENAI_KEY`,
// `declare -p DATABASE_URL`) and the script scan (os.environ["DB_DSN"], process.env.STRIPE_KEY).
// Names only: the values are never known to the gate.

/**
 * Tokens, keys, passwords, sessions, cookies, and connection strings that usually carry a password
 * (`DATABASE_URL`, `*_DSN`, `*_URI`, `REDIS_URL`…). `PWD` alone is the working directory, not a password.
 */
export const CREDENTIAL_VARIABLE = new RegExp(
  [
    "TOKEN",
    "SECRET",
    "PASSW",
    "PASSPHRASE",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "BEARER",
    "WEBHOOK",
    "PRIVATE",
    "KEYS?(?:_|$)", // OPENAI_KEY, APIKEY, STRIPE_KEY_LIVE, SSH_KEYS
    "_PAT$",
    "^PAT_",
    "_PWD$",
    "(?:^|_)PASS(?:_|$)",
    "(?:^|_)DSN$",
    "_URI$",
    "CONN(?:ECTION)?_?STR(?:ING)?",
    "(?:^|_)(?:DATABASE|DB|PG|POSTGRES(?:QL)?|MYSQL|MARIADB|MONGO(?:DB)?|REDIS|AMQP|RABBIT(?:MQ)?|BROKER|KAFKA|ELASTIC(?:SEARCH)?|CLICKHOUSE|NEO4J|SUPABASE|SQLALCHEMY_DATABASE|SENTRY)_?UR[LI]$",
  ].join("|"),
  "i",
);

export function isCredentialVariable(name: string): boolean {
  return CREDENTIAL_VARIABLE.test(name);
}
