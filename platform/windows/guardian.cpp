// Controller death on Windows needs no guardian process. The job has
// KILL_ON_JOB_CLOSE and treeguard.exe holds its handle, so when
// treeguard.exe dies (TerminateProcess, a crash, SIGKILL of its Wine
// process) Windows terminates every member at once. The authority for that
// kill is the standing authority the supervisor makes durable before
// COMMAND starts (JobObjectBoundary::standing_authority); a later run's
// gate or `treeguard sweep` finds the record by the job's name. Why not a
// guardian holding the only handle: it would be a second process per run
// (CreateProcess costs more than one FlushFileBuffers, see README), and if
// both died the last handle would close and kill-on-close would kill with
// no authority at all.
#include "port/guardian.hpp"

namespace treeguard {

Result<std::unique_ptr<Guardian>> start_guardian(const GuardianSpec&) {
  return std::unique_ptr<Guardian>();
}

}  // namespace treeguard
