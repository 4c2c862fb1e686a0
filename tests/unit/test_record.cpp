#include "record.hpp"
#include "record_fixtures.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <string>
#include <vector>

using namespace treeguard;
using namespace treeguard::test;
using Json = nlohmann::json;

namespace {

// The error of parsing `text`; fails the test if it parsed.
std::string parse_error(const std::string& text) {
  auto parsed = parse_record(text);
  REQUIRE_FALSE(parsed);
  return parsed.error().message();
}

// A valid record as a JSON tree, to break one field at a time.
Json sample_json() {
  return Json::parse(serialize_record(full_record()));
}

}  // namespace

TEST_SUITE_BEGIN("treeguard::record");

TEST_CASE("serialize then parse is the identity") {
  SUBCASE("every field filled in") {
    const RunRecord record = full_record();
    const std::string text = serialize_record(record);
    auto parsed = parse_record(text);
    REQUIRE_MESSAGE(parsed, (parsed ? "" : parsed.error().message()));
    CHECK(*parsed == record);
    CHECK(serialize_record(*parsed) == text);
  }
  SUBCASE("nothing optional") {
    const RunRecord record = minimal_record();
    auto parsed = parse_record(serialize_record(record));
    REQUIRE(parsed);
    CHECK(*parsed == record);
    CHECK_FALSE(parsed->guardian.has_value());
    CHECK_FALSE(parsed->exit_code.has_value());
    CHECK_FALSE(parsed->resolution.has_value());
    CHECK(parsed->disposition == Disposition::pending);
  }
  SUBCASE("every disposition and boundary kind, extreme numbers") {
    for (Disposition disposition :
         {Disposition::pending, Disposition::pass, Disposition::failed, Disposition::ambiguous}) {
      RunRecord record = full_record();
      record.disposition = disposition;
      record.controller = {2147483647L, std::numeric_limits<unsigned long long>::max()};
      for (MemberInfo& member : record.members) {
        member.start_time = record.controller.start_time;  // none older than the controller
      }
      record.phases = {{"x", std::numeric_limits<std::int64_t>::max()}, {"y", 0}};
      record.exit_code = 0;
      CAPTURE(disposition_name(disposition));
      auto parsed = parse_record(serialize_record(record));
      REQUIRE(parsed);
      CHECK(*parsed == record);
    }
    RunRecord job = minimal_record();
    job.boundary = {BoundaryKind::job, "treeguard-20240101T000000-1-0000", std::nullopt};
    auto parsed_job = parse_record(serialize_record(job));
    REQUIRE(parsed_job);
    CHECK(*parsed_job == job);
    RunRecord cgroup_without_pgid = minimal_record();
    cgroup_without_pgid.boundary = {BoundaryKind::cgroup, "/treeguard-20240101T000000-1-0000",
                                    std::nullopt};
    auto parsed_cgroup = parse_record(serialize_record(cgroup_without_pgid));
    REQUIRE(parsed_cgroup);
    CHECK(*parsed_cgroup == cgroup_without_pgid);
    for (const char* address : {"init pending", "init pid 4194304"}) {
      RunRecord pidns = minimal_record();
      pidns.boundary = {BoundaryKind::pid_namespace, address, std::nullopt};
      CAPTURE(address);
      auto parsed_pidns = parse_record(serialize_record(pidns));
      REQUIRE(parsed_pidns);
      CHECK(*parsed_pidns == pidns);
    }
    // A pid namespace is named by its init, and by nothing else.
    for (const char* address : {"init pid ", "init pid 12x", "pgid 7", "/sys/fs/cgroup"}) {
      RunRecord pidns = minimal_record();
      pidns.boundary = {BoundaryKind::pid_namespace, address, std::nullopt};
      CAPTURE(address);
      CHECK_FALSE(parse_record(serialize_record(pidns)));
    }
    RunRecord pidns_with_group = minimal_record();
    pidns_with_group.boundary = {BoundaryKind::pid_namespace, "init pid 12", 12L};
    CHECK_FALSE(parse_record(serialize_record(pidns_with_group)));
  }
  SUBCASE("the text is one line, marked with the format") {
    const std::string text = serialize_record(full_record());
    CHECK(text.find('\n') == text.size() - 1);
    CHECK(text.rfind("{\"format\":\"treeguard-record/1\",\"run_id\":", 0) == 0);
  }
  SUBCASE("bytes that are not UTF-8 become U+FFFD instead of throwing") {
    RunRecord record = minimal_record();
    record.command = {"echo", std::string("bad\xff\xfe")};
    const std::string text = serialize_record(record);
    auto parsed = parse_record(text);
    REQUIRE(parsed);
    CHECK(parsed->command[1] == "bad\xef\xbf\xbd\xef\xbf\xbd");
  }
}

