/*
 * Part of launcher.c (included there, after its helpers): whether the process listening on the server's socket is
 * to be sent anything. The rule is the one the server applies to its callers (src/sys/peer.ts, docs/trust.md),
 * turned around: the listener must be root in this caller's user, network, mount and pid namespaces, with exactly
 * its capabilities and its confinement (seccomp mode and filter count, no_new_privs, LSM label), and it must hold
 * the server's lock (<socket>.lock, a plain file of root's), proven from the listener's own descriptors (their
 * /proc fdinfo), never from the system-wide /proc/locks, which any user can make slow to read. A root process
 * without capabilities, or the root of a user namespace, can replace the socket (root owns its directory), but
 * fails this. PID 1 of our pid namespace (systemd holding the socket of a unit) is believed as init (root in our
 * namespaces, with at least our capabilities) only for a socket that is provably the one made at our path:
 * activation_refusal.
 * The listener's /proc entry is the one the kernel names: the pidfd of the listener (SO_PEERPIDFD, Linux >= 6.5)
 * gives its pid in our /proc (fdinfo "Pid:"), read again after the checks: the entry read was the listener's
 * throughout. Without SO_PEERPIDFD, only a /proc of our own pid namespace is used, the pid is SO_PEERCRED's, and
 * the process must have started before the socket file was made and be unchanged (start time) across the reads.
 */

#define SO_PEERPIDFD 77
#define LISTENER_STATUS_MAX 16384

/* What the rule compares of a process. */
struct facts {
  int euid;                       /* -1 when unreadable */
  unsigned long long cap_eff;
  char seccomp[40];               /* "<mode>/<filters>" */
  char no_new_privs[8];
  char lsm[256];                  /* the label, or "(none N)" with the errno when there is none */
  struct file_info ns[4];         /* user, net, mnt, pid */
  int ns_read[4];
  int nspid_fields;               /* entries of NSpid (1: this /proc is the process's own pid namespace) */
  long long start_ticks;          /* field 22 of stat; -1 when unread */
};

static const char *const NS_KINDS[4] = {"user", "net", "mnt", "pid"};
static const char *const NS_WORDS[4] = {"user", "network", "mount", "pid"};
/* The index of the network namespace in NS_WORDS (and in struct facts' ns). */
#define NS_NET 1

/* A whole small file into `out` (NUL-terminated); its length, or -1 with errno. */
static ssize_t read_file(const char *path, char *out, size_t room) {
  int fd = open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return -1;
  ssize_t n = read_some(fd, out, room - 1);
  int e = errno;
  close(fd);
  errno = e;
  if (n < 0) return -1;
  out[n] = '\0';
  return n;
}

