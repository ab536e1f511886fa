/*
 * The tools' seccomp filter, and the kernel probe.
 *
 * The filter closes every way out the supervisor cannot see, and hands it what it must decide:
 *   - a foreign architecture (32-bit syscalls through int 0x80, x32): ENOSYS;
 *   - io_uring (its own connect and send paths): ENOSYS;
 *   - sockets: unix and netlink pass; inet stream sockets pass only as plain TCP (not MPTCP, not SCTP);
 *     datagram inet sockets (UDP, ICMP) go to the supervisor (allowed only in `open` mode or for an approved
 *     call); raw, packet and every other family: EPERM;
 *   - TCP Fast Open (MSG_FASTOPEN on sendto/sendmsg/sendmmsg, TCP_FASTOPEN_CONNECT), TCP repair, IPv4
 *     options and IPv6 routing/extension headers (source routing): EPERM;
 *   - connect: always to the supervisor, which performs permitted inet connects itself.
 * FILTER_NO_INET (no user notification on this kernel) refuses every inet socket instead.
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>


#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_ADDFD_FLAG_SETFD
#define SECCOMP_ADDFD_FLAG_SETFD (1UL << 0)
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register 427
#endif
#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define X32_SYSCALL_BIT 0x40000000U
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "the tools' seccomp filter knows x86_64 and aarch64 only"
#endif

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the filter loads the low half of 64-bit arguments at their offset (little-endian)"
#endif

#define ARG_LO(n) (offsetof(struct seccomp_data, args) + (n) * sizeof(uint64_t))

/* Socket options that are ways out or around the supervisor (level, name). */
#define SOL_TCP_LEVEL 6
#define OPT_TCP_REPAIR 19
#define OPT_TCP_FASTOPEN_CONNECT 30
#define OPT_TCP_FASTOPEN_NO_COOKIE 34
#define SOL_IP_LEVEL 0
#define OPT_IP_OPTIONS 4
#define SOL_IPV6_LEVEL 41
#define MSG_FASTOPEN_FLAG 0x20000000U

#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define JGE(k, t, f) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (k), (t), (f))
#define JSET(k, t, f) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (k), (t), (f))

#define MAX_PROGRAM 128

struct program {
  struct sock_filter ops[MAX_PROGRAM];
  int length;
  int overflow;
};

static int emit(struct program *p, struct sock_filter op) {
  if (p->length >= MAX_PROGRAM) {
    p->overflow = 1;
    return p->length;
  }
  p->ops[p->length] = op;
  return p->length++;
}

/* A conditional jump whose "true" target is filled in later (fix_true). */
static int emit_jeq_fwd(struct program *p, uint32_t k) { return emit(p, (struct sock_filter)JEQ(k, 0, 0)); }

static void fix_true(struct program *p, int at, int target) {
  if (at < p->length) p->ops[at].jt = (uint8_t)(target - at - 1);
}

