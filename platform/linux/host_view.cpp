// The HostView of port/host_view.hpp on Linux: boot and machine ids and
// liveness from /proc (the one definition of "alive", DESIGN.md [liveness]),
// emptiness from the recorded-boundary checks of port/takedown.hpp.
#include "port/host_view.hpp"

#include "linux/proc.hpp"
#include "port/takedown.hpp"

namespace treeguard {

namespace {

class LinuxHostView final : public HostView {
public:
  LinuxHostView() : m_boot_id(platform::boot_id()), m_machine_id(platform::machine_id()) {}
  std::string boot_id() const override { return m_boot_id; }
  std::string machine_id() const override { return m_machine_id; }
  std::optional<std::int64_t> boot_began_at() const override { return platform::boot_began_at(); }
  // Facts of this process that cannot change while it lives (a process
  // never leaves its pid namespace, and the namespace's init outlives every
  // process in it): read once, though the gate and the record both ask.
  std::uint64_t pid_namespace() const override {
    if (!m_pid_namespace) {
      m_pid_namespace = platform::own_pid_namespace();
    }
    return *m_pid_namespace;
  }
  std::optional<unsigned long long> pid_namespace_init() const override {
    if (!m_pid_namespace_init) {
      m_pid_namespace_init = platform::own_pid_namespace_init();
    }
    return *m_pid_namespace_init;
  }
  bool pid_namespace_gone(std::uint64_t inode,
                          std::optional<unsigned long long> init) const override {
    return platform::pid_namespace_gone(inode, init);
  }
  bool process_alive(long pid, unsigned long long start_time) const override {
    return pid > 0 && platform::process_alive(static_cast<pid_t>(pid), start_time);
  }
  std::optional<bool> boundary_empty(const RunRecord& record) const override {
    return recorded_boundary(record)->empty();
  }
  std::optional<std::vector<MemberInfo>> alive_in_boundary(const RunRecord& record) const override {
    std::vector<MemberInfo> alive;
    const std::optional<bool> empty = recorded_boundary(record)->empty(nullptr, &alive);
    if (!empty.has_value() || (!*empty && alive.empty())) {
      return std::nullopt;  // not told, or not named from here (a pid namespace's)
    }
    // Named as a member is named when first seen (comm; the arguments
    // where reading them cannot wait on the process).
    for (MemberInfo& process : alive) {
      auto stat = platform::read_proc_stat(static_cast<pid_t>(process.pid));
      if (stat && stat->start_time == process.start_time) {
        process.comm = name_text(stat->comm, k_max_comm);
        if (platform::arguments_readable(*stat)) {
          process.argv = platform::read_arguments(stat->pid, k_max_argv);
        }
      }
    }
    return alive;
  }

private:
  std::string m_boot_id;
  std::string m_machine_id;
  mutable std::optional<std::uint64_t> m_pid_namespace;
  mutable std::optional<std::optional<unsigned long long>> m_pid_namespace_init;
};

}  // namespace

std::unique_ptr<HostView> make_host_view() {
  return std::make_unique<LinuxHostView>();
}

}  // namespace treeguard
