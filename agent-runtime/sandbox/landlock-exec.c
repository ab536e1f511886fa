/*
 * landlock-exec: the tools' OS boundary. One small binary, four modes.
 *
 *   landlock-exec --probe
 *       prints what the kernel offers, as JSON, and exits 0:
 *       {"abi":N,"landlockNet":B,"seccompFilter":B,"seccompNotify":B,"notifyAddfd":B,"waitKillable":B}
 *
 *   landlock-exec --supervise --control-fd N [--channel-fd N] [--hold] [--nproc N] [--oom-score-adj N]
 *                 [--egress none|no-inet|notify] [--mode lockdown|registries|open] [--setenv NAME=VALUE]...
 *                 [--grace-ms N] [--proxy-port P] [RULES] -- /absolute/program [ARG]...
 *       the pair's tool supervisor (sandbox-supervise.c): stays the parent of the program (the tool executor),
 *       applies the limits, the domain and the filter in it, ends every tool process with it, and performs or
 *       refuses the tools' connects.
 *
 *   landlock-exec --call LABEL [--network-approved] [--close-fds] [--nest] -- /absolute/program [ARG]...
 *       one tool call (sandbox-call.c): the call's shell in a nested, scoped domain, under a subreaper that
 *       ends whatever the call leaves. --network-approved (right after the label) tells the supervisor, which
 *       reads it back from this helper's command line, that the person approved this call: its processes may
 *       connect anywhere while it runs (not in lockdown).
 *
 *   landlock-exec [RULES] [--close-fds] [--nest] -- /absolute/program [ARG]...
 *       applies the rules to itself and execs the program in the domain (no supervisor).
 *
 *   RULES: [--ro PATH]... [--rw PATH]... [--dev PATH]... [--scope-signal] [--scope-abstract-unix] [--net-tcp]
 *          [--require-abi N]
 *       --ro   read and execute beneath PATH       --rw  every filesystem right beneath PATH
 *       --dev  read, write and ioctl on a device file (or every device beneath a directory)
 *       --scope-*  ABI >= 6: no signals to, and no abstract unix sockets of, processes outside the domain
 *       --net-tcp  ABI >= 4: no TCP connect out of the domain (the supervisor performs the permitted ones)
 *       --require-abi N  refuse to run (exit 126) unless the kernel offers at least ABI N
 *   --nest (plain mode, no other rule) a nested domain that only stops ptrace upward; --close-fds closes every
 *   fd above 2 before the program starts (Node marks inherited fds close-on-exec only up to the first gap).
 *
 * Paths that do not exist are skipped (reported). With a ruleset, one JSON line goes to stderr:
 *   {"landlock":{"abi":7,"enforced":true,"net":["tcp_connect"],"scopes":[...],"skipped":[...]}}
 * Exit codes: 125 bad usage, 126 the boundary could not be applied as asked, 127 exec failed. Never a fallback
 * to running unconfined when something was asked for: the caller decides about degraded runs, not this tool.
 */
#include "sandbox.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static int usage(const char *problem) {
  fprintf(stderr, "landlock-exec: %s\n", problem);
  fprintf(stderr,
          "usage: landlock-exec --probe\n"
          "       landlock-exec --supervise --control-fd N [--channel-fd N] [--hold] [--nproc N] [--oom-score-adj N]\n"
          "                     [--egress none|no-inet|notify] [--mode M] [--setenv K=V]... [--grace-ms N] [--proxy-port P] [RULES] -- PROGRAM...\n"
          "       landlock-exec --call LABEL [--network-approved] [--close-fds] [--nest] -- PROGRAM...\n"
          "       landlock-exec [RULES] [--close-fds] [--nest] -- PROGRAM...\n"
          "RULES: [--ro P]... [--rw P]... [--dev P]... [--scope-signal] [--scope-abstract-unix] [--net-tcp] [--require-abi N]\n");
  return 125;
}

