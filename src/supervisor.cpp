// The run's lifecycle (supervisor.hpp). One file over 500 lines: Lifecycle
// is one state machine (DESIGN.md [lifecycle]) whose steps share the outcome
// they build, read top to bottom in the order run() takes them.
#include "supervisor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace treeguard {

int shell_status(const ExitStatus& status) {
  return status.signaled ? 128 + status.value : status.value;
}

std::string deadline_name(const RunOutcome& outcome, const RunPolicy& policy) {
  if (outcome.deadline_by_alarm) {
    return "deadline (SIGALRM)";
  }
  return fmt::format("deadline {}", format_duration(policy.timeout.value_or(Duration())));
}

int spawn_failure_exit_code(const Error& error) {
  if (error.context.rfind("exec ", 0) != 0) {
    return 125;
  }
  if (error.code == std::errc::no_such_file_or_directory
      || error.code == std::errc::not_a_directory) {
    return 127;
  }
  return 126;
}

namespace {

// One run of the lifecycle. Member functions are its phases, in order.
class Lifecycle {
public:
  Lifecycle(Boundary& boundary, Journal& journal, const SteadySource& clock,
            const RunPolicy& policy, const Logger& log)
      : m_boundary(boundary), m_journal(journal), m_clock(clock), m_policy(policy), m_log(log) {}

  RunOutcome run(const SpawnSpec& spec);

private:
  void say(const std::string& line) {
    if (m_log) {
      m_log(line);
    }
  }

  // Empty when the boundary says so; an error reading it counts as "not
  // proven empty", so teardown goes on. But a boundary whose own object is
  // gone (boundary_gone) can be neither waited on nor taken down: m_gone
  // says why, every phase ends, and the run is not proven (finish).
  bool empty() {
    if (m_gone) {
      return false;
    }
    auto result = m_boundary.is_empty();
    if (!result && is_boundary_gone(result.error())) {
      m_gone = result.error().message();
      say(*m_gone);
      m_journal.event(*m_gone);
      return false;
    }
    if (!result) {
      say(fmt::format("cannot tell whether the boundary is empty: {}", result.error().message()));
      return false;
    }
    return *result;
  }

  // Nothing more to wait for: the boundary is empty, or gone.
  bool settled() { return empty() || m_gone.has_value(); }

  // timeout -v's line, for the signals the deadline sends.
  void announce(Signal signal) {
    if (m_policy.announce && m_outcome.cause == StopCause::deadline) {
      m_policy.announce(signal);
    }
  }

  void note_child() {
    if (!m_outcome.child_status) {
      m_outcome.child_status = m_boundary.child_status();
    }
  }

  bool command_gone() {
    note_child();
    return m_outcome.child_status.has_value();
  }

  // A signal that reached treeguard is passed to COMMAND once (not at all
  // if the terminal already delivered it) and the run goes on, as without
  // treeguard. Returns true when it is a stop request: an interrupt
  // (HUP, INT, QUIT, TERM) sent to treeguard after COMMAND was already sent
  // one. The terminal's own (Ctrl-C again at a REPL) is the user talking to
  // COMMAND, which got it: never a stop request.
  bool on_signal(const Event& event) {
    m_journal.event(fmt::format("received {}", signal_name(event.signal)), event.signal);
    const bool interrupt = is_stop_signal(event.signal);
    if (interrupt && m_interrupted && !event.already_delivered) {
      return true;
    }
    if (interrupt) {
      m_interrupted = true;
    }
    if (is_forwarded_signal(event.signal) && !event.already_delivered) {
      auto forwarded = m_boundary.forward(event.signal);
      if (forwarded) {
        m_journal.event(fmt::format("forwarded {} to COMMAND", signal_name(event.signal)),
                        event.signal);
        say(fmt::format("forwarded {} to COMMAND", signal_name(event.signal)));
      } else {
        say(fmt::format("forward {}: {}", signal_name(event.signal), forwarded.error().message()));
      }
    }
    return false;
  }