/* The value of a /proc status field ("Field:\tvalue"), up to its line's end, into `out`; 0 when absent. */
static int status_text(const char *status, const char *field, char *out, size_t room) {
  size_t n = strlen(field);
  for (const char *line = status; *line;) {
    if (!strncmp(line, field, n) && line[n] == ':') {
      const char *p = line + n + 1;
      while (*p == ' ' || *p == '\t') p++;
      size_t len = 0;
      while (p[len] && p[len] != '\n' && len + 1 < room) len++;
      memcpy(out, p, len);
      out[len] = '\0';
      return 1;
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return 0;
}

/* "/proc/<pid>" or "/proc/self" followed by `tail` into `out` (room for 64). */
static void proc_path(char *out, int pid, const char *tail) {
  size_t len = 6;
  memcpy(out, "/proc/", 6);
  if (pid < 0) {
    memcpy(out + len, "self", 4);
    len += 4;
  } else {
    len += format_decimal(out + len, (unsigned)pid);
  }
  memcpy(out + len, tail, strlen(tail) + 1);
}

/* What read_facts reads besides the status: the LSM label (with `lsm_too`, or only when `like` had one), the start time. */
#define FACTS_START 1
#define FACTS_LSM 2

/* This process's umask, as read_facts last read it from its own status (-1: not read). */
static int own_umask = -1;

/*
 * The facts of process `pid` (-1: this one) as /proc shows them now; 0 when its status cannot be read. `what`:
 * FACTS_START and FACTS_LSM; the LSM label of a listener is read only when ours could be (a kernel without one
 * gives none to anybody), so `like` (our own facts) says whether to.
 */
static int read_facts(int pid, struct facts *f, int what, const struct facts *like) {
  char path[64], status[LISTENER_STATUS_MAX], text[64];
  proc_path(path, pid, "/status");
  if (read_file(path, status, sizeof(status)) < 0) return 0;
  f->euid = -1;
  if (status_text(status, "Uid", text, sizeof(text))) {
    const char *p = text;
    while (*p >= '0' && *p <= '9') p++; /* the real uid, then blanks, then the effective one */
    while (*p == ' ' || *p == '\t') p++;
    f->euid = (int)parse_decimal(&p);
    if (f->euid < 0) f->euid = -1;
  }
  f->cap_eff = status_hex(status, "CapEff");
  char mode[16] = "0", filters[16] = "0";
  status_text(status, "Seccomp", mode, sizeof(mode));
  status_text(status, "Seccomp_filters", filters, sizeof(filters));
  size_t len = strlen(mode);
  memcpy(f->seccomp, mode, len);
  f->seccomp[len] = '/';
  memcpy(f->seccomp + len + 1, filters, strlen(filters) + 1);
  if (!status_text(status, "NoNewPrivs", f->no_new_privs, sizeof(f->no_new_privs))) memcpy(f->no_new_privs, "0", 2);
  if (pid < 0 && status_text(status, "Umask", text, sizeof(text))) {
    own_umask = 0;
    for (const char *p = text; *p >= '0' && *p <= '7'; p++) own_umask = own_umask * 8 + (*p - '0');
  }
  f->nspid_fields = 1;
  if (status_text(status, "NSpid", text, sizeof(text))) {
    f->nspid_fields = 0;
    for (const char *p = text; *p;) {
      while (*p == ' ' || *p == '\t') p++;
      if (!*p) break;
      f->nspid_fields++;
      while (*p && *p != ' ' && *p != '\t') p++;
    }
  }
  for (int i = 0; i < 4; i++) {
    char ns[64];
    char tail[16] = "/ns/";
    memcpy(tail + 4, NS_KINDS[i], strlen(NS_KINDS[i]) + 1);
    proc_path(ns, pid, tail);
    f->ns_read[i] = path_info(ns, 1, &f->ns[i]) == 0;
  }
  proc_path(path, pid, "/attr/current");
  ssize_t n = -1;
  errno = EINVAL;
  if ((what & FACTS_LSM) && (!like || like->lsm[0] != '(')) n = read_file(path, f->lsm, sizeof(f->lsm));
  if (n < 0 && like && like->lsm[0] == '(') {
    memcpy(f->lsm, like->lsm, sizeof(f->lsm)); /* no label on this kernel: none for anybody */
  } else if (n < 0) {
    char number[12];
    format_decimal(number, (unsigned)errno);
    memcpy(f->lsm, "(none ", 6);
    memcpy(f->lsm + 6, number, strlen(number));
    memcpy(f->lsm + 6 + strlen(number), ")", 2);
  } else {
    while (n > 0 && (f->lsm[n - 1] == '\n' || f->lsm[n - 1] == '\0')) f->lsm[--n] = '\0';
  }
  f->start_ticks = -1;
  proc_path(path, pid, "/stat");
  char stat[1024];
  if ((what & FACTS_START) && read_file(path, stat, sizeof(stat)) > 0) {
    const char *p = strrchr(stat, ')');
    for (int field = 2; p && *p && field < 22; p++) if (*p == ' ') field++;
    if (p) {
      long v = parse_decimal(&p);
      f->start_ticks = v;
    }
  }
  return 1;
}

/*
 * Why the listener with facts `l` is not this caller's server (`own`: this process), or NULL when it is. `init`:
 * the listener is PID 1 (see the header comment). `*other_ns`: the index (NS_WORDS) of the namespace that refused
 * it when that is the reason (the two were both read and differ), else -1.
 */
static const char *facts_refusal(const struct facts *l, const struct facts *own, int init, int *other_ns) {
  static char why[512];
  *other_ns = -1;
  if (l->euid != 0) return "the listener does not run as root";
  /* Capabilities first: a caller with fewer may not even read the listener's namespaces. */
  if ((l->cap_eff & own->cap_eff) != own->cap_eff) return "the listener lacks capabilities this caller has";
  if (!init && l->cap_eff != own->cap_eff) return "the listener has capabilities this caller lacks";
  for (int i = 0; i < (init ? 3 : 4); i++) {
    const char *parts[3] = {"the listener is in another ", NS_WORDS[i], " namespace"};
    if (!own->ns_read[i] || !l->ns_read[i]) {
      parts[0] = own->ns_read[i] ? "this caller cannot read the listener's " : "this caller cannot read its own ";
    } else if (own->ns[i].dev == l->ns[i].dev && own->ns[i].ino == l->ns[i].ino) {
      continue;
    } else {
      *other_ns = i;
    }
    size_t len = 0;
    for (int k = 0; k < 3; k++) {
      memcpy(why + len, parts[k], strlen(parts[k]));
      len += strlen(parts[k]);
    }
    why[len] = '\0';
    return why;
  }
  if (init) return NULL;
  if (strcmp(l->seccomp, own->seccomp)) return "the listener's seccomp confinement differs from this caller's";
  if (strcmp(l->no_new_privs, own->no_new_privs)) return "the listener's no_new_privs differs from this caller's";
  if (strcmp(l->lsm, own->lsm)) return "the listener's LSM label differs from this caller's";
  return NULL;
}

/* The pid a pidfd's process has in this /proc (fdinfo "Pid:"): 0 not visible here, -1 exited, -2 unreadable. */
static int pidfd_proc_pid(int pidfd) {
  char path[64], text[1024], value[24];
  char tail[24] = "/fdinfo/";
  format_decimal(tail + 8, (unsigned)pidfd);
  proc_path(path, -1, tail);
  if (read_file(path, text, sizeof(text)) < 0 || !status_text(text, "Pid", value, sizeof(value))) return -2;
  if (value[0] == '-') return -1;
  const char *p = value;
  long v = parse_decimal(&p);
  return v < 0 ? -2 : (int)v;
}

/* Appends `v` in hex, at least two digits. */
static size_t format_hex2(char *out, unsigned long v) {
  char digits[16];
  size_t n = 0, len = 0;
  do digits[n++] = "0123456789abcdef"[v & 15]; while (v >>= 4);
  if (n < 2) digits[n++] = '0';
  while (n) out[len++] = digits[--n];
  return len;
}

/* The file `lock` as the kernel names it in a lock line ("maj:min:ino"), into `key` (room for 64). */
static void lock_key(const struct file_info *lock, char *key) {
  /* The kernel's dev_t from user space's encoding. */
  unsigned long major = (lock->dev >> 8) & 0xfff, minor = (lock->dev & 0xff) | ((lock->dev >> 12) & 0xfff00);
  size_t k = format_hex2(key, major);
  key[k++] = ':';
  k += format_hex2(key + k, minor);
  key[k++] = ':';
  k += format_decimal(key + k, lock->ino);
  key[k] = '\0';
}

/*
 * Whether descriptor `fd_name` of process `pid` (a pid of this /proc) holds an exclusive flock on the file whose
 * key is `key`: its /proc fdinfo has a line "lock:\t1: FLOCK  ADVISORY  WRITE <pid> <key> 0 EOF". The kernel
 * lists there the locks of that descriptor's open file description only, granted ones only, whoever took them:
 * the answer costs the same however many locks other users hold (the system-wide /proc/locks is built in
 * quadratic time, and any user can make it long).
 */
static int fd_holds_flock(int pid, const char *fd_name, const char *key) {
  char path[64], text[1024];
  char tail[40] = "/fdinfo/";
  size_t n = strlen(fd_name);
  if (n > 20) return 0;
  memcpy(tail + 8, fd_name, n + 1);
  proc_path(path, pid, tail);
  if (read_file(path, text, sizeof(text)) < 0) return 0;
  for (char *line = text; *line;) {
    char *end = line;
    while (*end && *end != '\n') end++;
    char saved = *end;
    *end = '\0';
    if (!strncmp(line, "lock:", 5)) {
      const char *words[8];
      int count = 0;
      for (char *p = line + 5; *p && count < 8;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        words[count++] = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        if (*p) *p++ = '\0';
      }
      if (count >= 6 && !strcmp(words[1], "FLOCK") && !strcmp(words[3], "WRITE") && !strcmp(words[5], key)) return 1;
    }
    *end = saved;
    line = *end ? end + 1 : end;
  }
  return 0;
}

/* The descriptor a server holds its lock on when a launcher started it (the one the launcher hands over). */
#define SERVER_LOCK_FD "3"

/*
 * Whether process `pid` (a pid of this /proc) holds the exclusive flock on the file `lock` through any of its
 * descriptors: SERVER_LOCK_FD first, where every server a launcher started holds it, then the others in the
 * order the kernel lists them (a server started by hand or by systemd took its lock early: a low number).
 */
static int holds_flock(int pid, const struct file_info *lock) {
  char key[64];
  lock_key(lock, key);
  if (fd_holds_flock(pid, SERVER_LOCK_FD, key)) return 1;
  char path[64];
  proc_path(path, pid, "/fdinfo");
  int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return 0;
  int found = 0, looked = 0;
  char entries[4096];
  for (long got; !found && looked < 65536 && (got = getdents64(dir, entries, sizeof(entries))) > 0;) {
    /* struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, char name[] */
    for (long at = 0; at < got && !found; looked++) {
      unsigned short reclen;
      memcpy(&reclen, entries + at + 16, sizeof(reclen));
      const char *name = entries + at + 19;
      if (name[0] >= '0' && name[0] <= '9' && strcmp(name, SERVER_LOCK_FD)) found = fd_holds_flock(pid, name, key);
      if (!reclen) break;
      at += reclen;
    }
  }
  close(dir);
  return found;
}

/*
 * The pid the server's lock file names as its server ("<attempts> <since> <pid>": the launcher's record of
 * starts, and the server's pid, written by the process that becomes the server before it runs, and again by the
 * server once it started well), or 0. Only a hint: any uid-0 process can write that file; the pid is believed
 * once it passes server_refusal.
 */
static int recorded_server_pid(int lock) {
  char text[64] = "";
  ssize_t n = pread(lock, text, sizeof(text) - 1, 0);
  text[n > 0 ? n : 0] = '\0';
  const char *p = text;
  parse_decimal(&p);
  parse_decimal(&p);
  long pid = parse_decimal(&p);
  return pid > 1 && pid < 0x400000 ? (int)pid : 0;
}

/*
 * Why process `pid` (of this /proc) is not a server of the lock file `lock` for this caller (`own`), or NULL when
 * it is: it holds the lock now, and it passes the rule a listener passes (root in our namespaces with exactly our
 * capabilities and confinement). A uid-0 process without capabilities can take the lock and write any pid into
 * the record; it cannot make a process that passes both.
 */
static const char *server_refusal(int pid, const struct file_info *lock, const struct facts *own) {
  struct facts f;
  int other_ns;
  if (pid <= 1) return "the lock file names no server";
  if (!read_facts(pid, &f, FACTS_LSM, own)) return "the process the lock file names cannot be read";
  const char *why = facts_refusal(&f, own, 0, &other_ns);
  if (why) return why;
  if (!holds_flock(pid, lock)) return "the process the lock file names does not hold the lock";
  return NULL;
}

/*
 * Why the socket that PID 1 of our pid namespace listens on (connected as `fd`, at `path`) is not tscni's own, or
 * NULL when it is. Socket activation makes PID 1 the listener of every socket unit, so being PID 1 proves
 * nothing about which unit's socket this is: a uid-0 process without capabilities can rename, link or replace
 * entries in the socket's directory, and so put at our path a socket PID 1 made for another service (one it
 * controls). Ours is: the path itself a socket (not a symbolic link to one), bound by PID 1 at exactly this path
 * (getpeername names where the listener bound it, whatever name the caller reached it by: a hard link or a
 * renamed socket of another unit gives that unit's path). A socket PID 1 bound at exactly our path is one a unit
 * names by that path (ListenStream=), and units are written by whoever administers the node, not by a uid-0
 * process without capabilities.
 */
static const char *activation_refusal(int fd, const char *path) {
  struct file_info at;
  if (path_info(path, 0, &at) != 0 || !S_ISSOCK(at.mode)) return "PID 1 listens, but the socket path is not a socket file itself (a link?)";
  struct sockaddr_un peer;
  socklen_t len = sizeof(peer);
  memset(&peer, 0, sizeof(peer));
  size_t want = strlen(path);
  if (getpeername(fd, &peer, &len) != 0 || len <= 2 || len > sizeof(peer)) return "the name PID 1's socket was bound to cannot be read";
  size_t got = len - 2;
  while (got > 0 && peer.sun_path[got - 1] == '\0') got--;
  if (got != want || memcmp(peer.sun_path, path, want)) return "PID 1's socket was made for another path (another unit's socket)";
  return NULL;
}

/* Nanoseconds of a clock. */
static long long clock_ns(int clock) {
  struct timespec t = {0, 0};
  clock_gettime(clock, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The listener's pid in this /proc once it is trusted (for the words of a later error), else 0. */
static int listener_pid;

/*
 * Why the listener on connected socket `fd` (at `path`) is not to be sent anything, or NULL when it is trusted
 * (see the header comment).
 */
static const char *listener_refusal(int fd, const char *path) {
  static char why[600];
  struct facts own, l;
  if (!read_facts(-1, &own, FACTS_LSM, NULL)) return "this caller's /proc/self/status cannot be read";
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return "the listener's credentials cannot be read";
  if (cred.uid != 0) return "the listener does not run as root";
  char lock_path[PATH_MAX];
  struct file_info lock;
  if (!join(lock_path, path, ".lock")) return "the lock's path is too long";
  int lock_ok = path_info(lock_path, 0, &lock) == 0 && S_ISREG(lock.mode) && lock.uid == 0;

  int pidfd = -1;
  len = sizeof(pidfd);
  int have_pidfd = getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0;
  int pid;
  if (have_pidfd) {
    pid = pidfd_proc_pid(pidfd);
    if (pid == 0) {
      close(pidfd);
      return "the listener is not visible in this caller's /proc";
    }
    if (pid < 0) {
      close(pidfd);
      return "the listener left";
    }
  } else {
    if (own.nspid_fields != 1) return "this caller's /proc is not its own pid namespace's, and the kernel names no listener by pidfd";
    pid = cred.pid;
    if (pid <= 0) return "the listener is not visible in this caller's pid namespace";
  }
  const char *refusal = NULL;
  int init = pid == 1 && own.nspid_fields == 1;
  int other_ns = -1;
  if (!read_facts(pid, &l, FACTS_LSM | (have_pidfd ? 0 : FACTS_START), &own)) refusal = "the listener's process cannot be read";
  else refusal = facts_refusal(&l, &own, init, &other_ns);
  /*
   * The server's thread enters a container's network namespace for a moment (a sysctl, a netlink socket made
   * there: sys/thread-netns.ts) and its /proc entry says so meanwhile. Looked at again for up to ~50 ms: a
   * listener that lives in another network namespace is refused still; one passing through is taken.
   */
  for (int again = 0; refusal && again < 25 && other_ns == NS_NET; again++) {
    poll(NULL, 0, 2);
    other_ns = -1;
    if (!read_facts(pid, &l, FACTS_LSM | (have_pidfd ? 0 : FACTS_START), &own)) refusal = "the listener's process cannot be read";
    else refusal = facts_refusal(&l, &own, init, &other_ns);
  }
  if (!refusal && !init) {
    if (!lock_ok) refusal = "the server's lock file is missing or not a plain file of root's";
    else if (!holds_flock(pid, &lock)) refusal = "the listener does not hold the server's lock";
  }
  if (!refusal && init) refusal = activation_refusal(fd, path);
  if (!refusal && !have_pidfd) {
    /* Without a pidfd the pid must have named the listener throughout: it started before the socket was made,
       and it is the same process after the reads (start time). */
    struct file_info sock;
    struct facts again;
    long long boot_wall = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME);
    long long started = boot_wall + l.start_ticks * 10000000LL; /* USER_HZ is 100 */
    if (l.start_ticks < 0 || path_info(path, 0, &sock) != 0) refusal = "the listener's start cannot be told";
    else if (started > sock.mtime_ns + 10000000LL) refusal = "the listener started after its socket was made";
    else if (!read_facts(pid, &again, FACTS_START, &own) || again.start_ticks != l.start_ticks) refusal = "the listener left while it was checked";
  }
  if (have_pidfd) {
    if (!refusal && pidfd_proc_pid(pidfd) != pid) refusal = "the listener left while it was checked";
    close(pidfd);
  }
  if (!refusal) {
    listener_pid = pid;
    return NULL;
  }
  /* "<why> (pid N)" */
  size_t n = strlen(refusal);
  if (n > sizeof(why) - 20) n = sizeof(why) - 20;
  memcpy(why, refusal, n);
  memcpy(why + n, " (pid ", 6);
  n += 6;
  n += format_decimal(why + n, (unsigned)pid);
  why[n++] = ')';
  why[n] = '\0';
  return why;
}