static int parse_int(const char *text, long min, long max, long *out) {
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || !end || *end != '\0' || end == text || value < min || value > max) return -1;
  *out = value;
  return 0;
}

static int probe(void) {
  struct kernel_features f;
  probe_kernel(&f);
  printf("{\"abi\":%d,\"landlockNet\":%s,\"seccompFilter\":%s,\"seccompNotify\":%s,\"notifyAddfd\":%s,"
         "\"waitKillable\":%s}\n",
         f.landlock_abi, f.landlock_abi >= 4 ? "true" : "false", f.seccomp_filter ? "true" : "false",
         f.seccomp_notify ? "true" : "false", f.notify_addfd ? "true" : "false", f.wait_killable ? "true" : "false");
  return 0;
}

int main(int argc, char **argv) {
  static struct rule rules[MAX_RULES];
  static struct supervise_options sup;
  struct landlock_request *ll = &sup.landlock;
  int rule_count = 0, close_fds = 0, nest = 0, supervise = 0, net_tcp = 0, network_approved = 0;
  const char *call_label = NULL;
  int i = 1;
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) return probe();
  sup.control_fd = -1;
  sup.channel_fd = -1;
  sup.filter = FILTER_NONE;
  sup.mode = 1;
  sup.grace_ms = 2000;
  for (; i < argc; i++) {
    const char *arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    long number = 0;
    if (strcmp(arg, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(arg, "--ro") == 0 || strcmp(arg, "--rw") == 0 || strcmp(arg, "--dev") == 0) {
      if (!value) return usage("a path option needs a value");
      if (rule_count >= MAX_RULES) return usage("too many paths");
      if (value[0] != '/') return usage("paths must be absolute");
      rules[rule_count].kind = arg[2] == 'r' && arg[3] == 'o' ? RULE_RO : arg[2] == 'r' ? RULE_RW : RULE_DEV;
      rules[rule_count].path = value;
      rule_count++;
      i++;
    } else if (strcmp(arg, "--scope-signal") == 0) {
      ll->scope_signal = 1;
    } else if (strcmp(arg, "--scope-abstract-unix") == 0) {
      ll->scope_abstract = 1;
    } else if (strcmp(arg, "--net-tcp") == 0) {
      net_tcp = 1;
    } else if (strcmp(arg, "--close-fds") == 0) {
      close_fds = 1;
    } else if (strcmp(arg, "--nest") == 0) {
      nest = 1;
    } else if (strcmp(arg, "--require-abi") == 0) {
      if (!value || parse_int(value, 1, 1000, &number) != 0) return usage("--require-abi takes a positive integer");
      ll->require_abi = (int)number;
      i++;
    } else if (strcmp(arg, "--call") == 0) {
      if (!value || value[0] == '\0' || strlen(value) > 128) return usage("--call takes a label (1-128 characters)");
      call_label = value;
      i++;
    } else if (strcmp(arg, "--network-approved") == 0) {
      /* Read by the supervisor from the command line, right after the label; the helper itself does nothing. */
      if (!call_label || i != 3) return usage("--network-approved goes right after --call LABEL");
      network_approved = 1;
    } else if (strcmp(arg, "--supervise") == 0) {
      supervise = 1;
    } else if (strcmp(arg, "--control-fd") == 0 || strcmp(arg, "--channel-fd") == 0) {
      if (!value || parse_int(value, 3, 1023, &number) != 0) return usage("an fd option takes a number from 3");
      if (arg[2] == 'c' && arg[3] == 'o') sup.control_fd = (int)number;
      else sup.channel_fd = (int)number;
      i++;
    } else if (strcmp(arg, "--hold") == 0) {
      sup.hold = 1;
    } else if (strcmp(arg, "--nproc") == 0) {
      if (!value || parse_int(value, 1, 4194304, &number) != 0) return usage("--nproc takes a positive integer");
      sup.nproc = number;
      i++;
    } else if (strcmp(arg, "--oom-score-adj") == 0) {
      if (!value || parse_int(value, -1000, 1000, &number) != 0) return usage("--oom-score-adj takes -1000..1000");
      sup.oom_score_adj = (int)number;
      i++;
    } else if (strcmp(arg, "--grace-ms") == 0) {
      if (!value || parse_int(value, 0, 600000, &number) != 0) return usage("--grace-ms takes 0..600000");
      sup.grace_ms = (int)number;
      i++;
    } else if (strcmp(arg, "--proxy-port") == 0) {
      if (!value || parse_int(value, 1, 65535, &number) != 0) return usage("--proxy-port takes 1..65535");
      sup.proxy_port = (int)number;
      i++;
    } else if (strcmp(arg, "--egress") == 0) {
      if (!value) return usage("--egress needs a value");
      if (strcmp(value, "none") == 0) sup.filter = FILTER_NONE;
      else if (strcmp(value, "no-inet") == 0) sup.filter = FILTER_NO_INET;
      else if (strcmp(value, "notify") == 0) sup.filter = FILTER_NOTIFY;
      else return usage("--egress takes none, no-inet or notify");
      i++;
    } else if (strcmp(arg, "--mode") == 0) {
      if (!value) return usage("--mode needs a value");
      if (strcmp(value, "lockdown") == 0) sup.mode = 0;
      else if (strcmp(value, "registries") == 0) sup.mode = 1;
      else if (strcmp(value, "open") == 0) sup.mode = 2;
      else return usage("--mode takes lockdown, registries or open");
      i++;
    } else if (strcmp(arg, "--setenv") == 0) {
      if (!value || !strchr(value, '=') || value[0] == '=') return usage("--setenv takes NAME=VALUE");
      if (sup.setenv_count >= 16) return usage("too many --setenv");
      sup.setenv[sup.setenv_count++] = value;
      i++;
    } else {
      return usage("unknown option");
    }
  }
  if (i >= argc) return usage("no program given after --");
  if (argv[i][0] != '/') return usage("the program must be an absolute path (no PATH search)");
  ll->rules = rules;
  ll->rule_count = rule_count;
  ll->handle_tcp_connect = net_tcp;
  int wants_ruleset = rule_count > 0 || ll->scope_signal || ll->scope_abstract || ll->require_abi > 0 || net_tcp;

  if (supervise) {
    if (call_label || nest || close_fds || network_approved)
      return usage("--supervise takes no --call, --network-approved, --nest or --close-fds");
    if (sup.control_fd < 0) return usage("--supervise needs --control-fd");
    if (sup.hold && sup.channel_fd < 0) return usage("--hold needs --channel-fd (the first bytes Pi sends release it)");
    sup.landlock_wanted = wants_ruleset;
    sup.landlock_tcp = net_tcp;
    return supervise_main(&sup, &argv[i]);
  }
  if (sup.control_fd >= 0 || sup.channel_fd >= 0 || sup.hold || sup.nproc || sup.oom_score_adj || sup.setenv_count ||
      sup.filter != FILTER_NONE || sup.proxy_port)
    return usage("supervisor options need --supervise");
  if (call_label) {
    if (wants_ruleset) return usage("--call takes no rule (the call nests in the executor's domain)");
    return call_main(call_label, close_fds, nest, &argv[i]);
  }
  if (nest && wants_ruleset) return usage("--nest takes no other rule");
  if (nest && landlock_nest(0) != 0) {
    fprintf(stderr, "landlock-exec: cannot nest a domain: %s\n", strerror(errno));
    return 126;
  }
  if (wants_ruleset && landlock_apply(ll) != 0) return 126;
  if (close_fds) close_fds_from(3);
  execv(argv[i], &argv[i]);
  fprintf(stderr, "landlock-exec: cannot exec %s: %s\n", argv[i], strerror(errno));
  return 127;
}
