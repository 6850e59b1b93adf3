/*
 * tscni launcher: the multicall executable that dist/bin/<type> links to. A runtime probes every plugin with
 * VERSION on every command, so that answer (and the about text printed when CNI_COMMAND is unset) comes from
 * here, without starting a JavaScript engine. Any other plugin call goes to a resident tscni server when one of
 * this same build answers on its socket (TSCNI_RESIDENT_SOCKET, default /run/tscni/plugins.sock) and the listener
 * is provably that server (listener.h: the server's own peer rule turned around, and its lock; nothing, not even
 * the hello, goes to any other listener, and the server's log says why): a short connect, a hello, and only if the
 * server says it will run the call is the call sent (protocol: src/invoke/resident-protocol.ts). No server, a refused or
 * untrusted one, or a call the server hands back: the JavaScript program (tscni-js, next to this file) is exec'd
 * with argv[0] kept, exactly as without a server; when no server listens at all, one is started in the background
 * for the calls that follow (start_server). Once a call has been sent it never runs a second time: a server that
 * dies during it, or does not answer within the call's time limit and a margin, gives CNI error 999 naming the
 * server and its log.
 * The version table and the build ID are generated from src/plugins/catalog.ts at build time.
 * Built without a C library where sys-nolibc.h covers the architecture (it says why), else against libc.
 */
#if defined(TSCNI_NOLIBC)
#include "sys-nolibc.h"
#else
#include "sys-libc.h"
#endif

#include <stdarg.h> /* a compiler header: there with or without a C library */

#include "versions.h" /* PROGRAM_VERSIONS[] {name, json, about}; BUILD_ID */

/*
 * A plugin of its own, built by scripts/build-plugin.mjs (tscni-build-plugin), has a versions.h that also names its
 * program and says it is not served: its launcher answers VERSION and the about text, and execs every other call
 * (the resident server runs only tscni's own plugins).
 */
#ifndef PROGRAM_FILE
#define PROGRAM_FILE "tscni-js"
#define SERVED 1
#define PROGRAM_MISSING "tscni: this plugin is tscni's launcher, and the program it runs is missing: "
#define PROGRAM_MISSING_HINT \
  "copy the whole plugin directory (tscni, tscni-js and the links), or install with `cnitool install --bin-dir <dir>`"
#endif

#define DEFAULT_SOCKET "/run/tscni/plugins.sock"
#define STDIN_MARK "TSCNI_STDIN_MEMFD="

#if SERVED
/*
 * The build, where a runtime finds it in this file without running it: tscni's pod manager of the same build sends
 * a call for this program to the server itself, as this launcher would (src/runtime/resident-exec.ts).
 */
__attribute__((used)) static const char BUILD_ID_MARK[] = "\ntscni-build-id:" BUILD_ID "\n";
#endif

static char **environment; /* main's third argument */

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static const char *env_value(const char *name) {
  size_t n = strlen(name);
  for (char **e = environment; *e; e++) {
    if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
  }
  return NULL;
}

/* All of `buf` to `fd`; through send(MSG_NOSIGNAL) for a socket, so a server that went away is an error, not SIGPIPE. */
static int put_all(int fd, const void *buf, size_t n, int socket) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = socket ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w == 0) errno = EIO;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int write_all(int fd, const void *buf, size_t n) {
  return put_all(fd, buf, n, 0);
}

static int send_all(int fd, const void *buf, size_t n) {
  return put_all(fd, buf, n, 1);
}

static int write_text(int fd, const char *s) {
  return write_all(fd, s, strlen(s));
}

