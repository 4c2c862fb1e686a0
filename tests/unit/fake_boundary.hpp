// A scripted Boundary and a hand-driven clock, so that the lifecycle can be
// tested without processes, sleeps or a disk.
#pragma once

#include "port/boundary.hpp"
#include "supervisor.hpp"

#include <deque>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace treeguard::testing {

class FakeClock final : public SteadySource {
public:
  TimePoint now() const override { return m_now; }
  void advance_to(TimePoint at) {
    if (at > m_now) {
      m_now = at;
    }
  }
  void advance(Duration by) { m_now += by; }

private:
  TimePoint m_now = TimePoint() + std::chrono::hours(1);
};

struct FakeMember {
  bool alive = true;
  bool ignores_term = false;
  bool unkillable = false;  // uninterruptible sleep
};

// Member 0 is COMMAND. What happens at a time is scripted with at().
class FakeBoundary final : public Boundary {
public:
  explicit FakeBoundary(FakeClock& clock) : m_clock(clock) { m_members.push_back({}); }

  // Run `action` when the fake time reaches start + offset.
  void at(Duration offset, std::function<Event(FakeBoundary&)> action) {
    m_script.push_back({offset, std::move(action)});
  }

  // Scripted actions.
  Event child_exits(int code) {
    m_members[0].alive = false;
    m_status = ExitStatus{false, code};
    return Event{Event::Kind::changed, {}, false};
  }
  Event member_exits(std::size_t index) {
    m_members.at(index).alive = false;
    return Event{Event::Kind::changed, {}, false};
  }
  static Event signal(Signal s) { return Event{Event::Kind::signal, s, false}; }
  // The boundary's own object disappears (a leaf killed and removed from
  // outside): every member with it, and from now on is_empty() fails with
  // boundary_gone(), as a boundary does whose loss proves nothing.
  Event vanishes() {
    if (m_members[0].alive) {
      m_status = ExitStatus{true, signal_number(signals::kill)};
    }
    for (auto& m : m_members) {
      m.alive = false;
    }
    gone = boundary_gone("the fake boundary was removed from outside");
    return Event{Event::Kind::gone, {}, false};
  }

  std::size_t add_member(FakeMember member) {
    m_members.push_back(member);
    return m_members.size() - 1;
  }
  FakeMember& member(std::size_t index) { return m_members.at(index); }

  BoundaryKind kind() const override { return BoundaryKind::cgroup; }
  std::string address() const override { return address_text; }

  Result<long> spawn(const SpawnSpec& spec) override {
    calls.push_back("spawn " + spec.argv.front());
    m_start = m_clock.now();
    if (spawn_error) {
      m_members[0].alive = false;
      return fail(*spawn_error);
    }
    return 100L;
  }

  Event wait(std::optional<TimePoint> deadline) override {
    ++waits;
    if (m_pending_change) {
      m_pending_change = false;
      return Event{Event::Kind::changed, {}, false};
    }
    if (!m_script.empty()) {
      TimePoint when = m_start + m_script.front().offset;
      if (!deadline || when <= *deadline) {
        auto action = std::move(m_script.front().action);
        m_script.pop_front();
        m_clock.advance_to(when);
        return action(*this);
      }
    }
    if (!deadline) {
      // The lifecycle would block forever: a test bug, or a lifecycle bug.
      // The run ends here as on an internal error (supervise() catches it),
      // so that the test fails on `stuck` rather than hanging in a loop.
      stuck = true;
      m_clock.advance(std::chrono::hours(24 * 365));
      throw std::runtime_error("the lifecycle waited without a deadline, and nothing was left "
                               "to happen");
    }
    m_clock.advance_to(*deadline);
    return Event{Event::Kind::deadline, {}, false};
  }

  std::optional<ExitStatus> child_status() const override { return m_status; }

  Result<void> forward(Signal s) override {
    calls.push_back("forward " + signal_name(s));
    if (m_members[0].alive && s == signals::term && !m_members[0].ignores_term) {
      m_members[0].alive = false;
      m_status = ExitStatus{true, signal_number(s)};
      m_pending_change = true;
    }
    return {};
  }

  // As a POSIX boundary does it: the signal to every member, then CONT.
  std::vector<Delivery> stop_gracefully(Signal s) override {
    calls.push_back("stop_gracefully " + signal_name(s));
    for (std::size_t i = 0; i < m_members.size(); ++i) {
      auto& m = m_members[i];
      if (m.alive && s == signals::term && !m.ignores_term && !m.unkillable) {
        m.alive = false;
        if (i == 0) {
          m_status = ExitStatus{true, signal_number(s)};
        }
        m_pending_change = true;
      }
    }
    return {Delivery{s, "every member", std::nullopt},
            Delivery{signals::cont, "every member", std::nullopt}};
  }

  ForceMethod force_method() const override { return force; }
  std::optional<std::string> standing_authority() const override { return standing; }