TEST_CASE("run ids") {
  for (const char* good : {"20240131T235959-1-0a9f", "20240131T235959-4294967295-ffff",
                           "00000000T000000-0123456789-0000"}) {
    CAPTURE(good);
    CHECK(is_valid_run_id(good));
  }
  for (const char* bad :
       {"", "20240131T235959--0a9f", "20240131T235959-12345678901-0a9f", "20240131t235959-1-0a9f",
        "2024013T235959-1-0a9f", "20240131T235959-1-0A9F", "20240131T235959-1-0a9",
        "20240131T235959-1-0a9ff", "20240131T235959_1_0a9f", "../../etc/passwd",
        "20240131T235959-1-0a9f/", " 20240131T235959-1-0a9f", "20240131T235959-1-0a9f\n",
        "20240131T2359590-1-0a9f"}) {
    CAPTURE(bad);
    CHECK_FALSE(is_valid_run_id(bad));
  }
}

TEST_CASE("TREEGUARD_RUNS: each run adds its id last, and the innermost run is the last id") {
  // What COMMAND gets (every platform's spawn) and what a nested
  // treeguard reads back (--leftovers outer's enclosing run).
  CHECK(runs_marker("", "B") == "B");
  CHECK(runs_marker("A", "B") == "A B");
  CHECK(runs_marker("A B", "C") == "A B C");
  CHECK(innermost_run(runs_marker(runs_marker("", "A"), "B")) == "B");
  CHECK(innermost_run("") == "");
  CHECK(innermost_run("  ") == "");
  CHECK(innermost_run("A") == "A");
  CHECK(innermost_run("A B\t C \n") == "C");
}

TEST_CASE("pid_ns: absent in records written before it, else a non-negative integer or null") {
  Json without = sample_json();
  without.erase("pid_ns");
  auto parsed = parse_record(without.dump());
  REQUIRE_MESSAGE(parsed, (parsed ? "" : parsed.error().message()));
  CHECK_FALSE(parsed->pid_ns);

  Json null_ns = sample_json();
  null_ns["pid_ns"] = nullptr;
  parsed = parse_record(null_ns.dump());
  REQUIRE(parsed);
  CHECK_FALSE(parsed->pid_ns);

  CHECK(parse_record(sample_json().dump())->pid_ns == k_pid_ns);
  Json negative = sample_json();
  negative["pid_ns"] = -1;
  CHECK(parse_error(negative.dump()) == "field pid_ns: must not be negative");
  Json text = sample_json();
  text["pid_ns"] = "pid:[4026531836]";
  CHECK(parse_error(text.dump()) == "field pid_ns: must be an integer, not string");
}

TEST_CASE("pid_ns_init: absent in records written before it, else a non-negative integer or null") {
  Json without = sample_json();
  without.erase("pid_ns_init");
  auto parsed = parse_record(without.dump());
  REQUIRE_MESSAGE(parsed, (parsed ? "" : parsed.error().message()));
  CHECK_FALSE(parsed->pid_ns_init);
  CHECK(parsed->pid_ns == k_pid_ns);

  Json null_init = sample_json();
  null_init["pid_ns_init"] = nullptr;
  parsed = parse_record(null_init.dump());
  REQUIRE(parsed);
  CHECK_FALSE(parsed->pid_ns_init);

  CHECK(parse_record(sample_json().dump())->pid_ns_init == k_pid_ns_init);
  Json negative = sample_json();
  negative["pid_ns_init"] = -1;
  CHECK(parse_error(negative.dump()) == "field pid_ns_init: must not be negative");
}

