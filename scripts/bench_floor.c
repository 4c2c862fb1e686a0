/* The floor rows of scripts/bench.sh (section 1): the least a wrapper can do per run, with
 * nothing of treeguard's own work (no option parsing, no record parsed or built, no /proc walk),
 * built statically as treeguard is.
 *
 *   bench_floor spawn COMMAND [ARGS...]     spawn COMMAND the cheapest way (posix_spawn: the
 *                                           parent's memory is shared until exec), wait for it
 *   bench_floor guarded COMMAND [ARGS...]   the same, after starting a guardian: a process that
 *                                           is not the wrapper's child (a middle process starts
 *                                           it and exits; both share the wrapper's memory until
 *                                           exec, so nothing is copied), execs this program as
 *                                           "wait", and is dismissed once COMMAND has exited
 *   bench_floor wait                        the guardian: block until fd 3 says "go" or closes
 *   bench_floor nested STATE MOUNT COMMAND [ARGS...]
 *                                           a nested run's floor, inside an outer treeguard run
 *
 * The nested floor does the system calls a nested run makes under the contract's nested path, and
 * nothing else (no parsing, no checks): it keeps no file of STATE (the outer run's guardian holds a
 * nested run's record and answers its gate); it reads its identity and its cgroup in /proc,
 * announces itself to the outer run's guardian (STATE/nested/RUN, with words the guardian never
 * takes) and reads its answer, makes a leaf below its cgroup (MOUNT: the cgroup2 mount), clones
 * COMMAND into it (clone3), waits, and removes the leaf.
 *
 * COMMAND is a path (no PATH search). The exit status is COMMAND's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static int guardian_pipe = -1;
static char middle_stack[64 * 1024];
static char guardian_stack[64 * 1024];

static int guardian_start(void* unused) {
  (void)unused;
  /* fd 3 for the guardian, without close-on-exec (dup2 onto itself would keep it) */
  if (guardian_pipe == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(guardian_pipe, 3) < 0)
    _exit(126);
  char* argv[] = {"bench_floor", "wait", NULL};
  execve("/proc/self/exe", argv, environ);
  _exit(127);
}

static int middle_start(void* unused) {
  (void)unused;
  /* returns once the guardian has exec'd (CLONE_VFORK); the guardian is then reparented */
  if (clone(guardian_start, guardian_stack + sizeof guardian_stack,
            CLONE_VM | CLONE_VFORK | SIGCHLD, NULL)
      < 0)
    _exit(1);
  _exit(0);
}

static char text[65536];

/* Reads PATH whole into text (NUL-terminated); the length, or -1. */
static ssize_t read_whole(int dir, const char* path) {
  int fd = openat(dir, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t total = 0, n;
  while ((n = read(fd, text + total, sizeof text - 1 - (size_t)total)) > 0)
    total += n;
  close(fd);
  text[total] = 0;
  return total;
}

static int nested(const char* state, const char* mount, char** command) {
  const char* runs = getenv("TREEGUARD_RUNS");
  const char* outer = runs ? strrchr(runs, ' ') : NULL;
  outer = outer ? outer + 1 : runs;
  if (!outer || !*outer) {
    fprintf(stderr, "bench_floor nested: not inside a treeguard run (no TREEGUARD_RUNS)\n");
    return 125;
  }
  /* its identity and its cgroup */
  if (read_whole(AT_FDCWD, "/proc/self/stat") < 0)
    return 125;
  if (read_whole(AT_FDCWD, "/proc/self/cgroup") < 0 || !strstr(text, "0::"))
    return 125;
  char* own = strstr(text, "0::") + 3;
  own[strcspn(own, "\n")] = 0;
  char leaf[4096];
  snprintf(leaf, sizeof leaf, "%s%s/floor-%d", mount, own, getpid());
  /* announced to the outer run's guardian */
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  snprintf(address.sun_path, sizeof address.sun_path, "%s/nested/%s", state, outer);
  int announced = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  char words[128];
  int said = snprintf(words, sizeof words, "A floor-%d-not-a-run-id %d 0\n", getpid(), getpid());
  if (connect(announced, (struct sockaddr*)&address, sizeof address) != 0
      || write(announced, words, (size_t)said) != said
      || read(announced, words, sizeof words) <= 0) {
    fprintf(stderr, "bench_floor nested: no guardian at %s\n", address.sun_path);
    return 125;
  }
  /* the leaf, COMMAND cloned into it */
  if (mkdir(leaf, 0755) != 0)
    return 125;
  int leaf_fd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct clone_args args = {.flags = CLONE_VFORK | CLONE_INTO_CGROUP,
                            .exit_signal = SIGCHLD,
                            .cgroup = (unsigned long long)leaf_fd};
  pid_t child = leaf_fd < 0 ? -1 : (pid_t)syscall(SYS_clone3, &args, sizeof args);
  if (child == 0) {
    execve(command[0], command, environ);
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child)
    status = 125 << 8;
  close(leaf_fd);
  if (rmdir(leaf) != 0)
    return 125;
  close(announced);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "wait") == 0) {
    char byte;
    (void)read(3, &byte, 1);
    return 0;
  }
  if (argc >= 5 && strcmp(argv[1], "nested") == 0)
    return nested(argv[2], argv[3], argv + 4);
  if (argc < 3 || (strcmp(argv[1], "spawn") != 0 && strcmp(argv[1], "guarded") != 0)) {
    fprintf(stderr, "usage: bench_floor spawn|guarded COMMAND [ARGS...]\n"
                    "       bench_floor nested STATE MOUNT COMMAND [ARGS...]\n");
    return 2;
  }
  int dismiss = -1;
  if (strcmp(argv[1], "guarded") == 0) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
      return 125;
    guardian_pipe = fds[0];
    dismiss = fds[1];
    pid_t middle = clone(middle_start, middle_stack + sizeof middle_stack,
                         CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
    if (middle < 0 || waitpid(middle, NULL, 0) != middle)
      return 125;
    close(fds[0]);
  }
  pid_t child;
  if (posix_spawn(&child, argv[2], NULL, NULL, argv + 2, environ) != 0)
    return 127;
  int status = 0;
  if (waitpid(child, &status, 0) != child)
    return 125;
  if (dismiss >= 0)
    (void)write(dismiss, "D", 1);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