static int read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* What `fd` gives up to its end or until `buf` is full; -1 on a read error. */
static ssize_t read_some(int fd, char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

static void put_u32(unsigned char *b, uint32_t v) {
  b[0] = v & 0xff; b[1] = (v >> 8) & 0xff; b[2] = (v >> 16) & 0xff; b[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* A growable buffer in its own mapping (no allocator needed). data is NULL once memory ran out. */
struct buf {
  unsigned char *data;
  size_t len, cap;
};

static struct buf buf_new(size_t cap) {
  void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  struct buf b = {p == MAP_FAILED ? NULL : p, 0, cap};
  return b;
}

/* Room for `more` bytes; 0 (and the buffer gone, data NULL) when memory runs out. */
static int reserve(struct buf *b, size_t more) {
  if (!b->data) return 0;
  if (b->len + more <= b->cap) return 1;
  size_t cap = b->cap;
  while (b->len + more > cap) cap *= 2;
  void *grown = mremap(b->data, b->cap, cap, MREMAP_MAYMOVE);
  if (grown == MAP_FAILED) {
    munmap(b->data, b->cap);
    b->data = NULL;
    return 0;
  }
  b->data = grown;
  b->cap = cap;
  return 1;
}

static void put_bytes(struct buf *b, const void *data, size_t len) {
  if (!reserve(b, len)) return;
  if (len) memcpy(b->data + b->len, data, len);
  b->len += len;
}

static void put_text(struct buf *b, const char *s) {
  put_bytes(b, s, strlen(s));
}

static void put_field(struct buf *b, char tag, const void *data, size_t len) {
  unsigned char head[5] = {(unsigned char)tag};
  put_u32(head + 1, (uint32_t)len);
  put_bytes(b, head, 5);
  put_bytes(b, data, len);
}

/*
 * Appends what `fd` gives up to its end; -1 on a read error (errno set), or when memory ran out (data NULL). A
 * non-blocking descriptor (the caller's flag, shared with us) is waited on, as Go's os.Stdin waits.
 */
static int append_fd(struct buf *b, int fd) {
  for (;;) {
    if (!reserve(b, 4096)) return -1;
    ssize_t r = read(fd, b->data + b->len, b->cap - b->len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      if (poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
      return -1;
    }
    if (r < 0) return -1;
    if (r == 0) return 0;
    b->len += (size_t)r;
  }
}

/* `v` in decimal into `out` (room for 11 bytes for a 32-bit value, 21 for any), NUL-terminated; gives the length. */
static size_t format_decimal(char *out, unsigned long long v) {
  char digits[20];
  size_t n = 0, len = 0;
  do digits[n++] = (char)('0' + v % 10); while (v /= 10);
  while (n) out[len++] = digits[--n];
  out[len] = '\0';
  return len;
}

/* errno's text as Go's syscall package words it, so a read error reads like the Go plugin's. */
static const char *error_text(int e) {
  switch (e) {
  case 1: return "operation not permitted";
  case 2: return "no such file or directory";
  case 5: return "input/output error";
  case 7: return "argument list too long";
  case 8: return "exec format error";
  case 9: return "bad file descriptor";
  case 11: return "resource temporarily unavailable";
  case 12: return "cannot allocate memory";
  case 13: return "permission denied";
  case 14: return "bad address";
  case 20: return "not a directory";
  case 21: return "is a directory";
  case 22: return "invalid argument";
  case 23: return "too many open files in system";
  case 24: return "too many open files";
  case 26: return "text file busy";
  case 32: return "broken pipe";
  case 36: return "file name too long";
  case 40: return "too many levels of symbolic links";
  default: {
    static char text[20] = "errno ";
    format_decimal(text + 6, (unsigned)e);
    return text;
  }
  }
}

/* The length of the valid UTF-8 sequence at `p` (Go's utf8.DecodeRune: no overlong forms, no surrogates, at most
   U+10FFFF), or 0 when none starts there. */
static size_t utf8_length(const unsigned char *p) {
  unsigned char c = p[0], lo = 0x80, hi = 0xbf;
  size_t n;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3;
  else if (c >= 0xf0 && c <= 0xf4) n = 4;
  else return 0;
  if (c == 0xe0) lo = 0xa0;
  else if (c == 0xed) hi = 0x9f;
  else if (c == 0xf0) lo = 0x90;
  else if (c == 0xf4) hi = 0x8f;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; i++) if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  return n;
}

/* `s` as the inside of a JSON string, escaped as Go's encoder does (HTML characters too; \b and \f as Go >= 1.22). */
static void put_json_text(struct buf *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      char e[2] = {'\\', (char)*p};
      put_bytes(b, e, 2);
    } else if (*p == '\n') {
      put_text(b, "\\n");
    } else if (*p == '\r') {
      put_text(b, "\\r");
    } else if (*p == '\t') {
      put_text(b, "\\t");
    } else if (*p == '\b') {
      put_text(b, "\\b");
    } else if (*p == '\f') {
      put_text(b, "\\f");
    } else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') {
      char e[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
      put_bytes(b, e, 6);
    } else if (*p < 0x80) {
      put_bytes(b, p, 1);
    } else {
      size_t n = utf8_length(p);
      if (n == 0) {
        put_text(b, "\\ufffd"); /* a byte that starts no valid sequence, as Go's encoder writes it */
      } else if (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
        put_text(b, p[2] == 0xa8 ? "\\u2028" : "\\u2029");
      } else {
        put_bytes(b, p, n);
      }
      p += n ? n - 1 : 0;
    }
  }
}

/* A CNI error document on stdout, as a Go plugin prints it, and exit 1. The message is `parts` joined, up to NULL. */
static __attribute__((noreturn)) void die_cni(unsigned code, const char *part, ...) {
  struct buf doc = buf_new(4096);
  char number[12];
  put_text(&doc, "{\n    \"code\": ");
  put_bytes(&doc, number, format_decimal(number, code));
  put_text(&doc, ",\n    \"msg\": \"");
  va_list parts;
  va_start(parts, part);
  for (; part; part = va_arg(parts, const char *)) put_json_text(&doc, part);
  va_end(parts);
  put_text(&doc, "\"\n}");
  if (doc.data) write_all(1, doc.data, doc.len);
  _exit(1);
}

/* TSCNI_STDIN_MEMFD is set by this launcher for its program only: one in the caller's environment is dropped. */
static int is_stdin_mark(const char *e) {
  return !strncmp(e, STDIN_MARK, sizeof(STDIN_MARK) - 1);
}

/*
 * What the plugins read besides CNI_*: tools' PATH, tscni's own switches, the system bus (firewalld), the runtime
 * directory (dnsname's files live under it, as Go's dnsname puts them), and the caller's trace context (W3C, as
 * upstream libcni passes it), verbatim as an exec would see it.
 */
static int forwarded(const char *e) {
  if (is_stdin_mark(e)) return 0;
  return !strncmp(e, "CNI_", 4) || !strncmp(e, "PATH=", 5) || !strncmp(e, "TSCNI_", 6) || !strncmp(e, "DBUS_SYSTEM_BUS_ADDRESS=", 24)
    || !strncmp(e, "XDG_RUNTIME_DIR=", 16) || !strncmp(e, "TRACEPARENT=", 12) || !strncmp(e, "TRACESTATE=", 11)
    || !strncmp(e, "BAGGAGE=", 8);
}

/*
 * Connects to the server; -1 when there is none, with *absent set when nothing listens there. A listener whose
 * queue of connections is full (a burst of calls: Bun's listen queue holds 512) answers EAGAIN and leaves the
 * socket unconnected: the connect is tried again after pauses growing from 1 to 64 ms, for up to 3 s (a wait for
 * the server is far cheaper than running the call here, which adds a process to the burst), and an unconnected
 * socket is never taken for a connection (its peer's credentials would read as nobody's: "not root").
 */
static int connect_server(const char *path, int *absent) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  size_t len = strlen(path);
  *absent = 0;
  if (len >= sizeof(addr.sun_path)) return -1;
  memcpy(addr.sun_path, path, len + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int refused = connect(fd, (void *)&addr, sizeof(addr));
  for (int waited = 0, pause = 1; refused != 0 && errno == EAGAIN && waited < 3000; waited += pause, pause = pause < 64 ? pause * 2 : 64) {
    poll(NULL, 0, pause);
    refused = connect(fd, (void *)&addr, sizeof(addr));
  }
  if (refused != 0) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int err = 0;
    socklen_t err_len = sizeof(err);
    *absent = errno == ENOENT || errno == ECONNREFUSED;
    if (errno != EINPROGRESS || poll(&p, 1, 200) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0 || err != 0) {
      close(fd);
      return -1;
    }
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) & ~O_NONBLOCK);
  return fd;
}

/* TSCNI_DEBUG's words on stderr: why the call is not served, or what the launcher did. */
static void debug(const char *what, const char *path, const char *detail) {
  if (!env_value("TSCNI_DEBUG")) return;
  /* One write: the lines of callers sharing a stderr (a burst's) do not interleave. */
  char line[1024];
  size_t len = 0;
  const char *parts[] = {"tscni launcher: ", path, what, detail, "\n"};
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
    size_t n = strlen(parts[i]);
    if (n > sizeof(line) - 1 - len) n = sizeof(line) - 1 - len;
    memcpy(line + len, parts[i], n);
    len += n;
  }
  if (len > 0 && line[len - 1] != '\n') line[len - 1] = '\n';
  write_all(2, line, len);
}

/*
 * Resident mode, as the caller's TSCNI_RESIDENT or else the operator's file (/etc/tscni/resident, or the file
 * TSCNI_RESIDENT_CONF names) says, in its first word outside comments: "auto" (the default: use a server, start
 * one when none answers), "manual" (use a server, never start one) or "exec" (never use one). Any other word
 * ("off", "disabled", "no", a typo) means exec: an operator who wrote something to turn a root server off gets
 * no server, never one started silently (mode_warning says what was ignored; try_resident reports it). The same
 * rule in TypeScript, for `cnitool daemon status`: src/invoke/resident-mode.ts.
 */
enum { MODE_AUTO, MODE_MANUAL, MODE_EXEC };
#define RESIDENT_CONF "/etc/tscni/resident"
#define MODE_WORDS "auto, manual, exec"

static int mode_word(const char *s, size_t n) {
  if (n == 4 && !strncmp(s, "auto", 4)) return MODE_AUTO;
  if (n == 6 && !strncmp(s, "manual", 6)) return MODE_MANUAL;
  if (n == 4 && !strncmp(s, "exec", 4)) return MODE_EXEC;
  return -1;
}

/* The word that was not a mode and where it came from, when resident_mode fell back to exec for it. */
static char mode_warning[192];

static void note_bad_word(const char *word, size_t n, const char *where) {
  if (n > 48) n = 48;
  const char *parts[] = {"resident mode \"", "", "\" in ", where, " is not one of " MODE_WORDS ": running in exec mode"};
  size_t len = 0;
  for (size_t i = 0; i < 5; i++) {
    size_t k = i == 1 ? n : strlen(parts[i]);
    const char *from = i == 1 ? word : parts[i];
    if (len + k >= sizeof(mode_warning)) k = sizeof(mode_warning) - 1 - len;
    memcpy(mode_warning + len, from, k);
    len += k;
  }
  mode_warning[len] = '\0';
}

