/*
 * The tools' OS boundary (landlock-exec): what its parts share. See landlock-exec.c for the modes.
 */
#ifndef CHAT_UI_AGENT_SANDBOX_H
#define CHAT_UI_AGENT_SANDBOX_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ------------------------------------------------------------------ Landlock (sandbox-landlock.c) */

enum rule_kind { RULE_RO, RULE_RW, RULE_DEV };

struct rule {
  enum rule_kind kind;
  const char *path;
};

#define MAX_RULES 256

struct landlock_request {
  const struct rule *rules;
  int rule_count;
  int scope_signal;
  int scope_abstract;
  /* ABI >= 4: handle TCP connect with no rule, so no TCP connect leaves the domain by itself. */
  int handle_tcp_connect;
  int require_abi;
};

/* The ABI this kernel offers (0: none). */
int landlock_abi(void);
/*
 * Applies the request to the calling thread (sets no_new_privs). Prints one JSON report line to stderr
 * ({"landlock":{...}}), on success and on failure. Returns 0, or -1 when the domain could not be applied.
 */
int landlock_apply(const struct landlock_request *request);
/*
 * A nested domain for one tool call: from ABI 6 scoped (no signals to, no abstract sockets of, anything
 * outside it); below, a domain that only stops ptrace upward. Nothing on a kernel without Landlock.
 * Returns 0, or -1 (errno set).
 */
int landlock_nest(int scoped);

/* ------------------------------------------------------------------ seccomp (sandbox-seccomp.c) */

enum egress_filter {
  /* No filter at all. */
  FILTER_NONE,
  /* Every inet socket refused (and everything FILTER_NOTIFY closes): no network, loopback included. */
  FILTER_NO_INET,
  /* TCP sockets allowed; datagram inet sockets and every connect go to the supervisor (user notification). */
  FILTER_NOTIFY,
};

struct kernel_features {
  int landlock_abi;
  int seccomp_filter;
  int seccomp_notify;
  int notify_addfd;
  int wait_killable;
};

/*
 * Installs the tools' filter in the calling thread (no_new_privs must be set). With FILTER_NOTIFY, *listener
 * receives the notification fd. Returns 0, or -1 with a reason in `error`.
 */
int seccomp_install(enum egress_filter filter, int *listener, char *error, size_t error_size);
/* Measures what this kernel offers (forks two short-lived children). */
void probe_kernel(struct kernel_features *features);

/* ------------------------------------------------------------------ reaping (sandbox-reap.c) */

/*
 * Kills every descendant of the calling process (which must be a child subreaper, so orphans come back to it)
 * and reaps them, round after round, until it has no child left or `deadline_ms` passed. `keep` (if > 0) is
 * a child that is reaped but whose status is stored in *keep_status. Returns how many processes it killed.
 */
int end_descendants(int deadline_ms, pid_t keep, int *keep_status);
/* The parent pid of `pid` from /proc/<pid>/stat (threads included), or -1. */
pid_t parent_of(pid_t pid);

/* ------------------------------------------------------------------ modes */

struct supervise_options {
  int control_fd;
  int channel_fd;
  int hold;
  long nproc;
  int oom_score_adj;
  enum egress_filter filter;
  /* Landlock handles TCP connect in the tools' domain (so non-inet connects may continue in the kernel). */
  int landlock_tcp;
  /* The network mode at start (0 lockdown, 1 registries, 2 open). */
  int mode;
  const char *setenv[16];
  int setenv_count;
  int grace_ms;
  /* The egress proxy's loopback port (0: none): a connect to it is reported at once, with its call. */
  int proxy_port;
  struct landlock_request landlock;
  int landlock_wanted;
};

int supervise_main(const struct supervise_options *options, char **argv);
int call_main(const char *label, int close_fds, int nest, char **argv);

/* ------------------------------------------------------------------ small shared helpers */

void close_fds_from(int first);
void json_string(FILE *out, const char *text);
/* Reads up to size-1 bytes of a small file into buf (NUL-terminated); returns the length or -1. */
ssize_t read_small_file(const char *path, char *buf, size_t size);
/* Milliseconds on the monotonic clock. */
long long now_ms(void);

#endif
