/*
 * Times one plugin call the way a runtime written in Go makes it: fork/exec (posix_spawn, a vfork-style clone as
 * Go's os/exec uses), the config on a pipe, stdout read to its end, wait. bench/run.mjs runs every timed call
 * through it: Node's own spawnSync costs ~1.4 ms per call on the benchmark machine, more than a Go plugin's whole
 * start-up, and would be counted in every number.
 *
 * usage: spawn-timer PROGRAM [ARGV0]   (the config on stdin; the environment is passed on)
 * prints "<milliseconds> <exit status>\n", then the program's stdout.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static char *read_all(int fd, size_t *len) {
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  for (ssize_t r; buf && (r = read(fd, buf + n, cap - n)) != 0;) {
    if (r < 0) return NULL;
    n += (size_t)r;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  *len = n;
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: spawn-timer PROGRAM [ARGV0]\n");
    return 2;
  }
  size_t in_len;
  char *in = read_all(STDIN_FILENO, &in_len);
  int in_pipe[2], out_pipe[2];
  if (!in || pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC)) {
    perror("spawn-timer");
    return 2;
  }
  /* The whole config goes into the pipe before the program starts (as a runtime's write usually has). */
  if (in_len > 65536 && fcntl(in_pipe[1], F_SETPIPE_SZ, (int)in_len) < 0) {
    perror("spawn-timer: config too large for a pipe");
    return 2;
  }
  for (size_t off = 0; off < in_len;) {
    ssize_t w = write(in_pipe[1], in + off, in_len - off);
    if (w <= 0) {
      perror("spawn-timer");
      return 2;
    }
    off += (size_t)w;
  }
  close(in_pipe[1]);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
  char *child_argv[] = {argc > 2 ? argv[2] : argv[1], NULL};

  double t0 = now_ms();
  pid_t pid;
  int err = posix_spawn(&pid, argv[1], &fa, NULL, child_argv, environ);
  if (err) {
    fprintf(stderr, "spawn-timer: cannot run %s: errno %d\n", argv[1], err);
    return 2;
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  size_t out_len;
  char *out = read_all(out_pipe[0], &out_len);
  int status;
  while (waitpid(pid, &status, 0) < 0) {}
  double elapsed = now_ms() - t0;

  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  printf("%.4f %d\n", elapsed, code);
  if (out) fwrite(out, 1, out_len, stdout);
  return 0;
}
