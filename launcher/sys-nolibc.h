/*
 * The few system calls and string functions the launcher needs, without a C library (built with -nostdlib;
 * x86_64 and aarch64). Why: glibc's start-up runs CPUID instructions (CPU feature and cache detection), each of which
 * traps to the hypervisor in a VM, and the launcher runs before every plugin call, in both modes (README's speed summary
 * and the commit that made this header have the figures).
 * Syscall numbers come from the kernel's UAPI header; the constants below are those of x86_64 and aarch64 (both
 * use the generic values for these). Other architectures build launcher.c against libc (sys-libc.h).
 */
#include <asm/unistd.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "sys-nolibc.h: x86_64 and aarch64 only (build with sys-libc.h elsewhere)"
#endif

typedef unsigned long size_t;
typedef long ssize_t;
typedef long off_t;
typedef unsigned int socklen_t;
typedef unsigned int uint32_t;
#define NULL ((void *)0)

#define O_RDONLY 0
#define O_WRONLY 1
#define O_RDWR 2
#define O_CREAT 0100
#define O_APPEND 02000
#define O_NONBLOCK 04000
#define O_DIRECTORY 0200000
#define O_NOFOLLOW 0400000
#define O_CLOEXEC 02000000
#define F_DUPFD 0
#define F_GETFD 1
#define F_SETFD 2
#define F_GETFL 3
#define F_SETFL 4
#define F_SETPIPE_SZ 1031
#define F_GETPIPE_SZ 1032
#define SEEK_SET 0
#define AT_FDCWD (-100)
#define AF_UNIX 1
#define SOCK_STREAM 1
#define SOCK_NONBLOCK O_NONBLOCK
#define SOCK_CLOEXEC O_CLOEXEC
#define SOL_SOCKET 1
#define SO_ERROR 4
#define SO_RCVTIMEO 20
#define SO_SNDTIMEO 21
#define SO_PEERCRED 17
#define POLLIN 1
#define POLLOUT 4
#define MSG_NOSIGNAL 0x4000
#define EIO 5
#define MFD_CLOEXEC 1
#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_PRIVATE 2
#define MAP_ANONYMOUS 0x20
#define MAP_FAILED ((void *)-1)
#define MREMAP_MAYMOVE 1
#define PATH_MAX 4096
#define STDIN_FILENO 0
#define EINTR 4
#define EINVAL 22
#define EBADF 9
#define EAGAIN 11
#define EINPROGRESS 115
#define ENOENT 2
#define EEXIST 17
#define ECONNREFUSED 111
#define LOCK_EX 2
#define LOCK_NB 4
#define SIGCHLD 17
#define SIG_SETMASK 2
#define CLOCK_REALTIME 0
#define CLOCK_BOOTTIME 7
#define AT_SYMLINK_NOFOLLOW 0x100
#define S_IFMT 0170000
#define S_IFDIR 0040000
#define S_IFREG 0100000
#define S_ISDIR(m) (((m) & S_IFMT) == S_IFDIR)
#define S_ISREG(m) (((m) & S_IFMT) == S_IFREG)
#define S_IFSOCK 0140000
#define S_ISSOCK(m) (((m) & S_IFMT) == S_IFSOCK)

struct sockaddr_un {
  unsigned short sun_family;
  char sun_path[108];
};
struct timeval {
  long tv_sec, tv_usec;
};
struct timespec {
  long tv_sec, tv_nsec;
};
struct pollfd {
  int fd;
  short events, revents;
};
struct ucred {
  int pid;
  unsigned uid, gid;
};

static int errno;

static long raw_syscall(long n, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
#else
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory", "cc");
  return x0;
#endif
}

/* The kernel answers -errno; libc's convention (-1 and errno) is kept so launcher.c reads the same either way. */
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
  long r = raw_syscall(n, a, b, c, d, e, f);
  if (r < 0 && r > -4096) {
    errno = (int)-r;
    return -1;
  }
  return r;
}
#define sys(n, a, b, c, d, e) sys6(n, a, b, c, d, e, 0)

