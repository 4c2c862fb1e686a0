#include "run_command.hpp"

#include "boundary.hpp"
#include "gate.hpp"
#include "guardian.hpp"
#include "host.hpp"
#include "printable.hpp"
#include "probe.hpp"
#include "record_journal.hpp"
#include "record_store.hpp"
#include "report.hpp"
#include "state_dir.hpp"
#include "supervisor.hpp"
#include "takedown.hpp"
#include "timeout_cli.hpp"
#include "user_scope.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <system_error>
#include <tuple>

namespace treeguard {

namespace {

// One line on stderr. stderr may be a pipe nobody reads any more (-v into
// `| head`): SIGPIPE is ignored (host_init) and a failed write is dropped,
// so it never ends the run nor loses COMMAND's status.
void print_line(const std::string& line) noexcept {
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void print_error(const std::string& message) {
  // One line, even for a path or a value holding a newline.
  print_line(fmt::format("treeguard: error: {}\n", escaped(message)));
}

// The state directory of contract 5, checked; an error line and nullopt
// when it is unusable.
std::optional<std::filesystem::path> checked_state_dir(const std::optional<std::string>& requested,
                                                       const Logger& log = Logger()) {
  auto dir = open_state_dir(requested);
  if (!dir) {
    print_error(dir.error().message());
    return std::nullopt;
  }
  if (log) {
    log(fmt::format("state directory {} (from {})", dir->path.string(), dir->source));
  }
  return dir->path;
}

std::string current_dir() {
  std::error_code error;
  auto cwd = std::filesystem::current_path(error);
  return error ? std::string("?") : cwd.string();
}

// The tree's OOM kills (a line unless -q: a COMMAND that died of SIGKILL
// says why) and, with -v, what it used, as the run's last verbose line (the
// one line saying treeguard ended the work, when it did, follows it).
void report_usage(const RunOutcome& outcome, const RunOptions& options, const Logger& log) {
  if (!outcome.usage) {
    return;
  }
  const TreeUsage& usage = *outcome.usage;
  if (!options.quiet && usage.oom_kills && *usage.oom_kills > 0) {
    print_line(fmt::format(
        "treeguard: the kernel's OOM killer killed {} process(es) in the boundary{}\n",
        *usage.oom_kills,
        options.limits.memory_max
            ? fmt::format(" (--memory-max {})", format_bytes(*options.limits.memory_max))
            : std::string()));
  }
  log(fmt::format("consumed {}", describe_usage(usage)));
}

// The error line when COMMAND could not be started. In timeout's words
// under its grammar; under run, a first word that is not found but reads as
// a duration (`treeguard run 10 make`) gets the two command lines meant.
std::string spawn_failure_line(const RunOptions& options, const RunOutcome& outcome) {
  const Error& error = *outcome.spawn_error;
  const std::string& first = options.command.front();
  if (options.timeout_program && outcome.exit_code >= 126) {
    return fmt::format("{}: failed to run command '{}': {}\n", *options.timeout_program,
                       escaped(first), error.code.message());
  }
  std::string line = fmt::format("treeguard: error: {}", escaped(outcome.message));
  if (outcome.exit_code == 127 && options.command.size() > 1 && parse_timeout_duration(first)) {
    std::string rest;
    for (std::size_t i = 1; i < options.command.size(); ++i) {
      rest += " " + shell_quoted(options.command[i]);
    }
    line += fmt::format("; for a deadline of {0}: treeguard run -t {0}{1}, or treeguard "
                        "timeout {0}{1}",
                        escaped(first), rest);
  }
  return line + "\n";
}

// timeout -v: "timeout: sending signal TERM to command 'sleep'", as the
// signal goes.
std::function<void(Signal)> timeout_announcer(const RunOptions& options) {
  if (!options.timeout_program || !options.timeout_verbose) {
    return {};
  }
  return [program = *options.timeout_program,
          command = escaped(options.command.front())](Signal signal) {
    print_line(fmt::format("{}: sending signal {} to command '{}'\n", program, signal_name(signal),
                           command));
  };
}

}  // namespace

std::optional<std::string> stop_line(const RunOptions& options, const RunOutcome& outcome) {
  const std::string signal = signal_name(options.policy.stop_signal);
  // Who was killed, by name (many runs share one log under make -j: the
  // line also says whose tree it was), and what ended their grace: its
  // length, or a second interrupt that cut it short.
  const std::size_t count = outcome.forced_members.size();
  const std::string cut_short =
      outcome.grace_cut_by
          ? fmt::format(" when {} cut the grace period short", signal_name(*outcome.grace_cut_by))
          : std::string();
  const std::string killed =
      count == 0 ? "killed what was left" + cut_short
      : options.policy.stop_signal == signals::kill
          ? fmt::format("killed {} by SIGKILL: {}", count, describe_members(outcome.forced_members))
      : outcome.grace_cut_by ? fmt::format("killed {} that resisted {}{}: {}", count, signal,
                                           cut_short, describe_members(outcome.forced_members))
                             : fmt::format("killed {} that resisted {} for {}: {}", count, signal,
                                           format_duration(options.policy.kill_after),
                                           describe_members(outcome.forced_members));
  const std::string whose = fmt::format(
      " (COMMAND: {})", printable(fmt::format("{}", fmt::join(options.command, " ")), 60));
  if (outcome.cause == StopCause::deadline) {
    const std::string deadline = deadline_name(outcome, options.policy);
    if (!outcome.forced) {
      return fmt::format("treeguard: {} passed: COMMAND's tree was sent {}{}\n", deadline, signal,
                         whose);
    }
    return fmt::format("treeguard: {} passed: {}{}\n", deadline, killed, whose);
  }
  if (outcome.cause == StopCause::signal) {
    // A stop request (a CI runner's cancel: INT, then TERM) ends the work
    // whether or not anything had to be forced: say so.
    const std::string stopped = signal_name(outcome.stop_signal.value_or(signals::term));
    if (!outcome.forced) {
      return fmt::format("treeguard: stopped on {}: COMMAND's tree was sent {} and ended{}\n",
                         stopped, signal, whose);
    }
    return fmt::format("treeguard: stopped on {}: {}{}\n", stopped, killed, whose);
  }
  if (outcome.forced) {
    return fmt::format("treeguard: {}{}{}\n",
                       outcome.cause == StopCause::child_exited ? "COMMAND exited; left over, "
                                                                : "",
                       killed, whose);
  }
  return std::nullopt;
}

namespace {

// How many stale records one launch settles (see run_to_the_end).
constexpr std::size_t k_settle_per_launch = 64;

// After the run: retention, warnings, the report, the usage and the one
// line that says why treeguard (not COMMAND) ended the work.
void tell_the_end(const RunOptions& options, const RecordStore& store, const RecordJournal& journal,
                  const RunOutcome& outcome, std::int64_t started_at, const Logger& log) {
  if (options.keep_records && outcome.disposition == Disposition::pass) {
    // Retention: finished records do not pile up without bound.
    std::ignore = store.prune_finished(options.keep_limit);
  }

  if (!outcome.close_error.empty()) {
    print_line(fmt::format("treeguard: warning: {}\n", outcome.close_error));
  }
  if (journal.write_error() && outcome.disposition != Disposition::pass) {
    print_line(fmt::format("treeguard: warning: record {}: {}\n", journal.record().run_id,
                           journal.write_error()->message()));
  }
  if (options.report) {
    // The report never fails the run: whatever goes wrong is one warning.
    std::string why;
    try {
      auto written =
          write_report(*options.report, make_report(journal.record(), journal.timeline(), outcome,
                                                    started_at, unix_time_ns()));
      if (!written) {
        why = written.error().message();
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      print_line(fmt::format("treeguard: warning: report {}: {}\n", *options.report, why));
    }
  }
  report_usage(outcome, options, log);
  // A launcher's failure must not go unexplained (ninja shows stderr): one
  // line when treeguard, not COMMAND, ended the work. -q silences it; 122
  // has its own error line.
  if (!options.quiet && outcome.exit_code != 122) {
    if (auto line = stop_line(options, outcome)) {
      print_line(*line);
    }
  }
  if (outcome.spawn_error) {
    print_line(spawn_failure_line(options, outcome));
  } else if (!outcome.message.empty() && outcome.exit_code >= 121 && outcome.exit_code <= 127) {
    print_error(outcome.exit_code == 122
                    ? fmt::format("run {}: {}", journal.record().run_id, outcome.message)
                    : outcome.message);
  }
}

// How a run ends: the exit code, and the signal to end by instead where
// there is one (RunOutcome::end_signal).
struct RunEnd {
  RunEnd(int exit_code) : code(exit_code) {}  // NOLINT: every early return is a plain code
  RunEnd(int exit_code, std::optional<int> end_signal) : code(exit_code), signal(end_signal) {}
  int code;
  std::optional<int> signal;
};

RunEnd run_to_the_end(const RunOptions& options) {
  // Before anything else: a treeguard re-executed into its user scope
  // takes the scope's run id, and COMMAND never sees the marker.
  const ScopeEntry scope = take_scope_entry();
  const bool verbose = options.verbose > 0;
  Logger log = [verbose](const std::string& line) {
    if (verbose) {
      print_line(fmt::format("treeguard: {}\n", line));
    }
  };

  auto state_dir = checked_state_dir(options.state_dir, log);
  if (!state_dir) {
    return 125;
  }
  RecordStore store(*state_dir);
  auto host = make_host_view();

  // Dispatch gate: no new work into a directory with an unresolved tree.
  // It reads only the open records: finished ones are kept apart.
  GateVerdict verdict = evaluate_gate(store.list(), *host);
  for (const auto& line : verdict.unjudged) {
    log(line);
  }
  // What can never block again is settled once, so no later gate reads it
  // (or walks its boundary) again; a failure only costs the next launch.
  // At most k_settle_per_launch of them: thousands of stale records must
  // not stall this launch (and every concurrent one, settling the same);
  // the rest, which block nothing, are left to the launches after it.
  std::size_t settling = 0;
  for (const auto& settled : verdict.settle) {
    if (settling++ == k_settle_per_launch) {
      log(fmt::format("{} more stale record(s) left for later launches",
                      verdict.settle.size() - k_settle_per_launch));
      break;
    }
    // What the record names goes with it: an empty leaf left by a run
    // killed before its guardian was recorded (rmdir only; refused while
    // anything is in it).
    std::ignore = remove_recorded_boundary(settled);
    // Only if the record is still the one the gate read: a run that ended
    // by itself meanwhile, or one a guardian or sweep wrote since, is left.
    if (auto moved = store.settle(settled, Durability::lazy); !moved) {
      log(fmt::format("record {} not settled: {}", settled.run_id, moved.error().message()));
    }
  }
  if (!verdict.settle.empty()) {
    std::ignore = store.prune_finished(options.keep_limit);
  }
  if (!verdict.open()) {
    for (const auto& finding : verdict.findings) {
      print_line(fmt::format("treeguard: {}: {}\n",
                             verdict.corrupt() ? "error" : "dispatch refused", finding.line));
    }
    return verdict.exit_code();
  }

  BoundaryOptions boundary_options;
  boundary_options.requested = options.boundary;
  boundary_options.cgroup_parent = options.cgroup_parent;
  boundary_options.limits = options.limits;
  boundary_options.run_id = scope.run_id.value_or(new_run_id());
  boundary_options.entered = scope;
  const BoundaryPlan plan = plan_boundary(boundary_options);
  for (const auto& line : plan_lines(plan)) {
    log(fmt::format("plan for --boundary {}: {}", boundary_request_name(plan.request), line));
  }

  // Order matters (contract 5 and 7): the guardian, then the record, then
  // the boundary's own creation (the leaf), then COMMAND. Whenever treeguard
  // dies, what exists on the host is named by a record that the guardian or
  // `sweep` will find; a guardian that finds no record has nothing to do.
  // The common path writes the record once: the guardian's identity is in
  // it from the start, and a process group's record is written when
  // COMMAND's process exists but is still held before exec (its group and
  // identity known), so it never says "pgid pending" while COMMAND runs.
  const std::int64_t started_at = unix_time_ns();
  RunRecord record;
  record.run_id = boundary_options.run_id;
  record.boot_id = host->boot_id();
  if (std::string machine = host->machine_id(); !machine.empty()) {
    record.machine_id = std::move(machine);
  }
  if (const std::uint64_t ns = host->pid_namespace(); ns != 0) {
    record.pid_ns = ns;
    record.pid_ns_init = host->pid_namespace_init();
  }
  record.controller = current_process_identity();
  record.command = recorded_command(options.command);
  record.cwd = current_dir();
  record.phases.push_back(PhaseEntry{"spawn", started_at});
  std::unique_ptr<Boundary> owned_boundary;
  Result<std::unique_ptr<Guardian>> guardian = std::unique_ptr<Guardian>();
  auto save_error = [&](const Error& error) {
    return plain_error(fmt::format("state directory {}: {}", state_dir->string(), error.message()));
  };
  // The plan's candidates in turn, strongest first: each refused or
  // failed one's reason is kept for the error when none forms.
  std::vector<std::string> why(plan.candidates.size());
  const BoundaryCandidate* formed_from = nullptr;
  for (std::size_t i = 0; i < plan.candidates.size() && formed_from == nullptr; ++i) {
    const BoundaryCandidate& candidate = plan.candidates[i];
    why[i] = candidate.refused;
    if (!candidate.make) {
      continue;
    }
    // Nothing exists yet (no guardian, record or leaf): a scope
    // re-executes the same treeguard inside it, and returns only if it
    // could not.
    auto made = candidate.make(log);
    if (!made) {
      why[i] = made.error().message();
      log(fmt::format("{}: not formed: {}", candidate.name, why[i]));
      continue;
    }
    owned_boundary = std::move(*made);
    record.boundary.kind = owned_boundary->kind();
    record.boundary.address = owned_boundary->address();
    guardian = start_guardian(
        GuardianSpec{*state_dir, record.run_id, owned_boundary->kind(), owned_boundary->address()});
    if (!guardian) {
      print_error(guardian.error().message());
      return 125;
    }
    record.guardian.reset();
    record.reaper.reset();
    if (*guardian) {
      record.guardian = (*guardian)->identity();
      record.reaper = (*guardian)->reaper();
    }
    if (owned_boundary->kind() != BoundaryKind::process_group) {
      // The leaf's address is known now: the record names it before it
      // exists, and an unwritable state directory stops the run before
      // anything starts.
      auto saved = store.save(record, Durability::lazy);
      if (!saved) {
        print_error(save_error(saved.error()).message());
        return 125;
      }
    }
    auto formed = owned_boundary->form();
    if (formed) {
      formed_from = &candidate;
      break;
    }
    // Not formed after all: the next candidate, under a record and
    // guardian of its own.
    if (*guardian) {
      (*guardian)->dismiss();
    }
    std::ignore = store.remove(record.run_id);
    owned_boundary.reset();
    why[i] = formed.error().message();
    log(fmt::format("{}: not formed: {}", candidate.name, why[i]));
  }
  if (formed_from == nullptr) {
    print_error(plan_failure(plan, why));
    return 125;
  }
  Boundary& boundary = *owned_boundary;
  if (scope.run_id) {
    log(fmt::format("in the {} scope treeguard-{}.scope (Delegate=yes)", scope.manager,
                    *scope.run_id));
  } else if (!scope.refused.empty()) {
    log(scope.refused);
  }
  if (plan.request == BoundaryRequest::automatic && formed_from->kind == BoundaryKind::process_group
      && options.verbose) {
    for (const auto& advice : fallback_advice()) {
      log(advice);
    }
  }
  if (*guardian) {
    log(fmt::format("guardian pid {}", record.guardian->pid));
  }

  RecordJournal journal(store, record, boundary, options.keep_records);
  RealClock clock;
  SpawnSpec spec{options.command, record.run_id, {}};
  if (boundary.kind() == BoundaryKind::process_group) {
    // The record's one write on the common path, with COMMAND held: "pgid
    // N" and COMMAND as its first member. No record, no exec.
    spec.before_exec = [&journal, &save_error]() -> Result<void> {
      auto saved = journal.begin();
      if (!saved) {
        return fail(save_error(saved.error()));
      }
      return {};
    };
  }
  RunPolicy policy = options.policy;
  policy.announce = timeout_announcer(options);
  RunOutcome outcome = supervise(boundary, journal, clock, policy, spec, log);
  // The run's end is recorded: the guardian may go, unless the controller
  // could not take the tree down itself.
  if (*guardian && !outcome.guardian_must_act) {
    (*guardian)->dismiss();
  }
  try {
    tell_the_end(options, store, journal, outcome, started_at, log);
  } catch (const std::exception&) {
    // The run is over and recorded; only telling it failed (out of
    // memory). Its exit code stands: a run that started never ends 125.
    std::fputs("treeguard: warning: the run's end could not be told in full (internal error)\n",
               stderr);
  }
  return RunEnd(outcome.exit_code, outcome.end_signal);
}

}  // namespace

int command_run(const RunOptions& options) {
  const RunEnd end = run_to_the_end(options);
  // Everything is over (boundary gone, record and report written, the
  // guardian dismissed): end as COMMAND did (contract section 8).
  if (end.signal) {
    end_by_signal(*end.signal);
  }
  return end.code;
}

}  // namespace treeguard
