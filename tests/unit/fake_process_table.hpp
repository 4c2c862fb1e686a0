// A process table written by hand, so that the census rules (census.hpp) can
// be tested on any platform, with start times, parents and environments no
// real host would give on demand (a parent and its child in one clock tick,
// a recycled pid, a stranger's copy of the marker).
#pragma once

#include "census.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace treeguard::testing {

struct FakeProcess {
  ProcessFacts facts;
  Marker marker = Marker::absent;  // for the run the census asks about
  long uid = 1000;
};

// A live process: pid, start time, parent, group, session.
inline FakeProcess process(long pid, unsigned long long start, long ppid, long pgid, long sid) {
  FakeProcess fake;
  fake.facts = ProcessFacts{pid, start, ppid, pgid, sid, true};
  return fake;
}

inline FakeProcess marked(FakeProcess fake) {
  fake.marker = Marker::present;
  return fake;
}

class FakeProcessTable final : public ProcessTable {
public:
  FakeProcessTable& add(const FakeProcess& fake) {
    m_rows.push_back(fake);
    return *this;
  }

  std::size_t size() const override { return m_rows.size(); }
  ProcessFacts facts(std::size_t row) const override { return m_rows.at(row).facts; }
  Marker marker(std::size_t row, const std::string& /*run_id*/) const override {
    m_environments_read.push_back(m_rows.at(row).facts.pid);
    return m_rows.at(row).marker;
  }
  std::optional<long> user(std::size_t row) const override { return m_rows.at(row).uid; }

  // Whose environment the census read, in the order it read them.
  const std::vector<long>& environments_read() const { return m_environments_read; }
  bool read_environment_of(long pid) const {
    return std::find(m_environments_read.begin(), m_environments_read.end(), pid)
           != m_environments_read.end();
  }

  // The pids of `rows`, in their order.
  std::vector<long> pids(const std::vector<std::size_t>& rows) const {
    std::vector<long> out;
    for (const std::size_t row : rows) {
      out.push_back(m_rows.at(row).facts.pid);
    }
    return out;
  }

private:
  std::vector<FakeProcess> m_rows;
  mutable std::vector<long> m_environments_read;
};

}  // namespace treeguard::testing
