// What the user asked for, as plain structs (the command line's parse
// results), and the settings of a run that its two front ends (run's
// options, timeout's grammar) both take from flags or the environment.
// Neither front end is included here: each includes this.
#pragma once

#include "limits.hpp"
#include "record_store.hpp"
#include "result.hpp"
#include "state_dir.hpp"
#include "supervisor.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

struct RunOptions {
  RunPolicy policy;
  BoundaryRequest boundary = BoundaryRequest::automatic;
  std::string cgroup_parent;
  Limits limits;  // --memory-max, --pids-max
  std::optional<std::string> state_dir;
  bool keep_records = false;
  std::size_t keep_limit = k_default_keep_limit;  // finished records kept (--keep-limit)
  std::optional<std::string> report;
  int verbose = 0;
  bool quiet = false;
  std::vector<std::string> command;
  // Set by timeout's grammar: the name its words start with (errors, -v),
  // and no line of treeguard's own unless something failed.
  std::optional<std::string> timeout_program;
  bool timeout_verbose = false;  // timeout -v: each signal sent for the deadline
  // Signals COMMAND starts with at their default even if treeguard
  // inherited them ignored (timeout's deadline signal and ALRM).
  std::vector<Signal> command_defaults;
};

// Run options as text, checked once their source (flag or environment)
// is known.
struct RawRun {
  std::string timeout;
  std::string signal = "TERM";
  std::string kill_after = "10s";
  std::string leftovers = "kill";
  std::string boundary = "auto";
  std::string memory_max;
  std::string pids_max;
};

struct ProbeOptions {
  bool json = false;
};

struct StatusOptions {
  std::optional<std::string> run_id;  // only this run, its members included
  bool json = false;
  std::optional<std::string> state_dir;
};

struct SweepOptions {
  std::optional<std::string> run_id;  // none: every stale run
  std::optional<std::string> state_dir;
};

struct ResolveOptions {
  std::string run_id;
  std::string why;
  std::optional<std::string> state_dir;
};

// What the user asked for. `exit_now` is set for --help/--version (print
// `output`, exit 0); `error` for bad input (one line, exit 125).
struct Invocation {
  enum class Command { none, run, probe, status, sweep, resolve } command = Command::none;
  RunOptions run;
  ProbeOptions probe;
  StatusOptions status;
  SweepOptions sweep;
  ResolveOptions resolve;
  bool exit_now = false;
  std::string output;
  std::optional<std::string> error;
};

// Whether the option named (its long name, "--boundary") was given as a flag.
using OptionGiven = std::function<bool(const char* option)>;

// The options of a run that a front end (run, timeout) does not set by its
// own grammar, from the environment unless `given` as flags: the
// boundary, the cgroup parent, --leftovers, the limits. The error names the
// variable or the flag.
std::optional<std::string> resolve_run_environment(const OptionGiven& given,
                                                   const EnvironmentLookup& environment,
                                                   RawRun& raw, RunOptions& options);

// -t, -k and -s of `run`, from their flags or the environment unless
// `given` as flags; the error names the variable or the flag.
std::optional<std::string> resolve_run_timing(const OptionGiven& given,
                                              const EnvironmentLookup& environment, RawRun& raw,
                                              RunPolicy& policy);

// --leftovers' words, in the order --help lists them.
extern const std::vector<std::string> k_leftover_modes;

}  // namespace treeguard
