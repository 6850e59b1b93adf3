/*
 * tscni launcher: the multicall executable that dist/bin/<type> links to. A runtime probes every plugin with
 * VERSION on every command, so that answer (and the about text printed when CNI_COMMAND is unset) comes from
 * here, without starting a JavaScript engine. Any other plugin call goes to a resident tscni server when one of
 * this same build answers on its socket (TSCNI_RESIDENT_SOCKET, default /run/tscni/plugins.sock; empty turns it
 * off): a short connect, a hello, and only if the server says it will run the call is the call sent (protocol:
 * src/cli/resident-protocol.ts). No server, a refused or foreign one: the JavaScript program (tscni-js, next to
 * this file) is exec'd with argv[0] kept, exactly as without a server. Once a call has been sent it never runs a
 * second time: a server that dies during it gives CNI error 999 naming the server.
 * The version table and the build ID are generated from src/cli/programs.ts at build time.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "versions.h" /* PROGRAM_VERSIONS[] {name, json, about}; BUILD_ID */

extern char **environ;

#define DEFAULT_SOCKET "/run/tscni/plugins.sock"

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static int write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
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

static void put_u32(unsigned char *b, uint32_t v) {
  b[0] = v & 0xff; b[1] = (v >> 8) & 0xff; b[2] = (v >> 16) & 0xff; b[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The request is built in memory and sent in one write: one wake-up of the server instead of one per field. */
struct buf {
  unsigned char *data;
  size_t len, cap;
};

/* Room for `more` bytes; 0 (and the buffer freed, data NULL) when memory runs out. */
static int reserve(struct buf *b, size_t more) {
  if (!b->data) return 0;
  if (b->len + more <= b->cap) return 1;
  size_t cap = b->cap;
  while (b->len + more > cap) cap *= 2;
  unsigned char *grown = realloc(b->data, cap);
  if (!grown) free(b->data);
  b->data = grown;
  b->cap = cap;
  return grown != NULL;
}

static void put_field(struct buf *b, char tag, const void *data, size_t len) {
  if (!reserve(b, 5 + len)) return;
  b->data[b->len] = (unsigned char)tag;
  put_u32(b->data + b->len + 1, (uint32_t)len);
  if (len) memcpy(b->data + b->len + 5, data, len);
  b->len += 5 + len;
}

/* Appends what `fd` gives up to its end; -1 on a read error (errno set), or when memory ran out (data NULL). */
static int append_fd(struct buf *b, int fd) {
  for (;;) {
    if (!reserve(b, 4096)) return -1;
    ssize_t r = read(fd, b->data + b->len, b->cap - b->len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 0;
    b->len += (size_t)r;
  }
}

/* What the plugins read besides CNI_*: tools' PATH, tscni's own switches, the system bus (firewalld). */
static int forwarded(const char *e) {
  return !strncmp(e, "CNI_", 4) || !strncmp(e, "PATH=", 5) || !strncmp(e, "TSCNI_", 6) || !strncmp(e, "DBUS_SYSTEM_BUS_ADDRESS=", 24);
}

static void die_cni_code(int code, const char *msg, const char *detail) {
  printf("{\n    \"code\": %d,\n    \"msg\": \"%s%s\"\n}", code, msg, detail);
  exit(1);
}

static void die_cni(const char *msg, const char *detail) {
  die_cni_code(999, msg, detail);
}

/* Connects to the server within 200 ms; -1 when there is none. */
static int connect_server(const char *path) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof(addr.sun_path)) return -1;
  strcpy(addr.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int err = 0;
    socklen_t len = sizeof(err);
    if ((errno != EINPROGRESS && errno != EAGAIN) || poll(&p, 1, 200) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      close(fd);
      return -1;
    }
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

/* Runs the call through the resident server and exits with its status; returns when the plugin must be exec'd. */
static void try_resident(const char *name, int argc, char **argv) {
  const char *path = getenv("TSCNI_RESIDENT_SOCKET");
  if (!path) path = DEFAULT_SOCKET;
  if (!*path) return;
  int fd = connect_server(path);
  if (fd < 0) return;

  /*
   * Hello, and the server's answer within 10 s; anything but "Y" means: run it yourself. Generous: a server
   * swamped by a burst of calls answers late, and callers that give up on it add plugin processes to the load
   * (bench: 200 pods at once); a server that is not there is refused at connect, at once.
   */
  struct timeval tv = {.tv_sec = 10};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  unsigned char hello[8 + sizeof(BUILD_ID)];
  size_t id_len = strlen(BUILD_ID);
  memcpy(hello, "TSCNI\x01", 6);
  hello[6] = id_len & 0xff;
  hello[7] = (id_len >> 8) & 0xff;
  memcpy(hello + 8, BUILD_ID, id_len);
  unsigned char answer = 0;
  if (write_all(fd, hello, 8 + id_len) || read_all(fd, &answer, 1) || answer != 'Y') {
    if (answer == 'N' && getenv("TSCNI_DEBUG")) {
      unsigned char l[2];
      char reason[256] = "";
      if (!read_all(fd, l, 2)) read_all(fd, reason, (l[0] | l[1] << 8) < 255 ? (size_t)(l[0] | l[1] << 8) : 255);
      fprintf(stderr, "tscni launcher: %s refused: %s\n", path, reason);
    }
    close(fd);
    return;
  }
  tv.tv_sec = 0;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

  /* From here on the call belongs to the server: it is never run a second time. */
  struct buf req = {.data = malloc(65536), .cap = 65536};
  put_field(&req, 'P', name, strlen(name));
  for (int i = 1; i < argc; i++) put_field(&req, 'A', argv[i], strlen(argv[i]));
  for (char **e = environ; *e; e++) if (forwarded(*e)) put_field(&req, 'E', *e, strlen(*e));
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd))) put_field(&req, 'C', cwd, strlen(cwd));
  /* stdin last, read straight into the request: its field's length is filled in when it has been read */
  put_field(&req, 'I', "", 0);
  size_t stdin_head = req.len - 5;
  append_fd(&req, STDIN_FILENO); /* a read error ends stdin, as it did for a plugin reading it */
  if (req.data) put_u32(req.data + stdin_head + 1, (uint32_t)(req.len - stdin_head - 5));
  put_field(&req, 'Z', "", 0);
  if (!req.data) die_cni("tscni launcher: out of memory building the request", "");
  if (write_all(fd, req.data, req.len)) die_cni("tscni resident server closed the connection while the call was sent: ", path);
  free(req.data);

  for (;;) {
    unsigned char head[5];
    if (read_all(fd, head, 5)) die_cni("tscni resident server died during the call: ", path);
    uint32_t len = get_u32(head + 1);
    unsigned char *data = malloc(len ? len : 1);
    if (!data || read_all(fd, data, len)) die_cni("tscni resident server died during the call: ", path);
    if (head[0] == 'O') fwrite(data, 1, len, stdout);
    else if (head[0] == 'R') fwrite(data, 1, len, stderr);
    else if (head[0] == 'X' && len == 4) {
      fflush(stdout);
      exit((int)get_u32(data));
    }
    free(data);
  }
}

