#include "report.hpp"

#include "port/file_io.hpp"
#include "port/holdings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <initializer_list>

namespace treeguard {

nlohmann::ordered_json member_json(const MemberInfo& member) {
  nlohmann::ordered_json out{{"pid", member.pid}, {"start_time", member.start_time}};
  // Who it was (DESIGN.md [membership]), as far as it was known when seen.
  out["comm"] = name_text(member.comm, k_max_comm);
  out["argv"] = name_text(member.argv, k_max_argv);
  // Still the run's and inside the boundary: leaving a group is not escaping.
  out["left_command_group"] = member.left_group;
  return out;
}

void add_time(nlohmann::ordered_json& out, const std::string& key, std::int64_t unix_ns) {
  out[key] = rfc3339(unix_ns);
  out[key + "_unix_ns"] = unix_ns;
}

nlohmann::ordered_json authority_json(const AuthorityEntry& entry) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  add_time(out, "at", entry.at);
  out["action"] = entry.action;
  out["targets"] = entry.targets;
  out["reason"] = entry.reason;
  out["by"] = entry.by;
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

// Why the run ended, kept apart from whether its takedown was proven.
std::string_view ended_by(const RunOutcome& outcome) {
  switch (outcome.cause) {
  case StopCause::child_exited:
    return outcome.child_status && outcome.child_status->signaled ? "command-killed-by-signal"
                                                                  : "command-exited";
  case StopCause::deadline:
    return "deadline";
  case StopCause::signal:
    return "stop-request";
  case StopCause::none:
    break;
  }
  return "not-started";
}

std::string_view leftovers_name(Leftovers leftovers) {
  switch (leftovers) {
  case Leftovers::kill:
    return "kill";
  case Leftovers::wait:
    return "wait";
  case Leftovers::outer:
    return "outer";
  case Leftovers::fail:
    return "fail";
  }
  return "kill";
}

// A length of time in seconds, to the microsecond.
double seconds(std::int64_t ns) {
  return std::round(static_cast<double>(ns) / 1e3) / 1e6;
}

nlohmann::ordered_json seconds_or_null(std::optional<std::int64_t> ns) {
  return ns ? nlohmann::ordered_json(seconds(*ns)) : nlohmann::ordered_json(nullptr);
}

// When the first of the phases `names` began, if any did.
std::optional<std::int64_t> first_phase(const RunRecord& record,
                                        std::initializer_list<std::string_view> names) {
  for (const PhaseEntry& phase : record.phases) {
    for (std::string_view name : names) {
      if (phase.name == name) {
        return phase.at;
      }
    }
  }
  return std::nullopt;
}

// What was asked for: the deadline, the grace period, the drain's signal,
// what becomes of leftovers.
nlohmann::ordered_json requested_json(const RunPolicy& policy) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  const bool deadline = policy.timeout && policy.timeout->count() > 0;
  out["deadline"] = deadline ? nlohmann::ordered_json(format_duration(*policy.timeout))
                             : nlohmann::ordered_json(nullptr);
  out["deadline_seconds"] =
      deadline ? nlohmann::ordered_json(seconds(policy.timeout->count())) : nullptr;
  // -k 0: no limit, as timeout(1).
  const bool limited = policy.kill_after.count() > 0;
  out["grace"] = limited ? format_duration(policy.kill_after) : std::string("unlimited");
  out["grace_seconds"] =
      limited ? nlohmann::ordered_json(seconds(policy.kill_after.count())) : nullptr;
  out["signal"] = signal_name(policy.stop_signal);
  out["leftovers"] = leftovers_name(policy.leftovers);
  return out;
}

// The run's times, each in RFC 3339 and nanoseconds, and the lengths a
// person asks about, in seconds: the run; the takedown from its first
// signal (the drain's, or with --signal KILL the forced kill) to the proof;
// and how much of the grace period it used (up to the boundary emptying,
// or the forced kill). The takedown's lengths are null when there was none.
void add_times(nlohmann::ordered_json& doc, const ReportInput& run) {
  add_time(doc, "started_at", run.started_at);
  add_time(doc, "ended_at", run.ended_at);
  doc["run_seconds"] = seconds(run.ended_at - run.started_at);
  const auto takedown = first_phase(run.record, {"drain", "authority"});
  const std::int64_t proven = first_phase(run.record, {"exit"}).value_or(run.ended_at);
  const auto forced = first_phase(run.record, {"authority"});
  doc["drain_seconds"] =
      seconds_or_null(takedown ? std::optional<std::int64_t>(proven - *takedown) : std::nullopt);
  doc["grace_used_seconds"] = seconds_or_null(
      takedown ? std::optional<std::int64_t>(forced.value_or(proven) - *takedown) : std::nullopt);
}

