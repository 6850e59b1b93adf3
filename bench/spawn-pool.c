/*
 * Runs many plugin calls at once the way many runtimes make them: each call a fork/exec (posix_spawn, as Go's
 * os/exec), its config on a pipe, its stdout read to the end, WIDTH calls in flight at a time. bench/cluster-scale.mjs
 * drives its phases through it because one Node process cannot start children fast enough to stand in for a
 * thousand nodes' runtimes: each child_process.spawn blocks the event loop until the child has exec'd, and on the
 * benchmark VM that capped the harness at ~100 calls a second, whatever the plugin did (measured with /bin/cat).
 *
 * usage: spawn-pool WIDTH PROGRAM < jobs
 *   jobs: one per line, "COMMAND<TAB>CONTAINERID<TAB>CONFIG" (the config as one line of JSON); each call gets
 *   the pool's environment with CNI_COMMAND and CNI_CONTAINERID set from its line.
 * prints, for each call as it ends: "<job index> <milliseconds> <exit status> <stdout length>\n" and the stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct job {
  char *command, *id, *config;
};

struct call {
  int index;
  pid_t pid;
  int out;
  char *buf;
  size_t len, cap;
  double t0;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char *read_stdin(size_t *len) {
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap + 1);
  for (ssize_t r; buf && (r = read(STDIN_FILENO, buf + n, cap - n)) != 0;) {
    if (r < 0) return NULL;
    n += (size_t)r;
    if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
  }
  if (buf) buf[n] = 0;
  *len = n;
  return buf;
}

/* The pool's environment without CNI_COMMAND and CNI_CONTAINERID, with two free slots in front for them. */
static char **base_env(void) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 3, sizeof *env);
  size_t k = 2;
  for (size_t i = 0; i < n; i++) {
    if (strncmp(environ[i], "CNI_COMMAND=", 12) && strncmp(environ[i], "CNI_CONTAINERID=", 16)) env[k++] = environ[i];
  }
  env[k] = NULL;
  return env;
}

static int start(struct call *c, int index, const struct job *j, const char *program, char **env) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) return -1;
  size_t len = strlen(j->config);
  if (len > 65536) fcntl(in[1], F_SETPIPE_SZ, (int)len);
  /* The whole config goes into the pipe before the call starts, as a runtime's write usually has. */
  for (size_t off = 0; off < len;) {
    ssize_t w = write(in[1], j->config + off, len - off);
    if (w <= 0) return -1;
    off += (size_t)w;
  }
  close(in[1]);
  char cmd[64], id[512];
  snprintf(cmd, sizeof cmd, "CNI_COMMAND=%s", j->command);
  snprintf(id, sizeof id, "CNI_CONTAINERID=%s", j->id);
  env[0] = cmd;
  env[1] = id;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  char *argv[] = {(char *)program, NULL};
  c->t0 = now_ms();
  int err = posix_spawn(&c->pid, program, &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (err) {
    close(out[0]);
    errno = err;
    return -1;
  }
  c->index = index;
  c->out = out[0];
  c->len = 0;
  c->cap = 4096;
  c->buf = malloc(c->cap);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3 || atoi(argv[1]) < 1) {
    fprintf(stderr, "usage: spawn-pool WIDTH PROGRAM < jobs\n");
    return 2;
  }
  size_t width = (size_t)atoi(argv[1]);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max; /* a pipe per call in flight */
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  size_t in_len;
  char *text = read_stdin(&in_len);
  if (!text) {
    perror("spawn-pool: reading the jobs");
    return 2;
  }
  size_t njobs = 0, cap = 1024;
  struct job *jobs = malloc(cap * sizeof *jobs);
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = 0;
    char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t2) {
      fprintf(stderr, "spawn-pool: job %zu is not COMMAND<TAB>CONTAINERID<TAB>CONFIG\n", njobs);
      return 2;
    }
    *t1 = *t2 = 0;
    if (njobs == cap) jobs = realloc(jobs, (cap *= 2) * sizeof *jobs);
    jobs[njobs++] = (struct job){line, t1 + 1, t2 + 1};
  }
  if (width > njobs) width = njobs ? njobs : 1;

  char **env = base_env();
  struct call *calls = calloc(width, sizeof *calls);
  struct pollfd *fds = calloc(width, sizeof *fds);
  size_t running = 0, next = 0, done = 0;
  while (done < njobs) {
    while (running < width && next < njobs) {
      if (start(&calls[running], (int)next, &jobs[next], argv[2], env)) {
        fprintf(stderr, "spawn-pool: cannot start job %zu: %s\n", next, strerror(errno));
        return 2;
      }
      running++;
      next++;
    }
    for (size_t i = 0; i < running; i++) fds[i] = (struct pollfd){.fd = calls[i].out, .events = POLLIN};
    if (poll(fds, running, -1) < 0) {
      if (errno == EINTR) continue;
      perror("spawn-pool: poll");
      return 2;
    }
    for (size_t i = running; i-- > 0;) {
      if (!fds[i].revents) continue;
      struct call *c = &calls[i];
      if (c->len == c->cap) c->buf = realloc(c->buf, c->cap *= 2);
      ssize_t r = read(c->out, c->buf + c->len, c->cap - c->len);
      if (r > 0) {
        c->len += (size_t)r;
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      /* End of its stdout: the call has ended (or is ending); wait for it and report. */
      int status;
      while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {}
      double ms = now_ms() - c->t0;
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      printf("%d %.3f %d %zu\n", c->index, ms, code, c->len);
      fwrite(c->buf, 1, c->len, stdout);
      close(c->out);
      free(c->buf);
      calls[i] = calls[--running];
      done++;
    }
  }
  fflush(stdout);
  return 0;
}