static int resident_mode(void) {
  const char *word = env_value("TSCNI_RESIDENT");
  if (word && *word) {
    int mode = mode_word(word, strlen(word));
    if (mode >= 0) return mode;
    note_bad_word(word, strlen(word), "TSCNI_RESIDENT");
    return MODE_EXEC;
  }
  const char *conf = env_value("TSCNI_RESIDENT_CONF");
  const char *file = conf && *conf ? conf : RESIDENT_CONF;
  int fd = open(file, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return MODE_AUTO;
  char text[512];
  ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return MODE_AUTO;
  text[n] = '\0';
  for (char *p = text; *p;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == '#') {
      while (*p && *p != '\n') p++;
      continue;
    }
    if (!*p) break;
    char *end = p;
    while (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != '\r' && *end != '#') end++;
    int mode = mode_word(p, (size_t)(end - p));
    if (mode >= 0) return mode;
    note_bad_word(p, (size_t)(end - p), file);
    return MODE_EXEC;
  }
  return MODE_AUTO;
}

/*
 * A setting for the server a launcher starts (src/invoke/resident-mode.ts has the rule and the file's format): the
 * caller's `env_name` when set, else the value of the operator's file's `key value` line (after the mode's line),
 * into `out`; 0 when neither gives one. The server checks the value (a bad one is logged and not applied).
 */
static int resident_setting(const char *env_name, const char *key, char *out, size_t room) {
  const char *value = env_value(env_name);
  size_t n = 0;
  if (value && *value) {
    n = strlen(value);
    if (n >= room) n = room - 1;
    memcpy(out, value, n);
    out[n] = '\0';
    return 1;
  }
  const char *conf = env_value("TSCNI_RESIDENT_CONF");
  int fd = open(conf && *conf ? conf : RESIDENT_CONF, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  char text[2048];
  ssize_t got = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (got <= 0) return 0;
  text[got] = '\0';
  int seen_mode = 0;
  size_t key_len = strlen(key);
  for (char *line = text; *line;) {
    char *end = line;
    while (*end && *end != '\n') end++;
    char *p = line;
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    if (*p && *p != '#' && p < end) {
      if (!seen_mode) {
        seen_mode = 1;
      } else if (!strncmp(p, key, key_len) && (p[key_len] == ' ' || p[key_len] == '\t')) {
        p += key_len;
        while (*p == ' ' || *p == '\t') p++;
        char *stop = p;
        while (stop < end && *stop != '#' && *stop != '\r') stop++;
        while (stop > p && (stop[-1] == ' ' || stop[-1] == '\t')) stop--;
        n = (size_t)(stop - p);
        if (n == 0 || n >= room) return 0;
        memcpy(out, p, n);
        out[n] = '\0';
        return 1;
      }
    }
    line = *end ? end + 1 : end;
  }
  return 0;
}

/* A hexadecimal field of /proc/self/status ("CapEff:\t000001ff..."), 0 when absent. */
static unsigned long long status_hex(const char *status, const char *field) {
  size_t n = strlen(field);
  for (const char *line = status; *line;) {
    if (!strncmp(line, field, n) && line[n] == ':') {
      const char *p = line + n + 1;
      while (*p == ' ' || *p == '\t') p++;
      unsigned long long v = 0;
      for (;; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0) return v;
        v = v << 4 | (unsigned)d;
      }
    }
    while (*line && *line != '\n') line++;
    if (*line) line++;
  }
  return 0;
}

/*
 * Whether this caller may start a server: root with every capability its bounding set allows (the server it
 * starts gets exactly those, and serves only callers with the same), including CAP_NET_ADMIN and CAP_SYS_ADMIN,
 * and unconfined (no seccomp filter, no no_new_privs: a server inherits both, and would then serve only callers
 * confined alike).
 */
static int has_full_capabilities(void) {
  if (getuid() != 0 || geteuid() != 0) return 0;
  char status[4096];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  ssize_t n = read_some(fd, status, sizeof(status) - 1);
  close(fd);
  if (n <= 0) return 0;
  status[n] = '\0';
  unsigned long long eff = status_hex(status, "CapEff");
  unsigned long long all = status_hex(status, "CapBnd") | status_hex(status, "CapInh");
  const unsigned long long needed = 1ULL << 12 | 1ULL << 21; /* CAP_NET_ADMIN, CAP_SYS_ADMIN */
  return eff == all && (eff & needed) == needed && status_hex(status, "Seccomp") == 0 && status_hex(status, "NoNewPrivs") == 0;
}

/*
 * Whether this caller is in the node's own pid namespace, and with `count` 4 its user, network and mount
 * namespaces too (those of PID 1), where a server it starts serves the node rather than a namespace made for one
 * command (`ip netns exec` makes a mount namespace per command; a child pid namespace may still see the node's
 * /proc, whose pids are not its own). Where PID 1's cannot be read, the kernel's fixed numbers of the initial
 * namespaces tell.
 */
static int in_node_namespaces(int count) {
  static const char *const kinds[] = {"pid", "user", "net", "mnt"};
  static const unsigned long init_ino[] = {0xEFFFFFFCUL, 0xEFFFFFFDUL, 0xEFFFFFF9UL, 0xEFFFFFF8UL};
  for (int i = 0; i < count; i++) {
    char mine[32] = "/proc/self/ns/", init[32] = "/proc/1/ns/";
    memcpy(mine + 14, kinds[i], strlen(kinds[i]) + 1);
    memcpy(init + 11, kinds[i], strlen(kinds[i]) + 1);
    struct file_info a, b;
    if (path_info(mine, 1, &a) != 0) return 0;
    if (path_info(init, 1, &b) == 0 ? a.dev != b.dev || a.ino != b.ino : a.ino != init_ino[i]) return 0;
  }
  return 1;
}

/* Seconds since boot (a clock that does not jump, and starts again with /run's tmpfs). */
static long boot_seconds(void) {
  struct timespec t = {0, 0};
  clock_gettime(CLOCK_BOOTTIME, &t);
  return t.tv_sec;
}

/* A decimal number at the start of `s`, advancing it; -1 when none. */
static long parse_decimal(const char **s) {
  long v = -1;
  while (**s == ' ') (*s)++;
  for (; **s >= '0' && **s <= '9' && v < 100000000000L; (*s)++) v = (v < 0 ? 0 : v * 10) + (**s - '0');
  return v;
}

/*
 * Replaces the start record in the lock file by `record`: written over the old one first, then cut to its length, so a
 * reader never finds it empty (at worst the new record followed by the end of the old one, which it does not read).
 */
static int put_record(int lock, const char *record, size_t len) {
  return pwrite(lock, record, len, 0) == (ssize_t)len && ftruncate(lock, (off_t)len) == 0;
}

/*
 * Whether a start may be tried now, from the record of failed starts the lock file holds ("<attempts> <since>",
 * cleared by a server that started well); when it may, the attempt is recorded. Waits 1, 2, 4 ... up to 300 s
 * after each failed start, so a server that cannot start is not started on every call.
 */
