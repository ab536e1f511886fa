/*
 * Ending everything below a child subreaper. Orphans come back to the subreaper (whatever session, group or
 * environment they chose), so "every descendant" is exactly the processes whose parent chain reaches it.
 * Each round lists them from one /proc snapshot and kills them all; whatever they forked meanwhile is
 * reparented here and found by the next round; zombies are reaped between rounds. Bounded: a fixed snapshot
 * size, a deadline, no recursion.
 */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define MAX_SNAPSHOT 65536

long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ssize_t read_small_file(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return -1;
  size_t length = 0;
  while (length + 1 < size) {
    ssize_t n = read(fd, buf + length, size - 1 - length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    length += (size_t)n;
  }
  close(fd);
  buf[length] = '\0';
  return (ssize_t)length;
}

/* ppid and state from a /proc/<pid>/stat text: fields start after the last ')' (the name may hold any). */
static int parse_stat(const char *text, pid_t *ppid, char *state) {
  const char *close_paren = strrchr(text, ')');
  if (!close_paren || close_paren[1] != ' ') return -1;
  const char *at = close_paren + 2;
  *state = *at;
  if (at[1] != ' ') return -1;
  char *end = NULL;
  long value = strtol(at + 2, &end, 10);
  if (end == at + 2 || value < 0) return -1;
  *ppid = (pid_t)value;
  return 0;
}

pid_t parent_of(pid_t pid) {
  char path[64], text[512];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  if (read_small_file(path, text, sizeof(text)) <= 0) return -1;
  pid_t ppid;
  char state;
  return parse_stat(text, &ppid, &state) == 0 ? ppid : -1;
}

struct proc_entry {
  pid_t pid;
  pid_t ppid;
};

/* Every live process (pid, ppid), at most MAX_SNAPSHOT. */
static int snapshot(struct proc_entry *entries) {
  DIR *dir = opendir("/proc");
  if (!dir) return 0;
  int count = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL && count < MAX_SNAPSHOT) {
    char *end = NULL;
    long pid = strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64], text[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (read_small_file(path, text, sizeof(text)) <= 0) continue;
    pid_t ppid;
    char state;
    if (parse_stat(text, &ppid, &state) != 0 || state == 'Z' || state == 'X') continue;
    entries[count].pid = (pid_t)pid;
    entries[count].ppid = ppid;
    count++;
  }
  closedir(dir);
  return count;
}

/* Kills every live descendant of `self` in one snapshot; returns how many it signalled. */
static int kill_round(pid_t self, struct proc_entry *entries, pid_t *queue) {
  int count = snapshot(entries);
  int head = 0, tail = 0, killed = 0;
  queue[tail++] = self;
  while (head < tail) {
    pid_t parent = queue[head++];
    for (int i = 0; i < count; i++) {
      if (entries[i].ppid != parent || entries[i].pid == self) continue;
      if (tail < MAX_SNAPSHOT) queue[tail++] = entries[i].pid;
      entries[i].ppid = -1; /* visited */
      if (kill(entries[i].pid, SIGKILL) == 0) killed++;
    }
  }
  return killed;
}

/* Reaps every child that has exited; returns 1 while children remain, 0 when there are none. */
static int reap(pid_t keep, int *keep_status) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG | __WALL);
    if (pid > 0) {
      if (pid == keep && keep_status) *keep_status = status;
      continue;
    }
    if (pid == 0) return 1;
    if (errno == EINTR) continue;
    return 0; /* ECHILD */
  }
}

int end_descendants(int deadline_ms, pid_t keep, int *keep_status) {
  pid_t self = getpid();
  /* The common case (a call that left nothing behind) costs one waitpid, no /proc walk. */
  if (!reap(keep, keep_status)) return 0;
  struct proc_entry *entries = calloc(MAX_SNAPSHOT, sizeof(*entries));
  pid_t *queue = calloc(MAX_SNAPSHOT, sizeof(*queue));
  if (!entries || !queue) {
    free(entries);
    free(queue);
    /* No memory for a snapshot: kill our own process group's worth at least, then reap what we can. */
    return 0;
  }
  long long deadline = now_ms() + deadline_ms;
  int total = 0;
  while (reap(keep, keep_status)) {
    total += kill_round(self, entries, queue);
    if (now_ms() >= deadline) break;
    /* Let the killed exit (their orphans come back to us), then reap and look again. */
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 2 * 1000 * 1000};
    if (!reap(keep, keep_status)) break;
    nanosleep(&pause, NULL);
  }
  free(entries);
  free(queue);
  return total;
}

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

void close_fds_from(int first) {
  if (syscall(__NR_close_range, (unsigned)first, ~0U, 0U) == 0) return;
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (int fd = first; fd < max; fd++) close(fd);
}

void json_string(FILE *out, const char *text) {
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
