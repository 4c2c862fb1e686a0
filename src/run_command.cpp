// `treeguard run`: RunSteps, from the state directory and the gate to the
// exit code. One file over 500 lines because it is one sequence: each step
// below is a member of RunSteps, in the order run() calls them.
#include "run_command.hpp"

#include "after_death.hpp"
#include "gate.hpp"
#include "nesting.hpp"
#include "port/boundary.hpp"
#include "port/file_io.hpp"
#include "port/guardian.hpp"
#include "port/holdings.hpp"
#include "port/host.hpp"
#include "port/probe.hpp"
#include "port/takedown.hpp"
#include "port/user_scope.hpp"
#include "printable.hpp"
#include "record_journal.hpp"
#include "record_store.hpp"
#include "run_id.hpp"
#include "run_messages.hpp"
#include "state_dir.hpp"
#include "supervisor.hpp"

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

// The state directory (DESIGN.md [state-dir]), checked; an error line and
// nullopt when it is unusable.
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

// How many stale records one launch settles (RunSteps::settle_stale).
constexpr std::size_t k_settle_per_launch = 64;

// One `treeguard run`, as named steps in order: open the state directory,
// pass the dispatch gate, form the boundary (guardian, record, leaf),
// supervise COMMAND, dismiss the guardian, tell the end. Each step that can
// end the run early returns its exit code.
class RunSteps {
public:
  RunSteps(const RunOptions& options, const RunHost& host)
      : m_options(options), m_port(host),
        // Before anything else: a treeguard re-executed into its user scope
        // takes the scope's run id, and COMMAND never sees the marker.
        m_scope(take_scope_entry()),
        m_log([verbose = options.verbose > 0, say = host.say](const std::string& line) {
          if (verbose) {
            say(fmt::format("treeguard: {}\n", line));
          }
        }) {}

  RunEnd run();

private:
  std::optional<int> check_report() const;
  std::optional<int> open_state();
  bool may_be_held() const;
  std::optional<int> pass_the_gate();
  void settle_stale(const std::vector<Settlement>& settle);
  void begin_record();
  std::optional<int> form();
  std::optional<int> guard();
  std::optional<int> announce(const GuardianSpec& spec);
  void guard_itself();
  std::optional<int> record_before_the_leaf();
  void abandon_candidate();
  void say_how_formed() const;
  void find_enclosing_run();
  RunOutcome supervise_command();
  void dismiss_guardian(const RunOutcome& outcome);
  void tell(const RunOutcome& outcome);

  Error save_error(const Error& error) const {
    return plain_error(
        fmt::format("state directory {}: {}", m_state_dir.string(), error.message()));
  }

  const RunOptions& m_options;
  const RunHost& m_port;
  const ScopeEntry m_scope;
  const Logger m_log;
  std::filesystem::path m_state_dir;
  std::optional<RecordStore> m_store;
  std::unique_ptr<HostView> m_host;
  BoundaryOptions m_boundary_options;
  BoundaryPlan m_plan;
  const BoundaryCandidate* m_formed_from = nullptr;  // the plan's candidate that formed
  std::int64_t m_started_at = 0;
  RunRecord m_record;
  std::unique_ptr<Boundary> m_boundary;
  std::unique_ptr<Guardian> m_guardian;
  // A run nested in a leaf may be held by an enclosing run's guardian: it
  // passes no gate here and writes no record (that guardian answers the gate
  // and holds the record) until found otherwise.
  bool m_may_be_held = false;
  std::optional<std::string> m_guarded_by;  // the enclosing run whose guardian holds this one
  std::optional<FileVersion> m_written;     // the record file as this run last wrote it
  std::optional<EnclosingRun> m_enclosing;  // --leftovers outer: where leftovers go
  std::string m_no_enclosing_run;           // ... or why there is none, and the fix
  std::optional<RecordJournal> m_journal;
};

