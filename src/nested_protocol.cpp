#include "nested_protocol.hpp"

#include "run_id.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace treeguard {

std::string announcement_line(const Announcement& announcement) {
  return fmt::format("A {} {} {}\n", announcement.run_id, announcement.controller.pid,
                     announcement.controller.start_time);
}

bool says_finished(const std::string& said) {
  return said.find("\nD\n") != std::string::npos;
}

std::optional<Announcement> parse_announcement(const std::string& said) {
  char run_id[64] = {};
  ProcessIdentity controller;
  if (std::sscanf(said.c_str(), "A %63s %ld %llu\n", run_id, &controller.pid,
                  &controller.start_time)
          != 3
      || !is_valid_run_id(run_id)) {
    return std::nullopt;
  }
  return Announcement{run_id, controller};
}

}  // namespace treeguard
