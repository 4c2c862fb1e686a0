// A word said to a process that waits for it on a FIFO (`read go < FIFO`
// in a shell), for the cases that start a member at a moment of their
// choosing.
#pragma once

#include "posix/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <string>

namespace treeguard::test {

// Opens `fifo` for writing once its reader has it open (polled every 2 ms,
// until `until`), and writes "go\n". Whether the word was said.
inline bool say_go(const std::string& fifo, std::chrono::steady_clock::time_point until) {
  platform::UniqueFd word;
  while (!word && std::chrono::steady_clock::now() < until) {
    word.reset(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    if (!word) {
      struct timespec pause = {0, 2'000'000};
      ::nanosleep(&pause, nullptr);
    }
  }
  return word && ::write(word.get(), "go\n", 3) == 3;
}

}  // namespace treeguard::test
