// The drain's signal spares the trees of live nested runs (DESIGN.md
// [nested]): a nested run's controller is a process running this very
// program with children; its descendants are its run's, it gets the signal.
#include "linux/graceful_stop.hpp"
#include "run_id.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <vector>

using namespace treeguard;
using namespace treeguard::platform;

namespace {

// A child of this process that pauses for ever, or execs `sleep` (then it
// runs another program); each with a child of its own that pauses.
struct Family {
  pid_t parent = -1;
  pid_t child = -1;
};
Family start_family(bool exec_other) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t parent = ::fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    const pid_t child = ::fork();
    if (child == 0) {
      for (;;) {
        ::pause();
      }
    }
    (void)::write(ready[1], &child, sizeof child);
    if (exec_other) {
      ::execlp("sleep", "sleep", "600", static_cast<char*>(nullptr));
    }
    for (;;) {
      ::pause();
    }
  }
  pid_t child = -1;
  REQUIRE(::read(ready[0], &child, sizeof child) == sizeof child);
  ::close(ready[0]);
  ::close(ready[1]);
  if (exec_other) {
    // Until the exec is done, it runs this program still.
    for (int i = 0; i < 500; ++i) {
      char link[64] = {};
      const std::string path = "/proc/" + std::to_string(parent) + "/comm";
      FILE* comm = std::fopen(path.c_str(), "r");
      const bool slept = comm != nullptr && std::fgets(link, sizeof link, comm) != nullptr
                         && std::string(link) == "sleep\n";
      if (comm != nullptr) {
        std::fclose(comm);
      }
      if (slept) {
        break;
      }
      ::usleep(2000);
    }
  }
  return Family{parent, child};
}

void end(const Family& family) {
  ::kill(family.child, SIGKILL);
  ::kill(family.parent, SIGKILL);
  ::waitpid(family.parent, nullptr, 0);
}

ProcStat stat_of(pid_t pid, pid_t ppid) {
  ProcStat stat;
  stat.pid = pid;
  stat.ppid = ppid;
  stat.state = 'S';
  return stat;
}

}  // namespace

TEST_SUITE_BEGIN("treeguard::platform::linux");

TEST_CASE("inside_live_nested_runs: the descendants of a process running this program") {
  const Family nested = start_family(false);
  const Family other = start_family(true);
  const pid_t self = ::getpid();
  const std::vector<ProcStat> found = {
      stat_of(nested.parent, self), stat_of(nested.child, nested.parent),
      stat_of(other.parent, self), stat_of(other.child, other.parent)};
  const auto inside = inside_live_nested_runs(found);
  CHECK(inside.count(nested.child) == 1);
  CHECK(inside.count(nested.parent) == 0);  // the controller gets the signal itself
  CHECK(inside.count(other.child) == 0);    // its parent runs another program
  CHECK(inside.count(other.parent) == 0);
  // A process of this program without children in `found` spares nobody.
  CHECK(inside_live_nested_runs({stat_of(nested.parent, self)}).empty());
  end(nested);
  end(other);
}

TEST_CASE("run_id_pid: the pid a run id carries") {
  CHECK(run_id_pid("20240131T235959-4242-0a9f") == 4242L);
  CHECK(run_id_pid("20240131T235959-2147483647-0a9f") == 2147483647L);
  CHECK_FALSE(run_id_pid("20240131T235959-2147483648-0a9f"));
  CHECK_FALSE(run_id_pid("20240131T235959-0-0a9f"));
  CHECK_FALSE(run_id_pid("20240131T235959-42-0a9"));
  CHECK_FALSE(run_id_pid("treeguard-20240131T235959-42-0a9f"));
}
