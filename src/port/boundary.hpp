// The seam between the portable core and the operating system.
//
// What a platform defines (the core links against exactly these; the
// linker's undefined symbols of src/ are the check), each in the file of
// the same name in its platform folder (platform/linux or platform/posix,
// platform/windows):
//   port/boundary.hpp    a Boundary per kind it forms, and plan_boundary()
//                        (make_boundary.cpp)
//   port/takedown.hpp    a RecordedBoundary per kind, recorded_boundary(),
//                        settled_disposition(), current_process_identity()
//                        (takedown.cpp)
//   port/guardian.hpp    start_guardian() (guardian.cpp)
//   port/host_view.hpp   make_host_view(): a HostView (host_view.cpp)
//   port/host.hpp        host_init(), host_arguments(), terminal_columns(),
//                        default_in_command(), end_by_signal(), new_run_id()
//                        (host.cpp)
//   port/probe.hpp       probe_host(), fallback_advice() (probe.cpp)
//   port/user_scope.hpp  take_scope_entry() (user_scope.cpp)
//   port/file_io.hpp     write_file_atomic(), write_file_for_user(),
//                        read_file_untrusted(), remove_file(),
//                        current_user_label() (file_io.cpp)
//   port/state_dir.hpp   process_environment(), current_user_id(),
//                        platform_state_dir(), platform_fallback_dirs(),
//                        prepare_state_dir() (state_dir.cpp)
//   port/signal_numbers.hpp  signal_number(), signal_from_number(),
//                        realtime_signal(), highest_signal_number(),
//                        unnamed_signal_name() (signal_numbers.cpp)
//   port/holdings.hpp    read_holdings() (holdings.cpp; the portable words
//                        and rules it shares are src/holdings.cpp)
// The words they share (kinds, requests, dispositions, the clock) are
// port/vocabulary.hpp.
//
// A Boundary is formed before COMMAND runs and owns every process COMMAND
// starts, however it detaches (setsid, double fork, setpgid). The core drives
// it through this interface only; platform/ implements it (a cgroup v2 leaf,
// a process group with a subreaper, or a user+PID namespace on Linux, a job
// object on Windows), and plan_boundary() lists the ones the host allows,
// strongest first. Tests drive the core with a fake.
#pragma once

#include "identity.hpp"
#include "limits.hpp"
#include "port/user_scope.hpp"
#include "port/vocabulary.hpp"
#include "result.hpp"
#include "signal_name.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

// How COMMAND ended: an exit code, or the number of the signal that killed it.
struct ExitStatus {
  bool signaled = false;
  int value = 0;
  bool core_dumped = false;  // signaled, and the kernel wrote a core (POSIX)
};

// Why Boundary::wait() returned. The events are wake-ups: the state itself
// is read back through child_status() and is_empty().
struct Event {
  enum class Kind {
    deadline,  // the deadline given to wait() passed
    changed,   // a member exited, or COMMAND did: look again
    signal,    // the user interrupted treeguard (a POSIX signal, a console
               // control event the platform names as one: Ctrl-C is INT)
    gone,      // the boundary's own object disappeared (a leaf removed from
               // outside): is_empty() says what that leaves of the run
  };
  Kind kind = Kind::changed;
  Signal signal;
  // The interrupt already reached COMMAND (the terminal or console sent it
  // to every process attached): forwarding it again would double it.
  bool already_delivered = false;
};

// One delivery of a graceful stop, as the journal records it.
struct Delivery {
  Signal signal;   // what the core asked for, or CONT after it
  std::string to;  // "every member", "COMMAND's process group (CTRL_BREAK_EVENT)"
  std::optional<Error> error;
};

// How a boundary kills by force, as the authority record names it.
struct ForceMethod {
  std::string name;              // "cgroup.kill", "SIGKILL", "TerminateJobObject"
  std::optional<Signal> signal;  // the signal it amounts to, if it is one
  // Where it goes, as -v says it: the leaf cgroup, "each member of pgid N,
  // frozen first, by pidfd"; what is done, not only the boundary's name.
  std::string to;
};

