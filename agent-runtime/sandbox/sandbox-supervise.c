/*
 * The pair's tool supervisor: `landlock-exec --supervise --control-fd 4 --channel-fd 3 [...] -- node executor`.
 *
 * It stays the executor's parent, outside the tools' Landlock domain and seccomp filter (both are applied in
 * the child after fork), non-dumpable (no tool can trace it or read its memory) and a child subreaper (every
 * tool process, however detached, stays below it). It:
 *   - applies the tools' limits in the child: RLIMIT_NPROC, oom_score_adj, the Landlock domain, the filter;
 *   - holds the child before exec when asked (--hold): the executor's Node does not compete with Pi's boot; the
 *     bridge says `go`, or the first bytes Pi writes on the executor channel release it;
 *   - ends every descendant and exits when the executor exits, when the bridge's control channel closes (the
 *     bridge died, even by SIGKILL), when told `end`, or after a grace period on SIGTERM;
 *   - decides the tools' network: for each notified inet connect it reads the address (/proc/<pid>/mem),
 *     connects its own socket when the destination is allowed (loopback; anything in `open` mode or for an
 *     approved call) and installs it over the tool's fd (SECCOMP_IOCTL_NOTIF_ADDFD), so a thread that changes
 *     the address after the check changes nothing; every other inet connect is refused. Non-inet connects
 *     continue in the kernel when Landlock handles TCP connect in the tools' domain (any TCP connect swapped in
 *     by a racer is refused there); without that, it performs unix connects itself and refuses the rest.
 *   - reports on the control channel, one JSON object a line: ready, released, each connect performed or
 *     refused (pid, call, destination), datagram sockets, dropped events, exit.
 * Control commands (one a line): go | mode lockdown|registries|open | grant LABEL | revoke LABEL | end.
 * A dead supervisor fails closed: the filter's notifications then fail (ENOSYS) in the tools.
 */
#include "sandbox.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>


#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SETFD
#define SECCOMP_ADDFD_FLAG_SETFD (1UL << 0)
#endif
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#define MAX_GRANTS 64
#define MAX_LABEL 128
#define MAX_PENDING 256
#define OUT_CAP (256 * 1024)
/* How long a connect report may wait to go out with others (the egress proxy's attribution waits far longer). */
#define REPORT_DELAY_MS 2
#define LINE_CAP 1024
#define CONNECT_TIMEOUT_MS 75000
#define SETUP_TIMEOUT_MS 30000
#define END_DEADLINE_MS 10000

static const char *const MODE_NAMES[] = {"lockdown", "registries", "open"};
enum { MODE_LOCKDOWN, MODE_REGISTRIES, MODE_OPEN };

struct pending {
  uint64_t id;
  pid_t pid;
  int tool_fd;
  int sock;
  int cloexec;
  long long deadline;
  char call[MAX_LABEL + 1];
  char address[INET6_ADDRSTRLEN];
  int family;
  int port;
  int proxy;
};

static struct {
  const struct supervise_options *options;
  pid_t self;
  pid_t executor;
  int control;
  int listener;
  int signals;
  int setup;
  int channel;
  int held;
  int mode;
  int datagrams_allowed;
  char grants[MAX_GRANTS][MAX_LABEL + 1];
  int grant_count;
  char out[OUT_CAP];
  size_t out_len;
  unsigned long dropped;
  char line[LINE_CAP];
  size_t line_len;
  int line_overflow;
  struct pending pending[MAX_PENDING];
  int pending_count;
  struct seccomp_notif *request;
  struct seccomp_notif_resp *response;
  size_t request_size;
  size_t response_size;
  char self_exe[PATH_MAX];
  int sync_wakeup;
  /* When the reports queued for later go out (0: none waiting). */
  long long flush_at;
  /* Our own CPU mask, read at start: put back after each install (pin_to_this_cpu). */
  cpu_set_t own_mask;
  int own_mask_known;
  /* sockfs's mount id (tool_socket); 0: unknown, the fd's link is read instead. */
  long sockfs_mount;
  int executor_done;
  int executor_status;
  int ending;
  long long end_deadline;
} S;

/* ------------------------------------------------------------------ reporting */

static void flush_out(void) {
  while (S.out_len > 0) {
    ssize_t n = send(S.control, S.out, S.out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    memmove(S.out, S.out + n, S.out_len - (size_t)n);
    S.out_len -= (size_t)n;
  }
}

/* Appends one report line; `soon` leaves it queued for up to REPORT_DELAY_MS, otherwise everything queued goes now. */
static void vemit(int soon, const char *fmt, va_list args) {
  char text[2048];
  int length = vsnprintf(text, sizeof(text) - 1, fmt, args);
  if (length < 0 || (size_t)length >= sizeof(text) - 1) return;
  text[length++] = '\n';
  if (S.dropped > 0 && S.out_len + 64 < OUT_CAP) {
    S.out_len += (size_t)snprintf(S.out + S.out_len, 64, "{\"type\":\"dropped\",\"events\":%lu}\n", S.dropped);
    S.dropped = 0;
  }
  if (S.out_len + (size_t)length > OUT_CAP) {
    S.dropped++;
    return;
  }
  memcpy(S.out + S.out_len, text, (size_t)length);
  S.out_len += (size_t)length;
  if (soon && S.out_len < OUT_CAP / 2) {
    if (!S.flush_at) S.flush_at = now_ms() + REPORT_DELAY_MS;
    return;
  }
  S.flush_at = 0;
  flush_out();
}

/* `soon`: a report nobody waits for. Sending each at once would wake the bridge once per connect, and a woken reader
 * lands on the CPU the tool was just given back (a synchronous wake-up), ahead of it. */
static void emit_when(int soon, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit_when(int soon, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vemit(soon, fmt, args);
  va_end(args);
}

#define emit(...) emit_when(0, __VA_ARGS__)

/* A call label as JSON: labels are checked to be [A-Za-z0-9._:-] when granted and read (no escaping needed). */
static const char *json_label(const char *label, char *buf, size_t size) {
  if (!label || !*label) return "null";
  snprintf(buf, size, "\"%s\"", label);
  return buf;
}

static int label_ok(const char *label) {
  size_t length = strlen(label);
  if (length == 0 || length > MAX_LABEL) return 0;
  for (const char *p = label; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == ':' || c == '-'))
      return 0;
  }
  return 1;
}