static int may_try_start(int lock) {
  char text[64] = "";
  ssize_t n = pread(lock, text, sizeof(text) - 1, 0);
  text[n > 0 ? n : 0] = '\0';
  const char *p = text;
  long attempts = parse_decimal(&p), since = parse_decimal(&p), now = boot_seconds();
  if (attempts < 0 || since < 0) attempts = 0;
  if (attempts > 0) {
    long wait = attempts > 9 ? 300 : 1L << (attempts - 1);
    if (wait > 300) wait = 300;
    if (now >= since && now < since + wait) return 0;
  }
  char record[40];
  size_t len = format_decimal(record, (unsigned)(attempts + 1));
  record[len++] = ' ';
  len += format_decimal(record + len, (unsigned)now);
  /* this caller, holding the lock, until the server names itself: the calls of a burst meeting the lock wait for it */
  record[len++] = ' ';
  len += format_decimal(record + len, (unsigned)getpid());
  record[len++] = '\n';
  return put_record(lock, record, len);
}

/* Adds `pid` to the start record in the lock file (see recorded_server_pid): the process about to become the server. */
static void record_server_pid(int lock, int pid) {
  char text[64] = "";
  ssize_t n = pread(lock, text, sizeof(text) - 1, 0);
  text[n > 0 ? n : 0] = '\0';
  const char *p = text;
  long attempts = parse_decimal(&p), since = parse_decimal(&p);
  char record[48];
  size_t len = format_decimal(record, (unsigned)(attempts < 0 ? 0 : attempts));
  record[len++] = ' ';
  len += format_decimal(record + len, (unsigned)(since < 0 ? 0 : since));
  record[len++] = ' ';
  len += format_decimal(record + len, (unsigned)pid);
  record[len++] = '\n';
  put_record(lock, record, len);
}

/* `a` then `b` into `out` (room for PATH_MAX); 0 when it does not fit. */
static int join(char *out, const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la + lb + 1 > PATH_MAX) return 0;
  memcpy(out, a, la);
  memcpy(out + la, b, lb + 1);
  return 1;
}

#include "listener.h"

/* Whether the directory of `path` is root's alone: root's, not a link, writable by nobody else. */
static int directory_is_roots(const char *path) {
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path || (size_t)(slash - path) >= sizeof(dir)) return 0;
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = '\0';
  struct file_info d;
  return path_info(dir, 0, &d) == 0 && S_ISDIR(d.mode) && d.uid == 0 && !(d.mode & 022);
}

/* `ns` nanoseconds since the epoch as "YYYY-MM-DDTHH:MM:SS.mmmZ" into `out` (room for 32). */
static void format_utc(char *out, long long ns) {
  long long s = ns / 1000000000LL, days = s / 86400, rem = s % 86400;
  /* days since 1970-01-01 to a civil date (Howard Hinnant's algorithm) */
  long long z = days + 719468, era = z / 146097, doe = z - era * 146097;
  long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, y = yoe + era * 400;
  long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  long long d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) y++;
  long long parts[] = {y, m, d, rem / 3600, rem / 60 % 60, rem % 60, ns / 1000000 % 1000};
  const char seps[] = "--T::.Z";
  size_t len = 0;
  for (int i = 0; i < 7; i++) {
    char digits[12];
    size_t n = format_decimal(digits, (unsigned)parts[i]);
    for (size_t pad = n; pad < (i == 0 ? 4u : i == 6 ? 3u : 2u); pad++) out[len++] = '0';
    memcpy(out + len, digits, n);
    len += n;
    out[len++] = seps[i];
  }
  out[len] = '\0';
}

/* The server's log is kept under this size: past it, it is renamed <socket>.log.1 (one old log kept). */
#define LOG_MAX (1024 * 1024)

/*
 * `s` into `b` as one piece of a log line: at most `max` bytes of it, a control byte, DEL or backslash as \xNN, and
 * "..." when cut. Values a caller supplies (a plugin name, CNI_COMMAND, a container ID) cannot then end the line
 * and forge another that reads as the server's, nor make the log grow by more than their bound per call.
 */
static void put_escaped(struct buf *b, const char *s, size_t max) {
  size_t n = 0;
  for (; *s && n < max; s++, n++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c == 0x7f || c == '\\') {
      char e[4] = {'\\', 'x', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]};
      put_bytes(b, e, 4);
    } else {
      put_bytes(b, &c, 1);
    }
  }
  if (*s) put_text(b, "...");
}

/* Opens the server's log for a line, first renaming it to <log>.1 when it has grown past LOG_MAX; -1 when it cannot. */
static int open_log(const char *log_path) {
  char old_log[PATH_MAX];
  int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  struct file_info g;
  if (fd >= 0 && fd_info(fd, &g) == 0 && g.size > LOG_MAX && join(old_log, log_path, ".1") && rename(log_path, old_log) == 0) {
    close(fd);
    fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  }
  return fd;
}

/*
 * A line in the server's log (<socket>.log, beside the socket, in a directory of root's alone; nothing is written
 * elsewhere): when a listener was not trusted, or a call went unanswered. Never follows a link. With `once`, not
 * when the log's last lines already say `what` (a state every call meets, such as a lock held by a stranger, is
 * logged once, not once per call).
 */