/*
 * Exec mode: the config moves from the runtime's pipe into an in-memory file that becomes the program's stdin,
 * and TSCNI_STDIN_MEMFD tells the program so: it maps the file rather than reading a pipe, which Bun does through
 * a thread pool it starts for it (~1 ms of every call's start-up here; bench/run.mjs, cold start). A stdin that
 * cannot be read is left as it is, for the program to report.
 */
static void stdin_to_memfd(void) {
  unsetenv("TSCNI_STDIN_MEMFD"); /* only ever this launcher's word */
  int fd = memfd_create("tscni-config", MFD_CLOEXEC);
  if (fd < 0) return;
  struct buf in = {.data = malloc(65536), .cap = 65536};
  if (!in.data) {
    close(fd);
    return;
  }
  if (append_fd(&in, STDIN_FILENO)) {
    if (in.data && in.len == 0) { /* nothing taken from stdin yet: the program reads (and reports) it itself */
      free(in.data);
      close(fd);
      return;
    }
    die_cni_code(5, "error reading from stdin: ", in.data ? strerror(errno) : "out of memory");
  }
  if (write_all(fd, in.data, in.len) || lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, STDIN_FILENO) < 0) {
    die_cni_code(5, "error reading from stdin: ", strerror(errno));
  }
  free(in.data);
  close(fd);
  setenv("TSCNI_STDIN_MEMFD", "1", 1);
}

int main(int argc, char **argv) {
  const char *name = base_name(argv[0]);
  const char *command = getenv("CNI_COMMAND");
  int version = command && strcmp(command, "VERSION") == 0;
  int about = !command || !*command; /* no command: the plugin's about text on stderr */
  for (size_t i = 0; i < sizeof(PROGRAM_VERSIONS) / sizeof(PROGRAM_VERSIONS[0]); i++) {
    if (strcmp(PROGRAM_VERSIONS[i].name, name) != 0) continue;
    if (argc >= 2) break; /* arguments mean a subcommand (`dhcp daemon ...`): the program handles those */
    if (version || about) {
      FILE *out = version ? stdout : stderr;
      fputs(version ? PROGRAM_VERSIONS[i].json : PROGRAM_VERSIONS[i].about, out);
      return fflush(out) == 0 ? 0 : 1;
    }
    try_resident(name, argc, argv); /* plugin calls only: cnitool and subcommands always run here */
    stdin_to_memfd();
    break;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
  if (n <= 0) {
    printf("{\n    \"code\": 999,\n    \"msg\": \"tscni launcher: cannot find itself: %s\"\n}", strerror(errno));
    return 1;
  }
  self[n] = '\0';
  char *dir_end = strrchr(self, '/');
  strcpy(dir_end ? dir_end + 1 : self, "tscni-js");
  execv(self, argv);
  printf("{\n    \"code\": 999,\n    \"msg\": \"tscni launcher: cannot run %s: %s\"\n}", self, strerror(errno));
  return 1;
}