/* ------------------------------------------------------------------ ending */

static void finish(void) __attribute__((noreturn));
static void finish(void) {
  int status = S.executor_status;
  int killed = end_descendants(END_DEADLINE_MS, S.executor_done ? 0 : S.executor, &status);
  if (!S.executor_done) {
    S.executor_done = 1;
    S.executor_status = status;
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  emit("{\"type\":\"exit\",\"code\":%d,\"signal\":%d,\"killed\":%d}", code, sig, killed);
  /* A last, bounded try to deliver the report. */
  long long deadline = now_ms() + 500;
  while (S.out_len > 0 && now_ms() < deadline) {
    struct pollfd pfd = {.fd = S.control, .events = POLLOUT};
    if (poll(&pfd, 1, 100) <= 0 || (pfd.revents & (POLLERR | POLLHUP))) break;
    flush_out();
  }
  if (sig) {
    signal(sig, SIG_DFL);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    raise(sig);
  }
  _exit(code >= 0 ? code : 1);
}

static void reap_children(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG | __WALL);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    if (pid == S.executor) {
      S.executor_done = 1;
      S.executor_status = status;
    }
  }
}

static void release(const char *by) {
  if (!S.held) return;
  S.held = 0;
  char go = 'g';
  if (write(S.setup, &go, 1) != 1) {
    /* The child is gone: SIGCHLD follows. */
  }
  close(S.setup);
  S.setup = -1;
  if (S.channel >= 0) close(S.channel);
  S.channel = -1;
  emit("{\"type\":\"released\",\"by\":\"%s\"}", by);
}

/* ------------------------------------------------------------------ seccomp answers */

static void respond(uint64_t id, int error, int64_t value, uint32_t flags) {
  memset(S.response, 0, S.response_size);
  S.response->id = id;
  S.response->error = error ? -error : 0;
  S.response->val = value;
  S.response->flags = flags;
  if (ioctl(S.listener, SECCOMP_IOCTL_NOTIF_SEND, S.response) != 0) {
    /* ENOENT: the task was interrupted or died; nothing waits for this answer. */
  }
}

