#include "linux/lost_run.hpp"

#include "after_death.hpp"
#include "linux/proc.hpp"
#include "record_store.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <tuple>

namespace treeguard::platform {

void take_down_lost_run(const std::filesystem::path& state_dir, const std::string& run_id,
                        const Membership& seen, std::optional<unsigned long long> last_look,
                        ProcessIdentity self, const std::function<bool(const RunRecord&)>& ours) {
  RecordStore store(state_dir);
  auto loaded = store.load(run_id);
  if (!loaded) {
    // Either the run finished its record just before dying, or it cannot
    // be read: without a record there is no durable authority. Fail
    // closed; the gate of the next run finds what is left.
    return;
  }
  const RunRecord& on_disk = *loaded;
  RunRecord record = on_disk;
  if (record.disposition != Disposition::pending) {
    return;  // the controller finished the run itself
  }
  if (!ours(record)) {
    return;  // not the boundary we were started for: never act on it
  }
  const auto now = unix_time_ns();
  record.phases.push_back(PhaseEntry{"guardian", now});
  record.notes.push_back("controller lost");
  // What the takedown claims: every member the record names and every one
  // this guardian saw. What the record keeps of them is capped like every
  // record's (keep_members), so that it can always be written.
  Membership members;
  for (const auto& member : record.members) {
    members.remember(member);
  }
  for (const auto& member : seen.all()) {
    members.remember(member);
  }
  RunRecord claim = record;
  claim.members = members.all();
  claim.last_look = last_look;
  keep_members(record, claim.members);
  if (record.members.size() == claim.members.size()) {
    // A later settler may rely on the look only where the record names
    // every member the guardian saw.
    record.last_look = last_look;
  }
  // The run's orphans went where this guardian went when it was
  // orphaned: to its parent now (the recorded reaper, or the next one up
  // if that has died since).
  if (auto parent = read_proc_stat(::getppid()); parent) {
    claim.reaper = ProcessIdentity{parent->pid, parent->start_time};
  }
  AfterDeath how;
  how.closing_phase = "verify";
  how.reason = fmt::format("controller lost: pid {} exited without finishing the run",
                           record.controller.pid);
  how.by = fmt::format("guardian pid {}", self.pid);
  how.drained_note = "the guardian's drain emptied the run: no forced kill";
  how.not_proven_note = "members survived the guardian's kill: ";
  how.kill_failed_note = "guardian kill failed: ";
  std::ignore = take_down_after_death(store, on_disk, record, how, &claim);
}

}  // namespace treeguard::platform