static void launcher_log_line(const char *plugin, const char *path, const char *what, const char *detail, int once) {
  char log_path[PATH_MAX];
  if (!join(log_path, path, ".log") || !directory_is_roots(path)) return;
  int fd = open_log(log_path);
  if (fd < 0) return;
  struct buf line = buf_new(4096);
  if (once && line.data) {
    struct file_info g;
    long from = fd_info(fd, &g) == 0 && g.size > 2048 ? g.size - 2048 : 0;
    ssize_t n = pread(fd, line.data, 2048, from);
    /* (O_APPEND: a write-only descriptor reads nothing; a second, read-only one for the tail) */
    if (n < 0) {
      int r = open(log_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
      n = r >= 0 ? pread(r, line.data, 2048, from) : -1;
      if (r >= 0) close(r);
    }
    line.data[n > 0 ? n : 0] = '\0';
    const char *mark = *what ? what : detail; /* (the fixed words of the line, to find it again) */
    for (char *p = (char *)line.data; n > 0 && *p; p++) {
      if (!strncmp(p, mark, strlen(mark))) {
        close(fd);
        munmap(line.data, line.cap);
        return;
      }
    }
  }
  char when[32], pid[12];
  format_utc(when, clock_ns(CLOCK_REALTIME));
  format_decimal(pid, (unsigned)getpid());
  const char *command = env_value("CNI_COMMAND"), *container = env_value("CNI_CONTAINERID");
  put_text(&line, when);
  put_text(&line, " tscni launcher[");
  put_text(&line, pid);
  put_text(&line, "]: ");
  put_escaped(&line, plugin, 64);
  put_text(&line, " ");
  put_escaped(&line, command ? command : "", 16);
  put_text(&line, " of ");
  put_escaped(&line, container ? container : "-", 128);
  put_text(&line, ": ");
  put_escaped(&line, what, 512);
  put_escaped(&line, detail, 512);
  put_text(&line, "\n");
  if (line.data) {
    write_all(fd, line.data, line.len);
    munmap(line.data, line.cap);
  }
  close(fd);
}

static void launcher_log(const char *plugin, const char *path, const char *what, const char *detail) {
  launcher_log_line(plugin, path, what, detail, 0);
}

static void launcher_log_once(const char *plugin, const char *path, const char *what, const char *detail) {
  launcher_log_line(plugin, path, what, detail, 1);
}

#include "exec-slots.h"

/* FNV-1a, 64 bits, of `s` as 8 hex digits (its low half): the id of a socket in its server's cgroup name. */
static void socket_id(const char *s, char out[9]) {
  unsigned long long h = 0xcbf29ce484222325ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  for (int i = 7; i >= 0; i--, h >>= 4) out[i] = "0123456789abcdef"[h & 15];
  out[8] = '\0';
}

/*
 * Moves this process (the server about to be exec'd) into a cgroup of its own at the top of every cgroup hierarchy
 * mounted — `tscni-resident` for the node's socket, `tscni-resident-<id>` for another — so its memory is not charged
 * to the caller that started it and killing that caller's cgroup does not kill it (src/resident/own-cgroup.ts,
 * which also does this for a server started another way). Not on a systemd host: there the server asks systemd for
 * a scope of its own, systemd's tree being systemd's. A hierarchy that cannot be written is left as it is.
 */
static void move_to_own_cgroup(const char *path) {
  struct file_info sd;
  if (path_info("/run/systemd/system", 1, &sd) == 0 && S_ISDIR(sd.mode)) return;
  char name[64] = "tscni-resident";
  if (strcmp(path, DEFAULT_SOCKET) != 0) {
    memcpy(name + 14, "-", 1);
    socket_id(path, name + 15);
  }
  int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  struct buf info = buf_new(65536);
  int failed = append_fd(&info, fd);
  close(fd);
  if (failed || !reserve(&info, 1)) return;
  info.data[info.len] = '\0';
  char pid[12];
  size_t pid_len = format_decimal(pid, (unsigned)getpid());
  for (char *line = (char *)info.data; *line;) {
    char *end = line;
    while (*end && *end != '\n') end++;
    if (*end) *end++ = '\0';
    /* "<id> <parent> <dev> <root> <mount point> <options> ... - <fstype> <source> <super options>" */
    const char *field[5] = {0};
    char *p = line;
    for (int i = 0; i < 5 && *p; i++) {
      field[i] = p;
      while (*p && *p != ' ') p++;
      if (*p) *p++ = '\0';
    }
    char *dash = p;
    while (*dash && strncmp(dash, "- ", 2) != 0) {
      while (*dash && *dash != ' ') dash++;
      while (*dash == ' ') dash++;
    }
    line = end;
    if (!field[4] || !*dash || strcmp(field[3], "/") != 0) continue;
    char *fstype = dash + 2, *rest = fstype;
    while (*rest && *rest != ' ') rest++;
    if (*rest) *rest++ = '\0';
    if (strcmp(fstype, "cgroup") != 0 && strcmp(fstype, "cgroup2") != 0) continue;
    while (*rest && *rest != ' ') rest++; /* the source */
    while (*rest == ' ') rest++;
    int cpuset = 0;
    for (const char *o = rest; *o;) {
      if (!strncmp(o, "cpuset", 6) && (o[6] == ',' || o[6] == '\0' || o[6] == ' ')) cpuset = 1;
      while (*o && *o != ',') o++;
      if (*o) o++;
    }
    char dir[PATH_MAX], file[PATH_MAX], slash_name[80] = "/";
    memcpy(slash_name + 1, name, strlen(name) + 1);
    if (!join(dir, field[4], slash_name)) continue;
    mkdir(dir, 0755);
    if (cpuset) {
      /* a new v1 cpuset cgroup has no CPUs or memory nodes until given its parent's */
      static const char *const files[] = {"/cpuset.cpus", "/cpuset.mems"};
      for (int i = 0; i < 2; i++) {
        char from[PATH_MAX], value[512];
        if (!join(from, field[4], files[i]) || !join(file, dir, files[i])) continue;
        ssize_t have = read_file(file, value, sizeof(value));
        if (have > 1) continue;
        ssize_t n = read_file(from, value, sizeof(value));
        int out = open(file, O_WRONLY | O_CLOEXEC, 0);
        if (n > 0 && out >= 0) write_all(out, value, (size_t)n);
        if (out >= 0) close(out);
      }
    }
    if (!join(file, dir, "/cgroup.procs")) continue;
    int procs = open(file, O_WRONLY | O_CLOEXEC, 0);
    if (procs >= 0) {
      write_all(procs, pid, pid_len);
      close(procs);
    }
  }
  munmap(info.data, info.cap);
}

/*
 * Starts a server on `path` in the background, when this caller may (mode auto, root with its full capabilities,
 * unconfined, in the node's pid namespace, and in its other namespaces unless it named the socket itself: the
 * node's socket is shared by every namespace, one a caller names is its own), the socket's directory is root's alone, no server holds the socket's lock and no
 * recent start failed. One server per socket however many callers race: the lock is taken here and handed to the
 * server (its descriptor 3), which holds it as long as it lives. The server is detached: its own session, the
 * caller's descriptors closed (a runtime reading this call's stdout never waits for it), "/" as its directory,
 * its output in `<path>.log`, in a cgroup of its own (move_to_own_cgroup). This call then runs as in exec mode. Returns 1 when another caller holds the lock
 * (a server is starting: this caller may wait for it), else 0.
 */
static int start_server(const char *plugin, const char *path, int named, const char *program) {
  if (!has_full_capabilities()) {
    debug(": no server answered, none started: this caller is not root with every capability, unconfined", path, "");
    return 0;
  }
  if (!in_node_namespaces(named ? 1 : 4)) {
    debug(named ? ": no server answered, none started: this caller is not in the node's pid namespace"
                : ": no server answered, none started: this caller is not in the node's namespaces (pid, user, network, mount)",
          path, "");
    return 0;
  }
  /* Nor from a pid namespace whose init is this very call, or whose /proc is not its own (pids there are not ours). */
  struct facts self;
  if (getpid() == 1 || !read_facts(-1, &self, FACTS_LSM, NULL) || self.nspid_fields != 1) {
    debug(": no server answered, none started: this caller is PID 1 of its pid namespace, or its /proc is another namespace's", path, "");
    return 0;
  }
  char dir[PATH_MAX], lock_path[PATH_MAX], log_path[PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path || (size_t)(slash - path) >= sizeof(dir)) return 0;
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = '\0';
  if (!join(lock_path, path, ".lock") || !join(log_path, path, ".log")) return 0;
  mkdir(dir, 0700);
  if (!directory_is_roots(path)) {
    debug(": no server started: its directory is not root's alone", path, "");
    return 0;
  }
  int lock = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  struct file_info l;
  if (lock < 0) return 0;
  if (fd_info(lock, &l) != 0 || !S_ISREG(l.mode) || l.uid != 0) {
    close(lock);
    return 0;
  }
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    /*
     * Held: a server another call started, which this call may wait for (await_server), when the pid the record
     * names is provably one; otherwise a process that is no server holds the lock, and waiting for it would only
     * make every call slower by the wait: this call runs itself at once (and the log says so, once).
     */
    int pid = recorded_server_pid(lock);
    /* A starter writes its record just after it takes the lock (may_try_start): a burst's calls meet the lock
       in between often enough (1 in 3 cold bursts of 100 ran a call itself), so an empty record is read again
       for up to ~10 ms before it counts as a stranger's. */
    for (int i = 0; pid == 0 && i < 10; i++) {
      poll(NULL, 0, 1);
      pid = recorded_server_pid(lock);
    }
    const char *why = server_refusal(pid, &l, &self);
    close(lock);
    if (!why) return 1;
    launcher_log_once(plugin, path, "the socket's lock is held by a process that is not a tscni server; calls run themselves: ", why);
    debug(": its lock is held by a process that is not a tscni server, no server started: ", path, why);
    return 0;
  }
  if (!may_try_start(lock)) {
    close(lock);
    debug(": no server answered, none started: a recent start failed (its .log says why; the next try waits longer)", path, "");
    return 0;
  }
  int log = open_log(log_path);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC, 0);
  if (log < 0) log = null;

  char idle[12] = "600";
  const char *asked = env_value("TSCNI_RESIDENT_IDLE");
  if (asked) {
    const char *p = asked;
    long seconds = parse_decimal(&p);
    if (seconds >= 0 && !*p && seconds <= 999999999) format_decimal(idle, (unsigned)seconds);
  }
  /* Who started it, for the operator reading its log: "<plugin> <command> (pid N, parent M)". */
  char by[160], pid[12], ppid[12];
  format_decimal(pid, (unsigned)getpid());
  format_decimal(ppid, (unsigned)getppid());
  const char *command = env_value("CNI_COMMAND");
  const char *parts[] = {plugin, " ", command ? command : "", " (pid ", pid, ", parent ", ppid, ")"};
  size_t by_len = 0;
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
    size_t n = strlen(parts[i]);
    if (by_len + n >= sizeof(by)) break;
    memcpy(by + by_len, parts[i], n);
    by_len += n;
  }
  by[by_len] = '\0';
  char *argv[16] = {"cnitool", "daemon", "--auto-started", by, "--socket", (char *)path, "--lock-fd", "3", "--idle", idle, NULL};
  int argc = 10;
  char repair[8], memory_max[32];
  if (resident_setting("TSCNI_RESIDENT_REPAIR", "repair", repair, sizeof(repair)) && !strcmp(repair, "off")) argv[argc++] = "--no-repair";
  if (resident_setting("TSCNI_RESIDENT_MEMORY_MAX", "memory-max", memory_max, sizeof(memory_max))) {
    argv[argc++] = "--memory-max";
    argv[argc++] = memory_max;
  }
  argv[argc] = NULL;
  char *const envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};

  int child = fork();
  if (child == 0) {
    setsid();
    if (fork() != 0) _exit(0); /* the server is not this caller's child: nobody has to reap it */
    /* Above 9 first: a caller with a closed stdout or stderr may have given one of 0-3 to the lock or the log. */
    int null_high = fcntl(null, F_DUPFD, 10), log_high = fcntl(log, F_DUPFD, 10), lock_high = fcntl(lock, F_DUPFD, 10);
    if (null < 0 || null_high < 0 || log_high < 0 || lock_high < 0) _exit(127);
    if (dup2(null_high, 0) < 0 || dup2(log_high, 1) < 0 || dup2(log_high, 2) < 0 || dup2(lock_high, 3) < 0) _exit(127);
    close_from(4);
    record_server_pid(3, getpid()); /* (the server keeps this pid: execve does not change it) */
    if (chdir("/") != 0) _exit(127);
    move_to_own_cgroup(path);
    umask(022);
    unblock_signals();
    execve(program, argv, envp);
    _exit(127);
  }
  if (child > 0) waitpid(child, NULL, 0);
  for (int i = 0; child > 0 && i < 200 && recorded_server_pid(lock) == getpid(); i++) poll(NULL, 0, 1);
  close(lock);
  if (log != null) close(log);
  if (null >= 0) close(null);
  debug(": no server answered; one is starting, its log in ", path, log_path);
  return 0;
}