TEST_CASE("machine_id: absent in records written before it, else a machine id or null") {
  Json without = sample_json();
  without.erase("machine_id");
  auto parsed = parse_record(without.dump());
  REQUIRE_MESSAGE(parsed, (parsed ? "" : parsed.error().message()));
  CHECK_FALSE(parsed->machine_id);
  CHECK_FALSE(parse_record(sample_json().dump())->machine_id);  // full_record() has none

  RunRecord record = full_record();
  record.machine_id = k_machine;
  const std::string text = serialize_record(record);
  CHECK(text.find(std::string("\"machine_id\":\"") + k_machine + "\"") != std::string::npos);
  parsed = parse_record(text);
  REQUIRE(parsed);
  CHECK(*parsed == record);
  record.machine_id = "5b1e6a3e-8e29-4d0b-9c62-2f4c9e1e7a11";  // Windows' MachineGuid shape
  CHECK(parse_record(serialize_record(record)));

  Json upper = sample_json();
  upper["machine_id"] = "3D1219C7";
  CHECK(parse_error(upper.dump()) == "field machine_id: \"3D1219C7\" is not a machine id");
  Json empty = sample_json();
  empty["machine_id"] = "";
  CHECK(parse_error(empty.dump()) == "field machine_id: \"\" is not a machine id");
  Json number = sample_json();
  number["machine_id"] = 7;
  CHECK(parse_error(number.dump()) == "field machine_id: must be a string, not a number");
}

TEST_CASE("reaper: absent in records written before it, else a process or null") {
  Json without = sample_json();
  without.erase("reaper");
  auto parsed = parse_record(without.dump());
  REQUIRE(parsed);
  CHECK_FALSE(parsed->reaper);
  RunRecord record = full_record();
  record.reaper = ProcessIdentity{77, 123456};
  auto again = parse_record(serialize_record(record));
  REQUIRE(again);
  CHECK(*again == record);
  Json zero = sample_json();
  zero["reaper"] = Json{{"pid", 0}, {"start_time", 1}};
  CHECK_FALSE(parse_record(zero.dump()));
}

TEST_CASE("drain: absent in records written before it, else the run's signal by name and grace") {
  Json without = sample_json();
  without.erase("drain");
  auto parsed = parse_record(without.dump());
  REQUIRE(parsed);
  CHECK_FALSE(parsed->drain);
  for (const char* name : {"TERM", "ALRM", "RTMIN+1", "RTMAX", "0"}) {
    RunRecord record = full_record();
    record.drain = RecordedDrain{name, 0};
    CAPTURE(name);
    auto again = parse_record(serialize_record(record));
    REQUIRE(again);
    CHECK(*again == record);
  }
  Json unknown = sample_json();
  unknown["drain"]["signal"] = "SIGTERM";
  CHECK(parse_error(unknown.dump()) == "field drain.signal: \"SIGTERM\" is not a signal");
  Json negative = sample_json();
  negative["drain"]["kill_after_ns"] = -1;
  CHECK(parse_error(negative.dump())
        == "field drain.kill_after_ns: must be between 0 and 10 years");
  Json extra = sample_json();
  extra["drain"]["grace"] = 1;
  CHECK(parse_error(extra.dump()) == "drain: unknown field \"grace\"");
  Json missing = sample_json();
  missing["drain"].erase("signal");
  CHECK(parse_error(missing.dump()) == "missing field drain.signal");
}

TEST_CASE("last_look: absent in records written before it, else a start time or null") {
  Json without = sample_json();
  without.erase("last_look");
  auto parsed = parse_record(without.dump());
  REQUIRE(parsed);
  CHECK_FALSE(parsed->last_look);
  RunRecord record = full_record();
  record.last_look = 123456;
  auto again = parse_record(serialize_record(record));
  REQUIRE(again);
  CHECK(*again == record);
  Json text = sample_json();
  text["last_look"] = "soon";
  CHECK_FALSE(parse_record(text.dump()));
}