nlohmann::ordered_json timeline_json(const ReportInput& run) {
  auto events = nlohmann::ordered_json::array();
  for (const auto& entry : run.timeline) {
    nlohmann::ordered_json item{{"elapsed_seconds", seconds(entry.at - run.started_at)},
                                {"event", entry.event}};
    if (entry.signal) {
      item["signal"] = signal_name(*entry.signal);
    }
    add_time(item, "at", entry.at);
    events.push_back(std::move(item));
  }
  return events;
}

// `members`, each as `shown` shows it.
template <typename Show>
nlohmann::ordered_json members_json(const std::vector<MemberInfo>& members, const Show& shown) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& member : members) {
    out.push_back(shown(member));
  }
  return out;
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

std::string make_report(const ReportInput& run) {
  const RunRecord& record = run.record;
  const RunOutcome& outcome = run.outcome;
  nlohmann::ordered_json doc;
  doc["format"] = k_report_format;
  doc["run_id"] = record.run_id;
  doc["command"] = record.command;
  // The verdict first: why the run ended, how COMMAND did, what treeguard
  // exited with, and (apart from all that) whether the takedown was proven.
  doc["ended_by"] = ended_by(outcome);
  doc["stop_request_signal"] = outcome.cause == StopCause::signal && outcome.stop_signal
                                   ? nlohmann::ordered_json(signal_name(*outcome.stop_signal))
                                   : nlohmann::ordered_json(nullptr);
  if (outcome.child_status) {
    doc["command_status"] =
        outcome.child_status->signaled
            ? nlohmann::ordered_json{{"signal", signal_number_name(outcome.child_status->value)}}
            : nlohmann::ordered_json{{"exit", outcome.child_status->value}};
  } else {
    doc["command_status"] = nullptr;
  }
  doc["exit_code"] = outcome.exit_code;
  doc["takedown"] = disposition_name(outcome.disposition);
  doc["forced_kill"] =
      outcome.forced ? "sent" : (outcome.force_withheld ? "withheld" : "not needed");
  // A member as the report lists it: with what it held ("holds"), where it
  // was read (a leftover, a member at the deadline, a survivor).
  const auto with_holds = [&outcome](const MemberInfo& member) {
    auto item = member_json(member);
    if (const ProcessHoldings* held = holdings_of(outcome.holdings, member)) {
      item["holds"] = holds_json(*held);
      if (!held->note.empty()) {
        item["holds_note"] = held->note;
      }
    }
    return item;
  };
  // What COMMAND left behind when it exited, and whether that was a leak
  // (not all of it handed to the enclosing run).
  doc["leaked"] = outcome.leaked;
  doc["leftovers"] = members_json(outcome.leftovers, with_holds);
  doc["survivors"] = members_json(outcome.survivors, with_holds);
  add_times(doc, run);
  doc["requested"] = requested_json(run.policy);
  doc["boundary"] = {{"kind", boundary_kind_name(record.boundary.kind)},
                     {"address", record.boundary.address}};
  doc["timeline"] = timeline_json(run);
  auto& authority = doc["authority"] = nlohmann::ordered_json::array();
  for (const auto& entry : record.authority) {
    authority.push_back(authority_json(entry));
  }
  doc["members"] = members_json(record.members, with_holds);
  auto& left = doc["left_command_group"] = nlohmann::ordered_json::array();
  for (const auto& member : record.members) {
    if (member.left_group) {
      left.push_back(member_json(member));
    }
  }
  // --leftovers outer: who went to the enclosing run, which took them down.
  auto& handed = doc["handed_over"] = nlohmann::ordered_json::array();
  for (const auto& member : outcome.handed_over) {
    auto item = with_holds(member);
    item["to_run"] = outcome.handed_to;
    handed.push_back(std::move(item));
  }
  doc["usage"] = usage_json(outcome.usage);
  doc["oom_kills"] = outcome.usage && outcome.usage->oom_kills
                         ? nlohmann::ordered_json(*outcome.usage->oom_kills)
                         : nlohmann::ordered_json(nullptr);
  doc["notes"] = record.notes;
  escape_strings(doc);
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Result<void> write_report(const std::filesystem::path& path, const std::string& json) {
  return write_file_for_user(path, json);
}

}  // namespace treeguard
