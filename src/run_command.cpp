#include "run_command.hpp"

#include "after_death.hpp"
#include "boundary.hpp"
#include "gate.hpp"
#include "guardian.hpp"
#include "holdings.hpp"
#include "host.hpp"
#include "printable.hpp"
#include "probe.hpp"
#include "record_journal.hpp"
#include "record_store.hpp"
#include "report.hpp"
#include "run_id.hpp"
#include "state_dir.hpp"
#include "supervisor.hpp"
#include "takedown.hpp"
#include "timeout_cli.hpp"
#include "user_scope.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

namespace {

// Who was killed by force, and what ended their grace: its length, or a
// second interrupt that cut it short ("killed 2 that resisted TERM for
// 10s: sleep (pid 12), sh (pid 13)").
std::string killed_phrase(const RunOptions& options, const RunOutcome& outcome) {
  const std::string signal = signal_name(options.policy.stop_signal);
  const std::size_t count = outcome.forced_members.size();
  const std::string cut_short =
      outcome.grace_cut_by
          ? fmt::format(" when {} cut the grace period short", signal_name(*outcome.grace_cut_by))
          : std::string();
  return count == 0                                    ? "killed what was left" + cut_short
         : options.policy.stop_signal == signals::kill ? fmt::format(
               "killed {} by SIGKILL: {}", count, describe_members(outcome.forced_members))
         : outcome.grace_cut_by ? fmt::format("killed {} that resisted {}{}: {}", count, signal,
                                              cut_short, describe_members(outcome.forced_members))
                                : fmt::format("killed {} that resisted {} for {}: {}", count,
                                              signal, format_duration(outcome.grace),
                                              describe_members(outcome.forced_members));
}

// " (COMMAND: make check)": many runs share one log under make -j.
std::string whose_tree(const RunOptions& options) {
  return fmt::format(" (COMMAND: {})",
                     printable(fmt::format("{}", fmt::join(options.command, " ")), 60));
}

// A leftover and what it held: its most telling holding, or (`all`) every
// one: "python3 (pid 812) listening on 0.0.0.0:8000".
std::string leftover_said(const MemberInfo& member, const RunOutcome& outcome, bool all) {
  std::string out = describe_member(member);
  const ProcessHoldings* held = holdings_of(outcome.holdings, member);
  if (held == nullptr || held->holds.empty()) {
    return out;
  }
  if (!all) {
    return out + " " + describe_holding(held->holds.front());
  }
  std::vector<std::string> said;
  for (const auto& holding : held->holds) {
    said.push_back(describe_holding(holding));
  }
  out += ": " + fmt::format("{}", fmt::join(said, ", "));
  if (!held->note.empty()) {
    out += fmt::format(" ({})", held->note);
  }
  return out;
}

// What was done with the leftovers.
std::string leftovers_done(const RunOptions& options, const RunOutcome& outcome) {
  if (!outcome.handed_over.empty()) {
    return outcome.leaked ? fmt::format("{} handed to run {}, the rest taken down",
                                        outcome.handed_over.size(), outcome.handed_to)
                          : fmt::format("handed to run {}, which takes them down: not a leak",
                                        outcome.handed_to);
  }
  if (options.policy.leftovers == Leftovers::wait) {
    switch (outcome.cause) {
    case StopCause::deadline:
      return "waited for until the deadline, then taken down";
    case StopCause::signal:
      return "waited for until treeguard was stopped, then taken down";
    default:
      return "waited for";
    }
  }
  std::string done =
      outcome.forced ? "taken down: " + killed_phrase(options, outcome) : std::string("taken down");
  if (options.policy.leftovers == Leftovers::fail) {
    done += outcome.exit_code == k_exit_leaked
                ? "; a leak (--leftovers fail): exit 120"
                : "; a leak (--leftovers fail), and COMMAND's own exit status stands";
  }
  return done;
}

}  // namespace

