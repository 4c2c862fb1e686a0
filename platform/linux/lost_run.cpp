#include "linux/lost_run.hpp"

#include "after_death.hpp"
#include "linux/proc.hpp"

#include <unistd.h>

namespace treeguard::platform {

void take_down_lost_run(const std::filesystem::path& state_dir, const std::string& run_id,
                        const Membership& seen, std::optional<unsigned long long> last_look,
                        ProcessIdentity self, const std::function<bool(const RunRecord&)>& ours) {
  GuardianSight sight{self, seen, last_look, std::nullopt};
  // The run's orphans went where this guardian went when it was orphaned.
  if (auto parent = read_proc_stat(::getppid()); parent) {
    sight.reaper = ProcessIdentity{parent->pid, parent->start_time};
  }
  treeguard::take_down_lost_run(state_dir, run_id, sight, ours);
}

}  // namespace treeguard::platform
