/*
 * tscni launcher: the multicall executable that dist/bin/<type> links to. A runtime probes every plugin with
 * VERSION on every command, so that answer (and the about text printed when CNI_COMMAND is unset) comes from
 * here, without starting a JavaScript engine; every other
 * call is handed to the JavaScript program (tscni-js, next to this file) with argv[0] kept, so it still knows
 * which plugin it was run as. The version table is generated from src/cli/registry.ts at build time.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "versions.h" /* static const struct { const char *name, *json, *about; } PROGRAM_VERSIONS[] */

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

int main(int argc, char **argv) {
  const char *name = base_name(argv[0]);
  const char *command = getenv("CNI_COMMAND");
  int version = command && strcmp(command, "VERSION") == 0;
  int about = !command || !*command; /* no command: the plugin's about text on stderr */
  /* Arguments mean a subcommand (`dhcp daemon ...`): the program handles those. */
  if ((version || about) && argc < 2) {
    for (size_t i = 0; i < sizeof(PROGRAM_VERSIONS) / sizeof(PROGRAM_VERSIONS[0]); i++) {
      if (strcmp(PROGRAM_VERSIONS[i].name, name) == 0) {
        FILE *out = version ? stdout : stderr;
        fputs(version ? PROGRAM_VERSIONS[i].json : PROGRAM_VERSIONS[i].about, out);
        return fflush(out) == 0 ? 0 : 1;
      }
    }
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
