/*
 * landlock-exec: apply a Landlock ruleset to this process, then exec a program inside it.
 *
 * Landlock restricts the calling thread and every process it later becomes or starts, so the tool executor is
 * started through this helper: Node (and its thread pool) is born inside the domain. The helper is also the
 * tool shell's wrapper (--close-fds): Node marks inherited fds close-on-exec only up to the first gap after
 * fd 15, so an fd a parent leaked above that would reach every tool; every shell a tool call starts goes
 * through here and loses every fd above 2. With --nest it also puts the shell in a nested domain of its own:
 * Landlock lets a process ptrace only processes in its own domain or below, so a tool can then no longer trace
 * the executor (whose channel to Pi it could otherwise take over), while signals between tool calls still
 * work (the nested domain adds no scope; the parent's scope allows anything inside the parent domain).
 *
 *   landlock-exec --probe
 *       prints {"abi":N} (0 when the kernel has no Landlock) and exits 0.
 *   landlock-exec [--ro PATH]... [--rw PATH]... [--dev PATH]... [--scope-signal] [--scope-abstract-unix]
 *                 [--require-abi N] [--close-fds] [--nest] -- /absolute/program [ARG]...
 *       --ro   read and execute beneath PATH       --rw  every filesystem right beneath PATH
 *       --dev  read, write and ioctl on a device file (or every device beneath a directory)
 *       --scope-*  ABI >= 6: no signals to, and no abstract unix sockets of, processes outside the domain
 *       --require-abi N  refuse to run (exit 126) unless the kernel offers at least ABI N
 *       --nest  (with no other rule) a nested domain restricting only block-device creation: best effort,
 *               nothing on a kernel without Landlock
 *   Without any --ro/--rw/--dev/--scope-* the helper applies no ruleset (only --close-fds, if given).
 *
 * Paths that do not exist are skipped (reported). On success, with a ruleset, one JSON line goes to stderr:
 *   {"landlock":{"abi":7,"enforced":true,"scopes":["signal","abstract_unix_socket"],"skipped":[...]}}
 * Exit codes: 125 bad usage, 126 Landlock could not be applied as asked, 127 exec failed. Never a fallback
 * to running unconfined when a ruleset was asked for: the caller decides about degraded runs, not this tool.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Spelled here so the helper builds against older kernel headers (Debian bookworm ships 6.1's). */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

#define FS_EXECUTE (1ULL << 0)
#define FS_WRITE_FILE (1ULL << 1)
#define FS_READ_FILE (1ULL << 2)
#define FS_READ_DIR (1ULL << 3)
#define FS_REMOVE_DIR (1ULL << 4)
#define FS_REMOVE_FILE (1ULL << 5)
#define FS_MAKE_CHAR (1ULL << 6)
#define FS_MAKE_DIR (1ULL << 7)
#define FS_MAKE_REG (1ULL << 8)
#define FS_MAKE_SOCK (1ULL << 9)
#define FS_MAKE_FIFO (1ULL << 10)
#define FS_MAKE_BLOCK (1ULL << 11)
#define FS_MAKE_SYM (1ULL << 12)
#define FS_REFER (1ULL << 13)     /* ABI 2 */
#define FS_TRUNCATE (1ULL << 14)  /* ABI 3 */
#define FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */

#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

enum rule_kind { RULE_RO, RULE_RW, RULE_DEV };

struct rule {
  enum rule_kind kind;
  const char *path;
};

#define MAX_RULES 256

static int landlock_abi(void) {
  long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : (int)abi;
}

static uint64_t fs_rights_for_abi(int abi) {
  uint64_t rights = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR | FS_REMOVE_DIR | FS_REMOVE_FILE |
                    FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK |
                    FS_MAKE_SYM;
  if (abi >= 2) rights |= FS_REFER;
  if (abi >= 3) rights |= FS_TRUNCATE;
  if (abi >= 5) rights |= FS_IOCTL_DEV;
  return rights;
}

/* Rights that make sense on a non-directory (the kernel refuses directory-only rights there). */
static uint64_t file_rights(uint64_t rights) {
  return rights & (FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV);
}

static void json_string(FILE *out, const char *text) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(out, "\\u%04x", *p);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

static int usage(const char *problem) {
  fprintf(stderr, "landlock-exec: %s\n", problem);
  fprintf(stderr,
          "usage: landlock-exec --probe\n"
          "       landlock-exec [--ro P]... [--rw P]... [--dev P]... [--scope-signal] [--scope-abstract-unix]\n"
          "                     [--require-abi N] [--close-fds] [--nest] -- /absolute/program [ARG]...\n");
  return 125;
}

static void close_inherited_fds(void) {
  if (syscall(__NR_close_range, 3U, ~0U, 0U) == 0) return;
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (int fd = 3; fd < max; fd++) close(fd);
}