struct SpawnSpec {
  std::vector<std::string> argv;
  // Marks COMMAND's environment (TREEGUARD_RUNS) so that what it starts can
  // be recognised after the controller is gone.
  std::string run_id;
  // Called once COMMAND's process exists, before it runs any code of
  // COMMAND's: it is held until this returns. Its pid (and, for a process
  // group, its group) is final and address() and members() name it, so a
  // record written here names COMMAND from its first instruction. An error
  // stops the spawn: the held process exits without exec, nothing of
  // COMMAND's ran, and spawn() returns the error. Linux boundaries call
  // it; a boundary whose address is known before spawn may not.
  std::function<Result<void>()> before_exec = nullptr;
  // The run's drain, for a helper of the boundary that outlives the
  // controller and acts on its death by itself (a pid namespace's init,
  // DESIGN.md [guardian]): the stop signal (--signal), sent to every
  // member, and how long it then waits for them (grace_after_death())
  // before the rest is killed.
  Signal stop_signal = signals::term;
  std::chrono::nanoseconds grace_after_death = std::chrono::seconds(1);
};

// The run this one runs inside, as its record names it (found by the
// marker COMMAND inherits, TREEGUARD_RUNS, and checked by the core): where
// --leftovers outer hands leftovers to.
struct EnclosingRun {
  std::string run_id;
  BoundaryKind kind = BoundaryKind::cgroup;
  std::string address;  // its leaf's path, "pgid N"
};

// The error of a boundary whose own object is gone (Boundary::is_empty):
// `why` says what disappeared and what is left unproven.
Error boundary_gone(std::string why);
bool is_boundary_gone(const Error& error);

class Boundary {
public:
  virtual ~Boundary() = default;

  virtual BoundaryKind kind() const = 0;

  // What it can do (port/vocabulary.hpp): what the core asks instead of
  // its kind.
  BoundaryFacts facts() const { return boundary_facts(kind()); }

  // Where the boundary is: the leaf cgroup's path, "pgid N", a job's name.
  virtual std::string address() const = 0;

  // The process group COMMAND leads, where the boundary is one, once
  // COMMAND runs (the structured form of "pgid N"); nullopt otherwise.
  virtual std::optional<long> process_group() const { return std::nullopt; }

  // Create what the boundary needs on the host (the leaf cgroup). Called
  // once the run's guardian and record exist, so that nothing the boundary
  // creates is ever unknown to them (a process group, which creates nothing
  // here, is recorded in SpawnSpec::before_exec); before spawn(). Idempotent.
  virtual Result<void> form() { return {}; }

  // Start COMMAND inside the boundary; it is contained before it can run
  // any code of its own. Returns its pid. If exec fails, the Error's code
  // carries exec's errno (ENOENT, EACCES), and the boundary is empty again.
  virtual Result<long> spawn(const SpawnSpec& spec) = 0;

  // Block until something happens or `deadline` passes (never, if nullopt).
  virtual Event wait(std::optional<TimePoint> deadline) = 0;

  // COMMAND's status once it has exited and been reaped.
  virtual std::optional<ExitStatus> child_status() const = 0;

  // Forward a user's interrupt (Event::Kind::signal) to COMMAND only, as
  // it would have arrived without treeguard: POSIX sends the signal to
  // COMMAND; Windows raises the console control event it maps to.
  virtual Result<void> forward(Signal signal) = 0;

  // The graceful stop of the drain: ask every member to end. POSIX sends
  // `signal` to every member, then CONT so that stopped members act on it;
  // Windows sends CTRL_BREAK_EVENT to COMMAND's process group, the nearest
  // it has. Best effort: each delivery says whether it failed.
  virtual std::vector<Delivery> stop_gracefully(Signal signal) = 0;

  // How kill_all() kills; the supervisor writes it into the authority.
  virtual ForceMethod force_method() const = 0;

  // A boundary that the controller's own death kills by force (a job with
  // kill-on-close dies with treeguard.exe's handle) returns why here. The
  // supervisor makes that standing authority durable before spawn, and
  // spawns nothing if it cannot. Boundaries that outlive their controller
  // (a guardian acts for it) return nullopt.
  virtual std::optional<std::string> standing_authority() const { return std::nullopt; }

  // The forced kill of every member. Only Supervisor calls it, and only
  // after the authority for it was recorded (Journal::authorize). It takes
  // no census of its own: who was alive is the authority's census
  // (alive_members(), taken once before the entry), and the kill is sent
  // at once, however many members a forker is still adding; whatever must
  // be named after it is read after it, when nothing forks any more.
  virtual Result<void> kill_all() = 0;

  // True when no member is alive any more and COMMAND has been reaped.
  // When the boundary's own object disappeared under the run (a leaf
  // removed from outside, a job that no longer answers), a boundary whose
  // loss proves it empty (a leaf can only be removed empty) says true;
  // else it fails with boundary_gone(): nothing can be waited on, signalled
  // or proven through it any more.
  virtual Result<bool> is_empty() = 0;

