#include "port/boundary.hpp"
#include "port/probe.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace treeguard {

void set_plan(ProbeReport& report, const BoundaryPlan& plan) {
  for (const BoundaryCandidate& candidate : plan.candidates) {
    const bool viable = candidate.refused.empty();
    report.plan.push_back(
        ProbeItem{candidate.name, viable, viable ? candidate.where : candidate.refused});
    if (viable && report.auto_boundary.empty()) {
      report.auto_boundary = boundary_kind_name(candidate.kind);
      report.auto_detail = fmt::format("{}: {}", candidate.name, candidate.where);
    }
  }
  if (report.auto_boundary.empty()) {
    report.auto_boundary = "none";
    report.auto_detail = plan.none_works;
  }
}

void print_probe(const ProbeReport& report, bool json, std::FILE* out) {
  if (json) {
    nlohmann::json doc;
    doc["auto_boundary"] = report.auto_boundary;
    doc["auto_detail"] = report.auto_detail;
    doc["capabilities"] = nlohmann::json::array();
    for (const auto& item : report.items) {
      doc["capabilities"].push_back({{"name", item.name},
                                     {"available", item.applicable ? nlohmann::json(item.available)
                                                                   : nlohmann::json(nullptr)},
                                     {"detail", item.detail}});
    }
    doc["plan"] = nlohmann::json::array();
    for (const auto& candidate : report.plan) {
      doc["plan"].push_back({{"name", candidate.name},
                             {"available", candidate.available},
                             {"detail", candidate.detail}});
    }
    doc["fallback_notes"] = report.fallback_notes;
    fmt::print(out, "{}\n", doc.dump(2));
    return;
  }
  std::size_t width = 0;
  for (const auto& item : report.items) {
    width = std::max(width, item.name.size());
  }
  for (const auto& item : report.items) {
    fmt::print(out, "{:<{}}  {:<3}  {}\n", item.name, width,
               !item.applicable ? "n/a"
               : item.available ? "yes"
                                : "no",
               item.detail);
  }
  for (std::size_t i = 0; i < report.plan.size(); ++i) {
    const auto& candidate = report.plan[i];
    fmt::print(out, "{:<{}}  {:<3}  {}{}\n", i == 0 ? "boundary plan" : "", width,
               candidate.available ? "yes" : "no", candidate.name + ": ", candidate.detail);
  }
  fmt::print(out, "{:<{}}  {}  {}\n", "boundary auto", width, report.auto_boundary,
             report.auto_detail);
  for (const auto& note : report.fallback_notes) {
    fmt::print(out, "  {}\n", note);
  }
}

}  // namespace treeguard