  Result<void> kill_all() override {
    calls.push_back("kill_all");
    note("kill_all");
    if (kill_all_throws > 0) {
      --kill_all_throws;
      throw std::bad_alloc();  // out of memory in the takedown (ulimit -v)
    }
    for (std::size_t i = 0; i < m_members.size(); ++i) {
      auto& m = m_members[i];
      if (m.alive && !m.unkillable) {
        m.alive = false;
        if (i == 0) {
          m_status = ExitStatus{true, signal_number(signals::kill)};
        }
      }
    }
    m_pending_change = true;
    return {};
  }

  Result<bool> is_empty() override {
    if (gone) {
      ++asked_when_gone;
      return fail(*gone);
    }
    if (never_empty) {
      return false;
    }
    for (const auto& m : m_members) {
      if (m.alive) {
        return false;
      }
    }
    return m_status.has_value() || spawn_error.has_value();
  }

  std::vector<MemberInfo> members() const override {
    std::vector<MemberInfo> out;
    for (std::size_t i = 0; i < m_members.size(); ++i) {
      out.push_back(MemberInfo{static_cast<long>(100 + i), 1000 + i, false});
    }
    return out;
  }

  // A census: a walk of the members (on a real boundary, of /proc or the
  // leaf), noted as one in the trace.
  std::vector<MemberInfo> alive_members() override {
    note("census");
    std::vector<MemberInfo> out;
    for (std::size_t i = 0; i < m_members.size(); ++i) {
      if (m_members[i].alive) {
        out.push_back(MemberInfo{static_cast<long>(100 + i), 1000 + i, false});
      }
    }
    return out;
  }

  // Hands every live member but COMMAND over (or refuses, with
  // refuse_hand_over): they are no longer this boundary's.
  Result<std::vector<MemberInfo>> hand_over(const EnclosingRun& to) override {
    calls.push_back("hand_over " + to.run_id);
    if (refuse_hand_over) {
      return fail(plain_error("refused"));
    }
    std::vector<MemberInfo> handed;
    for (std::size_t i = 1; i < m_members.size(); ++i) {
      if (m_members[i].alive) {
        m_members[i].alive = false;
        handed.push_back(MemberInfo{static_cast<long>(100 + i), 1000 + i, false});
      }
    }
    return handed;
  }

  Result<void> close() override {
    calls.push_back("close");
    return {};
  }

  bool called(const std::string& what) const {
    for (const auto& c : calls) {
      if (c == what) {
        return true;
      }
    }
    return false;
  }

  std::vector<std::string> calls;
  // Set: the censuses and kills are noted in it too, in order with what
  // the journal notes there (FakeJournal::trace).
  std::vector<std::string>* trace = nullptr;
  int kill_all_throws = 0;  // the next N kill_all() calls throw bad_alloc
  ForceMethod force{"cgroup.kill", signals::kill, "/fake/treeguard-test"};
  std::optional<std::string> standing;
  std::string address_text = "/fake/treeguard-test";
  std::optional<Error> spawn_error;
  bool refuse_hand_over = false;
  std::optional<Error> gone;  // set: is_empty() fails with it (vanishes())
  bool never_empty = false;   // is_empty() says false, whoever is alive
  int asked_when_gone = 0;    // is_empty() calls once gone
  bool stuck = false;
  int waits = 0;

private:
  void note(const char* what) {
    if (trace != nullptr) {
      trace->emplace_back(what);
    }
  }
  struct Scripted {
    Duration offset;
    std::function<Event(FakeBoundary&)> action;
  };
  FakeClock& m_clock;
  std::vector<FakeMember> m_members;
  std::optional<ExitStatus> m_status;
  std::deque<Scripted> m_script;
  TimePoint m_start;
  bool m_pending_change = false;
};

// Records what the lifecycle told it; can refuse authority.
class FakeJournal final : public Journal {
public:
  void phase(std::string_view name) override {
    phases.emplace_back(name);
    if (trace != nullptr) {
      trace->push_back("phase " + std::string(name));
    }
  }
  void event(std::string_view what, std::optional<Signal>) override { events.emplace_back(what); }
  Result<void> authorize(const AuthorityRequest& request) override {
    requests.push_back(request);
    if (trace != nullptr) {
      trace->emplace_back(refuse_authority ? "authority refused" : "authority durable");
    }
    if (refuse_authority) {
      return fail(errno_error(30 /* EROFS */, "write authority"));
    }
    return {};
  }
  void handed_over(const std::string& to, const std::vector<MemberInfo>& members) override {
    handed_to = to;
    handed = members;
  }
  void finish(Disposition d, int code) override {
    ++finishes;
    disposition = d;
    exit_code = code;
  }

  bool has_event(const std::string& what) const {
    for (const auto& e : events) {
      if (e == what) {
        return true;
      }
    }
    return false;
  }

  bool refuse_authority = false;
  std::vector<std::string>* trace = nullptr;  // as FakeBoundary::trace
  std::vector<std::string> phases;
  std::vector<std::string> events;
  std::vector<AuthorityRequest> requests;
  std::string handed_to;
  std::vector<MemberInfo> handed;
  int finishes = 0;
  Disposition disposition = Disposition::pending;
  int exit_code = -1;
};

}  // namespace treeguard::testing
