/*
 * The launcher's system interface from the C library, for architectures sys-nolibc.h does not cover (or a
 * compiler that cannot build without one). Same functions, same behaviour; only start-up is slower.
 */
#define _GNU_SOURCE /* memfd_create, mremap */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <stdio.h> /* rename */
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* What sys-nolibc.h gives beyond the C library's own names. */
#ifndef O_NOFOLLOW
#error "O_NOFOLLOW is needed"
#endif
static void unblock_signals(void) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}
static long getdents64(int fd, void *buf, size_t n) { return syscall(SYS_getdents64, fd, buf, n); }
static long cpu_affinity(void *mask, size_t n) { return syscall(SYS_sched_getaffinity, 0, n, mask); }
static void close_from(int low) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, low, ~0U, 0) == 0) return;
#endif
  for (int fd = low; fd < 4096; fd++) close(fd);
}
struct file_info {
  unsigned long dev, ino;
  unsigned mode, uid;
  long size;
  long long mtime_ns;
};
static int file_info_of(int result, const struct stat *st, struct file_info *out) {
  if (result != 0) return -1;
  out->dev = st->st_dev;
  out->ino = st->st_ino;
  out->mode = st->st_mode;
  out->uid = st->st_uid;
  out->size = st->st_size;
  out->mtime_ns = (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
  return 0;
}
static int path_info(const char *path, int follow, struct file_info *out) {
  struct stat st;
  return file_info_of(follow ? stat(path, &st) : lstat(path, &st), &st, out);
}
static int fd_info(int fd, struct file_info *out) {
  struct stat st;
  return file_info_of(fstat(fd, &st), &st, out);
}
