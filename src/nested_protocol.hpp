// The nested-run protocol: what a run nested in a cgroup leaf says to the
// guardian of the run whose leaf holds it (that guardian then guards it, and
// the nested run starts no guardian of its own). The guardian listens on a
// unix socket, nested_runs_socket(); the nested controller connects, says
// its announcement line, holds the connection for the run, and says the
// finished line once its record is finished. A connection that ends without
// the finished line is a controller that died. Only the words are here; the
// sockets are the platform's (platform/linux/guardian_nested.cpp).
#pragma once

#include "identity.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace treeguard {

// Where a cgroup run's guardian listens for the runs nested in its leaf (a
// unix socket): each connects, announces itself, and holds the connection
// until its record is finished. Listened on while that guardian guards
// (from before the run's COMMAND starts until it is dismissed): what the
// run advertises; nobody listening, a nested run has a guardian of its own.
inline std::filesystem::path nested_runs_socket(const std::filesystem::path& state_dir,
                                                const std::string& run_id) {
  return state_dir / "nested" / run_id;
}

// Who announced itself: the nested run's id and its controller.
struct Announcement {
  std::string run_id;
  ProcessIdentity controller;
};

// The announcement a nested controller says first: "A RUN-ID PID START\n".
std::string announcement_line(const Announcement& announcement);

// What it says once its record is finished: the guardian lets it go.
inline constexpr std::string_view k_finished_line = "D\n";

// More than this said on one connection is not an announcement: the
// guardian stops reading it and never acts on it.
inline constexpr std::size_t k_max_said = 1024;

// Whether `said` (all a connection said so far) holds the finished line
// after the announcement.
bool says_finished(const std::string& said);

// The announcement at the start of `said`; nullopt when there is none (the
// controller died before it announced itself) or its run id is not one.
std::optional<Announcement> parse_announcement(const std::string& said);

}  // namespace treeguard
