/* Checks the tg_fsync_eio shim itself: run with the shim preloaded.
 *   fsync_probe eio    fsync and fdatasync must fail with EIO
 *   fsync_probe pass   both must succeed (the shim passes through)
 *   fsync_probe dir    both must succeed on a file and fail with EIO on a
 *                      directory (TG_FAULT_FSYNC_EIO=dir)
 * Exit 0 when they behave as asked, 1 otherwise (with a line saying how). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check(const char* name, int result, int expect_eio)
{
  const int error = errno;
  if (expect_eio ? (result == -1 && error == EIO) : result == 0) {
    return 0;
  }
  fprintf(stderr, "fsync_probe: %s returned %d (%s), expected %s\n", name, result,
          result == 0 ? "ok" : strerror(error), expect_eio ? "-1/EIO" : "0");
  return 1;
}

int main(int argc, char** argv)
{
  if (argc != 2
      || (strcmp(argv[1], "eio") != 0 && strcmp(argv[1], "pass") != 0
          && strcmp(argv[1], "dir") != 0)) {
    fprintf(stderr, "usage: fsync_probe eio|pass|dir\n");
    return 2;
  }
  const int expect_eio = strcmp(argv[1], "eio") == 0;
  const int expect_dir_eio = expect_eio || strcmp(argv[1], "dir") == 0;
  char path[] = "/tmp/tg-fsync-probe-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    perror("fsync_probe: mkstemp");
    return 2;
  }
  unlink(path);
  if (write(fd, "x", 1) != 1) {
    perror("fsync_probe: write");
    return 2;
  }
  int failures = check("fsync", fsync(fd), expect_eio);
  failures += check("fdatasync", fdatasync(fd), expect_eio);
  close(fd);
  const int dir_fd = open("/tmp", O_RDONLY | O_DIRECTORY);
  if (dir_fd < 0) {
    perror("fsync_probe: open /tmp");
    return 2;
  }
  failures += check("fsync of a directory", fsync(dir_fd), expect_dir_eio);
  failures += check("fdatasync of a directory", fdatasync(dir_fd), expect_dir_eio);
  close(dir_fd);
  return failures == 0 ? 0 : 1;
}
