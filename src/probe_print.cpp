#include "probe.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace treeguard {

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
  fmt::print(out, "{:<{}}  {}  {}\n", "boundary auto", width, report.auto_boundary,
             report.auto_detail);
  for (const auto& note : report.fallback_notes) {
    fmt::print(out, "  {}\n", note);
  }
}

}  // namespace treeguard