static int still_valid(uint64_t id) { return ioctl(S.listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0; }

/*
 * SECCOMP_IOCTL_NOTIF_ADDFD wakes the tool to install the socket, and the tool wakes us back, both the ordinary
 * way: the scheduler puts each on an idle CPU if there is one, so on a quiet machine every connect moved both tasks
 * between CPUs, twice, and ran about twice as slow as when both stayed on one (perf sched; bench:tools). For the
 * install alone, both are held on the CPU we run on (the tool's: its notification woke us here), and each one's own
 * mask is put back at once. The rest of the exchange stays here by itself: the notification and the answer are
 * synchronous wake-ups. A tool thread that changes its own mask in that instant may find ours undone; a task or a
 * cpuset that refuses the change leaves the install as it was, only slower.
 */
struct pin {
  int held; /* 0: nothing changed; 1: the tool's mask; 2: the tool's and ours */
  cpu_set_t tool_mask;
};

static void pin_to_this_cpu(pid_t pid, struct pin *pin) {
  pin->held = 0;
  int cpu = sched_getcpu();
  if (cpu < 0 || !S.own_mask_known) return;
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(cpu, &here);
  if (sched_getaffinity(pid, sizeof(pin->tool_mask), &pin->tool_mask) != 0) return;
  if (sched_setaffinity(pid, sizeof(here), &here) != 0) return;
  pin->held = 1;
  if (sched_setaffinity(0, sizeof(here), &here) == 0) pin->held = 2;
}

static void unpin(pid_t pid, const struct pin *pin) {
  if (pin->held == 2) sched_setaffinity(0, sizeof(S.own_mask), &S.own_mask);
  if (pin->held >= 1) sched_setaffinity(pid, sizeof(pin->tool_mask), &pin->tool_mask);
}

/* Installs a copy of `sock` over the tool's fd number, in the tool's blocking mode, and answers `error` (0:
 * connected; EINPROGRESS: under way). `sock` stays ours to close. */
static void install(uint64_t id, pid_t pid, int tool_fd, int sock, int sock_nonblocking, int nonblocking, int cloexec,
                    int error) {
  if (nonblocking != sock_nonblocking) {
    int flags = fcntl(sock, F_GETFL);
    if (flags >= 0) fcntl(sock, F_SETFL, nonblocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
  }
  struct seccomp_notif_addfd addfd = {.id = id,
                                      .flags = SECCOMP_ADDFD_FLAG_SETFD,
                                      .srcfd = (uint32_t)sock,
                                      .newfd = (uint32_t)tool_fd,
                                      .newfd_flags = cloexec ? O_CLOEXEC : 0};
  struct pin pin;
  pin_to_this_cpu(pid, &pin);
  int installed = ioctl(S.listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
  int err = errno;
  unpin(pid, &pin);
  if (installed < 0) {
    if (err != ENOENT) respond(id, err, 0, 0);
    return;
  }
  respond(id, error, 0, 0);
  /* The answer woke the tool on this CPU (a synchronous wake-up), where it waits for us to sleep: it goes first,
   * and the report, the socket's close and the next poll follow. */
  sched_yield();
}

/* ------------------------------------------------------------------ reading the tool's side */

/* The inode of the socket at the tool's fd (0: not a socket; -1: no such fd). */
static long long socket_inode(pid_t pid, int fd) {
  char path[64], link[64];
  snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
  ssize_t n = readlink(path, link, sizeof(link) - 1);
  if (n < 0) return -1;
  link[n] = '\0';
  if (strncmp(link, "socket:[", 8) != 0) return 0;
  return strtoll(link + 8, NULL, 10);
}

/* A field of an fdinfo text ("\nname:"), or NULL. */
static const char *fdinfo_field(const char *text, const char *name) {
  const char *at = strstr(text, name);
  return at ? at + strlen(name) : NULL;
}

/* The mount id of sockfs (every socket's file lives there), from a socket of our own (0: this kernel's fdinfo does
 * not say). */
static long sockfs_mount_id(void) {
  int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return 0;
  char path[64], text[512];
  snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", sock);
  long id = 0;
  if (read_small_file(path, text, sizeof(text)) > 0) {
    const char *mount = fdinfo_field(text, "\nmnt_id:");
    if (mount && fdinfo_field(text, "\nino:")) id = strtol(mount, NULL, 10);
  }
  close(sock);
  return id;
}

/* The tool's fd from its /proc/<pid>/fdinfo alone (one read per connect): the inode if it is a socket, that is a
 * file on sockfs (0: not a socket; -1: no such fd), and its status flags (O_NONBLOCK, O_CLOEXEC). Where fdinfo
 * names no mount or inode, the fd's link says whether it is a socket. */
static long long tool_socket(pid_t pid, int fd, int *flags) {
  char path[64], text[512];
  snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
  *flags = 0;
  if (read_small_file(path, text, sizeof(text)) <= 0) return -1;
  const char *status = fdinfo_field(text, "\nflags:");
  if (status) *flags = (int)strtol(status, NULL, 8);
  const char *mount = fdinfo_field(text, "\nmnt_id:");
  const char *inode = fdinfo_field(text, "\nino:");
  if (S.sockfs_mount > 0 && mount && inode)
    return strtol(mount, NULL, 10) == S.sockfs_mount ? strtoll(inode, NULL, 10) : 0;
  return socket_inode(pid, fd);
}

/* Whether `inode` is listed in one of the given /proc/<pid>/net tables, at whitespace field `field`. */
static int inode_in_tables(pid_t pid, long long inode, const char *const *tables, int field, int *kind) {
  static char text[256 * 1024];
  for (int t = 0; tables[t]; t++) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, tables[t]);
    if (read_small_file(path, text, sizeof(text)) <= 0) continue;
    char *line = strchr(text, '\n'); /* skip the header */
    while (line && *++line) {
      char *next = strchr(line, '\n');
      if (next) *next = '\0';
      char *cursor = line, *token = NULL, *save = NULL;
      long long value = -1;
      int fields[8] = {0};
      for (int f = 0; (token = strtok_r(f == 0 ? cursor : NULL, " \t", &save)) != NULL; f++) {
        if (f < 8) fields[f] = (int)strtol(token, NULL, 16);
        if (f == field) {
          value = strtoll(token, NULL, 10);
          break;
        }
      }
      if (value == inode) {
        if (kind) *kind = fields[4];
        return t + 1;
      }
      line = next;
    }
  }
  return 0;
}

static int is_datagram(pid_t pid, long long inode) {
  static const char *const tables[] = {"udp", "udp6", "udplite", "udplite6", "icmp", "icmp6", "raw", "raw6", NULL};
  return inode_in_tables(pid, inode, tables, 9, NULL) != 0;
}

static int granted(const char *call) {
  if (!call) return 0;
  for (int i = 0; i < S.grant_count; i++)
    if (strcmp(S.grants[i], call) == 0) return 1;
  return 0;
}

/*
 * The label of the call `pid` belongs to: walk up to the executor's direct child, which must be a call helper.
 * `approved` is set when that helper carries --network-approved right after its label: the executor, which alone
 * starts its direct children, says so only for a call the gate confirmed and the person approved. No tool can
 * change that command line: the helper is outside the call's nested domain (no ptrace, no /proc/<pid>/mem).
 */
static const char *call_of(pid_t pid, char *label, size_t size, int *approved) {
  *approved = 0;
  pid_t current = pid;
  for (int depth = 0;; depth++) {
    pid_t parent = parent_of(current);
    if (parent <= 1 || parent == S.self || depth >= 64) return NULL;
    if (parent == S.executor) break;
    current = parent;
  }
  char path[64], exe[PATH_MAX];
  snprintf(path, sizeof(path), "/proc/%d/exe", (int)current);
  ssize_t n = readlink(path, exe, sizeof(exe) - 1);
  if (n < 0) return NULL;
  exe[n] = '\0';
  if (strcmp(exe, S.self_exe) != 0) return NULL;
  char cmdline[512];
  snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)current);
  ssize_t length = read_small_file(path, cmdline, sizeof(cmdline));
  if (length <= 0) return NULL;
  const char *arg1 = cmdline + strlen(cmdline) + 1;
  if (arg1 >= cmdline + length || strcmp(arg1, "--call") != 0) return NULL;
  const char *arg2 = arg1 + strlen(arg1) + 1;
  if (arg2 >= cmdline + length || !label_ok(arg2)) return NULL;
  snprintf(label, size, "%s", arg2);
  const char *arg3 = arg2 + strlen(arg2) + 1;
  *approved = arg3 < cmdline + length && strcmp(arg3, "--network-approved") == 0;
  return label;
}