RunEnd RunSteps::run() {
  if (auto refused = check_report()) {
    return *refused;
  }
  if (auto refused = open_state()) {
    return *refused;
  }
  m_may_be_held = may_be_held();
  if (!m_may_be_held) {
    if (auto refused = pass_the_gate()) {
      return *refused;
    }
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

// --report FILE is judged before anything exists: a path the report could
// not be written to stops the run here (125), not after COMMAND's work.
// Written at the end, it is judged again (file_io.hpp).
std::optional<int> RunSteps::check_report() const {
  if (!m_options.report) {
    return std::nullopt;
  }
  if (auto usable = check_file_for_user(*m_options.report); !usable) {
    print_error(fmt::format("--report: {}", usable.error().message()));
    return 125;
  }
  return std::nullopt;
}

std::optional<int> RunSteps::open_state() {
  auto state_dir = checked_state_dir(m_options.state_dir, m_log);
  if (!state_dir) {
    return 125;
  }
  m_state_dir = *state_dir;
  m_store.emplace(m_state_dir);
  m_host = m_port.host_view();
  return std::nullopt;
}

// A run inside another (TREEGUARD_RUNS names one) whose boundary may be a
// cgroup leaf, and whose record need not be kept, may be held by that run's
// guardian (guard()). A scope's re-executed treeguard is not: it left the
// enclosing leaf.
bool RunSteps::may_be_held() const {
  return !inherited_runs().empty() && !m_options.keep_records && !m_scope.run_id
         && (m_options.boundary == BoundaryRequest::automatic
             || m_options.boundary == BoundaryRequest::cgroup);
}

// Dispatch gate: no new work into a directory with an unresolved tree.
// It reads only the open records: finished ones are kept apart.
std::optional<int> RunSteps::pass_the_gate() {
  GateVerdict verdict = evaluate_gate(m_store->list(), *m_host);
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
  m_plan = m_port.plan(m_boundary_options);
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
  // What a takedown after this controller's death drains with.
  m_record.drain =
      RecordedDrain{signal_name(m_options.policy.stop_signal), m_options.policy.kill_after.count()};
  m_record.phases.push_back(PhaseEntry{"spawn", m_started_at});
}

// Order matters (DESIGN.md [authority], [guardian]): the guardian, then the
// record, then the boundary's own creation (the leaf), then COMMAND.
// Whenever treeguard dies, what exists on the host is named by a record
// that the guardian or `sweep` will find; a guardian that finds no record
// has nothing to do. The common path writes the record once: the guardian's
// identity is in it from the start, and a process group's record is written
// when COMMAND's process exists but is still held before exec (its group
// and identity known), so it never says "pgid pending" while COMMAND runs.
// The plan's candidates are tried in turn, strongest first: each refused or
// failed one's reason is kept for the error when none forms.
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
    if (auto failed = guard()) {
      return failed;
    }
    if (auto failed = record_before_the_leaf()) {
      return failed;
    }
    auto formed = m_boundary->form();
    if (formed) {
      m_formed_from = &candidate;
      return std::nullopt;
    }
    // Not formed after all: the next candidate, under a record and
    // guardian of its own.
    abandon_candidate();
    why[i] = formed.error().message();
    m_log(fmt::format("{}: not formed: {}", candidate.name, why[i]));
  }
  print_error(plan_failure(m_plan, why));
  return 125;
}

// The run's guardian, started before the record and the leaf exist; or,
// nested in a leaf whose guardian takes it, that guardian, which then holds
// the run's record and answers its gate (DESIGN.md [nested]).
std::optional<int> RunSteps::guard() {
  GuardianSpec spec{m_state_dir, m_record.run_id, m_boundary->kind(), m_boundary->address()};
  spec.controller = m_record.controller;
  if (m_may_be_held && m_boundary->facts().nests) {
    if (auto refused = announce(spec)) {
      return refused;
    }
    if (m_guarded_by) {
      return std::nullopt;
    }
  }
  if (m_may_be_held) {
    // Not held after all: the run is gated and recorded as one that is not
    // nested.
    m_may_be_held = false;
    if (auto refused = pass_the_gate()) {
      return refused;
    }
  }
  auto guardian = m_port.start_guardian(spec);
  if (!guardian) {
    print_error(guardian.error().message());
    return 125;
  }
  m_guardian = std::move(*guardian);
  m_guarded_by.reset();
  m_record.guardian.reset();
  m_record.reaper.reset();
  if (m_guardian) {
    m_record.guardian = m_guardian->identity();
    m_record.reaper = m_guardian->reaper();
  }
  return std::nullopt;
}

