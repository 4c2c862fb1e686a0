#include "report.hpp"

#include "file_io.hpp"
#include "holdings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace treeguard {

nlohmann::ordered_json member_json(const MemberInfo& member) {
  nlohmann::ordered_json out{
      {"pid", member.pid}, {"start_time", member.start_time}, {"escaped", member.escaped}};
  // Who it was (contract section 6), as far as it was known when seen.
  out["comm"] = name_text(member.comm, k_max_comm);
  out["argv"] = name_text(member.argv, k_max_argv);
  return out;
}

namespace {

template <typename T>
nlohmann::ordered_json or_null(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

// The whole tree's usage; null fields where the source has none.
nlohmann::ordered_json usage_json(const std::optional<TreeUsage>& usage) {
  if (!usage) {
    return nullptr;
  }
  return {{"cpu_user_seconds", or_null(usage->cpu_user_seconds)},
          {"cpu_system_seconds", or_null(usage->cpu_system_seconds)},
          {"memory_peak_bytes", or_null(usage->memory_peak_bytes)},
          {"tasks_peak", or_null(usage->tasks_peak)},
          {"source", usage->source}};
}

std::string_view cause_name(StopCause cause) {
  switch (cause) {
  case StopCause::child_exited:
    return "command-exited";
  case StopCause::deadline:
    return "deadline";
  case StopCause::signal:
    return "signal";
  case StopCause::none:
    break;
  }
  return "none";
}

// Bytes that are not UTF-8 (an argument, a path can hold any) are written
// as the text \xHH, so the report says what they were and never fails to
// serialise.
std::string escape_non_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t size = text.size();
  std::size_t i = 0;
  while (i < size) {
    const unsigned char c = bytes[i];
    std::size_t length = c < 0x80           ? 1
                         : (c >> 5) == 0x6  ? 2
                         : (c >> 4) == 0xe  ? 3
                         : (c >> 3) == 0x1e ? 4
                                            : 0;
    bool valid = length > 0 && i + length <= size;
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = (bytes[i + k] & 0xc0) == 0x80;
    }
    if (valid && length > 1) {
      // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
      unsigned long point = c & (0xff >> (length + 1));
      for (std::size_t k = 1; k < length; ++k) {
        point = (point << 6) | (bytes[i + k] & 0x3f);
      }
      const unsigned long least[] = {0, 0, 0x80, 0x800, 0x10000};
      valid = point >= least[length] && point <= 0x10ffff && (point < 0xd800 || point > 0xdfff);
    }
    if (!valid) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
      continue;
    }
    out.append(text, i, length);
    i += length;
  }
  return out;
}

void escape_strings(nlohmann::ordered_json& value) {
  if (value.is_string()) {
    value = escape_non_utf8(value.get_ref<const std::string&>());
  } else if (value.is_structured()) {
    for (auto& item : value) {
      escape_strings(item);
    }
  }
}

// What a process held when it was read, most telling first.
nlohmann::ordered_json holds_json(const ProcessHoldings& process) {
  auto holds = nlohmann::ordered_json::array();
  for (const auto& holding : process.holds) {
    holds.push_back({{"kind", holding_kind_name(holding.kind)}, {"what", holding.what}});
  }
  return holds;
}

}  // namespace

std::string make_report(const RunRecord& record, const std::vector<TimelineEntry>& timeline,
                        const RunOutcome& outcome, std::int64_t started_at, std::int64_t ended_at) {
  nlohmann::ordered_json doc;
  doc["format"] = "treeguard-report/1";
  doc["run_id"] = record.run_id;
  doc["boundary"] = {{"kind", boundary_kind_name(record.boundary.kind)},
                     {"address", record.boundary.address}};
  doc["command"] = record.command;
  doc["started_at"] = started_at;
  doc["ended_at"] = ended_at;
  doc["stop_cause"] = cause_name(outcome.cause);
  if (outcome.stop_signal) {
    doc["stop_signal"] = signal_name(*outcome.stop_signal);
  }
  if (outcome.child_status) {
    doc["command_status"] =
        outcome.child_status->signaled
            ? nlohmann::ordered_json{{"signal", signal_number_name(outcome.child_status->value)}}
            : nlohmann::ordered_json{{"exit", outcome.child_status->value}};
  } else {
    doc["command_status"] = nullptr;
  }
  auto& events = doc["timeline"] = nlohmann::ordered_json::array();
  for (const auto& entry : timeline) {
    nlohmann::ordered_json item{{"at", entry.at}, {"event", entry.event}};
    if (entry.signal) {
      item["signal"] = signal_name(*entry.signal);
    }
    events.push_back(std::move(item));
  }
  auto& authority = doc["authority"] = nlohmann::ordered_json::array();
  for (const auto& entry : record.authority) {
    authority.push_back({{"at", entry.at},
                         {"action", entry.action},
                         {"targets", entry.targets},
                         {"reason", entry.reason},
                         {"by", entry.by}});
  }
  // A member as the report lists it: with what it held ("holds"), where it
  // was read (a leftover, a member at the deadline, a survivor).
  const auto member_with_holds = [&outcome](const MemberInfo& member) {
    auto item = member_json(member);
    if (const ProcessHoldings* held = holdings_of(outcome.holdings, member)) {
      item["holds"] = holds_json(*held);
      if (!held->note.empty()) {
        item["holds_note"] = held->note;
      }
    }
    return item;
  };
  auto& members = doc["members"] = nlohmann::ordered_json::array();
  auto& escapes = doc["escapes"] = nlohmann::ordered_json::array();
  for (const auto& member : record.members) {
    members.push_back(member_with_holds(member));
    if (member.escaped) {
      escapes.push_back(member_json(member));
    }
  }
  // What COMMAND left behind when it exited, and whether that was a leak
  // (not all of it handed to the enclosing run).
  doc["leaked"] = outcome.leaked;
  auto& leftovers = doc["leftovers"] = nlohmann::ordered_json::array();
  for (const auto& member : outcome.leftovers) {
    leftovers.push_back(member_with_holds(member));
  }
  auto& survivors = doc["survivors"] = nlohmann::ordered_json::array();
  for (const auto& member : outcome.survivors) {
    survivors.push_back(member_with_holds(member));
  }
  // --leftovers outer: who went to the enclosing run, which took them down.
  auto& handed = doc["handed_over"] = nlohmann::ordered_json::array();
  for (const auto& member : outcome.handed_over) {
    auto item = member_with_holds(member);
    item["to_run"] = outcome.handed_to;
    handed.push_back(std::move(item));
  }
  doc["usage"] = usage_json(outcome.usage);
  doc["oom_kills"] = outcome.usage && outcome.usage->oom_kills
                         ? nlohmann::ordered_json(*outcome.usage->oom_kills)
                         : nlohmann::ordered_json(nullptr);
  doc["forced_kill"] =
      outcome.forced ? "sent" : (outcome.force_withheld ? "withheld" : "not needed");
  doc["disposition"] = disposition_name(outcome.disposition);
  doc["exit_code"] = outcome.exit_code;
  escape_strings(doc);
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Result<void> write_report(const std::filesystem::path& path, const std::string& json) {
  return write_file_for_user(path, json);
}

}  // namespace treeguard