  // --leftovers outer, once COMMAND has exited by itself: give the members
  // still alive to `to`, which takes them down at its end as its own. A
  // leaf's members move into the cgroup this treeguard runs in (the
  // enclosing leaf, or below it); a process group's stay where they are and
  // go to the enclosing controller, their next subreaper, when this
  // treeguard exits (the core has checked that it is theirs). Returns the
  // members handed over; is_empty() then answers for the rest only, which
  // the run takes down as usual. An error: nothing was handed over.
  virtual Result<std::vector<MemberInfo>> hand_over(const EnclosingRun& to) {
    return fail(plain_error("the " + std::string(boundary_kind_name(kind()))
                            + " boundary cannot hand members to run " + to.run_id));
  }

  // Every member seen so far (monotonic).
  virtual std::vector<MemberInfo> members() const = 0;

  // Members still alive now (the survivors, when verification fails).
  virtual std::vector<MemberInfo> alive_members() = 0;

  // What the tree used so far (the leaf's counters, or the reaped
  // descendants' rusage); read before close(), which removes the leaf.
  // nullopt where the boundary has no source.
  virtual std::optional<TreeUsage> usage() { return std::nullopt; }

  // Remove what the boundary created (the leaf cgroup). Idempotent. Fails,
  // and keeps it, while members are alive.
  virtual Result<void> close() = 0;

  // Why close() left an empty boundary for another to remove, if it did:
  // a leaf inside the unit its service manager is taking down (see
  // CgroupBoundary::close).
  virtual std::optional<std::string> left_in_place() const { return std::nullopt; }

  // Wake wait() once `fd` is readable or hangs up, and call `then` there,
  // once (POSIX: a nested run's connection to the enclosing run's guardian,
  // which hangs up when that guardian is gone: the run then guards itself).
  // A boundary that cannot watch a descriptor ignores it.
  virtual void wake_once_on(int /*fd*/, std::function<void()> /*then*/) {}
};

struct BoundaryOptions {
  BoundaryRequest requested = BoundaryRequest::automatic;
  // Where to create the leaf cgroup; empty: beneath treeguard's own.
  std::string cgroup_parent;
  // Names the leaf (treeguard-<run_id>) and ties it to the run's record.
  std::string run_id;
  // Set on the boundary before COMMAND runs. A boundary that cannot enforce
  // one is not formed (the plan refuses every candidate that cannot).
  Limits limits;
  // The scope this treeguard was re-executed into for the run, if any.
  ScopeEntry entered;
  // The state directory: where the manager's answer on the delegation of
  // treeguard's unit is kept (empty: asked, not kept).
  std::filesystem::path state_dir;
  // Look at every candidate (probe); else a weaker one is looked at only
  // when it is tried (a launcher's run pays for no question it needs not ask).
  bool look_at_all = false;
};

// Writes -v lines; empty: silent.
using PlanLog = std::function<void(const std::string&)>;

// One way this host may form a boundary for the request: a step of the plan.
struct BoundaryCandidate {
  std::string name;  // "cgroup leaf", "system scope", "user scope", "process group", ...
  BoundaryKind kind = BoundaryKind::process_group;
  std::string where;  // what it forms, and where ("a leaf under /sys/fs/cgroup/x")
  // Non-empty: it cannot be formed here, and why (known before trying it).
  std::string refused;
  // Makes it, not yet formed (Boundary::form). A scope re-executes treeguard
  // inside the scope and returns only when it could not. Unset when refused.
  std::function<Result<std::unique_ptr<Boundary>>(const PlanLog& log)> make;
};

// The candidates for one request on one host, strongest first: `run` forms
// the first that works, `probe` and `run -v` print it whole.
struct BoundaryPlan {
  BoundaryRequest request = BoundaryRequest::automatic;
  std::vector<BoundaryCandidate> candidates;
  // What it means when none works ("--memory-max cannot be enforced",
  // "cgroup boundary unavailable"): the error's first words.
  std::string none_works;
};

// The plan for `options` on this host. Defined once per platform in
// platform/; it looks and asks, and creates nothing.
BoundaryPlan plan_boundary(const BoundaryOptions& options);

// The plan as -v and probe print it: one line per candidate, "NAME: WHERE"
// or "NAME: refused: WHY".
std::vector<std::string> plan_lines(const BoundaryPlan& plan);

// The run's error when no candidate formed: none_works, then each
// candidate's reason (`why[i]` for candidates[i]: its refusal or failure).
std::string plan_failure(const BoundaryPlan& plan, const std::vector<std::string>& why);

}  // namespace treeguard
