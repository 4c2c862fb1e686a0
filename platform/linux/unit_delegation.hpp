// Whether the systemd unit treeguard runs in is delegated (DESIGN.md [scopes]).
//
// systemd's rule: no process makes cgroups beneath a unit without
// Delegate=yes; the manager owns that subtree and may rearrange it. Since
// systemd 252 marks no delegated cgroup (no xattr), only the manager can
// say, so before forming a leaf beneath a unit treeguard did not make, it
// asks the manager -- systemctl [--user] show -p Delegate --value UNIT,
// systemd's own tool, no protocol of ours -- once per unit and boot, and
// keeps the answer in the state directory (STATE/units/MANAGER-UNIT). A
// unit that is not delegated gets no leaf beneath it: the plan goes to a
// scope of treeguard's own. Where no manager answers (no systemd, a
// chroot, a container) nothing is known and the leaf is made as before.
#pragma once

#include "result.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace treeguard::platform {

// The systemd unit whose cgroup holds a process.
struct ManagedUnit {
  std::string manager;  // "system", or "user" (a unit below user@UID.service)
  std::string unit;     // "ci.service", "app-term-1234.scope"
  std::string cgroup;   // the unit's cgroup, as /proc/PID/cgroup says it
  long user = -1;       // the user manager's uid ("user")
};

// The unit whose cgroup `cgroup` (relative to the mount, as /proc/PID/cgroup
// says it) is, or is below: its last *.service or *.scope component, the
// user manager's when it is below a user@UID.service. nullopt where none
// is (the root cgroup, a cgroup namespace's "/", a tree systemd did not
// name) or where treeguard made it: a treeguard-RUNID.scope treeguard asked
// for with Delegate=yes, or a treeguard-RUNID leaf below the unit (a
// nested run: its leaf nests in the outer run's).
std::optional<ManagedUnit> unit_of_cgroup(const std::string& cgroup);

// The manager's answer.
struct Delegation {
  // nullopt: no manager answered (nothing is known: the leaf as before).
  std::optional<bool> delegated;
  // How it is known, as -v and probe say it: "asked systemd, kept in FILE",
  // "systemd's answer of this boot, kept in FILE"; or why nothing is known.
  std::string how;
  bool asked = false;  // the manager was asked this time
};

// Runs `argv` (argv[0] a path) and returns what it wrote on stdout when it
// exits 0 within `limit`; else why not (the first line of its stderr, or of
// its stdout when its stderr is empty). Its stderr is never part of the
// answer: a warning there does not change it. A child still running at
// `limit` is SIGKILLed and reaped.
Result<std::string> run_for_output(const std::vector<std::string>& argv,
                                   std::chrono::milliseconds limit);

// How the manager is asked: argv (systemctl's, found in PATH) -> output.
using AskManager = std::function<Result<std::string>(const std::vector<std::string>& argv)>;

// The argv that asks `unit`'s manager whether it is delegated, systemctl
// found at `systemctl`.
std::vector<std::string> delegation_question(const std::string& systemctl, const ManagedUnit& unit);

// Where the answer for `unit` is kept: STATE/units/MANAGER-UNIT.
std::filesystem::path delegation_file(const std::filesystem::path& state_dir,
                                      const ManagedUnit& unit);

// Whether `unit` is delegated. The answer kept in `state_dir` is used when
// it is of this boot (`boot_id`) and of this cgroup of the unit
// (`cgroup_id`, its directory's inode: a unit stopped and started again
// is asked again); else the manager is asked through `ask` and the answer
// kept (written atomically, mode 0600; a file refused -- a symlink, a FIFO,
// not ours -- is never followed, and is replaced). An empty `state_dir`:
// asked, not kept. An answer other than "yes" or "no": not delegated (no
// leaf beneath the unit on an answer nobody could read), not kept. A
// failed ask (no manager answered): nothing is known, nothing kept.
Delegation unit_delegation(const ManagedUnit& unit, const std::filesystem::path& state_dir,
                           const std::string& boot_id, unsigned long long cgroup_id,
                           const std::string& systemctl, const AskManager& ask);

// For this process (euid, its cgroup, this boot): nullopt where no unit is
// asked of (unit_of_cgroup), else the unit and the answer. Root in a unit
// of another user's manager is not asked: that tree is the user's, never
// root's to make cgroups in (not delegated). No systemd (no
// /run/systemd/system) or no systemctl: nothing known.
struct OwnUnit {
  ManagedUnit unit;
  Delegation delegation;
};
// `own`: this process's cgroup as process_cgroup() read it.
std::optional<OwnUnit> own_unit_delegation(const std::filesystem::path& state_dir,
                                           const std::optional<std::string>& own);

}  // namespace treeguard::platform
