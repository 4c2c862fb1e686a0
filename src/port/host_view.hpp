// What the dispatch gate, status and sweep ask of the host: its boot and
// namespace, whether a process is alive, whether a recorded boundary is
// empty. Each platform implements it in its host_view.cpp.
#pragma once

#include "identity.hpp"
#include "record.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

// What the gate may ask the host. The real one lives with the platform's
// liveness code (the one definition of "alive", DESIGN.md [liveness]).
class HostView {
public:
  virtual ~HostView() = default;
  // This boot's id, as records carry it; empty if unknown.
  virtual std::string boot_id() const = 0;
  // This process's pid namespace, as records carry it (RunRecord::pid_ns);
  // 0 if unknown. A record of another namespace names pids that mean
  // nothing here.
  virtual std::uint64_t pid_namespace() const { return 0; }
  // When this pid namespace's init started (RunRecord::pid_ns_init);
  // nullopt if unknown.
  virtual std::optional<unsigned long long> pid_namespace_init() const { return std::nullopt; }
  // The pid namespace `inode`, not this one (whose init started at `init`,
  // if known), is proven gone, and every process that was in it with it:
  // seeing every process of the host, none is in it (or the one holding
  // that inode now has another init). False when that cannot be told from
  // here. (A record of this namespace's inode under another init is of a
  // namespace gone: controller_state() tells that from pid_namespace_init.)
  virtual bool pid_namespace_gone(std::uint64_t /*inode*/,
                                  std::optional<unsigned long long> /*init*/) const {
    return false;
  }
  // This machine's id, as records carry it (RunRecord::machine_id); empty
  // if unknown.
  virtual std::string machine_id() const { return {}; }
  // When this boot began, in ns since the Unix epoch; nullopt if unknown.
  // A record of another boot of this machine is of an earlier one only if
  // it was last written before this boot began: one written since is
  // another machine's that shares the id (a cloned image).
  virtual std::optional<std::int64_t> boot_began_at() const { return std::nullopt; }
  // The process with this pid and start time (this boot) is alive.
  virtual bool process_alive(long pid, unsigned long long start_time) const = 0;
  // The record's boundary is proven empty (true), proven not empty (false),
  // or cannot be told (nullopt). Only asked for records of this boot.
  virtual std::optional<bool> boundary_empty(const RunRecord& record) const = 0;
  // The run's processes the record's boundary holds now, named as far as
  // the platform can name them from here (comm, argv); nullopt when that
  // cannot be told. Asked by `status RUN` only: it may scan the host.
  virtual std::optional<std::vector<MemberInfo>>
  alive_in_boundary(const RunRecord& record) const = 0;
};

// The live view of this host, built from the platform's liveness and
// takedown code (platform/linux/host_view.cpp). Never null.
std::unique_ptr<HostView> make_host_view();

}  // namespace treeguard
