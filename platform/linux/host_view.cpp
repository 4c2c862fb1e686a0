// The HostView of gate.hpp on Linux: boot id and liveness from /proc (the
// one definition of "alive", contract section 6), emptiness from the
// recorded-boundary checks of takedown.hpp.
#include "gate.hpp"
#include "linux/proc.hpp"
#include "takedown.hpp"

namespace treeguard {

namespace {

class LinuxHostView final : public HostView {
public:
  LinuxHostView() : m_boot_id(platform::boot_id()) {}
  std::string boot_id() const override { return m_boot_id; }
  bool process_alive(long pid, unsigned long long start_time) const override {
    return pid > 0 && platform::process_alive(static_cast<pid_t>(pid), start_time);
  }
  std::optional<bool> boundary_empty(const RunRecord& record) const override {
    return recorded_boundary_empty(record);
  }

private:
  std::string m_boot_id;
};

}  // namespace

std::unique_ptr<HostView> make_host_view() {
  return std::make_unique<LinuxHostView>();
}

}  // namespace treeguard
