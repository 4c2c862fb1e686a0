// The run record as JSON, read and written (record.hpp). One file over 500
// lines so that the schema's reader and writer sit side by side: a field
// added to one is seen missing from the other.
#include "record.hpp"
#include "record_fields.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <set>

namespace treeguard {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// The schema nests at most four levels (record > authority > entry >
// targets); anything deeper is not a record, however large.
constexpr int k_max_depth = 8;
// ---- reading JSON values, each with the field's name for the error ----

const char* type_name(const Json& value) {
  if (value.is_number_float()) {
    return "a fractional number";
  }
  if (value.is_number()) {
    return "a number";
  }
  return value.type_name();
}

Error type_error(const std::string& field, const char* expected, const Json& value) {
  return record_error(field, std::string("must be ") + expected + ", not " + type_name(value));
}

// `value` must be an object with exactly these keys, plus any of
// `optional_keys` (duplicates were refused while parsing, so size plus
// presence means "exactly").
Result<void> expect_keys(const Json& value, const std::string& field,
                         std::initializer_list<const char*> keys,
                         std::initializer_list<const char*> optional_keys = {}) {
  const std::string name = field.empty() ? "record" : field;
  if (!value.is_object()) {
    return fail(field.empty() ? plain_error("not a JSON object")
                              : type_error(field, "an object", value));
  }
  for (const char* key : keys) {
    if (value.find(key) == value.end()) {
      return fail(plain_error("missing field " + (field.empty() ? "" : field + ".") + key));
    }
  }
  if (value.size() != keys.size()) {
    for (const auto& item : value.items()) {
      bool known = false;
      for (const char* key : keys) {
        known = known || item.key() == key;
      }
      for (const char* key : optional_keys) {
        known = known || item.key() == key;
      }
      if (!known) {
        return fail(plain_error(name + ": unknown field \"" + printable(item.key()) + "\""));
      }
    }
  }
  return {};
}

Result<std::string> read_string(const Json& value, const std::string& field) {
  if (!value.is_string()) {
    return fail(type_error(field, "a string", value));
  }
  return value.get<std::string>();
}

Result<std::int64_t> read_int64(const Json& value, const std::string& field) {
  if (!value.is_number_integer()) {
    return fail(type_error(field, "an integer", value));
  }
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return fail(record_error(field, "is too large"));
    }
    return static_cast<std::int64_t>(u);
  }
  return value.get<std::int64_t>();
}

Result<std::uint64_t> read_uint64(const Json& value, const std::string& field) {
  if (!value.is_number_integer()) {
    return fail(type_error(field, "an integer", value));
  }
  if (!value.is_number_unsigned()) {
    return fail(record_error(field, "must not be negative"));
  }
  return value.get<std::uint64_t>();
}

Result<std::int64_t> read_time(const Json& value, const std::string& field) {
  auto at = read_int64(value, field);
  if (!at) {
    return at;
  }
  TG_TRY(validate_time(*at, field));
  return at;
}

Result<long> read_pid(const Json& value, const std::string& field) {
  auto pid = read_int64(value, field);
  if (!pid) {
    return fail(pid.error());
  }
  TG_TRY(validate_pid(*pid, field));
  return static_cast<long>(*pid);
}

Result<bool> read_bool(const Json& value, const std::string& field) {
  if (!value.is_boolean()) {
    return fail(type_error(field, "true or false", value));
  }
  return value.get<bool>();
}

Result<std::vector<std::string>> read_strings(const Json& value, const std::string& field) {
  if (!value.is_array()) {
    return fail(type_error(field, "an array of strings", value));
  }
  std::vector<std::string> out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto text = read_string(value[i], field + "[" + std::to_string(i) + "]");
    if (!text) {
      return fail(text.error());
    }
    out.push_back(std::move(*text));
  }
  return out;
}

Result<const Json*> read_array(const Json& value, const std::string& field) {
  if (!value.is_array()) {
    return fail(type_error(field, "an array", value));
  }
  return &value;
}

Result<ProcessIdentity> read_process(const Json& value, const std::string& field) {
  TG_TRY(expect_keys(value, field, {"pid", "start_time"}));
  auto pid = read_pid(value["pid"], field + ".pid");
  if (!pid) {
    return fail(pid.error());
  }
  auto start = read_uint64(value["start_time"], field + ".start_time");
  if (!start) {
    return fail(start.error());
  }
  return ProcessIdentity{*pid, *start};
}