std::optional<std::string> leftovers_line(const RunOptions& options, const RunOutcome& outcome) {
  const std::vector<MemberInfo>& left = outcome.leftovers;
  const bool said = options.timeout_program ? options.timeout_verbose : !options.quiet;
  if (left.empty() || !said) {
    return std::nullopt;
  }
  const bool all = options.verbose > 0;
  const std::size_t shown = std::min<std::size_t>(left.size(), 3);
  std::vector<std::string> named;
  for (std::size_t i = 0; i < shown; ++i) {
    named.push_back(leftover_said(left[i], outcome, false));
  }
  std::string line = fmt::format("treeguard: COMMAND left {} process{} behind", left.size(),
                                 left.size() == 1 ? "" : "es");
  if (!named.empty()) {
    line += fmt::format(": {}", fmt::join(named, ", "));
    if (left.size() > shown) {
      line += fmt::format(" and {} more", left.size() - shown);
    }
  }
  line += fmt::format("; {}{}\n", leftovers_done(options, outcome), whose_tree(options));
  for (std::size_t i = 0; all && i < left.size(); ++i) {
    line += fmt::format("treeguard: left behind: {}\n", leftover_said(left[i], outcome, true));
  }
  return line;
}

std::optional<std::string> stop_line(const RunOptions& options, const RunOutcome& outcome) {
  const std::string signal = signal_name(options.policy.stop_signal);
  const std::string killed = killed_phrase(options, outcome);
  const std::string whose = whose_tree(options);
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
  // Leftovers forced after COMMAND exited: leftovers_line() says it, with
  // what they held.
  if (outcome.forced && outcome.leftovers.empty()) {
    return fmt::format("treeguard: {}{}{}\n",
                       outcome.cause == StopCause::child_exited ? "COMMAND exited; left over, "
                                                                : "",
                       killed, whose);
  }
  return std::nullopt;
}