TEST_CASE("every field is required") {
  const Json valid = sample_json();
  for (const auto& item : valid.items()) {
    if (item.key() == "pid_ns" || item.key() == "pid_ns_init" || item.key() == "machine_id"
        || item.key() == "reaper" || item.key() == "drain" || item.key() == "last_look") {
      continue;  // optional: below
    }
    Json broken = valid;
    broken.erase(item.key());
    CAPTURE(item.key());
    CHECK(parse_error(broken.dump()) == "missing field " + item.key());
  }
  for (const char* nested : {"controller", "guardian", "boundary", "resolution"}) {
    for (const auto& item : valid[nested].items()) {
      Json broken = valid;
      broken[nested].erase(item.key());
      CAPTURE(item.key());
      CHECK(parse_error(broken.dump())
            == std::string("missing field ") + nested + "." + item.key());
    }
  }
  Json broken_member = valid;
  broken_member["members"][1].erase("escaped");
  CHECK(parse_error(broken_member.dump()) == "missing field members[1].escaped");
}

TEST_CASE("malformed and hostile input is refused with a reason") {
  struct Case {
    const char* name;
    void (*mutate)(Json&);
    const char* expected;  // the whole message
  };
  const Case cases[] = {
      {"wrong format", [](Json& j) { j["format"] = "treeguard-record/2"; },
       "format is \"treeguard-record/2\", not \"treeguard-record/1\""},
      {"format not a string", [](Json& j) { j["format"] = 1; },
       "field format: must be a string, not a number"},
      {"unknown field", [](Json& j) { j["extra"] = true; }, "record: unknown field \"extra\""},
      {"unknown nested field", [](Json& j) { j["controller"]["uid"] = 0; },
       "controller: unknown field \"uid\""},
      {"bad run id", [](Json& j) { j["run_id"] = "../../x"; },
       "field run_id: \"../../x\" is not a run id"},
      {"bad boot id", [](Json& j) { j["boot_id"] = "0F3C1B2A-9D8E-4C7B-A6F5-E4D3C2B1A098"; },
       "field boot_id: \"0F3C1B2A-9D8E-4C7B-A6F5-E4D3C2B1A098\" is not a lowercase UUID"},
      {"pid zero", [](Json& j) { j["controller"]["pid"] = 0; },
       "field controller.pid: must be between 1 and 2147483647"},
      {"pid negative", [](Json& j) { j["guardian"]["pid"] = -5; },
       "field guardian.pid: must be between 1 and 2147483647"},
      {"pid too large", [](Json& j) { j["controller"]["pid"] = 2147483648LL; },
       "field controller.pid: must be between 1 and 2147483647"},
      {"pid fractional", [](Json& j) { j["controller"]["pid"] = 1.5; },
       "field controller.pid: must be an integer, not a fractional number"},
      {"pid as string", [](Json& j) { j["controller"]["pid"] = "12"; },
       "field controller.pid: must be an integer, not string"},
      {"start time negative", [](Json& j) { j["controller"]["start_time"] = -1; },
       "field controller.start_time: must not be negative"},
      {"phase time negative", [](Json& j) { j["phases"][2]["at"] = -1; },
       "field phases[2].at: must not be negative"},
      {"phase name empty", [](Json& j) { j["phases"][0]["name"] = ""; },
       "field phases[0].name: must not be empty"},
      {"authority without targets", [](Json& j) { j["authority"][0]["targets"] = Json::array(); },
       "field authority[0].targets: must not be empty"},
      {"authority target not a string", [](Json& j) { j["authority"][0]["targets"][0] = 3; },
       "field authority[0].targets[0]: must be a string, not a number"},
      {"member pid zero", [](Json& j) { j["members"][0]["pid"] = 0; },
       "field members[0].pid: must be between 1 and 2147483647"},
      {"escaped as number", [](Json& j) { j["members"][0]["escaped"] = 0; },
       "field members[0].escaped: must be true or false, not a number"},
      {"members not an array", [](Json& j) { j["members"] = Json::object(); },
       "field members: must be an array, not object"},
      {"unknown kind", [](Json& j) { j["boundary"]["kind"] = "chroot"; },
       "field boundary.kind: unknown kind \"chroot\""},
      {"cgroup path relative", [](Json& j) { j["boundary"]["address"] = "sys/fs/cgroup/x"; },
       "field boundary.address: cgroup path is not absolute"},
      {"cgroup path with ..",
       [](Json& j) {
         j["boundary"]["address"] = "/sys/fs/cgroup/../treeguard-20240131T235959-4242-0a9f";
       },
       "field boundary.address: cgroup path has an empty, \".\" or \"..\" component"},
      {"cgroup path with //",
       [](Json& j) { j["boundary"]["address"] = "/sys//treeguard-20240131T235959-4242-0a9f"; },
       "field boundary.address: cgroup path has an empty, \".\" or \"..\" component"},
      {"cgroup leaf of another run",
       [](Json& j) { j["boundary"]["address"] = "/sys/fs/cgroup/system.slice"; },
       "field boundary.address: cgroup path does not end in treeguard-20240131T235959-4242-0a9f"},
      {"job of another run",
       [](Json& j) {
         j["boundary"] = Json{
             {"kind", "job"}, {"address", "treeguard-20240131T235959-1-0000"}, {"pgid", nullptr}};
       },
       "field boundary.address: a job must be named \"treeguard-20240131T235959-4242-0a9f\""},
      {"job with a pgid",
       [](Json& j) {
         j["boundary"] =
             Json{{"kind", "job"}, {"address", "treeguard-20240131T235959-4242-0a9f"}, {"pgid", 9}};
       },
       "field boundary.pgid: a job has no process group"},
      {"process group address mismatch",
       [](Json& j) {
         j["boundary"] = Json{{"kind", "process-group"}, {"address", "pgid 8"}, {"pgid", 9}};
       },
       "field boundary.address: must be \"pgid 9\""},
      {"process group without pgid",
       [](Json& j) {
         j["boundary"] = Json{{"kind", "process-group"}, {"address", "pgid 8"}, {"pgid", nullptr}};
       },
       "field boundary.pgid: a process-group boundary needs its pgid, or \"pgid pending\""},
      {"pending process group with a pgid",
       [](Json& j) {
         j["boundary"] = Json{{"kind", "process-group"}, {"address", "pgid pending"}, {"pgid", 9}};
       },
       "field boundary.address: must be \"pgid 9\""},
      {"pgid negative", [](Json& j) { j["boundary"]["pgid"] = -1; },
       "field boundary.pgid: must be between 1 and 2147483647"},
      {"command empty", [](Json& j) { j["command"] = Json::array(); },
       "field command: must not be empty"},
      {"command not strings",
       [](Json& j) {
         j["command"] = Json::array({"ls", nullptr});
       },
       "field command[1]: must be a string, not null"},
      {"cwd empty", [](Json& j) { j["cwd"] = ""; }, "field cwd: must not be empty"},
      {"unknown disposition", [](Json& j) { j["disposition"] = "fine"; },
       "field disposition: unknown disposition \"fine\""},
      {"exit code negative", [](Json& j) { j["exit_code"] = -1; },
       "field exit_code: must be between 0 and 2147483647"},
      {"exit code fractional", [](Json& j) { j["exit_code"] = 0.5; },
       "field exit_code: must be an integer, not a fractional number"},
      {"resolution without why", [](Json& j) { j["resolution"]["why"] = ""; },
       "field resolution.why: must not be empty"},
      {"resolution not an object", [](Json& j) { j["resolution"] = "yes"; },
       "field resolution: must be an object, not string"},
      {"notes not strings", [](Json& j) { j["notes"] = Json::array({1}); },
       "field notes[0]: must be a string, not a number"},
      {"control characters in a key are not echoed", [](Json& j) { j["bad\x1b[31mkey"] = 1; },
       "record: unknown field \"bad?[31mkey\""},
  };
  for (const Case& c : cases) {
    Json broken = sample_json();
    c.mutate(broken);
    CAPTURE(c.name);
    CHECK(parse_error(broken.dump()) == c.expected);
  }
}