// Assign the value of Result `expr_` to `target_`, or return its error.
#define TG_READ(target_, expr_)                                                                    \
  do {                                                                                             \
    auto tg_read_ = (expr_);                                                                       \
    if (!tg_read_) {                                                                               \
      return ::treeguard::fail(tg_read_.error());                                                  \
    }                                                                                              \
    target_ = std::move(*tg_read_);                                                                \
  } while (false)

Result<BoundaryAddress> read_boundary(const Json& value) {
  TG_TRY(expect_keys(value, "boundary", {"kind", "address", "pgid"}));
  BoundaryAddress boundary;
  std::string kind;
  TG_READ(kind, read_string(value["kind"], "boundary.kind"));
  auto named = boundary_kind_named(kind);
  if (!named) {
    return fail(record_error("boundary.kind", "unknown kind \"" + printable(kind) + "\""));
  }
  boundary.kind = *named;
  TG_READ(boundary.address, read_string(value["address"], "boundary.address"));
  if (!value["pgid"].is_null()) {
    TG_READ(boundary.pgid, read_pid(value["pgid"], "boundary.pgid"));
  }
  return boundary;
}

Result<PhaseEntry> read_phase(const Json& value, const std::string& field) {
  TG_TRY(expect_keys(value, field, {"name", "at"}));
  PhaseEntry phase;
  TG_READ(phase.name, read_string(value["name"], field + ".name"));
  TG_READ(phase.at, read_time(value["at"], field + ".at"));
  return phase;
}

Result<AuthorityEntry> read_authority(const Json& value, const std::string& field) {
  TG_TRY(expect_keys(value, field, {"at", "action", "targets", "reason", "by"}));
  AuthorityEntry entry;
  TG_READ(entry.at, read_time(value["at"], field + ".at"));
  TG_READ(entry.action, read_string(value["action"], field + ".action"));
  TG_READ(entry.targets, read_strings(value["targets"], field + ".targets"));
  TG_READ(entry.reason, read_string(value["reason"], field + ".reason"));
  TG_READ(entry.by, read_string(value["by"], field + ".by"));
  return entry;
}

Result<MemberInfo> read_member(const Json& value, const std::string& field) {
  // "comm" and "argv" came later, and are left out when a big tree's
  // record has no room for them.
  TG_TRY(expect_keys(value, field, {"pid", "start_time", "escaped", "leads"}, {"comm", "argv"}));
  MemberInfo member;
  if (value.contains("comm")) {
    TG_READ(member.comm, read_string(value["comm"], field + ".comm"));
  }
  if (value.contains("argv")) {
    TG_READ(member.argv, read_string(value["argv"], field + ".argv"));
  }
  TG_READ(member.pid, read_pid(value["pid"], field + ".pid"));
  TG_READ(member.start_time, read_uint64(value["start_time"], field + ".start_time"));
  // "escaped": the record's key for left_group since its first format,
  // kept so that records of every treeguard version read alike.
  TG_READ(member.left_group, read_bool(value["escaped"], field + ".escaped"));
  std::string leads;
  TG_READ(leads, read_string(value["leads"], field + ".leads"));
  if (leads == "session") {
    member.leads_group = member.leads_session = true;
  } else if (leads == "group") {
    member.leads_group = true;
  } else if (!leads.empty()) {
    return fail(record_error(field + ".leads", "must be \"\", \"group\" or \"session\""));
  }
  return member;
}

Result<RecordedDrain> read_drain(const Json& value) {
  TG_TRY(expect_keys(value, "drain", {"signal", "kill_after_ns"}));
  RecordedDrain drain;
  TG_READ(drain.signal, read_string(value["signal"], "drain.signal"));
  TG_READ(drain.kill_after_ns, read_int64(value["kill_after_ns"], "drain.kill_after_ns"));
  return drain;
}

Result<Resolution> read_resolution(const Json& value) {
  TG_TRY(expect_keys(value, "resolution", {"why", "at", "by"}));
  Resolution resolution;
  TG_READ(resolution.why, read_string(value["why"], "resolution.why"));
  TG_READ(resolution.at, read_time(value["at"], "resolution.at"));
  TG_READ(resolution.by, read_string(value["by"], "resolution.by"));
  return resolution;
}

// Read a JSON array of objects with `read_one`, at most `limit` of them.
template <typename T, typename ReadOne>
Result<std::vector<T>> read_list(const Json& value, const std::string& field, ReadOne read_one,
                                 std::size_t limit = std::numeric_limits<std::size_t>::max()) {
  const Json* array = nullptr;
  TG_READ(array, read_array(value, field));
  if (array->size() > limit) {
    return fail(record_error(field, "has more than " + std::to_string(limit) + " entries"));
  }
  std::vector<T> out;
  out.reserve(array->size());
  for (std::size_t i = 0; i < array->size(); ++i) {
    auto item = read_one((*array)[i], field + "[" + std::to_string(i) + "]");
    if (!item) {
      return fail(item.error());
    }
    out.push_back(std::move(*item));
  }
  return out;
}