static ssize_t read(int fd, void *buf, size_t n) { return sys(__NR_read, fd, (long)buf, (long)n, 0, 0); }
static ssize_t write(int fd, const void *buf, size_t n) { return sys(__NR_write, fd, (long)buf, (long)n, 0, 0); }
static int close(int fd) { return (int)sys(__NR_close, fd, 0, 0, 0, 0); }
static off_t lseek(int fd, off_t off, int whence) { return sys(__NR_lseek, fd, off, whence, 0, 0); }
static int fcntl(int fd, int cmd, long arg) { return (int)sys(__NR_fcntl, fd, cmd, arg, 0, 0); }
/* dup3 refuses equal descriptors, where dup2 checks the descriptor is open and returns it */
static int dup2(int from, int to) {
  if (from != to) return (int)sys(__NR_dup3, from, to, 0, 0, 0);
  return fcntl(from, F_GETFD, 0) < 0 ? -1 : to;
}
static int pipe2(int fds[2], int flags) { return (int)sys(__NR_pipe2, (long)fds, flags, 0, 0, 0); }
static int memfd_create(const char *name, unsigned flags) { return (int)sys(__NR_memfd_create, (long)name, flags, 0, 0, 0); }
static int socket(int domain, int type, int proto) { return (int)sys(__NR_socket, domain, type, proto, 0, 0); }
static int connect(int fd, const void *addr, socklen_t len) { return (int)sys(__NR_connect, fd, (long)addr, len, 0, 0); }
static int getsockopt(int fd, int level, int name, void *val, socklen_t *len) {
  return (int)sys(__NR_getsockopt, fd, level, name, (long)val, (long)len);
}
static int setsockopt(int fd, int level, int name, const void *val, socklen_t len) {
  return (int)sys(__NR_setsockopt, fd, level, name, (long)val, len);
}
/* ms < 0: no time limit, as poll(2) takes it */
static int poll(struct pollfd *fds, unsigned long n, int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
  return (int)sys(__NR_ppoll, (long)fds, (long)n, ms < 0 ? 0 : (long)&t, 0, 0);
}
static ssize_t send(int fd, const void *buf, size_t n, int flags) {
  return sys6(__NR_sendto, fd, (long)buf, (long)n, flags, 0, 0);
}
static int getpeername(int fd, void *addr, socklen_t *len) { return (int)sys(__NR_getpeername, fd, (long)addr, (long)len, 0, 0); }
static long getdents64(int fd, void *buf, size_t n) { return sys(__NR_getdents64, fd, (long)buf, (long)n, 0, 0); }
static ssize_t readlink(const char *path, char *buf, size_t n) {
  return sys(__NR_readlinkat, AT_FDCWD, (long)path, (long)buf, (long)n, 0);
}
static int execve(const char *path, char *const argv[], char *const envp[]) {
  return (int)sys(__NR_execve, (long)path, (long)argv, (long)envp, 0, 0);
}
static void *mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off) {
  long r = sys6(__NR_mmap, (long)addr, (long)n, prot, flags, fd, off);
  return r == -1 ? MAP_FAILED : (void *)r;
}
static void *mremap(void *old, size_t old_n, size_t n, int flags) {
  long r = sys(__NR_mremap, (long)old, (long)old_n, (long)n, flags, 0);
  return r == -1 ? MAP_FAILED : (void *)r;
}
static int munmap(void *addr, size_t n) { return (int)sys(__NR_munmap, (long)addr, (long)n, 0, 0, 0); }
static int open(const char *path, int flags, unsigned mode) { return (int)sys(__NR_openat, AT_FDCWD, (long)path, flags, mode, 0); }
static int mkdir(const char *path, unsigned mode) { return (int)sys(__NR_mkdirat, AT_FDCWD, (long)path, mode, 0, 0); }
static int rename(const char *from, const char *to) { return (int)sys(__NR_renameat2, AT_FDCWD, (long)from, AT_FDCWD, (long)to, 0); }
static int flock(int fd, int op) { return (int)sys(__NR_flock, fd, op, 0, 0, 0); }
static ssize_t pread(int fd, void *buf, size_t n, off_t off) { return sys(__NR_pread64, fd, (long)buf, (long)n, off, 0); }
static ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return sys(__NR_pwrite64, fd, (long)buf, (long)n, off, 0); }
static int ftruncate(int fd, off_t n) { return (int)sys(__NR_ftruncate, fd, n, 0, 0, 0); }
static int chdir(const char *path) { return (int)sys(__NR_chdir, (long)path, 0, 0, 0, 0); }
static unsigned umask(unsigned mask) { return (unsigned)sys(__NR_umask, mask, 0, 0, 0, 0); }
static int getpid(void) { return (int)sys(__NR_getpid, 0, 0, 0, 0, 0); }
static int getppid(void) { return (int)sys(__NR_getppid, 0, 0, 0, 0, 0); }
static unsigned getuid(void) { return (unsigned)sys(__NR_getuid, 0, 0, 0, 0, 0); }
static unsigned geteuid(void) { return (unsigned)sys(__NR_geteuid, 0, 0, 0, 0, 0); }
static int setsid(void) { return (int)sys(__NR_setsid, 0, 0, 0, 0, 0); }
/* fork(2) as clone(2) with only SIGCHLD: aarch64 has no fork system call, and the arguments mean the same on both */
static int fork(void) { return (int)sys(__NR_clone, SIGCHLD, 0, 0, 0, 0); }
static int waitpid(int pid, int *status, int options) { return (int)sys(__NR_wait4, pid, (long)status, options, 0, 0); }
static int clock_gettime(int clock, struct timespec *t) { return (int)sys(__NR_clock_gettime, clock, (long)t, 0, 0, 0); }
/* The CPUs this process may run on, as a mask into `mask` (`n` bytes); the bytes written, or -1. */
static long cpu_affinity(void *mask, size_t n) { return sys(__NR_sched_getaffinity, 0, (long)n, (long)mask, 0, 0); }
/* Every signal unblocked (a program started from here must not inherit the caller's mask). */
static void unblock_signals(void) {
  unsigned long none = 0;
  sys(__NR_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof(none), 0);
}
/* Closes every descriptor from `low` up. */
static void close_from(int low) {
  if (sys(__NR_close_range, low, ~0U, 0, 0, 0) == 0) return;
  for (int fd = low; fd < 4096; fd++) sys(__NR_close, fd, 0, 0, 0, 0);
}

