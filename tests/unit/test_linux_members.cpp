// Who the Linux boundaries count as a member, and when a member has left COMMAND's group.
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "port/boundary.hpp"

#include <doctest/doctest.h>

#include <sched.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <vector>

using namespace treeguard;
using namespace treeguard::platform;

namespace {

ProcStat stat_of(pid_t pid, pid_t pgid, pid_t sid) {
  ProcStat stat;
  stat.pid = pid;
  stat.pgid = pgid;
  stat.sid = sid;
  stat.state = 'S';
  stat.start_time = 1000;
  return stat;
}

}  // namespace

TEST_SUITE_BEGIN("treeguard::platform::linux");

TEST_CASE("sighting: leaving COMMAND's group or session is marked, not a departure from the run") {
  const CommandGroup command{100, 50};
  CHECK_FALSE(sighting(stat_of(101, 100, 50), command).left_group);
  CHECK(sighting(stat_of(102, 102, 50), command).left_group);   // setpgid
  CHECK(sighting(stat_of(103, 103, 103), command).left_group);  // setsid
  CHECK(sighting(stat_of(103, 103, 103), command).leads_session);
  CHECK(sighting(stat_of(102, 102, 50), command).leads_group);
}

TEST_CASE("sighting: a session id of 0 (leader outside the pid namespace) is still known") {
  // In a container whose session began outside its pid namespace, /proc and
  // getsid() show COMMAND's session as 0. A setsid'd child has its own pid
  // as session id: it left all the same.
  const CommandGroup command{100, 0};
  CHECK_FALSE(sighting(stat_of(101, 100, 0), command).left_group);
  CHECK(sighting(stat_of(103, 103, 103), command).left_group);
  CHECK(sighting(stat_of(102, 102, 0), command).left_group);
}

TEST_CASE("sighting: an observer that does not know COMMAND's group sees no member leave it") {
  const CommandGroup unknown{};
  CHECK_FALSE(sighting(stat_of(103, 103, 103), unknown).left_group);
  CHECK(sighting(stat_of(103, 103, 103), unknown).leads_session);
}

TEST_CASE("COMMAND is a member from spawn, even when it exits before any walk") {
  // `true` often exits before the first walk after spawn: a zombie is
  // skipped by walks, so only the spawn itself can name it. Without it a
  // record would name COMMAND's group but no member, and nothing after
  // treeguard's death could prove that group was the run's.
  // Make the race CI's loaded machines lose now and then a certainty: on
  // one CPU, under SCHED_FIFO (which the child inherits), the woken
  // parent cannot preempt the exec'd child of equal priority, so `true`
  // runs to its exit before spawn() looks. Needs CAP_SYS_NICE; without it
  // the test still runs, as a race.
  cpu_set_t before;
  REQUIRE(::sched_getaffinity(0, sizeof before, &before) == 0);
  const int policy_before = ::sched_getscheduler(0);
  struct sched_param param_before {};
  ::sched_getparam(0, &param_before);
  struct Restore {
    cpu_set_t set;
    int policy;
    struct sched_param param;
    ~Restore() {
      ::sched_setscheduler(0, policy, &param);
      ::sched_setaffinity(0, sizeof set, &set);
    }
  } restore{before, policy_before, param_before};
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &before)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
  BoundaryOptions options;
  options.requested = BoundaryRequest::process_group;
  options.run_id = "unit-members";
  for (int attempt = 0; attempt < 40; ++attempt) {
    // spawn() raises treeguard's own precedence (with reset-on-fork):
    // set the inherited policy again before each attempt.
    struct sched_param fifo {};
    fifo.sched_priority = 1;
    ::sched_setscheduler(0, SCHED_FIFO, &fifo);
    auto plan = plan_boundary(options);
    REQUIRE(plan.candidates.size() == 1);
    auto boundary = plan.candidates.front().make(nullptr);
    REQUIRE(boundary);
    REQUIRE((*boundary)->form());
    SpawnSpec spec;
    spec.argv = {"/bin/true"};
    spec.run_id = options.run_id;
    auto pid = (*boundary)->spawn(spec);
    REQUIRE(pid);
    const auto members = (*boundary)->members();
    const bool named = std::any_of(members.begin(), members.end(),
                                   [&](const MemberInfo& member) { return member.pid == *pid; });
    CHECK_MESSAGE(named, "attempt ", attempt, ": COMMAND pid ", *pid, " not among the members");
    CHECK(std::none_of(members.begin(), members.end(),
                       [](const MemberInfo& member) { return member.left_group; }));
    // Reap it: bounded by a deadline, so a failure cannot hang the suite.
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (!(*boundary)->child_status() && Clock::now() < until) {
      (*boundary)->wait(until);
    }
    REQUIRE((*boundary)->child_status());
    auto empty = (*boundary)->is_empty();
    REQUIRE(empty);
    CHECK(*empty);
    if (!named) {
      break;
    }
  }
}

TEST_CASE("arguments are read only from a process asleep or stopped, alone in its thread group") {
  ProcStat stat = stat_of(101, 100, 50);
  for (char state : {'S', 'T', 't'}) {
    stat.state = state;
    CHECK_MESSAGE(arguments_readable(stat), "state ", state);
  }
  for (char state : {'R', 'D', 'Z', 'X', 'I'}) {
    stat.state = state;
    CHECK_FALSE_MESSAGE(arguments_readable(stat), "state ", state);
  }
  stat.state = 'S';
  stat.threads = 2;  // another thread may hold the memory-map lock
  CHECK_FALSE(arguments_readable(stat));
  stat.threads = 1;
  stat.leader_exited = true;
  CHECK_FALSE(arguments_readable(stat));
}