Result<RunRecord> read_record(const Json& root, bool holds_nested = true) {
  // "pid_ns", "pid_ns_init", "machine_id", "reaper", "drain", "last_look"
  // and "nested" came later: a record without them is read as one that does
  // not know its namespace (or knows it by inode only), its machine, its
  // reaper, its drain or a guardian's look, and holds no nested run's
  // record. "nested" is one level deep: a nested run's record holds none.
  TG_TRY(expect_keys(
      root, "",
      {"format", "run_id", "boot_id", "controller", "guardian", "boundary", "command", "cwd",
       "phases", "authority", "members", "disposition", "exit_code", "notes", "resolution"},
      {"pid_ns", "pid_ns_init", "machine_id", "reaper", "drain", "last_look", "nested"}));
  if (!holds_nested && root.contains("nested")) {
    return fail(plain_error("nested: a nested run's record holds none"));
  }
  std::string format;
  TG_READ(format, read_string(root["format"], "format"));
  if (format != k_record_format) {
    return fail(plain_error("format is \"" + printable(format) + "\", not \""
                            + std::string(k_record_format) + "\""));
  }
  RunRecord record;
  TG_READ(record.run_id, read_string(root["run_id"], "run_id"));
  if (!is_valid_run_id(record.run_id)) {
    // Checked first: the other checks and every message may quote it.
    return fail(record_error("run_id", "\"" + printable(record.run_id) + "\" is not a run id"));
  }
  TG_READ(record.boot_id, read_string(root["boot_id"], "boot_id"));
  if (root.contains("machine_id") && !root["machine_id"].is_null()) {
    TG_READ(record.machine_id, read_string(root["machine_id"], "machine_id"));
  }
  if (root.contains("pid_ns") && !root["pid_ns"].is_null()) {
    TG_READ(record.pid_ns, read_uint64(root["pid_ns"], "pid_ns"));
  }
  if (root.contains("pid_ns_init") && !root["pid_ns_init"].is_null()) {
    TG_READ(record.pid_ns_init, read_uint64(root["pid_ns_init"], "pid_ns_init"));
  }
  TG_READ(record.controller, read_process(root["controller"], "controller"));
  if (!root["guardian"].is_null()) {
    TG_READ(record.guardian, read_process(root["guardian"], "guardian"));
  }
  if (root.contains("reaper") && !root["reaper"].is_null()) {
    TG_READ(record.reaper, read_process(root["reaper"], "reaper"));
  }
  if (root.contains("last_look") && !root["last_look"].is_null()) {
    TG_READ(record.last_look, read_uint64(root["last_look"], "last_look"));
  }
  TG_READ(record.boundary, read_boundary(root["boundary"]));
  if (root.contains("drain") && !root["drain"].is_null()) {
    TG_READ(record.drain, read_drain(root["drain"]));
  }
  TG_READ(record.command, read_strings(root["command"], "command"));
  TG_READ(record.cwd, read_string(root["cwd"], "cwd"));
  TG_READ(record.phases, read_list<PhaseEntry>(root["phases"], "phases", read_phase));
  TG_READ(record.authority,
          read_list<AuthorityEntry>(root["authority"], "authority", read_authority));
  TG_READ(record.members,
          read_list<MemberInfo>(root["members"], "members", read_member, k_max_record_members));
  std::string disposition;
  TG_READ(disposition, read_string(root["disposition"], "disposition"));
  if (disposition == "pending") {
    record.disposition = Disposition::pending;
  } else if (disposition == "pass") {
    record.disposition = Disposition::pass;
  } else if (disposition == "failed") {
    record.disposition = Disposition::failed;
  } else if (disposition == "ambiguous") {
    record.disposition = Disposition::ambiguous;
  } else {
    return fail(
        record_error("disposition", "unknown disposition \"" + printable(disposition) + "\""));
  }
  if (!root["exit_code"].is_null()) {
    std::int64_t code = 0;
    TG_READ(code, read_int64(root["exit_code"], "exit_code"));
    if (code < 0 || code > INT_MAX) {
      return fail(record_error("exit_code", "must be between 0 and " + std::to_string(INT_MAX)));
    }
    record.exit_code = static_cast<int>(code);
  }
  TG_READ(record.notes, read_strings(root["notes"], "notes"));
  if (!root["resolution"].is_null()) {
    TG_READ(record.resolution, read_resolution(root["resolution"]));
  }
  if (holds_nested && root.contains("nested")) {
    TG_READ(record.nested,
            read_list<RunRecord>(
                root["nested"], "nested",
                [](const Json& value, const std::string& field) -> Result<RunRecord> {
                  auto nested = read_record(value, false);
                  if (!nested) {
                    return fail(plain_error(field + ": " + nested.error().message()));
                  }
                  return nested;
                },
                k_max_nested_records));
  }
  TG_TRY(validate_record(record));
  return record;
}