/* The call a notifying task belongs to, looked up once and only when needed: a loopback connect needs it for its
 * report alone, so that lookup (five /proc reads) happens after the tool has its answer. */
struct asker {
  pid_t pid;
  int known;
  int person;
  const char *call;
  char label[MAX_LABEL + 1];
};

static const char *asker_call(struct asker *a) {
  if (!a->known) {
    a->call = call_of(a->pid, a->label, sizeof(a->label), &a->person);
    a->known = 1;
  }
  return a->call;
}

/* The bridge's grant, or the person's approval of this very call (which lockdown overrides: nothing leaves). */
static int asker_approved(struct asker *a) {
  const char *call = asker_call(a);
  return granted(call) || (a->person && S.mode != MODE_LOCKDOWN);
}

/* Reads `length` bytes of the tool's memory at `address` (same uid, the tool dumpable, we are outside its domain). */
static int read_memory(pid_t pid, uint64_t address, void *buf, size_t length) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = pread(fd, buf, length, (off_t)address);
  close(fd);
  return n == (ssize_t)length ? 0 : -1;
}

/* ------------------------------------------------------------------ connect */

static int is_loopback(const struct sockaddr_storage *sa, char *address, int *port) {
  if (sa->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    inet_ntop(AF_INET, &in->sin_addr, address, INET6_ADDRSTRLEN);
    *port = ntohs(in->sin_port);
    uint32_t host = ntohl(in->sin_addr.s_addr);
    /* 127/8, and 0.0.0.0 (the kernel connects that to the local host). */
    return (host >> 24) == 127 || host == 0;
  }
  const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
  inet_ntop(AF_INET6, &in6->sin6_addr, address, INET6_ADDRSTRLEN);
  *port = ntohs(in6->sin6_port);
  if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)) return 1;
  if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
    const uint8_t *b = in6->sin6_addr.s6_addr;
    return b[12] == 127 || (b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] == 0);
  }
  return 0;
}

/* The local port of the supervisor's socket, which the tool now holds: the egress proxy pairs its accepted
 * connection with this report by it (0: unknown). */
static int local_port(int sock) {
  struct sockaddr_storage local;
  socklen_t size = sizeof(local);
  if (getsockname(sock, (struct sockaddr *)&local, &size) != 0) return 0;
  if (local.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&local)->sin_port);
  if (local.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&local)->sin6_port);
  return 0;
}

/* A loopback connect to the egress proxy: the proxy waits for its report to name the call (attribution). */
static int to_proxy(int loopback, int port) {
  return loopback && S.options->proxy_port > 0 && port == S.options->proxy_port;
}

/* `at_once`: someone waits for this report (the egress proxy); every other report may wait REPORT_DELAY_MS. */
static void connect_event(pid_t pid, const char *call, int family, const char *address, int port, int local,
                          const char *verdict, int err, int at_once) {
  char label[MAX_LABEL + 3];
  emit_when(!at_once, "{\"type\":\"connect\",\"pid\":%d,\"call\":%s,\"family\":\"%s\",\"address\":\"%s\",\"port\":%d,"
       "\"localPort\":%d,\"verdict\":\"%s\",\"errno\":%d}",
       (int)pid, json_label(call, label, sizeof(label)), family == AF_INET ? "inet" : "inet6", address, port, local,
       verdict, err);
}

