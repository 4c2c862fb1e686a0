/* The floor rows of scripts/bench.sh (section 1): the least a wrapper can do per run, with
 * nothing of treeguard's (no record, no boundary, no /proc walk, no option parsing), built
 * statically as treeguard is.
 *
 *   bench_floor spawn COMMAND [ARGS...]     spawn COMMAND the cheapest way (posix_spawn: the
 *                                           parent's memory is shared until exec), wait for it
 *   bench_floor guarded COMMAND [ARGS...]   the same, after starting a guardian: a process that
 *                                           is not the wrapper's child (a middle process starts
 *                                           it and exits; both share the wrapper's memory until
 *                                           exec, so nothing is copied), execs this program as
 *                                           "wait", and is dismissed once COMMAND has exited
 *   bench_floor wait                        the guardian: block until fd 3 says "go" or closes
 *
 * COMMAND is a path (no PATH search). The exit status is COMMAND's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
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

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "wait") == 0) {
    char byte;
    (void)read(3, &byte, 1);
    return 0;
  }
  if (argc < 3 || (strcmp(argv[1], "spawn") != 0 && strcmp(argv[1], "guarded") != 0)) {
    fprintf(stderr, "usage: bench_floor spawn|guarded COMMAND [ARGS...]\n");
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
