/*
 * Part of launcher.c (included there, after listener.h): the node-wide bound on plugin programs running at once
 * when no resident server serves the calls (exec mode, a refused caller, a server that has died). Each such call
 * is a JavaScript program of ~40 MB: a burst of them at once must not take a node's memory. A call takes one of N
 * slots before it execs the program, and the program holds it until it exits: slot k is an flock on
 * `<socket>.slot.<k>`, a plain file of root's in the socket's directory (root's alone, as for the socket; the
 * node's socket, /run/tscni/plugins.sock, when TSCNI_RESIDENT_SOCKET is empty), held on
 * a descriptor the program inherits (the kernel lets the slot go with the program, however it ends). When every
 * slot is held, callers queue on `<socket>.slot-queue`: the one holding that lock tries the slots every 2 ms, the
 * others wait in the kernel, first come first served. The one trying the slots waits while their holders get on:
 * each holder writes its pid into its slot file, and when for SLOT_STALL_MS no slot came free and the holders
 * together used less than a fifth of a CPU (they wait on a lock, a server, a peer: stuck, not slow), it runs
 * anyway, as does a call that has waited SLOT_WAIT_MS in all. So slots held by stuck calls cost another call half
 * a second, never its turn, and a burst of busy programs still waits its turn.
 * A call made under a program that holds a slot (a delegate its plugin execs, through any programs in between)
 * runs under that slot when none is free, and so never waits for a slot its own caller holds: the launcher names
 * the slot it hands its program in TSCNI_EXEC_SLOT ("<pid>:<fd>"), and a launcher below believes it only when that
 * pid is its ancestor and the kernel shows that descriptor of it open on a slot file with its flock held
 * (/proc/<pid>/fd and fdinfo). Only root can open the slot files: another user can neither hold a slot nor make a
 * call wait (its own calls run unbounded, as without the bound); a directory that is not root's alone, or slot
 * files that are not plain files of root's, leave the call unbounded.
 * N is `exec-slots` in the operator's file or TSCNI_EXEC_SLOTS (a number, or off), by default two per CPU this
 * caller may run on, at least 2.
 */

#define SLOT_MARK "TSCNI_EXEC_SLOT="
#define SLOTS_MAX 128
#define SLOT_WAIT_MS 60000
#define SLOT_POLL_MS 2
#define SLOT_STALL_MS 500
/* A fifth of a CPU over SLOT_STALL_MS, in the kernel's clock ticks (USER_HZ, 100 a second). */
#define SLOT_BUSY_TICKS (SLOT_STALL_MS / 10 / 5)

/* TSCNI_EXEC_SLOT is set by a launcher for its program only: a caller's is passed on only once proven. */
static int is_slot_mark(const char *e) {
  return !strncmp(e, SLOT_MARK, sizeof(SLOT_MARK) - 1);
}

/* How many programs may run at once (see the header); 0: no bound. */
static int slot_count(const char *plugin, const char *path) {
  char value[24];
  if (resident_setting("TSCNI_EXEC_SLOTS", "exec-slots", value, sizeof(value))) {
    const char *p = value;
    long n = parse_decimal(&p);
    if (!strcmp(value, "off") || (n == 0 && !*p)) return 0;
    if (n >= 1 && !*p) return n > SLOTS_MAX ? SLOTS_MAX : (int)n;
    launcher_log_once(plugin, path, "exec-slots is neither a number nor off, two per CPU are used: ", value);
  }
  unsigned char mask[128];
  long got = cpu_affinity(mask, sizeof(mask));
  int cpus = 0;
  for (long i = 0; i < got; i++)
    for (unsigned b = mask[i]; b; b &= b - 1) cpus++;
  if (cpus < 1) cpus = 1;
  return cpus * 2 > SLOTS_MAX ? SLOTS_MAX : cpus * 2;
}

/* The slot files a call looked at: each one's descriptor (-1 when not opened, or not a slot file) and identity. */
struct slots {
  int n;
  int fd[SLOTS_MAX];
  struct file_info file[SLOTS_MAX];
};

/* `<path><suffix><k>` into `out` (room for PATH_MAX); 0 when it does not fit. */
static int slot_path(char *out, const char *path, const char *suffix, int k) {
  char number[12] = "";
  if (k >= 0) format_decimal(number, (unsigned)k);
  char with_suffix[PATH_MAX];
  return join(with_suffix, path, suffix) && join(out, with_suffix, number);
}

