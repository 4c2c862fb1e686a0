#include "port/probe.hpp"

#include "linux/cgroup_fs.hpp"
#include "linux/pid_namespace_boundary.hpp"
#include "port/boundary.hpp"
#include "posix/unique_fd.hpp"
#include "state_dir.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace treeguard {

std::vector<std::string> fallback_advice() {
  std::vector<std::string> advice{
      "process-group loses against a cgroup: the kill in one step (it stops and kills in "
      "walks of the tree instead) and, once treeguard itself is SIGKILLed, an escapee that "
      "left the tree and scrubbed TREEGUARD_RUNS after the guardian's last walk"};
  auto mount = platform::cgroup2_mount();
  advice.push_back(mount ? "for a cgroup here: run as root, or make a cgroup under " + *mount
                               + " writable by you (delegated) and pass --cgroup-parent"
                         : "for a cgroup here: a host (or container) with cgroup v2 mounted");
  if (!platform::pid_namespace_unavailable()) {
    advice.push_back(
        "stronger here without root: --boundary pid-namespace (opt-in: COMMAND sees the "
        "namespace's pids, a setuid program gains nothing)");
  }
  return advice;
}

ProbeReport probe_host() {
  ProbeReport report;
  auto add = [&](std::string name, bool ok, std::string detail) {
    report.items.push_back(ProbeItem{std::move(name), ok, std::move(detail)});
  };

  struct utsname uts;
  if (::uname(&uts) == 0) {
    add("kernel", true, fmt::format("{} {}", uts.sysname, uts.release));
  }

  auto mount = platform::cgroup2_mount();
  add("cgroup v2 mount", bool(mount), mount ? *mount : mount.error().message());
  auto own = platform::own_cgroup_dir();
  if (mount) {
    add("own cgroup", bool(own), own ? *own : own.error().message());
  }

  bool writable = false;
  bool has_kill = false;
  std::string why;
  if (own) {
    // Try what a run would do: make a leaf, look at it, remove it.
    std::string leaf = fmt::format("{}/treeguard-probe-{}", *own, ::getpid());
    if (::access((*own + "/cgroup.procs").c_str(), W_OK) != 0) {
      why = fmt::format("{}/cgroup.procs: {}", *own, std::strerror(errno));
    } else if (::mkdir(leaf.c_str(), 0755) != 0) {
      why = fmt::format("mkdir {}: {}", leaf, std::strerror(errno));
    } else {
      writable = ::access((leaf + "/cgroup.procs").c_str(), W_OK) == 0;
      if (!writable) {
        why = fmt::format("{}/cgroup.procs: {}", leaf, std::strerror(errno));
      }
      has_kill = ::access((leaf + "/cgroup.kill").c_str(), F_OK) == 0;
      ::rmdir(leaf.c_str());
    }
  } else {
    why = own.error().message();
  }
  add("cgroup v2 writable", writable, writable ? *own : why);
  add("cgroup.kill", has_kill,
      has_kill ? "kernel 5.14+"
               : (writable ? "absent: freeze and kill each" : "not checked: no writable cgroup"));
  report.items.back().applicable = writable;

  // --memory-max / --pids-max need the controller given to the leaf's parent.
  for (const char* controller : {"memory", "pids"}) {
    const std::string name = fmt::format("--{}-max", controller);
    if (!own) {
      add(name, false, "no cgroup v2");
      continue;
    }
    auto listed = platform::read_cgroup_file(*own + "/cgroup.controllers");
    const bool given = listed && platform::has_word(*listed, controller);
    add(name, given && writable,
        given ? (writable ? fmt::format("{} controller available to {}", controller, *own)
                          : "cgroup not writable: refused (exit 125)")
              : fmt::format("{} has no {} controller (cgroup.controllers: {}): refused (exit 125)",
                            *own, controller,
                            listed ? platform::words_or_none(*listed) : std::string("none")));
  }

  // clone3 with a zero size answers EINVAL where the call exists.
  errno = 0;
  long rc = ::syscall(SYS_clone3, nullptr, 0);
  bool has_clone3 = rc < 0 && errno != ENOSYS;
  if (!mount) {
    add("clone3 into cgroup", false, "no cgroup v2 here");
    report.items.back().applicable = false;
  } else {
    add("clone3 into cgroup", has_clone3,
        has_clone3 ? "CLONE_INTO_CGROUP (kernel 5.7+)" : "absent: the child joins before exec");
  }

  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  add("pidfd", pidfd >= 0,
      pidfd >= 0 ? "pidfd_open, pidfd_send_signal"
                 : fmt::format("pidfd_open: {}", std::strerror(errno)));
  if (pidfd >= 0) {
    ::close(pidfd);
  }
  int subreaper = 0;
  bool has_subreaper = ::prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0) == 0;
  add("child subreaper", has_subreaper,
      has_subreaper ? "PR_SET_CHILD_SUBREAPER" : std::strerror(errno));
  // Tried for real, as a run would form it, in a child that exits at once.
  auto userns = platform::pid_namespace_unavailable();
  add("user+pid namespace", !userns,
      userns ? *userns
             : "a user+PID namespace with a fresh /proc: --boundary pid-namespace (opt-in)");
  add("job objects", false, "Windows only");

  // What --boundary auto forms here: the run's own plan, every candidate
  // looked at.
  BoundaryOptions options;
  options.run_id = "RUNID";
  options.look_at_all = true;
  // Where run keeps the manager's answer on the unit's delegation.
  if (auto state = open_state_dir(std::nullopt); state) {
    options.state_dir = state->path;
  }
  set_plan(report, plan_boundary(options));
  if (report.auto_boundary == "process-group") {
    report.fallback_notes = fallback_advice();
  }
  return report;
}

}  // namespace treeguard