// nlohmann's messages start with "[json.exception.parse_error.101] ";
// keep the sentence, not the tag, and none of the input's raw bytes.
std::string json_message(const std::exception& error) {
  std::string_view text = error.what();
  if (!text.empty() && text.front() == '[') {
    const auto end = text.find("] ");
    if (end != std::string_view::npos) {
      text.remove_prefix(end + 2);
    }
  }
  return printable(text, 160);
}

// A member's "leads": "session" (it made a session, hence its group too),
// "group", or "".
const char* leads_name(const MemberInfo& member) {
  return member.leads_session ? "session" : member.leads_group ? "group" : "";
}

OrderedJson process_json(const ProcessIdentity& process) {
  OrderedJson out = OrderedJson::object();
  out["pid"] = static_cast<std::int64_t>(process.pid);
  out["start_time"] = static_cast<std::uint64_t>(process.start_time);
  return out;
}

// `replace`: bytes that are not UTF-8 (an argument can hold any) become
// U+FFFD instead of throwing.
std::string dump(const OrderedJson& json) {
  return json.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

// The most a member takes without its names: the widest pid, start time and
// flags, and the comma before it.
constexpr std::size_t k_member_without_names =
    sizeof(
        R"({"pid":2147483647,"start_time":18446744073709551615,"escaped":false,"leads":"session"},)")
    - 1;
// The most a member's names take: ,"comm":"..." and ,"argv":"...".
constexpr std::size_t k_member_names = 10 + k_max_comm + 10 + k_max_argv;
// What the dump of the rest may miss (the members' own array brackets are in it).
constexpr std::size_t k_record_slack = 1024;

// The bytes each member's names may take in a record whose other fields
// are `rest` (members empty): all they want (k_member_names), or the
// share of what the rest and the members' fixed fields leave of
// k_max_record_bytes, so that names never make a record too big to write.
// 8,000 members (k_max_recorded_members) and a command of 128 KiB leave
// each a few bytes; a tree of hundreds, all of them.
std::size_t name_allowance(const OrderedJson& rest, std::size_t members) {
  if (members == 0) {
    return 0;
  }
  const std::size_t used = dump(rest).size() + k_record_slack + members * k_member_without_names;
  if (used >= k_max_record_bytes) {
    return 0;
  }
  return std::min(k_member_names, (k_max_record_bytes - used) / members);
}

// A member's names, as far as `allowance` bytes take them: the comm first,
// then as much of the arguments as is left. name_text() made every byte of
// them cost one byte in the JSON.
void add_names(OrderedJson& entry, const MemberInfo& member, std::size_t allowance) {
  constexpr std::size_t key = 10;  // ,"comm":"" or ,"argv":""
  const std::string comm = name_text(member.comm, k_max_comm);
  if (!comm.empty() && allowance > key) {
    entry["comm"] = comm.substr(0, allowance - key);
    allowance -= key + entry["comm"].get_ref<const std::string&>().size();
  }
  const std::string argv = name_text(member.argv, k_max_argv);
  if (!argv.empty() && allowance > key) {
    entry["argv"] = argv.substr(0, allowance - key);
  }
}

// The record as JSON, its nested runs' records included (record_json of
// each: they hold none).
OrderedJson record_json(const RunRecord& record) {
  // ordered_json keeps the fields in the order a human reads them.
  OrderedJson out = OrderedJson::object();
  out["format"] = std::string(k_record_format);
  out["run_id"] = record.run_id;
  out["boot_id"] = record.boot_id;
  out["machine_id"] = record.machine_id ? OrderedJson(*record.machine_id) : OrderedJson(nullptr);
  out["pid_ns"] = record.pid_ns ? OrderedJson(*record.pid_ns) : OrderedJson(nullptr);
  out["pid_ns_init"] = record.pid_ns_init
                           ? OrderedJson(static_cast<std::uint64_t>(*record.pid_ns_init))
                           : OrderedJson(nullptr);
  out["controller"] = process_json(record.controller);
  out["guardian"] = record.guardian ? process_json(*record.guardian) : OrderedJson(nullptr);
  out["reaper"] = record.reaper ? process_json(*record.reaper) : OrderedJson(nullptr);
  out["last_look"] = record.last_look ? OrderedJson(static_cast<std::uint64_t>(*record.last_look))
                                      : OrderedJson(nullptr);
  OrderedJson boundary = OrderedJson::object();
  boundary["kind"] = std::string(boundary_kind_name(record.boundary.kind));
  boundary["address"] = record.boundary.address;
  boundary["pgid"] = record.boundary.pgid
                         ? OrderedJson(static_cast<std::int64_t>(*record.boundary.pgid))
                         : OrderedJson(nullptr);
  out["boundary"] = std::move(boundary);
  out["drain"] = record.drain ? OrderedJson{{"signal", record.drain->signal},
                                            {"kill_after_ns", record.drain->kill_after_ns}}
                              : OrderedJson(nullptr);
  out["command"] = record.command;
  out["cwd"] = record.cwd;
  OrderedJson phases = OrderedJson::array();
  for (const PhaseEntry& phase : record.phases) {
    phases.push_back(OrderedJson{{"name", phase.name}, {"at", phase.at}});
  }
  out["phases"] = std::move(phases);
  OrderedJson authority = OrderedJson::array();
  for (const AuthorityEntry& entry : record.authority) {
    authority.push_back(OrderedJson{{"at", entry.at},
                                    {"action", entry.action},
                                    {"targets", entry.targets},
                                    {"reason", entry.reason},
                                    {"by", entry.by}});
  }
  out["authority"] = std::move(authority);
  out["members"] = OrderedJson::array();  // its place; filled below, once the rest is known
  out["disposition"] = std::string(disposition_name(record.disposition));
  out["exit_code"] = record.exit_code ? OrderedJson(*record.exit_code) : OrderedJson(nullptr);
  out["notes"] = record.notes;
  out["resolution"] = record.resolution ? OrderedJson{{"why", record.resolution->why},
                                                      {"at", record.resolution->at},
                                                      {"by", record.resolution->by}}
                                        : OrderedJson(nullptr);
  if (!record.nested.empty()) {
    OrderedJson nested = OrderedJson::array();
    for (const RunRecord& entry : record.nested) {
      nested.push_back(record_json(entry));
    }
    out["nested"] = std::move(nested);
  }
  // (the nested runs' records are in `out` already: the members' names
  // get what they leave)
  std::size_t names = name_allowance(out, record.members.size());
  OrderedJson members = OrderedJson::array();
  for (const MemberInfo& member : record.members) {
    OrderedJson entry{{"pid", static_cast<std::int64_t>(member.pid)},
                      {"start_time", static_cast<std::uint64_t>(member.start_time)},
                      {"escaped", member.left_group},
                      {"leads", leads_name(member)}};
    add_names(entry, member, names);
    members.push_back(std::move(entry));
  }
  out["members"] = std::move(members);
  return out;
}

}  // namespace