/* Opens (or makes) a slot file: a plain file of root's, 0600, never through a link; -1 when it is not one. */
static int open_slot_file(const char *name, struct file_info *info) {
  int fd = open(name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (fd_info(fd, info) != 0 || !S_ISREG(info->mode) || info->uid != 0 || (info->mode & 077)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Closes every slot file but slot `keep` (-1: all). */
static void close_slots(struct slots *s, int keep) {
  for (int k = 0; k < s->n; k++) {
    if (k != keep && s->fd[k] >= 0) close(s->fd[k]);
    if (k != keep) s->fd[k] = -1;
  }
}

/* Whether `pid` is this process's parent, or its parent's, and so on (up to 32 generations). */
static int is_ancestor(int pid) {
  int p = getppid();
  for (int i = 0; i < 32 && p > 1; i++) {
    if (p == pid) return 1;
    char path[40] = "/proc/", stat[1024];
    size_t len = 6 + format_decimal(path + 6, (unsigned)p);
    memcpy(path + len, "/stat", 6);
    if (read_file(path, stat, sizeof(stat)) <= 0) return 0;
    const char *q = strrchr(stat, ')'); /* "<pid> (<comm>) <state> <ppid> ...": comm may hold anything */
    if (!q || !q[1] || !q[2]) return 0;
    q += 3;
    p = (int)parse_decimal(&q);
  }
  return 0;
}

/*
 * Whether the slot the caller's TSCNI_EXEC_SLOT names is held now by an ancestor of this process: that pid is an
 * ancestor, its descriptor is open on one of the slot files in `s`, and the kernel shows the flock held on it.
 */
static int under_ancestors_slot(const struct slots *s) {
  const char *mark = env_value("TSCNI_EXEC_SLOT");
  if (!mark) return 0;
  const char *p = mark;
  long pid = parse_decimal(&p), fd = -1;
  if (pid > 1 && *p == ':') {
    p++;
    fd = parse_decimal(&p);
  }
  if (fd < 0 || *p || !is_ancestor((int)pid)) return 0;
  char base[48] = "/proc/", path[80];
  size_t len = 6 + format_decimal(base + 6, (unsigned)pid);
  char number[24];
  format_decimal(number, (unsigned long long)fd);
  struct file_info held;
  memcpy(base + len, "/fd/", 5);
  if (!join(path, base, number) || path_info(path, 1, &held) != 0) return 0;
  int known = 0;
  for (int k = 0; k < s->n; k++) known |= s->fd[k] >= 0 && s->file[k].dev == held.dev && s->file[k].ino == held.ino;
  if (!known) return 0;
  char info[4096];
  memcpy(base + len, "/fdinfo/", 9);
  if (!join(path, base, number) || read_file(path, info, sizeof(info)) <= 0) return 0;
  /* "lock:\t1: FLOCK  ADVISORY  WRITE <pid> <dev>:<ino> 0 EOF" (a waiter's line has "->") */
  for (const char *line = info; *line;) {
    const char *end = line;
    while (*end && *end != '\n') end++;
    if (!strncmp(line, "lock:", 5)) {
      int flock_held = 0, waiter = 0;
      for (const char *c = line; c + 5 <= end; c++) {
        if (!strncmp(c, "FLOCK", 5)) flock_held = 1;
        if (c[0] == '-' && c[1] == '>') waiter = 1;
      }
      if (flock_held && !waiter) return 1;
    }
    line = *end ? end + 1 : end;
  }
  return 0;
}

/* Takes slot `k`'s lock when it is free, keeping it on a descriptor above 2; the descriptor, or -1. */
static int try_slot(struct slots *s, int k) {
  if (s->fd[k] < 0 || flock(s->fd[k], LOCK_EX | LOCK_NB) != 0) return -1;
  int fd = s->fd[k];
  if (fd < 3) {
    /* (a caller with a closed stdout may have given the file descriptor 1: the program's stdout must not be it) */
    int high = fcntl(fd, F_DUPFD, 3);
    if (high < 0) return -1;
    close(fd);
    s->fd[k] = fd = high;
  }
  close_slots(s, k);
  /* The holder's pid, for waiters to see whether it gets on (the program keeps this pid: the launcher execs it). */
  char text[24];
  size_t len = format_decimal(text, (unsigned)getpid());
  text[len++] = '\n';
  if (pwrite(fd, text, len, 0) == (ssize_t)len) (void)ftruncate(fd, (off_t)len);
  return fd;
}

/*
 * CPU time (clock ticks) the holders the slot files name have used, themselves and the children they waited for;
 * -1 when a slot's holder cannot be seen (no pid in its file: not a launcher's; a holder gone whose descriptor
 * lives on in a child): the caller then takes the holders to be getting on.
 */
static long long holders_cpu(const struct slots *s) {
  long long ticks = 0;
  for (int k = 0; k < s->n; k++) {
    char text[24] = "";
    if (s->fd[k] < 0) continue;
    if (pread(s->fd[k], text, sizeof(text) - 1, 0) <= 0) return -1;
    const char *p = text;
    long pid = parse_decimal(&p);
    if (pid <= 1 || *p != '\n') return -1;
    char path[40] = "/proc/", stat[1024];
    size_t len = 6 + format_decimal(path + 6, (unsigned)pid);
    memcpy(path + len, "/stat", 6);
    if (read_file(path, stat, sizeof(stat)) <= 0) return -1;
    const char *q = strrchr(stat, ')'); /* then: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime */
    if (!q) return -1;
    q++;
    for (int field = 0; field < 11 && *q; field++) {
      while (*q == ' ') q++;
      while (*q && *q != ' ') q++;
    }
    for (int field = 0; field < 4; field++) {
      while (*q == ' ') q++;
      ticks += parse_decimal(&q);
    }
  }
  return ticks;
}

/*
 * The slot for this call's program (see the header): its descriptor, to be inherited by the program; -1 when the
 * call runs without one of its own (no bound here, the wait given up); -2 when it runs under its ancestor's.
 */
static int take_exec_slot(const char *plugin, const char *path) {
  struct slots s;
  s.n = slot_count(plugin, path);
  if (s.n == 0) return -1;
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (slash && slash != path && (size_t)(slash - path) < sizeof(dir)) {
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    mkdir(dir, 0700);
  }
  if (!directory_is_roots(path)) {
    debug(": programs at once are not bounded: the socket's directory is not root's alone", path, "");
    return -1;
  }
  int usable = 0;
  for (int k = 0; k < s.n; k++) s.fd[k] = -1;
  for (int i = 0, first = getpid() % s.n; i < s.n; i++) {
    int k = (first + i) % s.n;
    char name[PATH_MAX];
    if (!slot_path(name, path, ".slot.", k)) break;
    s.fd[k] = open_slot_file(name, &s.file[k]);
    if (s.fd[k] < 0) continue;
    usable++;
    int fd = try_slot(&s, k);
    if (fd >= 0) return fd;
  }
  if (!usable) {
    debug(": programs at once are not bounded: no slot file is a plain file of root's (", path, ".slot.*)");
    return -1;
  }
  if (under_ancestors_slot(&s)) {
    close_slots(&s, -1);
    debug(": every slot is taken; this call runs under its caller's", path, "");
    return -2;
  }
  debug(": every slot is taken; waiting for one", path, "");
  long long deadline = clock_ns(CLOCK_BOOTTIME) + SLOT_WAIT_MS * 1000000LL;
  char queue_name[PATH_MAX];
  struct file_info queue_info;
  int queue = slot_path(queue_name, path, ".slot-queue", -1) ? open_slot_file(queue_name, &queue_info) : -1;
  while (queue >= 0 && flock(queue, LOCK_EX) != 0 && errno == EINTR) {
  }
  long long now = clock_ns(CLOCK_BOOTTIME), patience_end = now + SLOT_STALL_MS * 1000000LL;
  long long cpu_at = holders_cpu(&s);
  const char *why = "no slot for a program came free in 60 s (exec-slots), running the call without one";
  while (now < deadline) {
    for (int k = 0; k < s.n; k++) {
      int fd = try_slot(&s, k);
      if (fd < 0) continue;
      if (queue >= 0) close(queue);
      return fd;
    }
    poll(NULL, 0, SLOT_POLL_MS);
    now = clock_ns(CLOCK_BOOTTIME);
    if (now < patience_end) continue;
    long long cpu = holders_cpu(&s);
    if (cpu >= 0 && cpu_at >= 0 && cpu - cpu_at < SLOT_BUSY_TICKS) {
      why = "every slot is held by programs that are not running (waiting on something), running the call without one";
      break;
    }
    cpu_at = cpu;
    patience_end = now + SLOT_STALL_MS * 1000000LL;
  }
  if (queue >= 0) close(queue);
  close_slots(&s, -1);
  launcher_log_once(plugin, path, why, "");
  return -1;
}