/* Builds the program. The section for each syscall starts with the argument it reads. */
static void build_program(struct program *p, enum egress_filter filter) {
  uint32_t inet_stream_verdict = filter == FILTER_NOTIFY ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | EPERM;
  uint32_t inet_dgram_verdict = filter == FILTER_NOTIFY ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ERRNO | EPERM;
  uint32_t connect_verdict = filter == FILTER_NOTIFY ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;

  emit(p, (struct sock_filter)LOAD(offsetof(struct seccomp_data, arch)));
  emit(p, (struct sock_filter)JEQ(NATIVE_ARCH, 1, 0));
  emit(p, (struct sock_filter)ERRNO(ENOSYS));
  emit(p, (struct sock_filter)LOAD(offsetof(struct seccomp_data, nr)));
#ifdef X32_SYSCALL_BIT
  emit(p, (struct sock_filter)JGE(X32_SYSCALL_BIT, 0, 1));
  emit(p, (struct sock_filter)ERRNO(ENOSYS));
#endif
  int j_socket = emit_jeq_fwd(p, __NR_socket);
  int j_connect = emit_jeq_fwd(p, __NR_connect);
  int j_sendto = emit_jeq_fwd(p, __NR_sendto);
  int j_sendmsg = emit_jeq_fwd(p, __NR_sendmsg);
  int j_sendmmsg = emit_jeq_fwd(p, __NR_sendmmsg);
  int j_setsockopt = emit_jeq_fwd(p, __NR_setsockopt);
  int j_uring1 = emit_jeq_fwd(p, __NR_io_uring_setup);
  int j_uring2 = emit_jeq_fwd(p, __NR_io_uring_enter);
  int j_uring3 = emit_jeq_fwd(p, __NR_io_uring_register);
  emit(p, (struct sock_filter)ALLOW);

  /* io_uring */
  int uring = emit(p, (struct sock_filter)ERRNO(ENOSYS));
  fix_true(p, j_uring1, uring);
  fix_true(p, j_uring2, uring);
  fix_true(p, j_uring3, uring);

  /* connect */
  int connect = emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, connect_verdict));
  fix_true(p, j_connect, connect);

  /* sendto(fd, buf, len, flags, ...) and sendmmsg(fd, vec, n, flags): flags in args[3] */
  int sendto = emit(p, (struct sock_filter)LOAD(ARG_LO(3)));
  fix_true(p, j_sendto, sendto);
  fix_true(p, j_sendmmsg, sendto);
  emit(p, (struct sock_filter)JSET(MSG_FASTOPEN_FLAG, 0, 1));
  emit(p, (struct sock_filter)ERRNO(EPERM));
  emit(p, (struct sock_filter)ALLOW);
  /* sendmsg(fd, msg, flags): flags in args[2] */
  int sendmsg = emit(p, (struct sock_filter)LOAD(ARG_LO(2)));
  fix_true(p, j_sendmsg, sendmsg);
  emit(p, (struct sock_filter)JSET(MSG_FASTOPEN_FLAG, 0, 1));
  emit(p, (struct sock_filter)ERRNO(EPERM));
  emit(p, (struct sock_filter)ALLOW);

  /* setsockopt(fd, level, name, ...) */
  int setsockopt = emit(p, (struct sock_filter)LOAD(ARG_LO(1)));
  fix_true(p, j_setsockopt, setsockopt);
  int j_tcp = emit_jeq_fwd(p, SOL_TCP_LEVEL);
  int j_ip = emit_jeq_fwd(p, SOL_IP_LEVEL);
  int j_ipv6 = emit_jeq_fwd(p, SOL_IPV6_LEVEL);
  emit(p, (struct sock_filter)ALLOW);
  int tcp = emit(p, (struct sock_filter)LOAD(ARG_LO(2)));
  fix_true(p, j_tcp, tcp);
  emit(p, (struct sock_filter)JEQ(OPT_TCP_FASTOPEN_CONNECT, 3, 0));
  emit(p, (struct sock_filter)JEQ(OPT_TCP_FASTOPEN_NO_COOKIE, 2, 0));
  emit(p, (struct sock_filter)JEQ(OPT_TCP_REPAIR, 1, 0));
  emit(p, (struct sock_filter)ALLOW);
  emit(p, (struct sock_filter)ERRNO(EPERM));
  int ip = emit(p, (struct sock_filter)LOAD(ARG_LO(2)));
  fix_true(p, j_ip, ip);
  emit(p, (struct sock_filter)JEQ(OPT_IP_OPTIONS, 1, 0));
  emit(p, (struct sock_filter)ALLOW);
  emit(p, (struct sock_filter)ERRNO(EPERM));
  /* IPv6: hop-by-hop, routing and destination headers (RFC 2292 and 3542 names): 3-6 and 54-59. */
  int ipv6 = emit(p, (struct sock_filter)LOAD(ARG_LO(2)));
  fix_true(p, j_ipv6, ipv6);
  emit(p, (struct sock_filter)JGE(3, 0, 2));
  emit(p, (struct sock_filter)JGE(7, 1, 0));
  emit(p, (struct sock_filter)ERRNO(EPERM));
  emit(p, (struct sock_filter)JGE(54, 0, 2));
  emit(p, (struct sock_filter)JGE(60, 1, 0));
  emit(p, (struct sock_filter)ERRNO(EPERM));
  emit(p, (struct sock_filter)ALLOW);

  /* socket(domain, type, protocol) */
  int socket = emit(p, (struct sock_filter)LOAD(ARG_LO(0)));
  fix_true(p, j_socket, socket);
  int j_unix = emit_jeq_fwd(p, AF_UNIX);
  int j_netlink = emit_jeq_fwd(p, AF_NETLINK);
  int j_inet = emit_jeq_fwd(p, AF_INET);
  int j_inet6 = emit_jeq_fwd(p, AF_INET6);
  emit(p, (struct sock_filter)ERRNO(EPERM));
  int local = emit(p, (struct sock_filter)ALLOW);
  fix_true(p, j_unix, local);
  fix_true(p, j_netlink, local);
  /* inet: the type without SOCK_NONBLOCK/SOCK_CLOEXEC */
  int inet = emit(p, (struct sock_filter)LOAD(ARG_LO(1)));
  fix_true(p, j_inet, inet);
  fix_true(p, j_inet6, inet);
  emit(p, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf));
  int j_stream = emit_jeq_fwd(p, SOCK_STREAM);
  int j_dgram = emit_jeq_fwd(p, SOCK_DGRAM);
  emit(p, (struct sock_filter)ERRNO(EPERM));
  int dgram = emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, inet_dgram_verdict));
  fix_true(p, j_dgram, dgram);
  int stream = emit(p, (struct sock_filter)LOAD(ARG_LO(2)));
  fix_true(p, j_stream, stream);
  emit(p, (struct sock_filter)JEQ(0, 2, 0));
  emit(p, (struct sock_filter)JEQ(IPPROTO_TCP, 1, 0));
  emit(p, (struct sock_filter)ERRNO(EPERM));
  emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, inet_stream_verdict));
}

