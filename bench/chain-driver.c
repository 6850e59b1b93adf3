/*
 * The pods scenario (bench/pods.mjs) driven as a Go runtime drives it, beside the pod manager under Bun: N pods set
 * up at once, then torn down at once, each pod's chain run plugin after plugin, each call a fork/exec (posix_spawn,
 * as Go's os/exec) with its config on a pipe and its stdout read to the end; a thread per pod, as a runtime's
 * goroutine per sandbox. ADD runs the chain in order, each plugin given the previous one's result as prevResult; DEL
 * runs it in reverse, each given the chain's ADD result (as libcni gives the cached one). Nothing else: no result
 * cache, no locks, so only the plugins and the way they are started differ from the Bun driver.
 *
 * usage: chain-driver N BIN_DIR NS_PREFIX TAG < chain
 *   chain: one line per plugin, in order: "<type>\t<its config as one line of JSON, name and cniVersion included>"
 *   pod i uses /run/netns/<NS_PREFIX><i> (made by the caller) and the container ID bench-<TAG>-<i>; the calls get this
 *   process's environment with CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME=eth0 and CNI_PATH=BIN_DIR.
 * prints one JSON line: {"setupMs":…,"teardownMs":…,"driverCpuMs":…,"pluginsCpuMs":…,"setupFailures":…,"teardownFailures":…,"firstFailures":[…]}
 *   driverCpuMs: this process's own CPU time (user + system); pluginsCpuMs: that of the plugin programs it ran (and
 *   their children), a resident server's not included
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_PLUGINS 16

static int pods;
static const char *bin_dir, *ns_prefix, *tag;
static int plugins;
static char *types[MAX_PLUGINS], *configs[MAX_PLUGINS];
static pthread_mutex_t failure_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures;
static char first_failure[512];

struct pod {
  int index;
  char *result; /* the chain's ADD result, for DEL */
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void fail(const char *what, const char *out) {
  pthread_mutex_lock(&failure_lock);
  if (!failures++) snprintf(first_failure, sizeof(first_failure), "%.200s: %.300s", what, out ? out : "");
  pthread_mutex_unlock(&failure_lock);
}

/* `config` with "prevResult": `prev` added as its last key (NULL: `config` as it is); malloc'd. */
static char *with_prev(const char *config, const char *prev) {
  if (!prev) return strdup(config);
  const char *end = strrchr(config, '}');
  size_t head = (size_t)(end - config), n = head + strlen(prev) + 32;
  char *out = malloc(n);
  snprintf(out, n, "%.*s,\"prevResult\":%s}", (int)head, config, prev);
  return out;
}

/* One call: the plugin's stdout (malloc'd), or NULL when it failed (the failure recorded). */
static char *call(const char *command, int pod, int plugin, const char *prev) {
  char program[4096], netns[256], id[128], path[4096 + 16];
  snprintf(program, sizeof(program), "%s/%s", bin_dir, types[plugin]);
  snprintf(netns, sizeof(netns), "CNI_NETNS=/run/netns/%s%d", ns_prefix, pod);
  snprintf(id, sizeof(id), "CNI_CONTAINERID=bench-%s-%d", tag, pod);
  snprintf(path, sizeof(path), "CNI_PATH=%s", bin_dir);
  char cmd[32];
  snprintf(cmd, sizeof(cmd), "CNI_COMMAND=%s", command);
  size_t count = 0;
  while (environ[count]) count++;
  char **env = calloc(count + 6, sizeof(char *));
  size_t n = 0;
  for (char **e = environ; *e; e++) {
    if (strncmp(*e, "CNI_", 4)) env[n++] = *e;
  }
  env[n++] = cmd;
  env[n++] = id;
  env[n++] = netns;
  env[n++] = "CNI_IFNAME=eth0";
  env[n++] = path;
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
    fail("pipe", strerror(errno));
    free(env);
    return NULL;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  char *argv[] = {types[plugin], NULL};
  pid_t pid;
  int err = posix_spawn(&pid, program, &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  close(in[0]);
  close(out[1]);
  if (err) {
    close(in[1]);
    close(out[0]);
    fail(program, strerror(err));
    return NULL;
  }
  char *config = with_prev(configs[plugin], prev);
  for (size_t off = 0, len = strlen(config); off < len;) {
    ssize_t w = write(in[1], config + off, len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  free(config);
  close(in[1]);
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  for (ssize_t r; (r = read(out[0], buf + len, cap - len - 1)) > 0;) {
    len += (size_t)r;
    if (len + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  buf[len] = 0;
  close(out[0]);
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail(types[plugin], buf);
    free(buf);
    return NULL;
  }
  return buf;
}

static void *add(void *arg) {
  struct pod *p = arg;
  char *prev = NULL;
  for (int i = 0; i < plugins; i++) {
    char *result = call("ADD", p->index, i, prev);
    free(prev);
    prev = result;
    if (!result) break;
  }
  p->result = prev;
  return NULL;
}

static void *del(void *arg) {
  struct pod *p = arg;
  for (int i = plugins - 1; i >= 0; i--) free(call("DEL", p->index, i, p->result));
  return NULL;
}

/* Runs `phase` for every pod at once; the milliseconds until all are done. */
static double run_all(void *(*phase)(void *), struct pod *all) {
  pthread_t *threads = calloc((size_t)pods, sizeof(pthread_t));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  double t0 = now_ms();
  for (int i = 0; i < pods; i++) pthread_create(&threads[i], &attr, phase, &all[i]);
  for (int i = 0; i < pods; i++) pthread_join(threads[i], NULL);
  double ms = now_ms() - t0;
  free(threads);
  return ms;
}

/* JSON string contents of `s` (quotes, backslashes and control bytes escaped) to stdout. */
static void print_json_text(const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
    else putchar(*s);
  }
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: chain-driver N BIN_DIR NS_PREFIX TAG < chain\n");
    return 2;
  }
  pods = atoi(argv[1]);
  bin_dir = argv[2];
  ns_prefix = argv[3];
  tag = argv[4];
  static char line[1 << 16];
  while (plugins < MAX_PLUGINS && fgets(line, sizeof(line), stdin)) {
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = 0;
    line[strcspn(tab + 1, "\n") + (size_t)(tab + 1 - line)] = 0;
    types[plugins] = strdup(line);
    configs[plugins] = strdup(tab + 1);
    plugins++;
  }
  struct pod *all = calloc((size_t)pods, sizeof(struct pod));
  for (int i = 0; i < pods; i++) all[i].index = i;
  double setup = run_all(add, all);
  int setup_failures = failures;
  double teardown = run_all(del, all);
  struct rusage self, children;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
#define CPU_MS(u) (((u).ru_utime.tv_sec + (u).ru_stime.tv_sec) * 1e3 + ((u).ru_utime.tv_usec + (u).ru_stime.tv_usec) / 1e3)
  printf("{\"setupMs\":%.1f,\"teardownMs\":%.1f,\"driverCpuMs\":%.1f,\"pluginsCpuMs\":%.1f,\"setupFailures\":%d,\"teardownFailures\":%d,"
         "\"firstFailures\":[\"",
         setup, teardown, CPU_MS(self), CPU_MS(children), setup_failures, failures - setup_failures);
  print_json_text(first_failure);
  printf("\"]}\n");
  return 0;
}
