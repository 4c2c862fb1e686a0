// The plan's words, as -v, probe and the run's error say them.
#include "port/boundary.hpp"

#include <fmt/format.h>

namespace treeguard {

std::vector<std::string> plan_lines(const BoundaryPlan& plan) {
  std::vector<std::string> lines;
  for (const BoundaryCandidate& candidate : plan.candidates) {
    lines.push_back(candidate.refused.empty()
                        ? fmt::format("{}: {}", candidate.name, candidate.where)
                        : fmt::format("{}: refused: {}", candidate.name, candidate.refused));
  }
  return lines;
}

std::string plan_failure(const BoundaryPlan& plan, const std::vector<std::string>& why) {
  std::string text = plan.none_works;
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    text += fmt::format("{} {}: {}", i == 0 ? ":" : ";", plan.candidates[i].name,
                        i < why.size() ? why[i] : plan.candidates[i].refused);
  }
  return text;
}

}  // namespace treeguard
