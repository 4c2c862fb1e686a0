// The run's lifecycle (DESIGN.md [lifecycle]): spawn -> run -> stop cause ->
// drain -> authority -> force -> verify -> exit code. Portable: it sees the
// operating system only through Boundary, Journal and Clock.
#pragma once

#include "duration.hpp"
#include "journal.hpp"
#include "port/boundary.hpp"
#include "port/holdings.hpp"
#include "signal_name.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

// What happens to members still alive when COMMAND exits by itself: taken
// down (kill), waited for under the same deadline (wait), handed to the
// enclosing run (outer; RunPolicy::enclosing, else as kill), or taken down
// and judged a leak (fail: exit 120 when COMMAND exited 0).
enum class Leftovers { kill, wait, outer, fail };

// The exit status of a run whose COMMAND exited 0 and left processes
// behind, under --leftovers fail.
inline constexpr int k_exit_leaked = 120;

// -k 0 asks for no forced kill (timeout's default): the drain then waits for
// COMMAND itself as long as it takes, as timeout(1) does, but what COMMAND
// leaves behind gets this long once COMMAND is gone (after the drain's
// signal), then the forced kill: nobody waits for a leftover, so nothing
// would ever end the run (DESIGN.md [never-hang]; treeguard(1) LIFECYCLE
// and TIMEOUT state it).
constexpr Duration k_leftover_grace = std::chrono::seconds(1);

// How long a takedown after the controller's death (the guardian's,
// `sweep`'s, a pid namespace's init) waits once it has sent the drain's
// signal (DESIGN.md [guardian]): the run's --kill-after; under -k 0,
// k_leftover_grace, since nobody waits for COMMAND any more: all that is
// left is what it leaves behind.
constexpr Duration grace_after_death(Duration kill_after) {
  return kill_after.count() > 0 ? kill_after : k_leftover_grace;
}

// How long the forced kill's verification waits while none of the killed
// dies before those left are survivors; while they keep dying it waits on
// (20,000 exits are seconds of kernel work, with pauses on a busy machine:
// 1.5 s without a death was seen in CI). The controller's verify window
// (RunPolicy::verify_for) and a takedown after its death
// (AfterDeath::verify_for) alike.
constexpr Duration k_kill_patience = std::chrono::seconds(5);

struct RunPolicy {
  std::optional<Duration> timeout;     // none: no deadline
  Signal stop_signal = signals::term;  // the drain's graceful signal
  Duration kill_after = std::chrono::seconds(10);
  bool preserve_status = false;
  Leftovers leftovers = Leftovers::kill;
  // With Leftovers::outer: the run this one runs inside, found and checked
  // before spawn; none: the leftovers are taken down as with kill.
  std::optional<EnclosingRun> enclosing;
  // timeout's rule: after the deadline, a COMMAND that died of the KILL
  // (-s KILL, or -k's) makes the exit status 137 (128+9), not 124.
  bool kill_exits_137 = false;
  // Told of each signal sent to COMMAND for the deadline (timeout -v).
  std::function<void(Signal)> announce;
  // How long verification waits for members that cannot die yet (state D)
  // before calling them survivors.
  Duration verify_for = k_kill_patience;
  // What members hold (port/holdings.hpp's read_holdings), read for the
  // leftovers, the members alive at a deadline and the survivors; unset:
  // nothing is read.
  HoldingsReader read_holdings;
};

// Where "now" comes from; a fake in tests.
class SteadySource {
public:
  virtual ~SteadySource() = default;
  virtual TimePoint now() const = 0;
};

class RealClock final : public SteadySource {
public:
  TimePoint now() const override { return Clock::now(); }
};

enum class StopCause { none, child_exited, deadline, signal };

struct RunOutcome {
  int exit_code = 125;
  Disposition disposition = Disposition::pending;
  StopCause cause = StopCause::none;
  std::optional<Signal> stop_signal;
  std::optional<ExitStatus> child_status;
  bool forced = false;                 // the forced kill was sent
  std::optional<Signal> grace_cut_by;  // the interrupt that cut the grace period short
  // The grace period that ended before the forced kill: --kill-after, or
  // k_leftover_grace under -k 0.
  Duration grace{};
  bool force_withheld = false;     // ... or refused for want of authority
  bool deadline_by_alarm = false;  // SIGALRM made the deadline now
  // The signal (its number) treeguard ends by once the run is over
  // (host.hpp's end_by_signal): the one COMMAND died of, or the one that
  // stopped the run; none after a deadline, or when the run is not proven.
  std::optional<int> end_signal;
  std::vector<MemberInfo> survivors;
  std::vector<MemberInfo> forced_members;  // alive when the forced kill was authorized
  // --leftovers outer: the members handed to the enclosing run, and its id.
  std::vector<MemberInfo> handed_over;
  std::string handed_to;
  // --leftovers outer with no enclosing run: why there is none and the
  // command that gives one (leftovers_line() says it with what was taken
  // down); empty otherwise.
  std::string no_enclosing_run;
  // The members alive when COMMAND exited by itself, before any signal.
  std::vector<MemberInfo> leftovers;
  // COMMAND left processes behind that were not handed to the enclosing run.
  bool leaked = false;
  // What members held when they were read (leftovers, members at the
  // deadline, survivors of the forced kill), each process once, its last
  // reading.
  std::vector<ProcessHoldings> holdings;
  std::string message;               // for the one stderr line when not clean
  std::optional<Error> spawn_error;  // COMMAND could not be started
  std::string close_error;           // a pass whose boundary could not be removed
  std::optional<TreeUsage> usage;    // what the tree used, read before the boundary went
  // The controller could not take the tree down itself (an internal error,
  // twice): its guardian must stay armed, and act once the controller is
  // gone, rather than be dismissed.
  bool guardian_must_act = false;
};

// A line for -v ("treeguard: drain: TERM to every member").
using Logger = std::function<void(const std::string&)>;

// Run COMMAND in `boundary` and take the tree down. Never throws: every
// path ends with the boundary verified (or the failure recorded) and an
// exit code. An internal error (out of memory under `ulimit -v`) once the
// run is under way never ends as 125, "could not start": the tree is taken
// down authority first and the run is 122; if even that fails, the outcome
// says guardian_must_act.
RunOutcome supervise(Boundary& boundary, Journal& journal, const SteadySource& clock,
                     const RunPolicy& policy, const SpawnSpec& spec, const Logger& log);

// "deadline 10s", or "deadline (SIGALRM)" when SIGALRM made it now.
std::string deadline_name(const RunOutcome& outcome, const RunPolicy& policy);

// COMMAND's status as a shell would report it: the code, or 128+N.
int shell_status(const ExitStatus& status);

// The exit code for a spawn error: 127 not found, 126 not executable,
// 125 anything else.
int spawn_failure_exit_code(const Error& error);

}  // namespace treeguard
