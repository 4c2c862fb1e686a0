/* LD_PRELOAD shim: fsync() and fdatasync() fail with EIO while the
 * environment has TG_FAULT_FSYNC_EIO=1, and pass through to libc otherwise.
 * TG_FAULT_FSYNC_EIO=dir fails them on directories only: the data of a file
 * reaches the disk, the rename that put it under its name does not (a
 * durable write is durable only once its directory is).
 * This is treeguard's only fault-injection seam: production code has no
 * hooks, so the fault reaches it exactly as a dying disk would. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int fault_enabled(int fd)
{
  const char* value = getenv("TG_FAULT_FSYNC_EIO");
  if (value == NULL) {
    return 0;
  }
  if (strcmp(value, "dir") == 0) {
    struct stat info;
    return fstat(fd, &info) == 0 && S_ISDIR(info.st_mode);
  }
  return strcmp(value, "1") == 0;
}

typedef int (*sync_fn)(int);

/* The next definition of `name` after this library: libc's. */
static sync_fn next_sync(const char* name)
{
  return (sync_fn)dlsym(RTLD_NEXT, name);
}

int fsync(int fd)
{
  if (fault_enabled(fd)) {
    errno = EIO;
    return -1;
  }
  static sync_fn real = NULL;
  if (real == NULL) {
    real = next_sync("fsync");
  }
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return real(fd);
}

int fdatasync(int fd)
{
  if (fault_enabled(fd)) {
    errno = EIO;
    return -1;
  }
  static sync_fn real = NULL;
  if (real == NULL) {
    real = next_sync("fdatasync");
  }
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return real(fd);
}