  // SIGALRM is the deadline, now (as timeout(1) takes it): the run stops
  // exactly as when --timeout expires, with its report and exit status.
  // Not passed on; during the drain the deadline has passed already.
  bool deadline_now(const Event& event, std::string_view where) {
    if (event.kind != Event::Kind::signal || event.signal != signals::alrm) {
      return false;
    }
    m_journal.event("received ALRM: the deadline is now", event.signal);
    m_deadline = m_clock.now();
    m_outcome.cause = StopCause::deadline;
    m_outcome.deadline_by_alarm = true;
    say(fmt::format("ALRM: deadline passed{}", where));
    return true;
  }

  void run_until_stop();
  void note_leftovers();
  void judge_leftovers();
  void read_holdings_of(const std::vector<MemberInfo>& members);
  void wait_for_leftovers();
  void hand_over_leftovers();
  bool drain();
  void force_and_verify();
  void verify();
  void finish();
  void record_end();

  Boundary& m_boundary;
  Journal& m_journal;
  const SteadySource& m_clock;
  const RunPolicy& m_policy;
  const Logger& m_log;
  std::optional<TimePoint> m_deadline;
  std::optional<std::string> m_gone;  // the boundary's object is gone: why
  bool m_interrupted = false;         // COMMAND was sent (or the terminal gave it) an interrupt
  RunOutcome m_outcome;
};

RunOutcome Lifecycle::run(const SpawnSpec& spec) {
  if (auto standing = m_boundary.standing_authority()) {
    // Write-ahead even for the kill nobody sends: the one the controller's
    // death performs. Without it, nothing may start.
    m_journal.phase("authority");
    AuthorityRequest request{m_boundary.force_method().name + " (kill-on-close)",
                             {m_boundary.address()},
                             *standing,
                             std::nullopt};
    auto authorized = m_journal.authorize(request);
    if (!authorized) {
      m_outcome.exit_code = 125;
      m_outcome.message = fmt::format("standing authority not durable ({}); nothing started",
                                      authorized.error().message());
      m_outcome.disposition = Disposition::pass;
      m_journal.finish(m_outcome.disposition, m_outcome.exit_code);
      return m_outcome;
    }
  }
  auto child = m_boundary.spawn(spec);
  if (!child) {
    m_outcome.exit_code = spawn_failure_exit_code(child.error());
    m_outcome.message = child.error().message();
    m_outcome.spawn_error = child.error();
    // Nothing ran: prove it, so the record can say pass.
    m_outcome.disposition = empty() ? Disposition::pass : Disposition::ambiguous;
    record_end();
    return m_outcome;
  }
  say(fmt::format("boundary {} {}", boundary_kind_name(m_boundary.kind()), m_boundary.address()));
  say(fmt::format("child pid {}", *child));
  m_journal.phase("running");
  if (m_policy.timeout && m_policy.timeout->count() > 0) {
    m_deadline = m_clock.now() + *m_policy.timeout;
  }

  run_until_stop();
  // Empty now, empty for good: a clean run asks once. Gone: nothing is
  // left to drain or force through it.
  bool left = !settled();
  if (left && m_outcome.cause == StopCause::child_exited) {
    note_leftovers();
    if (m_policy.leftovers == Leftovers::wait) {
      wait_for_leftovers();
      left = !settled();
    }
    if (m_policy.leftovers == Leftovers::outer && m_policy.enclosing) {
      hand_over_leftovers();
      left = !settled();
    }
    judge_leftovers();
  } else if (left && m_outcome.cause == StopCause::deadline) {
    read_holdings_of(m_boundary.alive_members());
  }
  if (left) {
    bool emptied = drain();
    if (!emptied && !m_gone) {
      force_and_verify();
    }
  }
  note_child();
  finish();
  return m_outcome;
}

// THE place leftovers are found: COMMAND exited by itself and members are
// alive. Who they are and what each holds is read now, before any signal
// (a port still bound, the run's stdout still open), whatever is done with
// them next.
void Lifecycle::note_leftovers() {
  m_outcome.leftovers = m_boundary.alive_members();
  if (m_outcome.leftovers.empty()) {
    return;
  }
  m_journal.event(fmt::format("COMMAND left {} process(es) behind: {}", m_outcome.leftovers.size(),
                              describe_members(m_outcome.leftovers)));
  read_holdings_of(m_outcome.leftovers);
  say(fmt::format("leftovers: {} member(s) alive when COMMAND exited, what they hold read",
                  m_outcome.leftovers.size()));
}

// A leftover handed to the enclosing run is that run's, not a leak; any
// other is (--leftovers fail makes it the verdict: finish()).
void Lifecycle::judge_leftovers() {
  const auto& handed = m_outcome.handed_over;
  m_outcome.leaked =
      std::any_of(m_outcome.leftovers.begin(), m_outcome.leftovers.end(), [&](const auto& left) {
        return std::none_of(handed.begin(), handed.end(), [&](const MemberInfo& member) {
          return static_cast<const ProcessIdentity&>(member) == left;
        });
      });
  if (m_outcome.leaked && m_policy.leftovers == Leftovers::fail) {
    say("--leftovers fail: COMMAND left processes behind: a leak");
  }
}

void Lifecycle::read_holdings_of(const std::vector<MemberInfo>& members) {
  if (m_policy.read_holdings && !members.empty()) {
    merge_holdings(m_outcome.holdings, m_policy.read_holdings(members));
  }
}

void Lifecycle::run_until_stop() {
  for (;;) {
    note_child();
    if (m_outcome.child_status) {
      m_outcome.cause = StopCause::child_exited;
      say(fmt::format("COMMAND exited ({})", shell_status(*m_outcome.child_status)));
      m_journal.event("COMMAND exited");
      return;
    }
    Event event = m_boundary.wait(m_deadline);
    switch (event.kind) {
    case Event::Kind::deadline:
      if (m_deadline && m_clock.now() >= *m_deadline) {
        m_outcome.cause = StopCause::deadline;
        say("deadline passed");
        m_journal.event("deadline passed");
        return;
      }
      break;
    case Event::Kind::signal:
      if (deadline_now(event, "")) {
        return;
      }
      if (on_signal(event)) {
        m_outcome.cause = StopCause::signal;
        m_outcome.stop_signal = event.signal;
        say(fmt::format("stopping on {}", signal_name(event.signal)));
        return;
      }
      break;
    case Event::Kind::changed:
      break;
    case Event::Kind::gone:
      if (!empty() && m_gone) {
        return;  // nothing is left to hold COMMAND's tree: the run ends, not proven
      }
      break;
    }
  }
}

// --leftovers wait: COMMAND is gone, its leftovers may finish in their own
// time, under the same deadline and the same signals.
void Lifecycle::wait_for_leftovers() {
  m_journal.phase("leftovers");
  while (!settled()) {
    Event event = m_boundary.wait(m_deadline);
    if (event.kind == Event::Kind::deadline && m_deadline && m_clock.now() >= *m_deadline) {
      m_outcome.cause = StopCause::deadline;
      say("deadline passed while waiting for leftovers");
      m_journal.event("deadline passed");
      return;
    }
    if (deadline_now(event, " while waiting for leftovers")) {
      return;
    }
    if (event.kind == Event::Kind::signal) {
      // COMMAND is gone: there is no one to pass an interrupt to, so it
      // asks the run to stop.
      if (on_signal(event) || is_stop_signal(event.signal)) {
        m_outcome.cause = StopCause::signal;
        m_outcome.stop_signal = event.signal;
        say(fmt::format("stopping on {}", signal_name(event.signal)));
        return;
      }
    }
  }
}

// --leftovers outer: COMMAND exited by itself (never at a deadline or a
// stop request, which take the whole tree down), and what it left behind
// goes to the enclosing run, which takes it down at its end as its own.
// Each one handed over is named in the record; what could not be handed
// over is drained and forced as usual.
void Lifecycle::hand_over_leftovers() {
  if (settled()) {
    return;
  }
  const EnclosingRun& to = *m_policy.enclosing;
  m_journal.phase("hand-over");
  auto handed = m_boundary.hand_over(to);
  if (!handed) {
    say(fmt::format("leftovers not handed to run {}: {}", to.run_id, handed.error().message()));
    m_journal.event(
        fmt::format("leftovers not handed to run {}: {}", to.run_id, handed.error().message()));
    return;
  }
  if (handed->empty()) {
    return;
  }
  m_outcome.handed_over = *handed;
  m_outcome.handed_to = to.run_id;
  m_journal.handed_over(to.run_id, *handed);
  say(fmt::format("handed {} leftover(s) to run {} ({} {}): {}", handed->size(), to.run_id,
                  boundary_kind_name(to.kind), to.address, describe_members(*handed)));
}

// The graceful part: the boundary's graceful stop (on POSIX the stop signal
// and CONT, so that stopped members can act on it), then up to --kill-after
// for the boundary to empty. -k 0 (no forced kill) waits for COMMAND without
// limit, as timeout(1) does, and then k_leftover_grace for what it left.
// Returns true when the boundary emptied; false when the grace ended, was
// cut short, or the boundary is gone. --signal KILL has no graceful part:
// straight to authority and force.
bool Lifecycle::drain() {
  const Signal signal = m_policy.stop_signal;
  if (signal == signals::kill) {
    say("--signal KILL: no grace period");
    return false;
  }
  m_journal.phase("drain");
  announce(signal);
  const bool unforced = m_policy.kill_after.count() == 0;
  say(fmt::format("drain: {} to every member, grace {}", signal_name(signal),
                  unforced ? fmt::format("unlimited for COMMAND (-k 0), {} for what it leaves "
                                         "behind",
                                         format_duration(k_leftover_grace))
                           : format_duration(m_policy.kill_after)));
  const auto stop_gracefully = [this](Signal sent) {
    for (const auto& delivery : m_boundary.stop_gracefully(sent)) {
      if (delivery.error) {
        say(fmt::format("signal {}: {}", signal_name(delivery.signal), delivery.error->message()));
      }
      m_journal.event(delivery.error
                          ? fmt::format("could not send {} to {}: {}", signal_name(delivery.signal),
                                        delivery.to, delivery.error->message())
                          : fmt::format("sent {} to {}", signal_name(delivery.signal), delivery.to),
                      delivery.signal);
    }
  };
  stop_gracefully(signal);
  if (stops_whom_it_reaches(signal)) {
    // It stops whom it reaches (the boundary's CONT only goes to whom it
    // saw stopped before, a race): CONT to every member, as timeout(1)
    // sends CONT after its signal, so the tree runs on and the drain ends.
    stop_gracefully(signals::cont);
  }
  std::optional<TimePoint> grace_end;
  if (!unforced) {
    grace_end = m_clock.now() + m_policy.kill_after;
    m_outcome.grace = m_policy.kill_after;
  }
  while (!settled()) {
    if (!grace_end && command_gone()) {
      // Nobody waits for a leftover: the wait for COMMAND is over, what it
      // left behind gets a bounded grace.
      grace_end = m_clock.now() + k_leftover_grace;
      m_outcome.grace = k_leftover_grace;
      say(fmt::format("COMMAND is gone: what it left behind gets {}, then the forced kill",
                      format_duration(k_leftover_grace)));
    }
    Event event = m_boundary.wait(grace_end);
    if (event.kind == Event::Kind::deadline && grace_end && m_clock.now() >= *grace_end) {
      return false;
    }
    if (event.kind != Event::Kind::signal) {
      continue;
    }
    if (!is_stop_signal(event.signal)) {
      on_signal(event);  // USR1, WINCH...: passed on, the drain goes on
      continue;
    }
    // An interrupt during the drain skips the rest of the grace period.
    m_journal.event(fmt::format("received {}", signal_name(event.signal)), event.signal);
    m_outcome.grace_cut_by = event.signal;
    say(fmt::format("{} during the drain: grace cut short", signal_name(event.signal)));
    return false;
  }
  return !m_gone;
}

std::string describe_cause(const RunOutcome& outcome, const RunPolicy& policy) {
  switch (outcome.cause) {
  case StopCause::deadline:
    return fmt::format("{} passed and the grace period {} ended", deadline_name(outcome, policy),
                       format_duration(outcome.grace));
  case StopCause::signal:
    return fmt::format("treeguard received {}",
                       signal_name(outcome.stop_signal.value_or(signals::term)));
  case StopCause::child_exited:
    return "COMMAND exited and members were left over past the grace period";
  case StopCause::none:
    break;
  }
  return "stop";
}

void Lifecycle::force_and_verify() {
  m_journal.phase("authority");
  AuthorityRequest request;
  const ForceMethod method = m_boundary.force_method();
  request.action = method.name;
  // The boundary, not the tree: the journal adds a bounded sample of who is
  // alive, so an authority entry never grows with the tree.
  request.targets.push_back(m_boundary.address());
  request.reason = describe_cause(m_outcome, m_policy);
  // Who resisted: the authority's sample and the one stderr line name them.
  request.alive = m_boundary.alive_members();
  m_outcome.forced_members = *request.alive;

  // Write-ahead authority: no durable record, no forced kill (DESIGN.md [authority]).
  auto authorized = m_journal.authorize(request);
  if (!authorized) {
    m_outcome.force_withheld = true;
    m_outcome.disposition = Disposition::ambiguous;
    m_outcome.survivors = m_boundary.alive_members();
    m_outcome.message =
        fmt::format("forced kill withheld: the authority record could not be made durable ({}); "
                    "the tree is kept as evidence",
                    authorized.error().message());
    say(m_outcome.message);
    return;
  }
  m_journal.phase("force");
  announce(signals::kill);
  say(fmt::format("force: {} {}", request.action, method.to));
  auto killed = m_boundary.kill_all();
  m_outcome.forced = true;
  if (!killed) {
    say(fmt::format("forced kill: {}", killed.error().message()));
  }
  m_journal.event(fmt::format("forced kill ({})", request.action), method.signal);
  verify();
}

// Members that cannot die yet (uninterruptible sleep) get a bounded wait;
// after it they are survivors and the run is not proven. A boundary that
// is not empty while no member of it is seen alive names no survivor: it
// is not proven either (ambiguous), never "0 member(s) survived".
void Lifecycle::verify() {
  m_journal.phase("verify");
  // A big tree takes time to die (20,000 exits are seconds of kernel work):
  // while the number alive keeps falling, the window starts again, up to
  // twelve windows in all. Members that cannot die (state D) stop the fall.
  TimePoint until = m_clock.now() + m_policy.verify_for;
  const TimePoint last_chance = m_clock.now() + m_policy.verify_for * 12;
  std::size_t alive_before = m_boundary.alive_members().size();
  while (!settled()) {
    Event event = m_boundary.wait(until);
    if (event.kind == Event::Kind::deadline && m_clock.now() >= until) {
      auto alive = m_boundary.alive_members();
      if (alive.size() < alive_before && m_clock.now() < last_chance) {
        alive_before = alive.size();
        until = m_clock.now() + m_policy.verify_for;
        continue;
      }
      if (alive.empty()) {
        m_outcome.disposition = Disposition::ambiguous;
        m_outcome.message = fmt::format(
            "{} is not proven empty after the forced kill, yet no member of it is seen alive",
            m_boundary.address());
        say(m_outcome.message);
        return;
      }
      m_outcome.survivors = std::move(alive);
      read_holdings_of(m_outcome.survivors);
      m_outcome.disposition = Disposition::failed;
      m_outcome.message =
          fmt::format("{} member(s) survived the forced kill: {}", m_outcome.survivors.size(),
                      describe_members(m_outcome.survivors));
      say(m_outcome.message);
      return;
    }
    if (event.kind == Event::Kind::signal) {
      on_signal(event);
    }
  }
}

void Lifecycle::finish() {
  if (m_gone) {
    m_outcome.disposition = Disposition::ambiguous;
    m_outcome.message = fmt::format("not proven: {}", *m_gone);
  }
  if (m_outcome.force_withheld || m_outcome.disposition == Disposition::failed
      || m_outcome.disposition == Disposition::ambiguous) {
    m_outcome.exit_code = 122;
  } else {
    m_outcome.disposition = Disposition::pass;
    switch (m_outcome.cause) {
    case StopCause::deadline:
      if (m_policy.preserve_status && m_outcome.child_status) {
        m_outcome.exit_code = shell_status(*m_outcome.child_status);
      } else if (m_policy.kill_exits_137 && m_outcome.child_status
                 && m_outcome.child_status->signaled
                 && m_outcome.child_status->value == signal_number(signals::kill)) {
        m_outcome.exit_code = 128 + m_outcome.child_status->value;
      } else {
        m_outcome.exit_code = 124;
      }
      break;
    case StopCause::signal:
      m_outcome.end_signal = signal_number(m_outcome.stop_signal.value_or(signals::term));
      m_outcome.exit_code = 128 + *m_outcome.end_signal;
      break;
    case StopCause::child_exited:
    case StopCause::none:
      m_outcome.exit_code = m_outcome.child_status ? shell_status(*m_outcome.child_status) : 125;
      if (m_outcome.child_status && m_outcome.child_status->signaled) {
        m_outcome.end_signal = m_outcome.child_status->value;
      }
      // The leak verdict: COMMAND's own failure says more, and stands.
      if (m_policy.leftovers == Leftovers::fail && m_outcome.leaked && m_outcome.exit_code == 0) {
        m_outcome.exit_code = k_exit_leaked;
      }
      break;
    }
  }
  record_end();
  if (m_outcome.disposition == Disposition::pass) {
    say(fmt::format("proven empty: nothing of COMMAND's tree is left in {}", m_boundary.address()));
  }
}

// The boundary goes before the record does: a controller killed between the
// two leaves a record naming an empty leaf (the guardian or sweep settles
// it), never a leaf that no record names — but for an empty leaf that a
// service manager taking down its unit removes (Boundary::left_in_place).
void Lifecycle::record_end() {
  m_outcome.usage = m_boundary.usage();  // the leaf's counters go with it
  if (m_outcome.disposition == Disposition::pass) {
    auto closed = m_boundary.close();
    if (!closed) {
      m_outcome.close_error = closed.error().message();
    } else if (auto left = m_boundary.left_in_place()) {
      m_journal.event(*left);
      say(*left);
    }
  }
  m_journal.finish(m_outcome.disposition, m_outcome.exit_code);
}

// An internal error (an exception: out of memory) while COMMAND may be
// running: the authority-first kill of any forced kill, and a run that is
// not proven (122). If that throws too (memory is still short), nothing
// more is tried here: the guardian, left armed, takes the boundary down
// once the controller is gone.
RunOutcome take_down_after(const char* what, Boundary& boundary, Journal& journal,
                           const Logger& log) noexcept {
  RunOutcome outcome;
  outcome.exit_code = 122;
  outcome.disposition = Disposition::ambiguous;
  outcome.guardian_must_act = true;
  try {
    const std::string reason = fmt::format("internal error: {}", what);
    if (log) {
      log(fmt::format("{}; taking the tree down", reason));
    }
    AuthorityRequest request{"kill", {boundary.address()}, reason, std::nullopt};
    auto authorized = journal.authorize(request);
    if (authorized) {
      outcome.forced = true;
      std::ignore = boundary.kill_all();
    }
    outcome.force_withheld = !authorized;
    journal.finish(outcome.disposition, outcome.exit_code);
    outcome.message = fmt::format("{}; the tree {}; not proven empty", reason,
                                  authorized ? "was taken down" : "is kept as evidence");
    outcome.guardian_must_act = false;
  } catch (...) {
    try {
      outcome.message = fmt::format("internal error: {}; taking the tree down failed too: "
                                    "the guardian takes it down",
                                    what);
    } catch (...) {
      // the exit code says it: 122
    }
  }
  return outcome;
}

}  // namespace

RunOutcome supervise(Boundary& boundary, Journal& journal, const SteadySource& clock,
                     const RunPolicy& policy, const SpawnSpec& spec, const Logger& log) {
  try {
    Lifecycle lifecycle(boundary, journal, clock, policy, log);
    return lifecycle.run(spec);
  } catch (const std::exception& e) {
    return take_down_after(e.what(), boundary, journal, log);
  }
}

}  // namespace treeguard