/*
 * Waits up to 5 s for a server that another caller is starting, trying to connect every 5 to 20 ms, as long as
 * someone holds the socket's lock (a server that fails to start lets it go at once); the connection, or -1. Calls
 * of a burst that started a server are then served by it, rather than each starting the program itself: on a
 * loaded node a server can take more than a second to listen, and a caller that gives up adds one more program
 * to the load that slows it (a burst of 100 on 2 cores then ran 83 of its calls itself).
 */
static int await_server(const char *path) {
  char lock_path[PATH_MAX];
  if (!join(lock_path, path, ".lock")) return -1;
  for (long long end = clock_ns(CLOCK_BOOTTIME) + 5000000000LL, pause = 5; clock_ns(CLOCK_BOOTTIME) < end; pause = pause < 20 ? pause + 5 : 20) {
    poll(NULL, 0, (int)pause);
    int absent;
    int fd = connect_server(path, &absent);
    if (fd >= 0 || !absent) return fd;
    int lock = open(lock_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    int free = lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0;
    if (lock >= 0) close(lock);
    if (lock < 0 || free) return -1; /* nobody is starting one */
  }
  return -1;
}

/* How long past the call's time limit the launcher waits for the server's answer. */
#define REPLY_MARGIN_MS 10000

/*
 * STATUS is what runtimes poll (CRI-O every 5 s), so it is bounded on its own: the server's hello within 2 s, or the
 * call runs here (STATUS may run twice: it changes nothing an ADD relies on); its answer within 10 s, or it fails
 * with code 50 naming the server, since the ADDs that server takes would wait for it as long.
 */
#define STATUS_HELLO_MS 2000
#define STATUS_REPLY_MS 10000

/*
 * Bounds the next reads on `fd` by `deadline` (CLOCK_BOOTTIME ns): each read then waits at most the time left now.
 * Set once per reply frame (two system calls), not per read. 0, or -2 when the deadline has passed.
 */
static int bound_reads(int fd, long long deadline) {
  long long left = deadline - clock_ns(CLOCK_BOOTTIME);
  if (left <= 0) return -2;
  struct timeval tv = {.tv_sec = left / 1000000000LL, .tv_usec = (left % 1000000000LL) / 1000};
  if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1; /* (zero would mean no bound at all) */
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return 0;
}

/* Exactly `n` bytes within the bound set by bound_reads: 0, -1 when the connection ended or failed, -2 at the bound. */
static int read_bounded(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN) return -2;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* The server took the call and did not answer in time: a CNI error naming it and its log (and a line there). */
static __attribute__((noreturn)) void unanswered(const char *plugin, const char *path, uint32_t limit_ms) {
  char pid[12], seconds[12], log_path[PATH_MAX];
  format_decimal(pid, (unsigned)listener_pid);
  format_decimal(seconds, (limit_ms + REPLY_MARGIN_MS) / 1000);
  if (!join(log_path, path, ".log")) log_path[0] = '\0';
  launcher_log(plugin, path, "the server did not answer the call in time, gave up after ", seconds);
  die_cni(999, "tscni resident server (pid ", pid, ", log ", log_path, ") did not answer the call within ", seconds,
          " s; it may still be running there", NULL);
}

/* The server took a STATUS call and did not answer within STATUS_REPLY_MS: code 50 naming it and its log. */
static __attribute__((noreturn)) void status_unanswered(const char *plugin, const char *path) {
  char pid[12], seconds[12], log_path[PATH_MAX];
  format_decimal(pid, (unsigned)listener_pid);
  format_decimal(seconds, STATUS_REPLY_MS / 1000);
  if (!join(log_path, path, ".log")) log_path[0] = '\0';
  launcher_log(plugin, path, "the server took a STATUS call and did not answer it, gave up after ", seconds);
  die_cni(50, "tscni resident server (pid ", pid, ", log ", log_path, ") took the STATUS call and did not answer it within ", seconds,
          " s: the ADD calls it takes would wait for it too", NULL);
}

/* This process's umask (from its /proc status, as the listener's check read it; a umask(2) pair would change it for a moment). */
static unsigned caller_umask(void) {
  if (own_umask >= 0) return (unsigned)own_umask;
  unsigned mask = umask(022);
  umask(mask);
  return mask;
}

/* The server's socket: TSCNI_RESIDENT_SOCKET (empty: none), else the node's. */
static const char *resident_socket(void) {
  const char *path = env_value("TSCNI_RESIDENT_SOCKET");
  return path ? path : DEFAULT_SOCKET;
}

/*
 * Runs the call through the resident server and exits with its status; returns when the plugin must be exec'd
 * (no server, or one that says so). `config` is what the caller gave on stdin; `program` is tscni-js.
 */
static void try_resident(const char *name, int argc, char **argv, const struct buf *config, const char *program) {
  int mode = resident_mode();
  const char *command = env_value("CNI_COMMAND");
  int status_call = command && !strcmp(command, "STATUS");
  const char *path = resident_socket();
  int named = env_value("TSCNI_RESIDENT_SOCKET") != NULL;
  if (mode_warning[0]) {
    debug(": ", path, mode_warning);
    if (*path) launcher_log_once(name, path, "", mode_warning);
  }
  if (mode == MODE_EXEC) return;
  if (!*path) return;
  /* The server resolves the call's relative paths against this directory: without one, the call runs here. */
  char cwd[4096];
  if (!getcwd(cwd, sizeof(cwd))) return;
  int absent;
  int fd = connect_server(path, &absent);
  if (fd < 0 && absent && mode == MODE_AUTO && start_server(name, path, named, program)) {
    fd = await_server(path);
    if (fd < 0) debug(": the server another call is starting did not answer in time", path, "");
  }
  if (fd < 0) {
    if (!absent) debug(": the server's socket did not take the connection", path, "");
    else if (mode == MODE_MANUAL) debug(": no server answered (mode manual starts none)", path, "");
    return;
  }
  /* Nothing of the call, not even the hello, goes to a listener that is not provably the server. */
  const char *untrusted = listener_refusal(fd, path);
  if (untrusted) {
    debug(": not used: ", path, untrusted);
    launcher_log(name, path, "not using the listener on the server's socket, running the call itself: ", untrusted);
    close(fd);
    return;
  }

  /* The request is made first: the hello announces its size, so the server can refuse it before it is sent. */
  struct buf req = buf_new(65536 + config->len);
  put_field(&req, 'P', name, strlen(name));
  for (int i = 1; i < argc; i++) put_field(&req, 'A', argv[i], strlen(argv[i]));
  for (char **e = environment; *e; e++) if (forwarded(*e)) put_field(&req, 'E', *e, strlen(*e));
  put_field(&req, 'C', cwd, strlen(cwd));
  unsigned char mask[4];
  put_u32(mask, caller_umask());
  put_field(&req, 'U', mask, 4);
  put_field(&req, 'I', config->data, config->len);
  put_field(&req, 'Z', "", 0);
  if (!req.data || req.len > 0xffffffffUL) {
    close(fd);
    return;
  }

  /*
   * Hello, and the server's answer within 60 s; anything but "Y" means: run it yourself. Generous: a server
   * swamped by a burst of calls answers late (2,000 calls at once on 2 cores: 10 s was not enough for a quarter
   * of them), and callers that give up on it add plugin processes to the load; a server that is not there is
   * refused at connect, at once. Sending is bounded alike. A STATUS call waits STATUS_HELLO_MS, then runs here.
   */
  struct timeval tv = {.tv_sec = status_call ? STATUS_HELLO_MS / 1000 : 60};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  unsigned char hello[12 + sizeof(BUILD_ID)];
  size_t id_len = strlen(BUILD_ID);
  memcpy(hello, "TSCNI\x02", 6);
  hello[6] = id_len & 0xff;
  hello[7] = (id_len >> 8) & 0xff;
  memcpy(hello + 8, BUILD_ID, id_len);
  put_u32(hello + 8 + id_len, (uint32_t)req.len);
  unsigned char answer = 0;
  errno = 0;
  if (send_all(fd, hello, 12 + id_len) || read_all(fd, &answer, 1) || answer != 'Y') {
    int timed_out = !answer && errno == EAGAIN; /* (SO_RCVTIMEO; EWOULDBLOCK is EAGAIN on Linux) */
    if (answer != 'N') debug(": the server did not answer the hello: ", path, answer ? "not Y" : errno ? error_text(errno) : "it closed the connection");
    if (status_call && timed_out) {
      launcher_log(name, path, "the server did not answer a STATUS call's hello within 2 s (a server that hangs?), ran it itself", "");
    }
    if (answer == 'N' && env_value("TSCNI_DEBUG")) {
      unsigned char l[2];
      char reason[256] = "";
      if (!read_all(fd, l, 2)) read_all(fd, reason, (l[0] | l[1] << 8) < 255 ? (size_t)(l[0] | l[1] << 8) : 255);
      debug(" refused: ", path, reason);
    }
    close(fd);
    return;
  }
  unsigned char limit[4];
  if (read_all(fd, limit, 4)) {
    close(fd);
    return;
  }
  /* The call's time limit as the server says it, and a margin: no answer by then is a server that hangs. */
  long long wait_ms = status_call ? STATUS_REPLY_MS : (long long)get_u32(limit) + REPLY_MARGIN_MS;
  long long deadline = clock_ns(CLOCK_BOOTTIME) + wait_ms * 1000000LL;

  /* From here on the call belongs to the server: it is never run a second time. One write: one wake-up. */
  if (send_all(fd, req.data, req.len)) die_cni(999, "tscni resident server closed the connection while the call was sent: ", path, NULL);

  /* The reply's frames, each into the same buffer and out to stdout or stderr as it comes. */
  req.len = 0;
  int replied = 0;
  for (;;) {
    unsigned char head[5];
    int r = bound_reads(fd, deadline);
    if (!r) r = read_bounded(fd, head, 5);
    uint32_t len = r ? 0 : get_u32(head + 1);
    if (!r && !reserve(&req, len)) die_cni(999, "tscni launcher: out of memory reading the reply of ", path, NULL);
    if (!r) r = read_bounded(fd, req.data, len);
    if (r == -2 && status_call && !replied) status_unanswered(name, path);
    if (r == -2) unanswered(name, path, get_u32(limit));
    if (r) die_cni(999, "tscni resident server died during the call: ", path, NULL);
    if (head[0] == 'B' && !replied) {
      /* Handed back before any of it ran (no place in the server): run it here. */
      debug(": the server handed the call back (no place for it)", path, "");
      close(fd);
      munmap(req.data, req.cap);
      return;
    }
    replied = 1;
    if (head[0] == 'O') write_all(1, req.data, len);
    else if (head[0] == 'R') write_all(2, req.data, len);
    else if (head[0] == 'X' && len == 4) _exit((int)get_u32(req.data));
  }
}

/*
 * Whether the variables `command` requires are all set (skel.ts's ENV_RULES, Go's getCmdArgsFromEnv): a call
 * without them is refused before stdin is read, so the launcher leaves it to the program untouched.
 */
static int has_required_env(const char *command) {
  static const char *const call[] = {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH", NULL};
  static const char *const del[] = {"CNI_CONTAINERID", "CNI_IFNAME", "CNI_PATH", NULL};
  static const char *const path_only[] = {"CNI_PATH", NULL};
  const char *const *required = NULL;
  if (!strcmp(command, "ADD") || !strcmp(command, "CHECK")) required = call;
  else if (!strcmp(command, "DEL")) required = del;
  else if (!strcmp(command, "GC") || !strcmp(command, "STATUS")) required = path_only;
  for (; required && *required; required++) {
    const char *value = env_value(*required);
    if (!value || !*value) return 0;
  }
  return 1;
}

/* All of stdin, or the Go plugin's error for a stdin that cannot be read (closed, a directory...). */
static struct buf read_config(void) {
  struct buf in = buf_new(65536);
  if (append_fd(&in, STDIN_FILENO)) {
    if (!in.data) die_cni(5, "error reading from stdin: out of memory", NULL);
    die_cni(5, "error reading from stdin: read /dev/stdin: ", error_text(errno), NULL);
  }
  return in;
}

/*
 * Exec mode: the config becomes the program's stdin as an in-memory file, which the program maps, where it would
 * read a pipe through a thread pool Bun starts for it (docs/startup.md). Returns 1 when stdin is that file; 0 when
 * none could be made (it is then a pipe holding the config).
 */
static int config_to_stdin(const struct buf *config) {
  int fd = memfd_create("tscni-config", MFD_CLOEXEC);
  if (fd >= 0) {
    if (write_all(fd, config->data, config->len) || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, STDIN_FILENO) < 0) {
      die_cni(999, "tscni launcher: cannot hand the config over: ", error_text(errno), NULL);
    }
    if (fd != STDIN_FILENO) close(fd);
    return 1;
  }
  /* No memfd (an old kernel, a seccomp filter): a pipe that holds the whole config (nobody reads it yet) */
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) die_cni(999, "tscni launcher: cannot hand the config over: ", error_text(errno), NULL);
  long room = fcntl(p[1], F_GETPIPE_SZ, 0);
  if (room >= 0 && (size_t)room < config->len) room = fcntl(p[1], F_SETPIPE_SZ, (long)config->len);
  if (room < 0 || (size_t)room < config->len) {
    die_cni(999, "tscni launcher: cannot hand the config over: no in-memory file, and the config is larger than a pipe holds", NULL);
  }
  if (write_all(p[1], config->data, config->len) || dup2(p[0], STDIN_FILENO) < 0) {
    die_cni(999, "tscni launcher: cannot hand the config over: ", error_text(errno), NULL);
  }
  close(p[1]);
  if (p[0] != STDIN_FILENO) close(p[0]);
  return 0;
}

