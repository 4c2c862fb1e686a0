#include "run_command.hpp"

#include "boundary.hpp"
#include "host.hpp"
#include "journal.hpp"
#include "supervisor.hpp"

#include <fmt/format.h>

#include <exception>

namespace treeguard {

namespace {

class MemoryJournal final : public Journal {
public:
  void phase(std::string_view) override {}
  void event(std::string_view) override {}
  Result<void> authorize(const AuthorityRequest&) override { return {}; }
  void finish(Disposition, int) override {}
};

} // namespace

int command_run(const RunOptions& options)
{
  const bool verbose = options.verbose > 0;
  Logger log = [verbose](const std::string& line) {
    if (verbose) {
      fmt::print(stderr, "treeguard: {}\n", line);
    }
  };
  std::string why_not;
  BoundaryOptions boundary_options;
  boundary_options.requested = options.boundary;
  boundary_options.cgroup_parent = options.cgroup_parent;
  boundary_options.run_id = new_run_id();
  boundary_options.why_not_stronger = &why_not;
  auto boundary = make_boundary(boundary_options);
  if (!boundary) {
    fmt::print(stderr, "treeguard: error: {}\n", boundary.error().message());
    return 125;
  }
  if (!why_not.empty()) {
    log(fmt::format("no cgroup boundary: {}", why_not));
  }

  MemoryJournal journal;
  RealClock clock;
  SpawnSpec spec{options.command};
  RunOutcome outcome;
  try {
    outcome = supervise(**boundary, journal, clock, options.policy, spec, log);
  } catch (const std::exception& e) {
    // Never leave the tree behind on an internal error.
    fmt::print(stderr, "treeguard: error: {}; taking the tree down\n", e.what());
    std::ignore = (*boundary)->kill_all();
    outcome.exit_code = 122;
  }
  if (outcome.disposition == Disposition::pass) {
    auto closed = (*boundary)->close();
    if (!closed) {
      fmt::print(stderr, "treeguard: warning: {}\n", closed.error().message());
    }
  }
  if (!outcome.message.empty() && (outcome.exit_code >= 121 && outcome.exit_code <= 127)) {
    fmt::print(stderr, "treeguard: error: {}\n", outcome.message);
  }
  return outcome.exit_code;
}

int command_status(const StatusOptions&)
{
  fmt::print(stderr, "treeguard: error: status is not built yet\n");
  return 125;
}

int command_sweep(const SweepOptions&)
{
  fmt::print(stderr, "treeguard: error: sweep is not built yet\n");
  return 125;
}

int command_resolve(const ResolveOptions&)
{
  fmt::print(stderr, "treeguard: error: resolve is not built yet\n");
  return 125;
}

} // namespace treeguard