static void connect_inet(const struct seccomp_notif *req, const struct sockaddr_storage *sa, socklen_t length) {
  pid_t pid = (pid_t)req->pid;
  int tool_fd = (int)req->data.args[0];
  char address[INET6_ADDRSTRLEN] = "";
  int port = 0;
  int loopback = is_loopback(sa, address, &port);
  struct asker asker = {.pid = pid};
  if (!loopback && S.mode != MODE_OPEN && !asker_approved(&asker)) {
    respond(req->id, EACCES, 0, 0);
    connect_event(pid, asker_call(&asker), sa->ss_family, address, port, 0, "refused", EACCES, 0);
    return;
  }
  int flags = 0;
  long long inode = tool_socket(pid, tool_fd, &flags);
  if (inode <= 0) {
    respond(req->id, inode < 0 ? EBADF : ENOTSOCK, 0, 0);
    return;
  }
  /* A datagram socket exists only if it was allowed (open mode, an approved call): its sendto reaches anything
   * already, so its connect may continue. */
  if (S.datagrams_allowed && is_datagram(pid, inode)) {
    respond(req->id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
    connect_event(pid, asker_call(&asker), sa->ss_family, address, port, 0, "continued", 0, 0);
    return;
  }
  int sock = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  if (sock < 0) {
    int err = errno;
    respond(req->id, err, 0, 0);
    connect_event(pid, asker_call(&asker), sa->ss_family, address, port, 0, "performed", err, 0);
    return;
  }
  (void)length; /* the rest of `sa` is zeroed: the full struct is what the kernel would have used */
  socklen_t size = sa->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  int result = connect(sock, (const struct sockaddr *)sa, size);
  int err = result == 0 ? 0 : errno;
  int nonblocking = (flags & O_NONBLOCK) != 0;
  /* Only the egress proxy needs a loopback connect's call (its dialog names it): any other loopback connect (a
   * test suite's server) is reported without one, and its report costs no lookup. */
  int proxy = to_proxy(loopback, port);
  int named = !loopback || proxy;
  int cloexec = (flags & O_CLOEXEC) != 0;
  if (err == 0 || (err == EINPROGRESS && nonblocking)) {
    install(req->id, pid, tool_fd, sock, 1, nonblocking, cloexec, err);
    /* The tool has its answer: what follows is the report. */
    connect_event(pid, named ? asker_call(&asker) : NULL, sa->ss_family, address, port, local_port(sock), "performed",
                  err, proxy);
    close(sock);
    return;
  }
  if (err == EINPROGRESS && S.pending_count < MAX_PENDING) {
    struct pending *p = &S.pending[S.pending_count++];
    p->id = req->id;
    p->pid = pid;
    p->tool_fd = tool_fd;
    p->sock = sock;
    p->cloexec = cloexec;
    p->deadline = now_ms() + CONNECT_TIMEOUT_MS;
    p->proxy = proxy;
    const char *call = named ? asker_call(&asker) : NULL;
    snprintf(p->call, sizeof(p->call), "%s", call ? call : "");
    snprintf(p->address, sizeof(p->address), "%s", address);
    p->family = sa->ss_family;
    p->port = port;
    return;
  }
  close(sock);
  if (err == EINPROGRESS) err = EAGAIN;
  respond(req->id, err, 0, 0);
  connect_event(pid, named ? asker_call(&asker) : NULL, sa->ss_family, address, port, 0, "performed", err, 0);
}

/* A blocking tool's connect that was under way: done, failed or timed out. */
static void settle_pending(int index, int timed_out) {
  struct pending p = S.pending[index];
  S.pending[index] = S.pending[--S.pending_count];
  int err = ETIMEDOUT;
  if (!timed_out) {
    socklen_t size = sizeof(err);
    if (getsockopt(p.sock, SOL_SOCKET, SO_ERROR, &err, &size) != 0) err = errno;
  }
  const char *call = p.call[0] ? p.call : NULL;
  int local = 0;
  if (err == 0) {
    install(p.id, p.pid, p.tool_fd, p.sock, 1, 0, p.cloexec, 0);
    local = local_port(p.sock);
  } else {
    respond(p.id, err, 0, 0);
  }
  close(p.sock);
  connect_event(p.pid, call, p.family, p.address, p.port, local, "performed", err, p.proxy);
}

/* Without Landlock's TCP rule no connect may continue in the kernel: a unix connect is performed here. */
static void connect_unix(const struct seccomp_notif *req, const struct sockaddr_storage *sa, socklen_t length) {
  pid_t pid = (pid_t)req->pid;
  int tool_fd = (int)req->data.args[0];
  int flags = 0;
  long long inode = tool_socket(pid, tool_fd, &flags);
  if (inode <= 0) {
    respond(req->id, inode < 0 ? EBADF : ENOTSOCK, 0, 0);
    return;
  }
  static const char *const tables[] = {"unix", NULL};
  int type = 0;
  /* /proc/net/unix: Num RefCount Protocol Flags Type St Inode Path */
  if (!inode_in_tables(pid, inode, tables, 6, &type) || (type != SOCK_STREAM && type != SOCK_DGRAM && type != SOCK_SEQPACKET)) {
    respond(req->id, EPROTOTYPE, 0, 0);
    return;
  }
  int sock = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (sock < 0) {
    respond(req->id, errno, 0, 0);
    return;
  }
  struct timeval wait = {.tv_sec = 5, .tv_usec = 0};
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
  const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
  int relative = length > offsetof(struct sockaddr_un, sun_path) && un->sun_path[0] != '\0' && un->sun_path[0] != '/';
  int result;
  if (relative) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
    int cwd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cwd < 0 || fchdir(cwd) != 0) {
      if (cwd >= 0) close(cwd);
      close(sock);
      respond(req->id, ENOENT, 0, 0);
      return;
    }
    close(cwd);
    result = connect(sock, (const struct sockaddr *)sa, length);
    int err = errno;
    if (chdir("/") != 0) {
      /* "/" always exists */
    }
    errno = err;
  } else {
    result = connect(sock, (const struct sockaddr *)sa, length);
  }
  if (result != 0) {
    int err = errno;
    close(sock);
    respond(req->id, err, 0, 0);
    return;
  }
  install(req->id, pid, tool_fd, sock, 0, (flags & O_NONBLOCK) != 0, (flags & O_CLOEXEC) != 0, 0);
  close(sock);
}