// The announcement to the guardians of the runs this one runs inside: taken
// (m_guarded_by), the gate's refusal (its exit code), or neither.
std::optional<int> RunSteps::announce(const GuardianSpec& asked) {
  GuardianSpec spec = asked;
  spec.enclosing = enclosing_runs();
  spec.drain = m_record.drain.value_or(RecordedDrain{});
  spec.cwd = m_record.cwd;
  spec.command = m_options.command;
  Enclosed enclosed =
      m_port.announce_to_enclosing ? m_port.announce_to_enclosing(spec) : Enclosed{};
  if (enclosed.refused) {
    for (const auto& line : enclosed.findings) {
      print_line(fmt::format("treeguard: {}\n", escaped(line)));
    }
    return *enclosed.refused;
  }
  if (!enclosed.guardian) {
    m_log(
        fmt::format("not held by an enclosing run ({}): this run guards itself", enclosed.why_not));
    return std::nullopt;
  }
  m_guardian = std::move(enclosed.guardian);
  m_guarded_by = m_guardian->holding_run();
  m_record.guardian = m_guardian->identity();
  m_record.reaper.reset();
  // Should that guardian go, this run guards itself.
  m_boundary->wake_once_on(m_guardian->gone_fd(), [this] { guard_itself(); });
  return std::nullopt;
}

// The enclosing run's guardian that took this run is gone (killed): from
// now on the run has a guardian of its own, as a run that is not nested
// does, and its record names it. Without one (it could not start) the run
// goes on unguarded, and says so.
void RunSteps::guard_itself() {
  if (!m_guarded_by) {
    return;  // it does already
  }
  const ProcessIdentity lost = m_guardian->identity();
  GuardianSpec spec{m_state_dir, m_record.run_id, m_boundary->kind(), m_boundary->address()};
  spec.controller = m_record.controller;
  auto guardian = m_port.start_guardian(spec);
  if (!guardian || !*guardian) {
    print_line(fmt::format("treeguard: warning: the enclosing run's guardian (pid {}) is gone, and "
                           "no guardian of this run's own could start{}: its tree outlives a "
                           "SIGKILL of treeguard until the enclosing run ends\n",
                           lost.pid, guardian ? "" : ": " + guardian.error().message()));
    return;
  }
  m_guardian = std::move(*guardian);
  m_guarded_by.reset();
  m_journal->guarded_by(m_guardian->identity(), m_guardian->reaper());
  m_log(fmt::format("the enclosing run's guardian (pid {}) is gone: this run guards itself, "
                    "guardian pid {}",
                    lost.pid, m_guardian->identity().pid));
}

// A leaf's record is written before the leaf exists; a process group's
// once COMMAND's process does (supervise_command).
std::optional<int> RunSteps::record_before_the_leaf() {
  if (!m_boundary->facts().records_at_spawn && !m_guarded_by) {
    // The leaf's address is known now: the record names it before it
    // exists, and an unwritable state directory stops the run before
    // anything starts. (A held run's record is its guardian's.)
    auto saved = m_store->save_own(m_record, Durability::lazy, m_written);
    if (!saved) {
      print_error(save_error(saved.error()).message());
      return 125;
    }
  }
  return std::nullopt;
}

// A candidate that did not form leaves nothing: its guardian dismissed,
// its record removed.
void RunSteps::abandon_candidate() {
  if (m_guardian) {
    m_guardian->dismiss();
    m_guardian.reset();
  }
  if (!m_guarded_by) {
    std::ignore = m_store->remove(m_record.run_id);
  }
  m_guarded_by.reset();
  m_written.reset();
  m_boundary.reset();
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
      && boundary_facts(m_formed_from->kind).members_can_leave && m_options.verbose) {
    for (const auto& advice : fallback_advice()) {
      m_log(advice);
    }
  }
  if (m_guardian && m_guarded_by) {
    m_log(fmt::format("guardian pid {}: run {}'s, which guards the runs nested in its leaf and "
                      "holds this run's record",
                      m_record.guardian->pid, *m_guarded_by));
  } else if (m_guardian) {
    m_log(fmt::format("guardian pid {}", m_record.guardian->pid));
  }
}