std::string serialize_record(const RunRecord& record) {
  return dump(record_json(record));
}

Result<RunRecord> parse_record(std::string_view text) {
  if (text.size() > k_max_record_bytes) {
    return fail(plain_error("larger than " + std::to_string(k_max_record_bytes) + " bytes"));
  }
  // Duplicate keys would let one reader see a different record than
  // another; nesting beyond the schema is refused outright.
  std::vector<std::set<std::string>> keys;
  std::optional<std::string> duplicate;
  bool too_deep = false;
  const Json::parser_callback_t guard = [&](int depth, Json::parse_event_t event,
                                            Json& parsed) -> bool {
    if (depth > k_max_depth) {
      too_deep = true;
    }
    switch (event) {
    case Json::parse_event_t::object_start:
      keys.emplace_back();
      break;
    case Json::parse_event_t::object_end:
      if (!keys.empty()) {
        keys.pop_back();
      }
      break;
    case Json::parse_event_t::key:
      if (!keys.empty() && parsed.is_string()
          && !keys.back().insert(parsed.get<std::string>()).second && !duplicate) {
        duplicate = parsed.get<std::string>();
      }
      break;
    default:
      break;
    }
    return true;
  };
  try {
    const Json root = Json::parse(text.begin(), text.end(), guard);
    if (too_deep) {
      return fail(plain_error("nested deeper than a record is"));
    }
    if (duplicate) {
      return fail(plain_error("duplicate key \"" + printable(*duplicate) + "\""));
    }
    return read_record(root);
  } catch (const Json::exception& error) {
    return fail(plain_error("not valid JSON: " + json_message(error)));
  } catch (const std::exception& error) {
    return fail(plain_error("cannot be read: " + json_message(error)));
  }
}

}  // namespace treeguard