/* The program beside this launcher (PROGRAM_FILE: tscni-js) into `out` (room for PATH_MAX). */
static void program_path(char *out) {
  ssize_t len = readlink("/proc/self/exe", out, PATH_MAX - sizeof(PROGRAM_FILE)); /* (room for its name) */
  if (len <= 0) die_cni(999, "tscni launcher: cannot find itself: ", error_text(errno), NULL);
  out[len] = '\0';
  char *dir_end = strrchr(out, '/');
  memcpy(dir_end ? dir_end + 1 : out, PROGRAM_FILE, sizeof(PROGRAM_FILE));
}

/*
 * A plugin copied without the program beside it (one file of the plugin directory taken alone, as an install script
 * may do) must not look healthy: every command, VERSION included, fails naming what is missing and where.
 */
static void require_program(char *program) {
  program_path(program);
  struct file_info info;
  if (path_info(program, 1, &info) == 0) return;
  die_cni(999, PROGRAM_MISSING, program, " (", error_text(errno), "); " PROGRAM_MISSING_HINT, NULL);
}

int main(int argc, char **argv, char **envp) {
  environment = envp;
  const char *name = base_name(argv[0] ? argv[0] : "");
  const char *command = env_value("CNI_COMMAND");
  int version = command && strcmp(command, "VERSION") == 0;
  int about = !command || !*command; /* no command: the plugin's about text on stderr */
  int stdin_in_memory = 0, slot = -1;
  char program[PATH_MAX];
  program[0] = '\0';
  for (size_t i = 0; i < sizeof(PROGRAM_VERSIONS) / sizeof(PROGRAM_VERSIONS[0]); i++) {
    if (strcmp(PROGRAM_VERSIONS[i].name, name) != 0) continue;
    if (argc >= 2) break; /* arguments mean a subcommand (`dhcp daemon ...`): the program handles those */
    require_program(program);
    if (version) return write_text(1, PROGRAM_VERSIONS[i].json) ? 1 : 0;
    if (about) return write_text(2, PROGRAM_VERSIONS[i].about) ? 1 : 0;
    if (!SERVED) break; /* a plugin of its own: its program reads the config itself */
    if (!has_required_env(command)) break; /* the program says which are missing, without reading stdin */
    struct buf config = read_config();
    try_resident(name, argc, argv, &config, program); /* plugin calls only: cnitool and subcommands always run here */
    /* The bound on programs running at once (exec-slots.h), node-wide even for a caller that names no socket */
    slot = take_exec_slot(name, *resident_socket() ? resident_socket() : DEFAULT_SOCKET);
    stdin_in_memory = config_to_stdin(&config);
    break;
  }

  /*
   * The program's environment: ours, with the in-memory-stdin mark only when it is true (never the caller's), and
   * the slot mark naming the slot the program holds (a caller's only when proven to be its ancestor's).
   */
  size_t count = 0;
  while (envp[count]) count++;
  struct buf env = buf_new((count + 3) * sizeof(char *));
  if (!env.data) die_cni(999, "tscni launcher: out of memory", NULL);
  char **program_env = (char **)env.data;
  size_t n = 0;
  for (char **e = envp; *e; e++) if (!is_stdin_mark(*e) && (slot == -2 || !is_slot_mark(*e))) program_env[n++] = *e;
  if (stdin_in_memory) program_env[n++] = STDIN_MARK "1";
  char slot_mark[sizeof(SLOT_MARK) + 24] = SLOT_MARK;
  if (slot >= 0 && fcntl(slot, F_SETFD, 0) == 0) {
    /* the program inherits the slot's descriptor, and holds the slot as long as it runs */
    size_t len = sizeof(SLOT_MARK) - 1 + format_decimal(slot_mark + sizeof(SLOT_MARK) - 1, (unsigned)getpid());
    slot_mark[len++] = ':';
    format_decimal(slot_mark + len, (unsigned)slot);
    program_env[n++] = slot_mark;
  }
  program_env[n] = NULL;

  if (!program[0]) program_path(program);
  execve(program, argv, program_env);
  die_cni(999, "tscni launcher: cannot run ", program, ": ", error_text(errno), NULL);
}
