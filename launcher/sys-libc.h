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
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