// The command that gives a run with no enclosing run one, pasted where the
// build was typed: the build this run was started from, in a run
// (`treeguard run -- ninja`); started by a shell itself, this run in one.
std::string wrapped_in_a_run(const std::vector<std::string>& command) {
  std::vector<std::string> build = build_command();
  if (build.empty()) {
    build = {"treeguard", "run", "--leftovers", "outer", "--"};
    build.insert(build.end(), command.begin(), command.end());
  }
  std::string out = "treeguard run --";
  for (const auto& word : build) {
    out += " " + shell_quoted(word);
  }
  return out;
}

// --leftovers outer: the run this one runs inside, or -v's one line saying
// that there is none (the leftovers are then killed) with a command that
// gives them one; the line that says what COMMAND left behind says it too.
void RunSteps::find_enclosing_run() {
  if (m_options.policy.leftovers != Leftovers::outer) {
    return;
  }
  // Held: the guardian that holds this run said where the innermost
  // enclosing run's leaf is; no record is read.
  const auto innermost = enclosing_runs();
  const auto leaf = m_guarded_by ? m_guardian->innermost_leaf() : std::nullopt;
  auto found =
      leaf && !innermost.empty()
          ? Result<EnclosingRun>(EnclosingRun{innermost.front(), m_boundary->kind(), *leaf})
          : leftovers_taker(*m_store, m_record);
  if (found) {
    m_enclosing = *found;
    m_log(fmt::format("--leftovers outer: what COMMAND leaves behind goes to run {} ({} {})",
                      found->run_id, boundary_kind_name(found->kind), found->address));
    return;
  }
  const std::string fix = wrapped_in_a_run(m_options.command);
  m_no_enclosing_run = fmt::format("--leftovers outer had no enclosing run to hand them to ({}); "
                                   "wrap the build in one: {}",
                                   found.error().message(), fix);
  m_log(fmt::format("--leftovers outer: no enclosing run ({}), so leftovers are killed as with "
                    "--leftovers kill; run inside one, as in: {}",
                    found.error().message(), fix));
}

// COMMAND from spawn to its tree's end (supervisor.hpp's lifecycle).
RunOutcome RunSteps::supervise_command() {
  m_journal.emplace(*m_store, m_record, *m_boundary, m_options.keep_records, m_written,
                    m_guarded_by ? m_guardian.get() : nullptr, [this] { guard_itself(); });
  SpawnSpec spec{m_options.command, m_record.run_id, {}};
  spec.stop_signal = m_options.policy.stop_signal;
  spec.grace_after_death = grace_after_death(m_options.policy.kill_after);
  if (m_boundary->facts().records_at_spawn) {
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
  policy.read_holdings = m_port.read_holdings;
  policy.enclosing = m_enclosing;
  RunOutcome outcome = supervise(*m_boundary, *m_journal, *m_port.clock, policy, spec, m_log);
  outcome.no_enclosing_run = m_no_enclosing_run;
  return outcome;
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

RunHost this_host() {
  static const RealClock clock{};
  RunHost host;
  host.host_view = make_host_view;
  host.plan = plan_boundary;
  host.start_guardian = start_guardian;
  host.announce_to_enclosing = announce_to_enclosing;
  host.read_holdings = read_holdings;
  host.clock = &clock;
  host.say = print_line;
  return host;
}

RunEnd run_on(const RunOptions& options, const RunHost& host) {
  return RunSteps(options, host).run();
}

int command_run(const RunOptions& options) {
  for (Signal signal : options.command_defaults) {
    default_in_command(signal);
  }
  const RunEnd end = run_on(options, this_host());
  // Everything is over (boundary gone, record and report written, the
  // guardian dismissed): end as COMMAND did (DESIGN.md [exit-codes]).
  if (end.signal) {
    end_by_signal(*end.signal);
  }
  return end.code;
}

}  // namespace treeguard
