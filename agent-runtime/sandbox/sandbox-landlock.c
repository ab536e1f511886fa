/*
 * Landlock: the tools' domain (filesystem rules, TCP connect handled with no rule, signal and abstract-socket
 * scopes) and the nested domain each tool call gets.
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
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

#define NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */

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

int landlock_abi(void) {
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

/* The struct grew with the ABI; pass only the fields this kernel knows. */
static size_t attr_size_for_abi(int abi) {
  if (abi >= 6) return sizeof(struct ll_ruleset_attr);
  if (abi >= 4) return offsetof(struct ll_ruleset_attr, scoped);
  return offsetof(struct ll_ruleset_attr, handled_access_net);
}

static int report_failure(int abi, const char *what, const char *path, int err) {
  fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"enforced\":false,\"error\":\"%s", abi, what);
  if (path) {
    fputc(' ', stderr);
    /* json_string adds quotes: strip them by printing the escaped text inline. */
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
      if (*p == '"' || *p == '\\')
        fprintf(stderr, "\\%c", *p);
      else if (*p < 0x20)
        fprintf(stderr, "\\u%04x", *p);
      else
        fputc(*p, stderr);
    }
  }
  if (err) fprintf(stderr, ": %s", strerror(err));
  fputs("\"}}\n", stderr);
  fflush(stderr);
  return -1;
}

int landlock_apply(const struct landlock_request *request) {
  int abi = landlock_abi();
  int require = request->require_abi > 0 ? request->require_abi : 1;
  if (abi < require) {
    fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"enforced\":false,\"error\":\"kernel offers ABI %d, %d required\"}}\n",
            abi, abi, require);
    fflush(stderr);
    return -1;
  }
  uint64_t all_fs = fs_rights_for_abi(abi);
  struct ll_ruleset_attr attr = {.handled_access_fs = all_fs, .handled_access_net = 0, .scoped = 0};
  if (request->handle_tcp_connect) {
    if (abi < 4) return report_failure(abi, "TCP connect rules need ABI 4", NULL, 0);
    attr.handled_access_net = NET_CONNECT_TCP;
  }
  if (abi >= 6) {
    if (request->scope_signal) attr.scoped |= SCOPE_SIGNAL;
    if (request->scope_abstract) attr.scoped |= SCOPE_ABSTRACT_UNIX_SOCKET;
  } else if (request->scope_signal || request->scope_abstract) {
    /* Asked for scopes the kernel cannot give: the caller requires ABI 6 when it depends on them. */
    fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"note\":\"scopes need ABI 6; not applied\"}}\n", abi);
  }
  int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size_for_abi(abi), 0U);
  if (ruleset < 0) return report_failure(abi, "create_ruleset", NULL, errno);
  const char *skipped[MAX_RULES];
  int skipped_count = 0;
  for (int r = 0; r < request->rule_count; r++) {
    const struct rule *rule = &request->rules[r];
    int fd = open(rule->path, O_PATH | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      if (fd >= 0) close(fd);
      skipped[skipped_count++] = rule->path;
      continue;
    }
    uint64_t rights;
    if (rule->kind == RULE_RO)
      rights = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE;
    else if (rule->kind == RULE_RW)
      rights = all_fs;
    else
      rights = FS_READ_FILE | FS_WRITE_FILE | FS_READ_DIR | (abi >= 5 ? FS_IOCTL_DEV : 0) | (abi >= 3 ? FS_TRUNCATE : 0);
    if (!S_ISDIR(st.st_mode)) rights = file_rights(rights);
    struct ll_path_beneath_attr beneath = {.allowed_access = rights & all_fs, .parent_fd = fd};
    if (syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &beneath, 0U) != 0) {
      int err = errno;
      close(fd);
      close(ruleset);
      return report_failure(abi, "add_rule", rule->path, err);
    }
    close(fd);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(__NR_landlock_restrict_self, ruleset, 0U) != 0) {
    int err = errno;
    close(ruleset);
    return report_failure(abi, "restrict_self", NULL, err);
  }
  close(ruleset);
  fprintf(stderr, "{\"landlock\":{\"abi\":%d,\"enforced\":true,\"net\":%s,\"scopes\":[", abi,
          attr.handled_access_net ? "[\"tcp_connect\"]" : "[]");
  int first = 1;
  if (attr.scoped & SCOPE_SIGNAL) {
    fputs("\"signal\"", stderr);
    first = 0;
  }
  if (attr.scoped & SCOPE_ABSTRACT_UNIX_SOCKET)
    fputs(first ? "\"abstract_unix_socket\"" : ",\"abstract_unix_socket\"", stderr);
  fputs("],\"skipped\":[", stderr);
  for (int s = 0; s < skipped_count; s++) {
    if (s > 0) fputc(',', stderr);
    json_string(stderr, skipped[s]);
  }
  fputs("]}}\n", stderr);
  fflush(stderr);
  return 0;
}

int landlock_nest(int scoped) {
  int abi = landlock_abi();
  if (abi < 1) return 0;
  /* Handles one right nobody unprivileged has anyway (mknod of block devices) and grants it nowhere; with
   * ABI 6 the scopes close signals and abstract sockets towards everything outside the call. From ABI 2 every
   * ruleset denies linking and renaming across directories (REFER) unless a rule grants it, even when it does
   * not handle it: the nested domain grants it everywhere, so the executor's domain alone decides (git, mv). */
  uint64_t handled = FS_MAKE_BLOCK | (abi >= 2 ? FS_REFER : 0);
  struct ll_ruleset_attr attr = {.handled_access_fs = handled, .handled_access_net = 0, .scoped = 0};
  if (scoped && abi >= 6) attr.scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET;
  int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size_for_abi(abi), 0U);
  if (ruleset < 0) return -1;
  int err = 0;
  if (abi >= 2) {
    int root = open("/", O_PATH | O_CLOEXEC | O_DIRECTORY);
    struct ll_path_beneath_attr everywhere = {.allowed_access = FS_REFER, .parent_fd = root};
    if (root < 0 || syscall(__NR_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &everywhere, 0U) != 0) err = errno;
    if (root >= 0) close(root);
  }
  if (!err && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(__NR_landlock_restrict_self, ruleset, 0U) != 0))
    err = errno;
  close(ruleset);
  if (err) {
    errno = err;
    return -1;
  }
  return 0;
}