static void on_connect(const struct seccomp_notif *req) {
  pid_t pid = (pid_t)req->pid;
  uint64_t address = req->data.args[1];
  socklen_t length = (socklen_t)(uint32_t)req->data.args[2];
  struct sockaddr_storage sa;
  memset(&sa, 0, sizeof(sa));
  if ((int)length < (int)sizeof(sa_family_t) || length > sizeof(sa)) {
    respond(req->id, EINVAL, 0, 0);
    return;
  }
  if (address == 0 || read_memory(pid, address, &sa, length) != 0) {
    respond(req->id, EFAULT, 0, 0);
    return;
  }
  /* The memory we read belonged to the task that asked (the pid was not reused meanwhile). */
  if (!still_valid(req->id)) return;
  if (sa.ss_family == AF_INET || sa.ss_family == AF_INET6) {
    /* The kernel's own minimum (an IPv6 address without scope id is 24 bytes, RFC 2133). */
    socklen_t needed = sa.ss_family == AF_INET ? sizeof(struct sockaddr_in) : 24;
    if (length < needed) {
      respond(req->id, EINVAL, 0, 0);
      return;
    }
    connect_inet(req, &sa, length);
  } else if (S.options->landlock_tcp) {
    /* Landlock refuses any TCP connect a racer could swap in for this address or this fd. */
    respond(req->id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
  } else if (sa.ss_family == AF_UNIX) {
    connect_unix(req, &sa, length);
  } else {
    respond(req->id, EACCES, 0, 0);
  }
}

/* socket(AF_INET*, SOCK_DGRAM, ...): UDP, ICMP. Allowed in `open` mode and for an approved call only. */
static void on_datagram_socket(const struct seccomp_notif *req) {
  pid_t pid = (pid_t)req->pid;
  char label[MAX_LABEL + 3];
  struct asker asker = {.pid = pid};
  int allowed = S.mode == MODE_OPEN || asker_approved(&asker);
  if (allowed) {
    S.datagrams_allowed = 1;
    respond(req->id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
  } else {
    respond(req->id, EACCES, 0, 0);
  }
  emit("{\"type\":\"datagram\",\"pid\":%d,\"call\":%s,\"verdict\":\"%s\"}", (int)pid, json_label(asker_call(&asker), label, sizeof(label)),
       allowed ? "allowed" : "refused");
}

static void on_notification(void) {
  memset(S.request, 0, S.request_size);
  if (ioctl(S.listener, SECCOMP_IOCTL_NOTIF_RECV, S.request) != 0) return;
  if (S.request->data.nr == __NR_connect)
    on_connect(S.request);
  else if (S.request->data.nr == __NR_socket)
    on_datagram_socket(S.request);
  else
    respond(S.request->id, ENOSYS, 0, 0);
}

/* ------------------------------------------------------------------ control */

static void on_command(char *line) {
  if (strcmp(line, "go") == 0) {
    release("bridge");
  } else if (strncmp(line, "mode ", 5) == 0) {
    for (int m = 0; m < 3; m++) {
      if (strcmp(line + 5, MODE_NAMES[m]) == 0) {
        S.mode = m;
        emit("{\"type\":\"mode\",\"mode\":\"%s\"}", MODE_NAMES[m]);
        return;
      }
    }
    emit("{\"type\":\"error\",\"message\":\"unknown mode\"}");
  } else if (strncmp(line, "grant ", 6) == 0 && label_ok(line + 6)) {
    if (!granted(line + 6)) {
      if (S.grant_count >= MAX_GRANTS) {
        emit("{\"type\":\"error\",\"message\":\"too many grants\"}");
        return;
      }
      memcpy(S.grants[S.grant_count++], line + 6, strlen(line + 6) + 1); /* label_ok: at most MAX_LABEL */
    }
    emit("{\"type\":\"granted\",\"call\":\"%s\"}", line + 6);
  } else if (strncmp(line, "revoke ", 7) == 0 && label_ok(line + 7)) {
    for (int i = 0; i < S.grant_count; i++) {
      if (strcmp(S.grants[i], line + 7) == 0) {
        memmove(S.grants[i], S.grants[S.grant_count - 1], MAX_LABEL + 1);
        S.grant_count--;
        break;
      }
    }
    emit("{\"type\":\"revoked\",\"call\":\"%s\"}", line + 7);
  } else if (strcmp(line, "end") == 0) {
    finish();
  } else {
    emit("{\"type\":\"error\",\"message\":\"unknown command\"}");
  }
}

static void on_control(void) {
  char buf[4096];
  ssize_t n = recv(S.control, buf, sizeof(buf), MSG_DONTWAIT);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) finish(); /* the bridge is gone */
  for (ssize_t i = 0; i < n; i++) {
    if (buf[i] == '\n') {
      S.line[S.line_len] = '\0';
      if (!S.line_overflow) on_command(S.line);
      S.line_len = 0;
      S.line_overflow = 0;
    } else if (S.line_len + 1 < LINE_CAP) {
      S.line[S.line_len++] = buf[i];
    } else {
      S.line_overflow = 1;
    }
  }
}

static void on_signal(void) {
  struct signalfd_siginfo info;
  while (read(S.signals, &info, sizeof(info)) == (ssize_t)sizeof(info)) {
    if (info.ssi_signo == SIGCHLD) {
      reap_children();
    } else if (!S.ending) {
      /* SIGTERM, SIGINT, SIGHUP: the executor ends its tools gracefully; the rest goes after the grace. */
      S.ending = 1;
      S.end_deadline = now_ms() + S.options->grace_ms;
      kill(S.executor, S.held ? SIGKILL : SIGTERM);
    }
  }
  if (S.executor_done) finish();
}

/* ------------------------------------------------------------------ the child (the executor to be) */

static int send_status(int sock, int fd) {
  char byte = 'K';
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  memset(&control, 0, sizeof(control));
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof(control.buf);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  }
  return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static void child_fail(const char *what, const char *why) {
  fprintf(stderr, "{\"landlock\":{\"enforced\":false,\"error\":\"%s: %s\"}}\n", what, why);
  fflush(stderr);
  _exit(126);
}

static void child_main(const struct supervise_options *o, int setup, pid_t parent, char **argv) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  /* If the supervisor dies, the executor goes with it (its tools are then found by the bridge's sweep). */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent) _exit(1);
  /* The supervisor is non-dumpable; the tools' process must be an ordinary one of its uid (its /proc files its own). */
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  /* Nothing of ours but stdio, the channel and the setup socket reaches the executor. */
  int keep_low = setup < o->channel_fd ? setup : o->channel_fd;
  int keep_high = setup < o->channel_fd ? o->channel_fd : setup;
  if (keep_low < 0) keep_low = keep_high;
  for (int fd = 3; fd < keep_low; fd++) close(fd);
  for (int fd = keep_low + 1; fd < keep_high; fd++) close(fd);
  close_fds_from(keep_high + 1);
  if (o->nproc > 0) {
    struct rlimit limit = {.rlim_cur = (rlim_t)o->nproc, .rlim_max = (rlim_t)o->nproc};
    if (setrlimit(RLIMIT_NPROC, &limit) != 0) child_fail("RLIMIT_NPROC", strerror(errno));
  }
  if (o->oom_score_adj != 0) {
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    char text[16];
    int length = snprintf(text, sizeof(text), "%d", o->oom_score_adj);
    if (fd < 0 || write(fd, text, (size_t)length) != length) child_fail("oom_score_adj", strerror(errno));
    close(fd);
  }
  if (o->landlock_wanted && landlock_apply(&o->landlock) != 0) _exit(126);
  int listener = -1;
  char error[200];
  if (seccomp_install(o->filter, &listener, error, sizeof(error)) != 0) child_fail("seccomp", error);
  if (send_status(setup, listener) != 0) _exit(1);
  if (listener >= 0) close(listener);
  if (o->hold) {
    char go = 0;
    ssize_t n;
    do {
      n = read(setup, &go, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1 || go != 'g') _exit(1);
  }
  close(setup);
  for (int i = 0; i < o->setenv_count; i++) putenv((char *)o->setenv[i]);
  execv(argv[0], argv);
  fprintf(stderr, "landlock-exec: cannot exec %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

/* ------------------------------------------------------------------ main */

static int receive_status(int sock, int *listener) {
  struct pollfd pfd = {.fd = sock, .events = POLLIN};
  int ready;
  do {
    ready = poll(&pfd, 1, SETUP_TIMEOUT_MS);
  } while (ready < 0 && errno == EINTR);
  if (ready != 1) return -1;
  char byte = 0;
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1 || byte != 'K') return -1;
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  *listener = -1;
  if (cmsg && cmsg->cmsg_type == SCM_RIGHTS && cmsg->cmsg_len == CMSG_LEN(sizeof(int)))
    memcpy(listener, CMSG_DATA(cmsg), sizeof(int));
  return 0;
}

int supervise_main(const struct supervise_options *o, char **argv) {
  memset(&S, 0, sizeof(S));
  S.options = o;
  S.self = getpid();
  S.control = o->control_fd;
  S.channel = o->channel_fd;
  S.listener = -1;
  S.setup = -1;
  S.mode = o->mode;
  struct stat st;
  if (fstat(S.control, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    fprintf(stderr, "landlock-exec: --control-fd %d is not a socket\n", S.control);
    return 125;
  }
  if (S.channel >= 0 && fstat(S.channel, &st) != 0) {
    fprintf(stderr, "landlock-exec: --channel-fd %d is not open\n", S.channel);
    return 125;
  }
  ssize_t n = readlink("/proc/self/exe", S.self_exe, sizeof(S.self_exe) - 1);
  if (n <= 0) {
    fprintf(stderr, "landlock-exec: cannot read /proc/self/exe\n");
    return 126;
  }
  S.self_exe[n] = '\0';
  fcntl(S.control, F_SETFD, FD_CLOEXEC);
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    fprintf(stderr, "landlock-exec: cannot become the tools' supervisor: %s\n", strerror(errno));
    return 126;
  }
  signal(SIGPIPE, SIG_IGN);
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGCHLD);
  sigaddset(&handled, SIGTERM);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGHUP);
  sigprocmask(SIG_BLOCK, &handled, NULL);
  S.signals = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  int setup[2];
  if (S.signals < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, setup) != 0) {
    fprintf(stderr, "landlock-exec: supervisor setup: %s\n", strerror(errno));
    return 126;
  }
  S.executor = fork();
  if (S.executor < 0) {
    fprintf(stderr, "landlock-exec: cannot start the executor: %s\n", strerror(errno));
    return 126;
  }
  if (S.executor == 0) {
    close(setup[0]);
    close(S.signals);
    child_main(o, setup[1], S.self, argv);
  }
  close(setup[1]);
  S.setup = setup[0];
  if (receive_status(S.setup, &S.listener) != 0) {
    /* The child reported why on stderr (Landlock or seccomp could not be applied): fail closed. */
    kill(S.executor, SIGKILL);
    int status;
    while (waitpid(S.executor, &status, 0) < 0 && errno == EINTR) {
    }
    emit("{\"type\":\"failed\"}");
    return 126;
  }
  if (o->filter == FILTER_NOTIFY) {
    struct seccomp_notif_sizes sizes;
    if (S.listener < 0 || syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) {
      kill(S.executor, SIGKILL);
      fprintf(stderr, "{\"landlock\":{\"enforced\":false,\"error\":\"seccomp: no listener\"}}\n");
      return 126;
    }
    S.request_size = sizes.seccomp_notif > sizeof(struct seccomp_notif) ? sizes.seccomp_notif : sizeof(struct seccomp_notif);
    S.response_size =
        sizes.seccomp_notif_resp > sizeof(struct seccomp_notif_resp) ? sizes.seccomp_notif_resp : sizeof(struct seccomp_notif_resp);
    /* Linux >= 6.6: the tool hands its CPU to the supervisor and back (no cross-CPU wake-ups per connect). Older
     * kernels refuse the flag: only slower, the same checks. */
    S.sync_wakeup = ioctl(S.listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, (uint64_t)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0;
    S.own_mask_known = sched_getaffinity(0, sizeof(S.own_mask), &S.own_mask) == 0;
    S.sockfs_mount = sockfs_mount_id();
    S.request = calloc(1, S.request_size);
    S.response = calloc(1, S.response_size);
    if (!S.request || !S.response) return 126;
  }
  S.held = o->hold;
  if (!S.held) {
    close(S.setup);
    S.setup = -1;
    if (S.channel >= 0) close(S.channel);
    S.channel = -1;
  }
  static const char *const FILTER_NAMES[] = {"none", "no-inet", "notify"};
  emit("{\"type\":\"ready\",\"pid\":%d,\"executorPid\":%d,\"filter\":\"%s\",\"landlockTcp\":%s,\"nproc\":%ld,"
       "\"oomScoreAdj\":%d,\"mode\":\"%s\",\"held\":%s,\"syncWakeup\":%s}",
       (int)S.self, (int)S.executor, FILTER_NAMES[o->filter], o->landlock_tcp ? "true" : "false", o->nproc,
       o->oom_score_adj, MODE_NAMES[S.mode], S.held ? "true" : "false", S.sync_wakeup ? "true" : "false");

  for (;;) {
    struct pollfd fds[4 + MAX_PENDING];
    int count = 0;
    int at_control = count;
    fds[count++] = (struct pollfd){.fd = S.control, .events = (short)(POLLIN | (S.out_len && !S.flush_at ? POLLOUT : 0))};
    int at_signals = count;
    fds[count++] = (struct pollfd){.fd = S.signals, .events = POLLIN};
    int at_listener = -1, at_channel = -1;
    if (S.listener >= 0) {
      at_listener = count;
      fds[count++] = (struct pollfd){.fd = S.listener, .events = POLLIN};
    }
    if (S.held && S.channel >= 0) {
      at_channel = count;
      fds[count++] = (struct pollfd){.fd = S.channel, .events = POLLIN};
    }
    int first_pending = count;
    for (int i = 0; i < S.pending_count; i++) fds[count++] = (struct pollfd){.fd = S.pending[i].sock, .events = POLLOUT};
    long long now = now_ms();
    long long wake = now + 1000;
    for (int i = 0; i < S.pending_count; i++)
      if (S.pending[i].deadline < wake) wake = S.pending[i].deadline;
    if (S.ending && S.end_deadline < wake) wake = S.end_deadline;
    if (S.flush_at && S.flush_at < wake) wake = S.flush_at;
    int timeout = wake > now ? (int)(wake - now) : 0;
    int ready = poll(fds, (nfds_t)count, timeout);
    if (ready < 0 && errno != EINTR) finish();
    if (ready > 0) {
      if (fds[at_signals].revents) on_signal();
      if (at_listener >= 0 && (fds[at_listener].revents & POLLIN)) on_notification();
      if (at_listener >= 0 && (fds[at_listener].revents & (POLLHUP | POLLERR | POLLNVAL)) &&
          !(fds[at_listener].revents & POLLIN)) {
        /* No task uses the filter any more. */
        close(S.listener);
        S.listener = -1;
      }
      if (at_channel >= 0 && fds[at_channel].revents) release("channel");
      /* Settle from the end: settle_pending moves the last entry into the freed slot. */
      int pending_now = count - first_pending;
      for (int i = pending_now - 1; i >= 0; i--)
        if (i < S.pending_count && fds[first_pending + i].revents) settle_pending(i, 0);
      if (fds[at_control].revents & POLLOUT) flush_out();
      if (fds[at_control].revents & (POLLIN | POLLHUP | POLLERR)) on_control();
    }
    now = now_ms();
    if (S.flush_at && now >= S.flush_at) {
      S.flush_at = 0;
      flush_out();
    }
    for (int i = S.pending_count - 1; i >= 0; i--)
      if (S.pending[i].deadline <= now) settle_pending(i, 1);
    if (S.ending && now >= S.end_deadline) finish();
  }
}
