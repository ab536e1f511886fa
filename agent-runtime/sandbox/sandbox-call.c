/*
 * One tool call: `landlock-exec --call LABEL [--close-fds] [--nest] -- /bin/bash -c CMD`.
 *
 * The helper stays as the parent of the call's shell: a child subreaper, so whatever the call starts (in the
 * background, in its own session, with an empty environment, double-forked) stays below it. When the shell
 * exits, or the executor ends the call (SIGTERM: abort, timeout), it kills everything left and exits with the
 * shell's status. With --nest the shell gets a nested Landlock domain, scoped from ABI 6: nothing in the call
 * can signal, trace or reach the abstract sockets of this helper, the executor or another call.
 *
 * The label is read back by the supervisor from this process's command line (it is the executor's direct
 * child, which no tool can be) to attribute a connect to its call.
 */
#include "sandbox.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>


#define CALL_END_DEADLINE_MS 10000

static void mirror_status(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  signal(sig, SIG_DFL);
  sigset_t all;
  sigemptyset(&all);
  sigaddset(&all, sig);
  sigprocmask(SIG_UNBLOCK, &all, NULL);
  raise(sig);
  _exit(128 + sig);
}

int call_main(const char *label, int close_fds, int nest, char **argv) {
  (void)label;
  if (close_fds) close_fds_from(3);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    fprintf(stderr, "landlock-exec: cannot become the call's subreaper: %s\n", strerror(errno));
    return 126;
  }
  sigset_t handled, previous;
  sigemptyset(&handled);
  int handled_signals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
  for (size_t i = 0; i < sizeof(handled_signals) / sizeof(handled_signals[0]); i++) sigaddset(&handled, handled_signals[i]);
  sigprocmask(SIG_BLOCK, &handled, &previous);
  int signals = signalfd(-1, &handled, SFD_CLOEXEC);
  if (signals < 0) {
    fprintf(stderr, "landlock-exec: signalfd: %s\n", strerror(errno));
    return 126;
  }
  pid_t shell = fork();
  if (shell < 0) {
    fprintf(stderr, "landlock-exec: cannot start the call: %s\n", strerror(errno));
    return 126;
  }
  if (shell == 0) {
    sigprocmask(SIG_SETMASK, &previous, NULL);
    if (nest && landlock_nest(1) != 0) {
      fprintf(stderr, "landlock-exec: cannot nest the call's domain: %s\n", strerror(errno));
      _exit(126);
    }
    execv(argv[0], argv);
    fprintf(stderr, "landlock-exec: cannot exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status = 0;
  int shell_done = 0;
  int ended_by = 0;
  while (!shell_done && !ended_by) {
    struct signalfd_siginfo info;
    ssize_t n = read(signals, &info, sizeof(info));
    if (n < 0 && errno == EINTR) continue;
    if (n != (ssize_t)sizeof(info)) break;
    if (info.ssi_signo == SIGCHLD) {
      for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0) break;
        if (pid == shell) {
          status = st;
          shell_done = 1;
        }
      }
    } else {
      ended_by = (int)info.ssi_signo;
    }
  }
  if (!shell_done && !ended_by) ended_by = SIGTERM;
  /* Everything the call left (or all of it, when it is ended) goes before the call's answer. */
  int ended_status = 0;
  end_descendants(CALL_END_DEADLINE_MS, shell, &ended_status);
  if (ended_by) {
    signal(ended_by, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, NULL);
    raise(ended_by);
    _exit(128 + ended_by);
  }
  mirror_status(status);
  return 0;
}