static long seccomp_syscall(unsigned int op, unsigned int flags, void *args) {
  return syscall(__NR_seccomp, op, flags, args);
}

int seccomp_install(enum egress_filter filter, int *listener, char *error, size_t error_size) {
  if (listener) *listener = -1;
  if (filter == FILTER_NONE) return 0;
  struct program p = {.length = 0, .overflow = 0};
  build_program(&p, filter);
  if (p.overflow) {
    snprintf(error, error_size, "the filter program is too long");
    return -1;
  }
  struct sock_fprog prog = {.len = (unsigned short)p.length, .filter = p.ops};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    snprintf(error, error_size, "no_new_privs: %s", strerror(errno));
    return -1;
  }
  if (filter == FILTER_NOTIFY) {
    long fd = seccomp_syscall(SECCOMP_SET_MODE_FILTER,
                              SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
    if (fd < 0 && errno == EINVAL) fd = seccomp_syscall(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0) {
      snprintf(error, error_size, "seccomp listener: %s", strerror(errno));
      return -1;
    }
    *listener = (int)fd;
    return 0;
  }
  if (seccomp_syscall(SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
    snprintf(error, error_size, "seccomp filter: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ probe */

static int send_fd(int sock, int fd) {
  char byte = 'L';
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  memset(&control, 0, sizeof(control));
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static int recv_fd(int sock, int timeout_ms) {
  struct pollfd pfd = {.fd = sock, .events = POLLIN};
  if (poll(&pfd, 1, timeout_ms) != 1) return -1;
  char byte;
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) return -1;
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  if (!cmsg || cmsg->cmsg_type != SCM_RIGHTS || cmsg->cmsg_len != CMSG_LEN(sizeof(int))) return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
  return fd;
}

#define PROBE_MAGIC 4242
#define PROBE_FD 97

/* In a child: a listener notifying getppid; the parent answers through ADDFD and a chosen return value. */
static void notify_probe_child(int sock, int killable) {
  struct sock_filter ops[] = {
      LOAD(offsetof(struct seccomp_data, nr)),
      JEQ(__NR_getppid, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      ALLOW,
  };
  struct sock_fprog prog = {.len = sizeof(ops) / sizeof(ops[0]), .filter = ops};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(10);
  unsigned int flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | (killable ? SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV : 0);
  long fd = seccomp_syscall(SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (fd < 0) _exit(11);
  if (send_fd(sock, (int)fd) != 0) _exit(12);
  close((int)fd);
  long answer = syscall(__NR_getppid);
  if (answer != PROBE_MAGIC) _exit(13);
  /* ADDFD put something at PROBE_FD. */
  _exit(fcntl(PROBE_FD, F_GETFD) >= 0 ? 0 : 14);
}

/* Returns: 0 no notification, 1 notification but no ADDFD, 2 notification and ADDFD. */
static int notify_probe(int killable) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return 0;
  pid_t child = fork();
  if (child < 0) {
    close(pair[0]);
    close(pair[1]);
    return 0;
  }
  if (child == 0) {
    close(pair[0]);
    notify_probe_child(pair[1], killable);
  }
  close(pair[1]);
  int result = 0;
  int listener = recv_fd(pair[0], 2000);
  close(pair[0]);
  if (listener >= 0) {
    struct pollfd pfd = {.fd = listener, .events = POLLIN};
    struct seccomp_notif_sizes sizes;
    if (poll(&pfd, 1, 2000) == 1 && seccomp_syscall(SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0) {
      char req_buf[512], resp_buf[512];
      if (sizes.seccomp_notif <= sizeof(req_buf) && sizes.seccomp_notif_resp <= sizeof(resp_buf)) {
        memset(req_buf, 0, sizeof(req_buf));
        struct seccomp_notif *req = (struct seccomp_notif *)req_buf;
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) == 0) {
          result = 1;
          int source = open("/dev/null", O_RDONLY | O_CLOEXEC);
          struct seccomp_notif_addfd addfd = {
              .id = req->id, .flags = SECCOMP_ADDFD_FLAG_SETFD, .srcfd = (uint32_t)source, .newfd = PROBE_FD, .newfd_flags = 0};
          if (source >= 0 && ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) == PROBE_FD) result = 2;
          if (source >= 0) close(source);
          memset(resp_buf, 0, sizeof(resp_buf));
          struct seccomp_notif_resp *resp = (struct seccomp_notif_resp *)resp_buf;
          resp->id = req->id;
          resp->val = PROBE_MAGIC;
          resp->error = 0;
          resp->flags = 0;
          if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0) result = 0;
        }
      }
    }
    close(listener);
  }
  int status = 0;
  if (result == 0) kill(child, SIGKILL);
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) return 0;
  int code = WEXITSTATUS(status);
  if (code == 0) return result;
  if (code == 14) return result >= 1 ? 1 : 0;
  return 0;
}

static int filter_probe(void) {
  pid_t child = fork();
  if (child < 0) return 0;
  if (child == 0) {
    char error[160];
    _exit(seccomp_install(FILTER_NO_INET, NULL, error, sizeof(error)) == 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void probe_kernel(struct kernel_features *features) {
  memset(features, 0, sizeof(*features));
  features->landlock_abi = landlock_abi();
  features->seccomp_filter = filter_probe();
  if (!features->seccomp_filter) return;
  int killable = notify_probe(1);
  if (killable > 0) {
    features->wait_killable = 1;
  } else {
    killable = notify_probe(0);
  }
  features->seccomp_notify = killable >= 1;
  features->notify_addfd = killable >= 2;
}