TEST_CASE("input that is not a record at all") {
  const std::string valid = serialize_record(full_record());
  SUBCASE("not JSON, or not an object") {
    CHECK(parse_error("").rfind("not valid JSON: ", 0) == 0);
    CHECK(parse_error("nonsense").rfind("not valid JSON: ", 0) == 0);
    CHECK(parse_error("[]") == "not a JSON object");
    CHECK(parse_error("null") == "not a JSON object");
    CHECK(parse_error("\"treeguard-record/1\"") == "not a JSON object");
  }
  SUBCASE("trailing garbage") {
    CHECK(parse_error(valid + "{}").rfind("not valid JSON: ", 0) == 0);
  }
  SUBCASE("every truncation fails cleanly") {
    const std::string body = valid.substr(0, valid.size() - 1);  // without "\n"
    for (std::size_t size = 0; size < body.size(); ++size) {
      CAPTURE(size);
      CHECK_FALSE(parse_record(std::string_view(body).substr(0, size)));
    }
  }
  SUBCASE("duplicate keys") {
    std::string text = valid;
    text.insert(1, "\"disposition\":\"pass\",");
    CHECK(parse_error(text) == "duplicate key \"disposition\"");
  }
  SUBCASE("invalid UTF-8") {
    std::string text = valid;
    const auto at = text.find("/home/user");
    text[at + 1] = '\xff';
    CHECK(parse_error(text).rfind("not valid JSON: ", 0) == 0);
  }
  SUBCASE("deep nesting") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    CHECK(parse_error(deep) == "nested deeper than a record is");
    Json nested = sample_json();
    nested["notes"] = Json::array({Json::array({Json::array({Json::array(
        {Json::array({Json::array({Json::array({Json::array({Json::array({"x"})})})})})})})})});
    CHECK(parse_error(nested.dump()) == "nested deeper than a record is");
  }
  SUBCASE("over 1 MiB") {
    std::string text = valid;
    text.append(k_max_record_bytes + 1 - text.size(), ' ');
    CHECK(parse_error(text) == "larger than 1048576 bytes");
    text.pop_back();  // exactly the limit, trailing whitespace: fine
    CHECK(parse_record(text));
  }
}