/* What the launcher reads of a file's status (struct stat's layout differs between x86_64 and aarch64). */
struct file_info {
  unsigned long dev, ino;
  unsigned mode, uid;
  long size;
  long long mtime_ns;
};
static int file_info_of(long raw_result, const unsigned long *st, struct file_info *out) {
  if (raw_result != 0) return -1;
  out->dev = st[0];
  out->ino = st[1];
#if defined(__x86_64__)
  out->mode = (unsigned)(st[3] & 0xffffffff);
  out->uid = (unsigned)(st[3] >> 32);
  out->size = (long)st[6];
#else
  out->mode = (unsigned)(st[2] & 0xffffffff);
  out->uid = (unsigned)(st[3] & 0xffffffff);
  out->size = (long)st[6];
#endif
  out->mtime_ns = (long long)st[11] * 1000000000LL + (long long)st[12]; /* st_mtime, st_mtime_nsec: the same place on both */
  return 0;
}
/* The status of `path` (of the link itself when `follow` is 0). */
static int path_info(const char *path, int follow, struct file_info *out) {
  unsigned long st[32];
  return file_info_of(sys(__NR_newfstatat, AT_FDCWD, (long)path, (long)st, follow ? 0 : AT_SYMLINK_NOFOLLOW, 0), st, out);
}
static int fd_info(int fd, struct file_info *out) {
  unsigned long st[32];
  return file_info_of(sys(__NR_fstat, fd, (long)st, 0, 0, 0), st, out);
}

static __attribute__((noreturn)) void _exit(int status) {
  for (;;) raw_syscall(__NR_exit_group, status, 0, 0, 0, 0, 0);
}

/* The compiler may emit calls to these four itself (struct copies, zeroing), so they have external names. */
void *memcpy(void *to, const void *from, size_t n) {
  unsigned char *t = to;
  const unsigned char *f = from;
  while (n--) *t++ = *f++;
  return to;
}
void *memset(void *to, int c, size_t n) {
  unsigned char *t = to;
  while (n--) *t++ = (unsigned char)c;
  return to;
}
void *memmove(void *to, const void *from, size_t n) {
  unsigned char *t = to;
  const unsigned char *f = from;
  if (t < f) {
    while (n--) *t++ = *f++;
  } else {
    while (n--) t[n] = f[n];
  }
  return to;
}
int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (; n--; x++, y++) if (*x != *y) return *x - *y;
  return 0;
}
static size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}
static int strcmp(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return (unsigned char)*a - (unsigned char)*b;
}
static int strncmp(const char *a, const char *b, size_t n) {
  for (; n; n--, a++, b++) {
    if (*a != *b) return (unsigned char)*a - (unsigned char)*b;
    if (!*a) return 0;
  }
  return 0;
}
static char *strrchr(const char *s, int c) {
  const char *last = NULL;
  for (;; s++) {
    if (*s == (char)c) last = s;
    if (!*s) return (char *)last;
  }
}

/*
 * The working directory. One that is not reachable from our root (a process that entered another mount
 * namespace, as `nsenter --mount --wd` does) comes back from the kernel as "(unreachable)/path": the path is
 * taken when it names the same directory as "." (what glibc's getcwd finds by walking up through ".."), else none.
 */
static char *getcwd(char *buf, size_t n) {
  static const char mark[] = "(unreachable)";
  const size_t m = sizeof(mark) - 1;
  if (sys(__NR_getcwd, (long)buf, (long)n, 0, 0, 0) <= 0) return NULL;
  if (buf[0] == '/') return buf;
  if (strncmp(buf, mark, m) != 0 || buf[m] != '/') return NULL;
  unsigned long here[32], there[32]; /* struct stat: st_dev and st_ino first on x86_64 and aarch64 */
  if (sys(__NR_newfstatat, AT_FDCWD, (long)".", (long)here, 0, 0) != 0 ||
      sys(__NR_newfstatat, AT_FDCWD, (long)(buf + m), (long)there, 0, 0) != 0 || here[0] != there[0] || here[1] != there[1]) {
    return NULL;
  }
  memmove(buf, buf + m, strlen(buf + m) + 1);
  return buf;
}

int main(int argc, char **argv, char **envp);

/* The process entry: the kernel leaves argc, argv and the environment on the stack. */
__attribute__((noreturn, used)) void launcher_start(long *sp) {
  int argc = (int)sp[0];
  char **argv = (char **)(sp + 1);
  _exit(main(argc, argv, argv + argc + 1));
}
#if defined(__x86_64__)
__asm__(".text\n.global _start\n_start:\n xor %ebp, %ebp\n mov %rsp, %rdi\n and $-16, %rsp\n call launcher_start\n hlt\n");
#else
__asm__(".text\n.global _start\n_start:\n mov x29, #0\n mov x30, #0\n mov x0, sp\n bl launcher_start\n");
#endif
