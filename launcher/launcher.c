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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int send_field(int fd, char tag, const void *data, size_t len) {
  unsigned char head[5];
  head[0] = (unsigned char)tag;
  put_u32(head + 1, (uint32_t)len);
  return write_all(fd, head, 5) || (len && write_all(fd, data, len));
}

/* What the plugins read besides CNI_*: tools' PATH, tscni's own switches, the system bus (firewalld). */
static int forwarded(const char *e) {
  return !strncmp(e, "CNI_", 4) || !strncmp(e, "PATH=", 5) || !strncmp(e, "TSCNI_", 6) || !strncmp(e, "DBUS_SYSTEM_BUS_ADDRESS=", 24);
}

static void die_cni(const char *msg, const char *detail) {
  printf("{\n    \"code\": 999,\n    \"msg\": \"%s%s\"\n}", msg, detail);
  exit(1);
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

  /* Hello, and the server's answer within 2 s; anything but "Y" means: run it yourself. */
  struct timeval tv = {.tv_sec = 2};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  unsigned char hello[8];
  size_t id_len = strlen(BUILD_ID);
  memcpy(hello, "TSCNI\x01", 6);
  hello[6] = id_len & 0xff;
  hello[7] = (id_len >> 8) & 0xff;
  unsigned char answer = 0;
  if (write_all(fd, hello, 8) || write_all(fd, BUILD_ID, id_len) || read_all(fd, &answer, 1) || answer != 'Y') {
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
  size_t cap = 65536, used = 0;
  char *in = malloc(cap);
  for (ssize_t r; in && (r = read(STDIN_FILENO, in + used, cap - used)) != 0;) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    used += (size_t)r;
    if (used == cap) in = realloc(in, cap *= 2);
  }
  if (!in) die_cni("tscni launcher: out of memory reading stdin", "");
  int bad = send_field(fd, 'P', name, strlen(name));
  for (int i = 1; i < argc && !bad; i++) bad = send_field(fd, 'A', argv[i], strlen(argv[i]));
  for (char **e = environ; *e && !bad; e++) if (forwarded(*e)) bad = send_field(fd, 'E', *e, strlen(*e));
  char cwd[4096];
  if (!bad) bad = send_field(fd, 'I', in, used);
  if (!bad && getcwd(cwd, sizeof(cwd))) bad = send_field(fd, 'C', cwd, strlen(cwd));
  if (!bad) bad = send_field(fd, 'Z', "", 0);
  free(in);
  if (bad) die_cni("tscni resident server closed the connection while the call was sent: ", path);

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