TEST_CASE("validate_record checks what the parser checks") {
  CHECK(validate_record(full_record()));
  CHECK(validate_record(minimal_record()));
  RunRecord too_many = minimal_record();
  too_many.members.assign(k_max_record_members + 1, MemberInfo{5, 6, false});
  auto result = validate_record(too_many);
  REQUIRE_FALSE(result);
  CHECK(result.error().message() == "field members: has more than 100000 entries");
  // A member older than its controller was never the run's: such a record
  // is corrupt, never acted on (sweep once killed such a "member").
  RunRecord older_member = full_record();
  older_member.members[0].start_time = older_member.controller.start_time - 1;
  auto older_result = validate_record(older_member);
  REQUIRE_FALSE(older_result);
  CHECK(older_result.error().message().find("field members[0].start_time: is before the "
                                            "controller's")
        != std::string::npos);
  CHECK_FALSE(parse_record(serialize_record(older_member)));
  RunRecord same_tick = full_record();
  same_tick.members[0].start_time = same_tick.controller.start_time;
  CHECK(validate_record(same_tick));
  RunRecord nul_in_command = minimal_record();
  nul_in_command.command.push_back(std::string("a\0b", 3));
  auto nul_result = validate_record(nul_in_command);
  REQUIRE_FALSE(nul_result);
  CHECK(nul_result.error().message() == "field command[1]: contains a NUL byte");
}

TEST_CASE("a process-group record written before spawn: pgid pending") {
  RunRecord record = minimal_record();
  record.boundary.kind = BoundaryKind::process_group;
  record.boundary.address = k_pgid_pending;
  record.boundary.pgid.reset();
  auto parsed = parse_record(serialize_record(record));
  REQUIRE(parsed);
  CHECK(*parsed == record);
  record.boundary.address = "pgid 12";
  CHECK_FALSE(parse_record(serialize_record(record)));
}

TEST_SUITE_END();