namespace {

// How many stale records one launch settles (RunSteps::settle_stale).
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
  if (auto line = leftovers_line(options, outcome)) {
    print_line(*line);
  }
  if (!options.quiet && outcome.exit_code != 122) {
    if (auto line = stop_line(options, outcome)) {
      print_line(*line);
    }
  }
  if (options.timeout_program && outcome.child_status && outcome.child_status->core_dumped) {
    print_line(fmt::format("{}: the monitored command dumped core\n", *options.timeout_program));
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

// One `treeguard run`, as named steps in order: open the state directory,
// pass the dispatch gate, form the boundary (guardian, record, leaf),
// supervise COMMAND, dismiss the guardian, tell the end. Each step that can
// end the run early returns its exit code.
class RunSteps {
public:
  explicit RunSteps(const RunOptions& options)
      : m_options(options),
        // Before anything else: a treeguard re-executed into its user scope
        // takes the scope's run id, and COMMAND never sees the marker.
        m_scope(take_scope_entry()),
        m_log([verbose = options.verbose > 0](const std::string& line) {
          if (verbose) {
            print_line(fmt::format("treeguard: {}\n", line));
          }
        }) {}

  RunEnd run();

private:
  std::optional<int> open_state();
  std::optional<int> pass_the_gate();
  void settle_stale(const std::vector<Settlement>& settle);
  void begin_record();
  std::optional<int> form();
  void say_how_formed() const;
  void find_enclosing_run();
  Result<EnclosingRun> enclosing_run() const;
  std::vector<EnclosingGuardian> enclosing_guardians() const;
  RunOutcome supervise_command();
  void dismiss_guardian(const RunOutcome& outcome);
  void tell(const RunOutcome& outcome);

  Error save_error(const Error& error) const {
    return plain_error(
        fmt::format("state directory {}: {}", m_state_dir.string(), error.message()));
  }

  const RunOptions& m_options;
  const ScopeEntry m_scope;
  const Logger m_log;
  std::filesystem::path m_state_dir;
  std::optional<RecordStore> m_store;
  // The open records as the gate read them: where a nested run finds the
  // record of the run it is nested in without reading it again.
  std::vector<StoredRecord> m_open_records;
  std::unique_ptr<HostView> m_host;
  BoundaryOptions m_boundary_options;
  BoundaryPlan m_plan;
  const BoundaryCandidate* m_formed_from = nullptr;  // the plan's candidate that formed
  std::int64_t m_started_at = 0;
  RunRecord m_record;
  std::unique_ptr<Boundary> m_boundary;
  std::unique_ptr<Guardian> m_guardian;
  std::optional<std::string> m_guarded_by;  // the enclosing run whose guardian guards this one
  std::optional<EnclosingRun> m_enclosing;  // --leftovers outer: where leftovers go
  std::optional<RecordJournal> m_journal;
};

RunEnd RunSteps::run() {
  if (auto refused = open_state()) {
    return *refused;
  }
  if (auto refused = pass_the_gate()) {
    return *refused;
  }
  begin_record();
  if (auto failed = form()) {
    return *failed;
  }
  say_how_formed();
  find_enclosing_run();
  const RunOutcome outcome = supervise_command();
  dismiss_guardian(outcome);
  tell(outcome);
  return RunEnd(outcome.exit_code, outcome.end_signal);
}

std::optional<int> RunSteps::open_state() {
  auto state_dir = checked_state_dir(m_options.state_dir, m_log);
  if (!state_dir) {
    return 125;
  }
  m_state_dir = *state_dir;
  m_store.emplace(m_state_dir);
  m_host = make_host_view();
  return std::nullopt;
}

// Dispatch gate: no new work into a directory with an unresolved tree.
// It reads only the open records: finished ones are kept apart.
std::optional<int> RunSteps::pass_the_gate() {
  m_open_records = m_store->list();
  GateVerdict verdict = evaluate_gate(m_open_records, *m_host);
  for (const auto& line : verdict.unjudged) {
    m_log(line);
  }
  settle_stale(verdict.settle);
  if (verdict.open()) {
    return std::nullopt;
  }
  for (const auto& finding : verdict.findings) {
    print_line(fmt::format("treeguard: {}: {}\n", verdict.corrupt() ? "error" : "dispatch refused",
                           finding.line));
  }
  return verdict.exit_code();
}

// What can never block again is settled once, so no later gate reads it
// (or walks its boundary) again; a failure only costs the next launch.
// At most k_settle_per_launch of them: thousands of stale records must
// not stall this launch (and every concurrent one, settling the same);
// the rest, which block nothing, are left to the launches after it.
void RunSteps::settle_stale(const std::vector<Settlement>& settle) {
  std::size_t settling = 0;
  for (const auto& [read, settled] : settle) {
    if (settling++ == k_settle_per_launch) {
      m_log(fmt::format("{} more stale record(s) left for later launches",
                        settle.size() - k_settle_per_launch));
      break;
    }
    // What the record names goes with it: an empty leaf left by a run
    // killed before its guardian was recorded (rmdir only; refused while
    // anything is in it). Only if the record is still the one the gate
    // read: a run that ended by itself meanwhile, or one a guardian or
    // sweep wrote since, is left.
    if (auto moved = settle_record(*m_store, read, settled, true, Durability::lazy); !moved) {
      m_log(fmt::format("record {} not settled: {}", settled.run_id, moved.error().message()));
    }
  }
  if (!settle.empty()) {
    std::ignore = m_store->prune_finished(m_options.keep_limit);
  }
}

// The record as it stands before anything exists: who, where, what; and
// the boundary plan for this host and request (-v prints it).
void RunSteps::begin_record() {
  m_boundary_options.requested = m_options.boundary;
  m_boundary_options.cgroup_parent = m_options.cgroup_parent;
  m_boundary_options.limits = m_options.limits;
  m_boundary_options.run_id = m_scope.run_id.value_or(new_run_id());
  m_boundary_options.entered = m_scope;
  m_boundary_options.state_dir = m_state_dir;
  m_plan = plan_boundary(m_boundary_options);
  for (const auto& line : plan_lines(m_plan)) {
    m_log(fmt::format("plan for --boundary {}: {}", boundary_request_name(m_plan.request), line));
  }

  m_started_at = unix_time_ns();
  m_record.run_id = m_boundary_options.run_id;
  m_record.boot_id = m_host->boot_id();
  if (std::string machine = m_host->machine_id(); !machine.empty()) {
    m_record.machine_id = std::move(machine);
  }
  if (const std::uint64_t ns = m_host->pid_namespace(); ns != 0) {
    m_record.pid_ns = ns;
    m_record.pid_ns_init = m_host->pid_namespace_init();
  }
  m_record.controller = current_process_identity();
  m_record.command = recorded_command(m_options.command);
  m_record.cwd = current_dir();
  m_record.phases.push_back(PhaseEntry{"spawn", m_started_at});
}

// Order matters (contract 5 and 7): the guardian, then the record, then
// the boundary's own creation (the leaf), then COMMAND. Whenever treeguard
// dies, what exists on the host is named by a record that the guardian or
// `sweep` will find; a guardian that finds no record has nothing to do.
// The common path writes the record once: the guardian's identity is in
// it from the start, and a process group's record is written when
// COMMAND's process exists but is still held before exec (its group and
// identity known), so it never says "pgid pending" while COMMAND runs.
// The plan's candidates are tried in turn, strongest first: each refused
// or failed one's reason is kept for the error when none forms.
std::optional<int> RunSteps::form() {
  std::vector<std::string> why(m_plan.candidates.size());
  for (std::size_t i = 0; i < m_plan.candidates.size(); ++i) {
    const BoundaryCandidate& candidate = m_plan.candidates[i];
    why[i] = candidate.refused;
    if (!candidate.make) {
      continue;
    }
    // Nothing exists yet (no guardian, record or leaf): a scope
    // re-executes the same treeguard inside it, and returns only if it
    // could not.
    auto made = candidate.make(m_log);
    if (!made) {
      why[i] = made.error().message();
      m_log(fmt::format("{}: not formed: {}", candidate.name, why[i]));
      continue;
    }
    m_boundary = std::move(*made);
    m_record.boundary.kind = m_boundary->kind();
    m_record.boundary.address = m_boundary->address();
    GuardianSpec spec{m_state_dir, m_record.run_id, m_boundary->kind(), m_boundary->address()};
    spec.controller = m_record.controller;
    if (m_boundary->kind() == BoundaryKind::cgroup) {
      spec.enclosing = enclosing_guardians();
    }
    auto guardian = start_guardian(spec);
    if (!guardian) {
      print_error(guardian.error().message());
      return 125;
    }
    m_guardian = std::move(*guardian);
    m_guarded_by.reset();
    for (const auto& enclosing : spec.enclosing) {
      if (m_guardian && m_guardian->identity() == enclosing.guardian) {
        m_guarded_by = enclosing.run_id;
      }
    }
    m_record.guardian.reset();
    m_record.reaper.reset();
    if (m_guardian) {
      m_record.guardian = m_guardian->identity();
      m_record.reaper = m_guardian->reaper();
    }
    if (m_boundary->kind() != BoundaryKind::process_group) {
      // The leaf's address is known now: the record names it before it
      // exists, and an unwritable state directory stops the run before
      // anything starts.
      auto saved = m_store->save(m_record, Durability::lazy);
      if (!saved) {
        print_error(save_error(saved.error()).message());
        return 125;
      }
    }
    auto formed = m_boundary->form();
    if (formed) {
      m_formed_from = &candidate;
      return std::nullopt;
    }
    // Not formed after all: the next candidate, under a record and
    // guardian of its own.
    if (m_guardian) {
      m_guardian->dismiss();
      m_guardian.reset();
    }
    std::ignore = m_store->remove(m_record.run_id);
    m_boundary.reset();
    why[i] = formed.error().message();
    m_log(fmt::format("{}: not formed: {}", candidate.name, why[i]));
  }
  print_error(plan_failure(m_plan, why));
  return 125;
}

// -v: where the boundary came from, and why not a stronger one.
void RunSteps::say_how_formed() const {
  if (m_scope.run_id) {
    m_log(fmt::format("in the {} scope treeguard-{}.scope (Delegate=yes)", m_scope.manager,
                      *m_scope.run_id));
  } else if (!m_scope.refused.empty()) {
    m_log(m_scope.refused);
  }
  if (m_plan.request == BoundaryRequest::automatic
      && m_formed_from->kind == BoundaryKind::process_group && m_options.verbose) {
    for (const auto& advice : fallback_advice()) {
      m_log(advice);
    }
  }
  if (m_guardian && m_guarded_by) {
    m_log(fmt::format("guardian pid {}: run {}'s, which guards the runs nested in its leaf",
                      m_record.guardian->pid, *m_guarded_by));
  } else if (m_guardian) {
    m_log(fmt::format("guardian pid {}", m_record.guardian->pid));
  }
}

// --leftovers outer: the run this one runs inside, or -v's one line saying
// that there is none (the leftovers are then killed) with a command that
// gives them one.
void RunSteps::find_enclosing_run() {
  if (m_options.policy.leftovers != Leftovers::outer) {
    return;
  }
  auto found = enclosing_run();
  if (found) {
    m_enclosing = *found;
    m_log(fmt::format("--leftovers outer: what COMMAND leaves behind goes to run {} ({} {})",
                      found->run_id, boundary_kind_name(found->kind), found->address));
    return;
  }
  std::string command;
  for (const auto& word : m_options.command) {
    command += " " + shell_quoted(word);
  }
  m_log(fmt::format("--leftovers outer: no enclosing run ({}), so leftovers are killed as with "
                    "--leftovers kill; run inside one, as in: treeguard run -- treeguard run "
                    "--leftovers outer --{}",
                    found.error().message(), command));
}

// The enclosing run is the last one named in this treeguard's own marker
// (COMMAND's environment gets the list, outermost first), as its record in
// this state directory has it, while it is still running; for a process
// group, only if its controller is where this run's orphans go (the
// guardian's reaper): they become its members when this treeguard exits.
// A leaf's containment, and a job's nesting, are checked at the hand-over
// (Boundary::hand_over).
Result<EnclosingRun> RunSteps::enclosing_run() const {
  const char* marker = std::getenv(k_run_marker);
  const std::string id = innermost_run(marker != nullptr ? marker : "");
  if (id.empty()) {
    return fail(plain_error(
        fmt::format("not inside a treeguard run: no {} in the environment", k_run_marker)));
  }
  auto record = m_store->load(id);
  if (!record) {
    return fail(plain_error(
        fmt::format("run {} has no record in the state directory {}: give both runs the same "
                    "--state-dir or TREEGUARD_STATE_DIR",
                    escaped(id), m_state_dir.string())));
  }
  if (record->disposition != Disposition::pending) {
    return fail(plain_error(fmt::format("run {} is over", id)));
  }
  const BoundaryKind kind = record->boundary.kind;
  if (kind == BoundaryKind::pid_namespace) {
    return fail(plain_error(
        fmt::format("run {}'s {} boundary takes no processes in", id, boundary_kind_name(kind))));
  }
  // A job's members stay in every job it is nested in (Windows has no
  // moving out of a job): a job is handed to only by a job nested in it,
  // and hands to nothing else.
  if ((kind == BoundaryKind::job) != (m_record.boundary.kind == BoundaryKind::job)) {
    return fail(plain_error(fmt::format("run {}'s {} boundary cannot take a {} boundary's members",
                                        id, boundary_kind_name(kind),
                                        boundary_kind_name(m_record.boundary.kind))));
  }
  if (kind == BoundaryKind::process_group
      && (!m_record.reaper || *m_record.reaper != record->controller)) {
    return fail(plain_error(fmt::format(
        "run {}'s controller (pid {}) is not where this run's orphans go ({})", id,
        record->controller.pid,
        m_record.reaper ? fmt::format("pid {}", m_record.reaper->pid) : std::string("unknown"))));
  }
  return EnclosingRun{id, kind, record->boundary.address};
}

// The runs this one is nested in, nearest first, whose guardians may guard
// it: each one's record (same state directory, as the gate read it) is
// pending and names a cgroup leaf that holds this run's leaf, and a
// guardian. start_guardian() announces this run to the first whose
// guardian listens (nested_runs_socket), else starts one of its own (a
// process-group run, another state directory, an older treeguard, a
// guardian gone). The common path of a run that is not nested costs one
// getenv.
std::vector<EnclosingGuardian> RunSteps::enclosing_guardians() const {
  std::vector<EnclosingGuardian> out;
  const char* marker = std::getenv(k_run_marker);
  std::istringstream words(marker != nullptr ? marker : "");
  std::vector<std::string> runs;
  for (std::string word; words >> word;) {
    runs.push_back(word);
  }
  const std::string& leaf = m_boundary->address();
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    const auto stored =
        std::find_if(m_open_records.begin(), m_open_records.end(), [&](const StoredRecord& open) {
          return open.record && open.record->run_id == *run;
        });
    if (stored == m_open_records.end()) {
      continue;
    }
    const auto& record = stored->record;
    if (record->disposition == Disposition::pending && record->boundary.kind == BoundaryKind::cgroup
        && record->guardian
        && leaf.compare(0, record->boundary.address.size() + 1, record->boundary.address + "/")
               == 0) {
      out.push_back(EnclosingGuardian{*run, *record->guardian, record->boundary.address});
    }
  }
  return out;
}

// COMMAND from spawn to its tree's end (supervisor.hpp's lifecycle).
RunOutcome RunSteps::supervise_command() {
  m_journal.emplace(*m_store, m_record, *m_boundary, m_options.keep_records);
  RealClock clock;
  SpawnSpec spec{m_options.command, m_record.run_id, {}};
  if (m_boundary->kind() == BoundaryKind::process_group) {
    // The record's one write on the common path, with COMMAND held: "pgid
    // N" and COMMAND as its first member. No record, no exec.
    spec.before_exec = [this]() -> Result<void> {
      auto saved = m_journal->begin();
      if (!saved) {
        return fail(save_error(saved.error()));
      }
      return {};
    };
  }
  RunPolicy policy = m_options.policy;
  policy.announce = timeout_announcer(m_options);
  policy.read_holdings = read_holdings;
  policy.enclosing = m_enclosing;
  return supervise(*m_boundary, *m_journal, clock, policy, spec, m_log);
}

// The run's end is recorded: the guardian may go, unless the controller
// could not take the tree down itself.
void RunSteps::dismiss_guardian(const RunOutcome& outcome) {
  if (!m_guardian) {
    return;
  }
  if (outcome.guardian_must_act) {
    m_guardian->keep_armed();  // not dismissed when RunSteps ends, either
  } else {
    m_guardian->dismiss();
  }
}

void RunSteps::tell(const RunOutcome& outcome) {
  try {
    tell_the_end(m_options, *m_store, *m_journal, outcome, m_started_at, m_log);
  } catch (const std::exception&) {
    // The run is over and recorded; only telling it failed (out of
    // memory). Its exit code stands: a run that started never ends 125.
    std::fputs("treeguard: warning: the run's end could not be told in full (internal error)\n",
               stderr);
  }
}

}  // namespace

int command_run(const RunOptions& options) {
  for (Signal signal : options.command_defaults) {
    default_in_command(signal);
  }
  const RunEnd end = RunSteps(options).run();
  // Everything is over (boundary gone, record and report written, the
  // guardian dismissed): end as COMMAND did (contract section 8).
  if (end.signal) {
    end_by_signal(*end.signal);
  }
  return end.code;
}

}  // namespace treeguard
