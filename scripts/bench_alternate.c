/* scripts/bench.sh's run-by-run rows: commands run in turn, one run each, round after round, so
 * that whatever the machine does meanwhile falls on all of them alike.
 *
 *   bench_alternate ROUNDS NAME COMMAND [ARGS...] [';;' NAME COMMAND [ARGS...]]...
 *
 * Each round runs every COMMAND once (the order reversed every other round), its standard output
 * to /dev/null, and takes its CPU time (user and system, of it and every process it waited for)
 * from getrusage(RUSAGE_CHILDREN) before and after. Prints one line per NAME: the median, the first
 * and the third quartile, in microseconds. COMMAND is a path (no PATH search). Exits 1 if a
 * COMMAND could not be started or did not exit 0.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

enum { max_rows = 16 };

static int ascending(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double cpu_us(const struct rusage* r) {
  return (double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1e6
         + (double)(r->ru_utime.tv_usec + r->ru_stime.tv_usec);
}

/* One run of ARGV: its CPU time in microseconds, or -1. */
static double one_run(char** argv, const posix_spawn_file_actions_t* quiet) {
  struct rusage before, after;
  getrusage(RUSAGE_CHILDREN, &before);
  pid_t pid;
  int status;
  if (posix_spawn(&pid, argv[0], quiet, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) != pid
      || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench_alternate: %s did not run and exit 0\n", argv[0]);
    return -1;
  }
  getrusage(RUSAGE_CHILDREN, &after);
  return cpu_us(&after) - cpu_us(&before);
}

int main(int argc, char** argv) {
  const int rounds = argc > 3 ? atoi(argv[1]) : 0;
  if (rounds < 1) {
    fprintf(stderr,
            "usage: bench_alternate ROUNDS NAME COMMAND [ARGS...] [';;' NAME COMMAND...]...\n");
    return 2;
  }
  char* names[max_rows];
  char** commands[max_rows];
  int rows = 0;
  for (int i = 2; i < argc && rows < max_rows;) {
    names[rows] = argv[i];
    commands[rows++] = argv + i + 1;
    while (i < argc && strcmp(argv[i], ";;") != 0)
      i++;
    if (i < argc)
      argv[i++] = NULL;
  }
  double* times[max_rows];
  for (int r = 0; r < rows; r++)
    times[r] = malloc(sizeof(double) * (size_t)rounds);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  for (int round = 0; round < rounds; round++) {
    for (int k = 0; k < rows; k++) {
      const int r = round % 2 ? rows - 1 - k : k;
      if ((times[r][round] = one_run(commands[r], &quiet)) < 0)
        return 1;
    }
  }
  for (int r = 0; r < rows; r++) {
    qsort(times[r], (size_t)rounds, sizeof(double), ascending);
    printf("%s %.1f %.1f %.1f\n", names[r], times[r][rounds / 2], times[r][rounds / 4],
           times[r][3 * rounds / 4]);
  }
  return 0;
}
