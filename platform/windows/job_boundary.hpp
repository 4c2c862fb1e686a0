// The Windows boundary: a job object named treeguard-<run_id>. COMMAND is
// created suspended, assigned to the job, then resumed, so it runs no
// instruction outside it; everything it starts is born in the job, and
// breakaway is not allowed (CREATE_BREAKAWAY_FROM_JOB fails with access
// denied). The job has KILL_ON_JOB_CLOSE; treeguard.exe and the run's
// guardian hold its handles. If treeguard.exe dies, the guardian drains the
// run first (guardian_process.hpp); if both die, however they die, Windows
// terminates every member. That kill's authority is recorded before COMMAND
// starts (standing authority); a controller that ends without having
// proven the job empty disarms kill-on-close first, so the tree stays as
// evidence.
#pragma once

#include "port/boundary.hpp"
#include "windows/win_util.hpp"

#include <memory>
#include <string>
#include <vector>

namespace treeguard::platform {

// The processes in `job` (named `name`, for errors) now, by pid and
// creation time (0 where it could not be read): the one listing of a job,
// for its controller and for whoever acts on it from its record.
Result<std::vector<MemberInfo>> job_processes(HANDLE job, const std::string& name);

class JobObjectBoundary final : public Boundary {
public:
  // Create the job for `run_id`: kill-on-close, no breakaway, its messages
  // sent to event_port(). Fails if a job of that name exists already.
  static Result<std::unique_ptr<JobObjectBoundary>> create(const std::string& run_id);

  ~JobObjectBoundary() override;

  BoundaryKind kind() const override { return BoundaryKind::job; }
  std::string address() const override { return m_name; }
  Result<long> spawn(const SpawnSpec& spec) override;
  Event wait(std::optional<TimePoint> deadline) override;
  std::optional<ExitStatus> child_status() const override { return m_status; }
  Result<void> forward(Signal signal) override;
  std::vector<Delivery> stop_gracefully(Signal signal) override;
  ForceMethod force_method() const override {
    return {"TerminateJobObject", std::nullopt, address()};
  }
  std::optional<std::string> standing_authority() const override;
  Result<void> kill_all() override;
  Result<bool> is_empty() override;
  // --leftovers outer. This job is nested in the enclosing run's job (this
  // treeguard.exe runs in it, so COMMAND was born in it before being
  // assigned here, and Windows 8+ nests the jobs), and a process never
  // leaves a job: the leftovers stay where they are, already members of
  // the enclosing job. Handing over is proving that every one of them is
  // in that job (opened by name with query rights only, for the check),
  // then clearing this job's KILL_ON_JOB_CLOSE so that closing it kills
  // nobody. Everything in this job is then the enclosing run's, and
  // is_empty() answers for COMMAND only. An error: kill-on-close stands
  // and nothing was handed over.
  Result<std::vector<MemberInfo>> hand_over(const EnclosingRun& to) override;
  std::vector<MemberInfo> members() const override { return m_members; }
  std::vector<MemberInfo> alive_members() override;
  Result<void> close() override;

  // The exit code TerminateJobObject gives every member: 128+9, what a
  // shell reports for a process killed by SIGKILL.
  static constexpr UINT k_forced_exit_code = 137;

private:
  explicit JobObjectBoundary(std::string name) : m_name(std::move(name)) {}

  // Pick up COMMAND's exit status once its handle is signalled.
  void note_child();
  // The job's members now, by (pid, creation time); remembers new ones.
  Result<std::vector<MemberInfo>> list_members();
  void remember(const MemberInfo& member);
  // Clear KILL_ON_JOB_CLOSE (the tree is left as evidence, or handed over).
  Result<void> disarm_kill_on_close();
  // Every member alive now is in `outer` (hand_over's proof).
  Result<void> all_within(HANDLE outer, const EnclosingRun& to);

  std::string m_name;
  UniqueHandle m_job;
  UniqueHandle m_child;
  DWORD m_child_pid = 0;
  HANDLE m_child_wait = nullptr;  // RegisterWaitForSingleObject
  std::optional<ExitStatus> m_status;
  std::vector<MemberInfo> m_members;
  bool m_proven_empty = false;
  bool m_handed_over = false;  // hand_over(): what is left is the enclosing run's
};

}  // namespace treeguard::platform
