// Runs a test's body in a forked child, so that what it changes (signal
// dispositions and masks, closed descriptors, resource limits) stays there.
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace treeguard::test {

// The child's exit status: `body`'s return value (0-255).
inline int exit_status_in_child(const std::function<int()>& body) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::_exit(body());
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace treeguard::test
