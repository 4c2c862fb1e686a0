// What the supervisor tells the run's record as it goes. The record itself
// (a file in the state directory, fsynced where it matters) lives behind
// this interface, so the lifecycle can be tested without a disk.
#pragma once

#include "identity.hpp"
#include "port/vocabulary.hpp"
#include "result.hpp"
#include "signal_name.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

// What a forced kill is about to do, and why: written durably before it.
struct AuthorityRequest {
  std::string action;                // "cgroup.kill", "SIGKILL"
  std::vector<std::string> targets;  // the leaf's path, "pid 12 (start 3456)"
  std::string reason;                // "deadline 2s passed", "leftovers"
  // Who is alive, as the caller has just seen; unset: the journal asks the
  // boundary.
  std::optional<std::vector<MemberInfo>> alive;
};

class Journal {
public:
  virtual ~Journal() = default;

  // A phase of the lifecycle began ("running", "drain", "force", "verify").
  virtual void phase(std::string_view name) = 0;

  // Something worth a line in the report's timeline; `signal` when a
  // signal was received or sent.
  virtual void event(std::string_view what, std::optional<Signal> signal = std::nullopt) = 0;

  // Make the authority for a forced kill durable. An error means the kill
  // must not be sent.
  virtual Result<void> authorize(const AuthorityRequest& request) = 0;

  // --leftovers outer: `members` now belong to the run `to` (each named in
  // the record and the timeline).
  virtual void handed_over(const std::string& to, const std::vector<MemberInfo>& members) = 0;

  // The run is over; written once.
  virtual void finish(Disposition disposition, int exit_code) = 0;
};

}  // namespace treeguard