TEST_CASE("a member first seen running is named by comm; its arguments come at a sighting asleep") {
  auto self = read_proc_stat(::getpid());
  REQUIRE(self);
  REQUIRE(self->threads == 1);
  const std::string mine = read_arguments(::getpid(), k_max_argv);
  REQUIRE_FALSE(mine.empty());
  Membership members;
  const CommandGroup command{self->pgid, self->sid};
  ProcStat seen = *self;
  seen.state = 'R';  // forking, perhaps: not read
  CHECK(remember_sighting(members, seen, command).argv.empty());
  CHECK_FALSE(members.all().front().comm.empty());
  seen.state = 'S';
  CHECK(remember_sighting(members, seen, command).argv == mine);
  // learnt once: a later sighting does not change it
  seen.comm = "other";
  CHECK(remember_sighting(members, seen, command).argv == mine);
  CHECK(members.all().front().comm == name_text(self->comm, k_max_comm));
  CHECK(members.size() == 1);
}

TEST_CASE(
    "forget_dead keeps the first seen, the live, and a dead leader a live member vouches for") {
  // Pids no process can have (above the kernel's pid_max): dead.
  const pid_t gone = 1 << 30;
  auto member = [](pid_t pid, bool leads_group, bool leads_session) {
    MemberInfo info;
    info.pid = pid;
    info.start_time = 5;
    info.leads_group = leads_group;
    info.leads_session = leads_session;
    return info;
  };
  Membership members;
  members.remember(member(gone, false, false));      // first seen: evidence, kept
  members.remember(member(gone + 1, false, false));  // dead: forgotten
  members.remember(member(gone + 2, true, false));   // dead, its group has a live member
  members.remember(member(gone + 3, true, true));    // dead, nobody alive in what it led
  auto self = read_proc_stat(::getpid());
  REQUIRE(self);
  MemberInfo alive_member = member(::getpid(), false, false);
  alive_member.start_time = self->start_time;
  members.remember(alive_member);  // alive, though the walk did not list it: kept
  ProcStat in_group = stat_of(gone + 5, gone + 2, gone + 9);
  members.remember(sighting(in_group, CommandGroup{}));  // alive, as the walk saw it

  forget_dead(members, {in_group}, 1);
  std::vector<long> left;
  for (const auto& kept : members.all()) {
    left.push_back(kept.pid);
  }
  CHECK(left == std::vector<long>{gone, gone + 2, ::getpid(), gone + 5});
  // Still found by identity after the forgetting.
  CHECK(members.find(ProcessIdentity{gone + 5, in_group.start_time}) != nullptr);
  CHECK(members.find(ProcessIdentity{gone + 1, 5}) == nullptr);
}

TEST_CASE("a run's churn costs the walk no memory once its processes are gone") {
  // Short-lived children, each seen by a walk and then killed and reaped,
  // as a build's compilers come and go: what the walk remembers stays
  // bounded by what it must keep (the first seen, the live), not by how
  // many came and went.
  constexpr std::size_t keep_first = 8;
  constexpr int churned = 3 * static_cast<int>(k_forget_batch);
  Membership members;
  std::vector<ProcessIdentity> first;
  std::size_t most = 0;
  for (int i = 0; i < churned; ++i) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      for (;;) {
        ::pause();
      }
    }
    auto alive = walk_members(::getpid(), CommandGroup{}, members, {}, nullptr, keep_first);
    ::kill(child, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    if (first.size() < keep_first) {
      for (const auto& seen : alive) {
        if (seen.pid == child) {
          first.push_back(ProcessIdentity{seen.pid, seen.start_time});
        }
      }
    }
    most = std::max(most, members.size());
  }
  INFO("members remembered at most: " << most << " of " << churned << " churned");
  CHECK(most <= keep_first + k_forget_batch + 8);
  // The first seen are kept, in order: what a record names of the run.
  REQUIRE(members.size() >= keep_first);
  for (std::size_t i = 0; i < first.size(); ++i) {
    CHECK(static_cast<const ProcessIdentity&>(members.all()[i]) == first[i]);
  }
}

TEST_CASE("name_as_now: a process that exec'd since it was seen is named as it is now") {
  // What is handed over is named as the person will find it (ps, the
  // report): a child first seen as the fork of this test, now `sleep`.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::execlp("sleep", "sleep", "3600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto first = read_proc_stat(child);
  REQUIRE(first);
  MemberInfo seen;
  seen.pid = child;
  seen.start_time = first->start_time;
  seen.comm = "before-exec";
  seen.argv = "before-exec";
  MemberInfo replaced = seen;  // the same pid with another start time: another process
  replaced.start_time = first->start_time + 1;
  // the child has exec'd once /proc names it sleep, and is asleep (its
  // arguments readable) (bounded: 10 s)
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto now = read_proc_stat(child);
    REQUIRE(now);
    if ((now->comm == "sleep" && arguments_readable(*now))
        || std::chrono::steady_clock::now() > give_up) {
      break;
    }
    ::usleep(1000);
  }
  std::vector<MemberInfo> members{seen, replaced};
  name_as_now(members);
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(members[0].comm == "sleep");
  CHECK(members[0].argv == "sleep 3600");
  CHECK(members[1].comm == "before-exec");  // not this process: its name is kept
  // gone: the name it had is kept
  std::vector<MemberInfo> gone{seen};
  name_as_now(gone);
  CHECK(gone[0].comm == "before-exec");
}

TEST_SUITE_END();