int main(int argc, char **argv) {
  struct rule rules[MAX_RULES];
  int rule_count = 0;
  int scope_signal = 0, scope_abstract = 0, close_fds = 0, require_abi = 0, nest = 0;
  int i = 1;
  if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
    printf("{\"abi\":%d}\n", landlock_abi());
    return 0;
  }
  for (; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(arg, "--ro") == 0 || strcmp(arg, "--rw") == 0 || strcmp(arg, "--dev") == 0) {
      if (i + 1 >= argc) return usage("a path option needs a value");
      if (rule_count >= MAX_RULES) return usage("too many paths");
      rules[rule_count].kind = arg[2] == 'r' && arg[3] == 'o' ? RULE_RO : arg[2] == 'r' ? RULE_RW : RULE_DEV;
      rules[rule_count].path = argv[++i];
      if (rules[rule_count].path[0] != '/') return usage("paths must be absolute");
      rule_count++;
    } else if (strcmp(arg, "--scope-signal") == 0) {
      scope_signal = 1;
    } else if (strcmp(arg, "--scope-abstract-unix") == 0) {
      scope_abstract = 1;
    } else if (strcmp(arg, "--close-fds") == 0) {
      close_fds = 1;
    } else if (strcmp(arg, "--nest") == 0) {
      nest = 1;
    } else if (strcmp(arg, "--require-abi") == 0) {
      if (i + 1 >= argc) return usage("--require-abi needs a value");
      char *end = NULL;
      long value = strtol(argv[++i], &end, 10);
      if (!end || *end != '\0' || value < 1 || value > 1000) return usage("--require-abi takes a positive integer");
      require_abi = (int)value;
    } else {
      return usage("unknown option");
    }
  }
  if (i >= argc) return usage("no program given after --");
  if (argv[i][0] != '/') return usage("the program must be an absolute path (no PATH search)");

  int wants_ruleset = rule_count > 0 || scope_signal || scope_abstract || require_abi > 0;
  if (nest && wants_ruleset) return usage("--nest takes no other rule");
  if (nest && landlock_abi() >= 1) {
    /* Handles one right nobody unprivileged has anyway (mknod of block devices) and grants it nowhere. */
    struct ll_ruleset_attr attr = {.handled_access_fs = FS_MAKE_BLOCK, .handled_access_net = 0, .scoped = 0};
    int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, offsetof(struct ll_ruleset_attr, scoped), 0U);
    if (ruleset < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(__NR_landlock_restrict_self, ruleset, 0U) != 0) {
      fprintf(stderr, "landlock-exec: cannot nest a domain: %s\n", strerror(errno));
      return 126;
    }
    close(ruleset);
  }
  if (wants_ruleset) {
    int abi = landlock_abi();
    if (abi < 1 || abi < require_abi) {
      fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"enforced\":false,\"error\":\"kernel offers ABI %d, %d required\"}}\n",
              abi, abi, require_abi > 0 ? require_abi : 1);
      return 126;
    }
    uint64_t all_fs = fs_rights_for_abi(abi);
    struct ll_ruleset_attr attr = {.handled_access_fs = all_fs, .handled_access_net = 0, .scoped = 0};
    if (abi >= 6) {
      if (scope_signal) attr.scoped |= SCOPE_SIGNAL;
      if (scope_abstract) attr.scoped |= SCOPE_ABSTRACT_UNIX_SOCKET;
    } else if (scope_signal || scope_abstract) {
      /* Asked for scopes the kernel cannot give: the caller requires ABI 6 when it depends on them. */
      fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"note\":\"scopes need ABI 6; not applied\"}}\n", abi);
    }
    /* The struct grew with the ABI; pass only the fields this kernel knows. */
    size_t attr_size = abi >= 6 ? sizeof(attr) : offsetof(struct ll_ruleset_attr, scoped);
    int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0U);
    if (ruleset < 0) {
      fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"enforced\":false,\"error\":\"create_ruleset: %s\"}}\n", abi,
              strerror(errno));
      return 126;
    }
    const char *skipped[MAX_RULES];
    int skipped_count = 0;
    for (int r = 0; r < rule_count; r++) {
      int fd = open(rules[r].path, O_PATH | O_CLOEXEC);
      if (fd < 0) {
        skipped[skipped_count++] = rules[r].path;
        continue;
      }
      struct stat st;
      if (fstat(fd, &st) != 0) {
        close(fd);
        skipped[skipped_count++] = rules[r].path;
        continue;
      }
      uint64_t rights;
      if (rules[r].kind == RULE_RO)
        rights = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE;
      else if (rules[r].kind == RULE_RW)
        rights = all_fs;
      else
        rights = FS_READ_FILE | FS_WRITE_FILE | FS_READ_DIR | (abi >= 5 ? FS_IOCTL_DEV : 0) |
                 (abi >= 3 ? FS_TRUNCATE : 0);
      if (!S_ISDIR(st.st_mode)) rights = file_rights(rights);
      struct ll_path_beneath_attr beneath = {.allowed_access = rights & all_fs, .parent_fd = fd};
      if (syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &beneath, 0U) != 0) {
        int err = errno;
        close(fd);
        fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"enforced\":false,\"error\":\"add_rule ", abi);
        json_string(stderr, rules[r].path);
        fprintf(stderr, ": %s\"}}\n", strerror(err));
        return 126;
      }
      close(fd);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(__NR_landlock_restrict_self, ruleset, 0U) != 0) {
      fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"enforced\":false,\"error\":\"restrict_self: %s\"}}\n", abi,
              strerror(errno));
      return 126;
    }
    close(ruleset);
    fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"enforced\":true,\"scopes\":[", abi);
    int first = 1;
    if (attr.scoped & SCOPE_SIGNAL) {
      fputs("\"signal\"", stderr);
      first = 0;
    }
    if (attr.scoped & SCOPE_ABSTRACT_UNIX_SOCKET) fputs(first ? "\"abstract_unix_socket\"" : ",\"abstract_unix_socket\"", stderr);
    fputs("],\"skipped\":[", stderr);
    for (int s = 0; s < skipped_count; s++) {
      if (s > 0) fputc(',', stderr);
      json_string(stderr, skipped[s]);
    }
    fputs("]}}\n", stderr);
    fflush(stderr);
  }
  if (close_fds) close_inherited_fds();
  execv(argv[i], &argv[i]);
  fprintf(stderr, "landlock-exec: cannot exec %s: %s\n", argv[i], strerror(errno));
  return 127;
}
