// The pid namespace boundary's forced kill, on a real namespace: skipped
// (its reason printed) where this host cannot make one.
#include "fifo_word.hpp"
#include "linux/pid_namespace_boundary.hpp"
#include "linux/proc.hpp"
#include "linux/signals.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <string>

using namespace treeguard;
using namespace treeguard::platform;

namespace {

const std::string& pid_namespace_why_not() {
  static const std::string why = pid_namespace_unavailable().value_or(std::string());
  return why;
}

void pause_ms(long ms) {
  struct timespec pause = {0, ms * 1'000'000};
  ::nanosleep(&pause, nullptr);
}

}  // namespace

TEST_CASE("the pid namespace's forced kill walks no member: the census named them, the kill "
          "takes every one"
          * doctest::skip(!pid_namespace_why_not().empty())
          * doctest::description(pid_namespace_why_not().c_str())) {
  // The authority's census is the one (Boundary::kill_all): a member born
  // after it dies with the namespace's init, and kill_all() does not walk
  // the namespace to name it first.
  block_signals();
  const std::string fifo = fmt::format("/tmp/tg-unit-pidns-{}.fifo", ::getpid());
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  PidNamespaceBoundary b;
  REQUIRE(b.form());
  // COMMAND waits for the word on the FIFO, then starts a member.
  auto pid = b.spawn(SpawnSpec{{"sh", "-c", fmt::format("read go < {}; sleep 1000 & wait", fifo)},
                               "20261129T000000-1-9d05"});
  REQUIRE(pid);
  const auto census = b.alive_members();
  CHECK(census.size() == 1);
  CHECK((!census.empty() && census[0].pid == *pid));

  // The word (COMMAND opens the FIFO once its shell runs: bounded), then
  // the new member, as /proc lists COMMAND's children.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const bool said = test::say_go(fifo, until);
  long born = 0;
  while (said && born == 0 && std::chrono::steady_clock::now() < until) {
    const auto below = list_descendants(static_cast<pid_t>(*pid));
    if (below.empty()) {
      pause_ms(1);
    } else {
      born = below.front().pid;
    }
  }

  // Killed whatever happened above: nothing of the namespace outlives the test.
  auto killed = b.kill_all();
  CHECK_MESSAGE(killed, (killed ? std::string() : killed.error().message()));
  ::unlink(fifo.c_str());
  CHECK(said);
  CHECK(born != 0);
  const auto named = b.members();
  INFO("born after the census: pid " << born);
  CHECK(named.size() == 1);
  CHECK(std::none_of(named.begin(), named.end(),
                     [&](const MemberInfo& member) { return member.pid == born; }));
  const auto reap_until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto empty = b.is_empty();
  while (!(empty && *empty) && std::chrono::steady_clock::now() < reap_until) {
    b.wait(Clock::now() + std::chrono::milliseconds(50));
    empty = b.is_empty();
  }
  CHECK((empty && *empty));
}
