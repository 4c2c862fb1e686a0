#include "linux/lost_run.hpp"

#include "after_death.hpp"
#include "linux/proc.hpp"

#include <unistd.h>

namespace treeguard::platform {

namespace {

// What this guardian knows besides the record; the run's orphans went where
// this guardian went when it was orphaned.
GuardianSight sight_of(ProcessIdentity self, const Membership& seen,
                       std::optional<unsigned long long> last_look) {
  GuardianSight sight{self, seen, last_look, std::nullopt};
  if (auto parent = read_proc_stat(::getppid()); parent) {
    sight.reaper = ProcessIdentity{parent->pid, parent->start_time};
  }
  return sight;
}

}  // namespace

void take_down_lost_run(const std::filesystem::path& state_dir, const std::string& run_id,
                        const Membership& seen, std::optional<unsigned long long> last_look,
                        ProcessIdentity self, const std::function<bool(const RunRecord&)>& ours) {
  treeguard::take_down_lost_run(state_dir, run_id, sight_of(self, seen, last_look), ours);
}

void take_down_lost_record(const RecordPlace& place, const RunRecord& read, const Membership& seen,
                           std::optional<unsigned long long> last_look, ProcessIdentity self) {
  treeguard::take_down_lost_record(place, read, sight_of(self, seen, last_look));
}

}  // namespace treeguard::platform
