#include "evidence_commands.hpp"
#include "port/file_io.hpp"
#include "record_fixtures.hpp"
#include "state_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

using namespace treeguard;
using namespace treeguard::test;
namespace fs = std::filesystem;

namespace {

// A FILE* whose contents the test reads back.
class Capture {
public:
  Capture() : m_file(std::tmpfile(), &std::fclose) { REQUIRE(m_file); }
  std::FILE* get() const { return m_file.get(); }
  std::string text() const {
    std::fflush(m_file.get());
    std::rewind(m_file.get());
    std::string out;
    char buffer[4096];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, m_file.get())) > 0) {
      out.append(buffer, got);
    }
    return out;
  }

private:
  std::unique_ptr<std::FILE, decltype(&std::fclose)> m_file;
};

const std::string k_pending = "20240101T000000-11-000a";
const std::string k_failed = "20240101T000000-12-000b";

// A state directory with a live pending run, an unresolved failed run and a
// corrupt file.
void populate(const RecordStore& store, FakeHost& host) {
  RunRecord pending = minimal_record(k_pending);
  pending.controller = {11, 111};
  pending.command = {"sleep", "10"};
  host.alive.insert({11, 111});
  REQUIRE(store.save(pending, Durability::lazy));
  RunRecord failed = minimal_record(k_failed);
  failed.controller = {12, 122};
  failed.disposition = Disposition::failed;
  failed.exit_code = 122;
  failed.command = {"make", "\x1b[2Jcheck"};
  REQUIRE(store.save(failed, Durability::durable));
  write_text(store.dir() / "20240101T000000-13-000c.json", "{\"format\":\"treeguard-record/1\"}");
}

// A populated state directory (populate()) in a scratch directory of its own.
struct PopulatedState {
  static fs::path prepared(const fs::path& dir) {
    REQUIRE(prepare_state_dir(dir));
    return dir;
  }
  ScratchDir scratch;
  const fs::path dir = scratch.path() / "state";
  const RecordStore store{prepared(dir)};
  FakeHost host;
  PopulatedState() { populate(store, host); }
};

}  // namespace

TEST_SUITE_BEGIN("treeguard::evidence_commands");

TEST_CASE("status") {
  ScratchDir scratch;
  const fs::path dir = scratch.path() / "state";
  FakeHost host;
  Capture out;
  Capture err;

  SUBCASE("an empty (new) state directory") {
    CHECK(command_status(dir, false, host, out.get(), err.get()) == 0);
    CHECK(out.text() == "no runs recorded in " + dir.string() + "\n");
    CHECK(err.text().empty());
    CHECK(fs::is_directory(dir));
  }
  SUBCASE("text lists every record with what blocks dispatch; exit 121 as run would refuse") {
    REQUIRE(prepare_state_dir(dir));
    const RecordStore store(dir);
    populate(store, host);
    CHECK(command_status(dir, false, host, out.get(), err.get()) == 121);
    CHECK(out.text()
          == k_pending + "  pending  controller alive  process-group pgid 7  sleep 10\n" + k_failed
                 + "  failed  finished  process-group pgid 7  make ?[2Jcheck\n"
                 + "  blocks dispatch: run " + k_failed + " (make ?[2Jcheck) failed: members "
                 + "survived the forced kill; unresolved; run: treeguard sweep --state-dir "
                 + dir.string() + " " + k_failed + "\n" + "20240101T000000-13-000c.json  corrupt\n"
                 + "  blocks dispatch: untrusted record: record " + dir.string()
                 + "/20240101T000000-13-000c.json: missing field run_id\n");
    CHECK(err.text().empty());
  }
  SUBCASE("--json is an array with one object per file") {
    REQUIRE(prepare_state_dir(dir));
    const RecordStore store(dir);
    populate(store, host);
    CHECK(command_status(dir, true, host, out.get(), err.get()) == 121);
    const nlohmann::json report = nlohmann::json::parse(out.text());
    REQUIRE(report.is_array());
    REQUIRE(report.size() == 3);
    CHECK(report[0]["run_id"] == k_pending);
    CHECK(report[0]["disposition"] == "pending");
    CHECK(report[0]["controller"]["state"] == "alive");
    CHECK(report[0]["controller"]["pid"] == 11);
    CHECK(report[0]["boundary"]["address"] == "pgid 7");
    CHECK(report[0]["command"] == nlohmann::json::array({"sleep", "10"}));
    CHECK(report[0]["blocking"].is_null());
    CHECK(report[0]["error"].is_null());
    CHECK(report[1]["run_id"] == k_failed);
    CHECK(report[1]["controller"]["state"] == "dead");
    CHECK(report[1]["exit_code"] == 122);
    CHECK(report[1]["blocking"].get<std::string>().find("treeguard sweep --state-dir "
                                                        + dir.string() + " " + k_failed)
          != std::string::npos);
    CHECK(report[2]["file"] == (dir / "20240101T000000-13-000c.json").string());
    CHECK(report[2]["error"]
          == "record " + (dir / "20240101T000000-13-000c.json").string()
                 + ": missing field run_id");
    CHECK(report[2].find("run_id") == report[2].end());
  }
  SUBCASE("finished records are listed after the open ones, as finished; nothing blocks: 0") {
    REQUIRE(prepare_state_dir(dir));
    const RecordStore store(dir);
    RunRecord kept = minimal_record("20240101T000000-14-000d");
    kept.disposition = Disposition::pass;
    kept.exit_code = 0;
    REQUIRE(store.finish(kept, Durability::lazy));
    CHECK(command_status(dir, false, host, out.get(), err.get()) == 0);
    CHECK(out.text() == "20240101T000000-14-000d  pass  finished  process-group pgid 7  true\n");
  }
  SUBCASE("status RUN: that run only, its members by name") {
    REQUIRE(prepare_state_dir(dir));
    const RecordStore store(dir);
    populate(store, host);
    RunRecord kept = minimal_record("20240101T000000-14-000d");
    kept.disposition = Disposition::pass;
    kept.exit_code = 0;
    kept.members = {{{7, 70}, false, true, false, "sleep", "sleep 1000"},
                    {{8, 80}, true, true, true, "da\x1bmon", ""},
                    {{9, 90}}};
    REQUIRE(store.finish(kept, Durability::lazy));
    const std::optional<std::string> run = kept.run_id;
    CHECK(command_status(dir, false, host, out.get(), err.get(), run) == 0);
    CHECK(out.text()
          == "20240101T000000-14-000d  pass  finished  process-group pgid 7  true\n"
             "  members recorded: 3\n"
             "    sleep (pid 7) start 70  sleep 1000\n"
             "    da?mon (pid 8) start 80  (left COMMAND's process group)\n"
             "    pid 9 start 90\n");
    Capture json;
    CHECK(command_status(dir, true, host, json.get(), err.get(), run) == 0);
    const nlohmann::json report = nlohmann::json::parse(json.text());
    REQUIRE(report.size() == 1);
    CHECK(report[0]["members"][0]["comm"] == "sleep");
    CHECK(report[0]["members"][0]["argv"] == "sleep 1000");
    CHECK(report[0]["members"][1]["left_command_group"] == true);
    CHECK(report[0]["members"][1].find("escaped") == report[0]["members"][1].end());
    CHECK(report[0]["alive_now"].is_null());  // a pass: proven empty, not asked
    Capture none;
    CHECK(command_status(dir, false, host, none.get(), err.get(),
                         std::optional<std::string>("20240101T000000-99-0063"))
          == 125);
    CHECK(err.text()
          == "treeguard: error: status 20240101T000000-99-0063: no such run in " + dir.string()
                 + "\n");
  }
  SUBCASE("status RUN of a live run: what its boundary holds now, its authority and notes") {
    REQUIRE(prepare_state_dir(dir));
    const RecordStore store(dir);
    RunRecord live = minimal_record("20240101T000000-21-0015");
    live.controller = {21, 211};
    host.alive.insert({21, 211});
    live.authority = {{1767268800000000000LL,
                       "cgroup.kill",
                       {"/sys/fs/cgroup/t/treeguard-20240101T000000-21-0015", "pid 22 start 220"},
                       "a test",
                       "controller pid 21"}};
    live.notes = {"members truncated"};
    REQUIRE(store.save(live, Durability::lazy));
    MemberInfo sleeping;
    sleeping.pid = 22;
    sleeping.start_time = 220;
    sleeping.comm = "sleep";
    sleeping.argv = "sleep 1000";
    host.alive_by_run[live.run_id] = {sleeping};
    const std::optional<std::string> run = live.run_id;
    CHECK(command_status(dir, false, host, out.get(), err.get(), run) == 0);
    CHECK(out.text()
          == "20240101T000000-21-0015  pending  controller alive  process-group pgid 7  true\n"
             "  alive in its boundary now: 1\n"
             "    sleep (pid 22) start 220  sleep 1000\n"
             "  members recorded: 0\n"
             "  authority entries: 1\n"
             "    2026-01-01T12:00:00.000000Z  cgroup.kill by controller pid 21: a test\n"
             "      targets: /sys/fs/cgroup/t/treeguard-20240101T000000-21-0015, pid 22 start 220\n"
             "  notes:\n"
             "    members truncated\n");
    Capture json;
    CHECK(command_status(dir, true, host, json.get(), err.get(), run) == 0);
    const nlohmann::json report = nlohmann::json::parse(json.text());
    REQUIRE(report.size() == 1);
    REQUIRE(report[0]["alive_now"].size() == 1);
    CHECK(report[0]["alive_now"][0]["comm"] == "sleep");
    CHECK(report[0]["alive_now"][0]["pid"] == 22);
    CHECK(report[0]["authority"][0]["at"] == "2026-01-01T12:00:00.000000Z");
    CHECK(report[0]["authority"][0]["action"] == "cgroup.kill");
    CHECK(report[0]["notes"][0] == "members truncated");
    SUBCASE("what the boundary holds cannot be told from here: said so") {
      host.alive_by_run.clear();
      Capture text;
      CHECK(command_status(dir, false, host, text.get(), err.get(), run) == 0);
      CHECK(text.text().find("  alive in its boundary now: cannot be told from here\n")
            != std::string::npos);
    }
  }
  SUBCASE("a corrupt finished record is shown, not said to block (the gate never reads it)") {
    REQUIRE(prepare_state_dir(dir));
    const RecordStore store(dir);
    fs::create_directory(dir / "finished");
    write_text(dir / "finished" / "20240101T000000-16-000f.json",
               "{\"format\":\"treeguard-record/1\"}");
    CHECK(command_status(dir, false, host, out.get(), err.get()) == 0);
    const std::string text = out.text();
    CHECK(text.find("20240101T000000-16-000f.json  corrupt\n") == 0);
    CHECK(text.find("blocks dispatch") == std::string::npos);
    CHECK(text.find("does not block") != std::string::npos);
    Capture json;
    CHECK(command_status(dir, true, host, json.get(), err.get()) == 0);
    const nlohmann::json report = nlohmann::json::parse(json.text());
    REQUIRE(report.size() == 1);
    CHECK(report[0]["blocking"].is_null());
    CHECK(report[0]["error"].is_string());
    CHECK(evaluate_gate(store.list(), host).open());
  }
  SUBCASE("a pending run of another pid namespace: shown, not judged") {
    REQUIRE(prepare_state_dir(dir));
    const RecordStore store(dir);
    RunRecord elsewhere = minimal_record("20240101T000000-15-000e");
    elsewhere.pid_ns = k_pid_ns + 7;
    REQUIRE(store.save(elsewhere, Durability::lazy));
    CHECK(command_status(dir, false, host, out.get(), err.get()) == 0);
    CHECK(out.text()
          == "20240101T000000-15-000e  pending  controller other-namespace  process-group pgid 7  "
             "true\n  not judged here: its controller is in another pid namespace (pid:["
                 + std::to_string(k_pid_ns + 7)
                 + "]); status and sweep it from there, or resolve it if that namespace is "
                   "gone\n");
  }
  SUBCASE("an unusable state directory: 125 and one line") {
    fs::create_directory(scratch.path() / "real");
    fs::create_directory_symlink(scratch.path() / "real", dir);
    CHECK(command_status(dir, false, host, out.get(), err.get()) == 125);
    CHECK(out.text().empty());
    CHECK(err.text() == "treeguard: error: state directory " + dir.string() + ": is a symlink\n");
  }
}

TEST_CASE_FIXTURE(PopulatedState, "resolve") {
  SUBCASE("resolve_run records why, when and by whom, durably, and opens the gate") {
    CHECK(evaluate_gate({StoredRecord{"f", store.path_for(k_failed), store.load(k_failed)}}, host)
              .exit_code()
          == 121);
    auto resolved = resolve_run(store, k_failed, "killed the leftovers by hand", host, 77, "uid 5");
    REQUIRE_MESSAGE(resolved, (resolved ? "" : resolved.error().message()));
    auto loaded = store.load(k_failed);
    REQUIRE(loaded);
    REQUIRE(loaded->resolution);
    CHECK(*loaded->resolution == Resolution{"killed the leftovers by hand", 77, "uid 5"});
    CHECK(loaded->disposition == Disposition::failed);  // the finding itself stays
    CHECK(*loaded == *resolved);
    CHECK(evaluate_gate({StoredRecord{"f", store.path_for(k_failed), std::move(loaded)}}, host)
              .open());
    // Resolved is finished: out of the open records every gate reads.
    for (const StoredRecord& open : store.list()) {
      CHECK(open.file_name != k_failed + ".json");
    }
    REQUIRE(store.list_finished().size() == 1);
    CHECK(store.list_finished()[0].file_name == k_failed + ".json");
  }
  SUBCASE("command_resolve: exit 0 and a line; the record names the current user") {
    Capture out;
    Capture err;
    CHECK(command_resolve(dir, k_failed, "checked", host, out.get(), err.get()) == 0);
    CHECK(out.text() == "treeguard: resolved run " + k_failed + "\n");
    CHECK(err.text().empty());
    auto loaded = store.load(k_failed);
    REQUIRE(loaded);
    REQUIRE(loaded->resolution);
    CHECK(loaded->resolution->by == current_user_label());
    CHECK(loaded->resolution->at > 0);
  }
  SUBCASE("refusals: exit 125, one line, nothing written") {
    struct Case {
      std::string run_id;
      std::string why;
      std::string expected;
    };
    const std::vector<Case> cases = {
        {k_pending, "x", "resolve " + k_pending + ": still running (controller pid 11 is alive)"},
        {"20240101T000000-13-000c", "x",
         "resolve 20240101T000000-13-000c: record " + dir.string()
             + "/20240101T000000-13-000c.json: missing field run_id"},
        {"20240101T000000-99-0000", "x",
         "resolve 20240101T000000-99-0000: no such run in " + dir.string()},
        {"../x", "x", "resolve ../x: not a run id"},
        {k_failed, " \t", "resolve " + k_failed + ": --why must say why"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.run_id);
      const std::string before = read_file_untrusted(store.path_for(k_pending), 1 << 20).value();
      Capture out;
      Capture err;
      CHECK(command_resolve(dir, c.run_id, c.why, host, out.get(), err.get()) == 125);
      CHECK(out.text().empty());
      CHECK(err.text() == "treeguard: error: " + c.expected + "\n");
      CHECK(read_file_untrusted(store.path_for(k_pending), 1 << 20).value() == before);
    }
    CHECK_FALSE(store.load(k_failed)->resolution);
  }
  SUBCASE("a second resolution does not overwrite the first") {
    REQUIRE(resolve_run(store, k_failed, "first", host, 1, "uid 1"));
    auto again = resolve_run(store, k_failed, "second", host, 2, "uid 2");
    REQUIRE_FALSE(again);
    CHECK(again.error().message() == "resolve " + k_failed + ": already resolved by uid 1: first");
    CHECK(store.load(k_failed)->resolution->why == "first");
  }
  SUBCASE("a record another settler writes while it is being resolved is not overwritten") {
    RunRecord lost = store.load(k_pending).value();
    lost.guardian = ProcessIdentity{20, 200};
    REQUIRE(store.save(lost, Durability::lazy));
    host.alive.clear();  // controller and guardian dead: resolvable
    std::optional<RunRecord> swept;
    host.meanwhile = [&] {
      if (!swept) {
        swept = saved_by_another_settler(store, lost);
      }
    };
    auto refused = resolve_run(store, k_pending, "tree checked gone", host, 1, "uid 1");
    host.meanwhile = nullptr;
    REQUIRE(swept);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message()
          == "resolve " + k_pending
                 + ": its record changed while it was being resolved (a guardian or sweep wrote "
                   "it); nothing was written: look again with treeguard status --state-dir "
                 + dir.string() + " " + k_pending);
    CHECK(store.load(k_pending).value() == *swept);
    CHECK(store.list_finished().empty());
  }
  SUBCASE("a pending run whose controller died but whose guardian works is left alone") {
    RunRecord lost = store.load(k_pending).value();
    lost.guardian = ProcessIdentity{20, 200};
    REQUIRE(store.save(lost, Durability::lazy));
    host.alive = {{20, 200}};
    auto refused = resolve_run(store, k_pending, "x", host, 1, "uid 1");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message()
          == "resolve " + k_pending + ": its guardian (pid 20) is still taking the tree down");
    host.alive.clear();
    CHECK(resolve_run(store, k_pending, "tree checked gone", host, 1, "uid 1"));
  }
  SUBCASE("members still alive: resolved, with a warning naming them and the sweep that takes "
          "them down") {
    RunRecord failed = store.load(k_failed).value();
    failed.members = {{71, 710}, {72, 720}, {73, 730}};
    failed.members[0].comm = "make";  // named as the report and the stop line name them
    REQUIRE(store.save(failed, Durability::durable));
    host.alive.insert({71, 710});
    host.alive.insert({73, 730});
    host.alive.insert({72, 999});  // pid 72 recycled: not a member any more
    Capture out;
    Capture err;
    CHECK(command_resolve(dir, k_failed, "checked", host, out.get(), err.get()) == 0);
    CHECK(out.text() == "treeguard: resolved run " + k_failed + "\n");
    CHECK(err.text()
          == "treeguard: warning: run " + k_failed
                 + " is resolved, but 2 of its members are still alive (make (pid 71), pid 73); "
                   "they are left running; take them down: treeguard sweep --state-dir "
                 + dir.string() + " " + k_failed + "\n");
    CHECK(store.load(k_failed)->resolution);
  }
  SUBCASE("a boundary that still has members, none of them known by pid: warned too") {
    host.empty_by_run[k_failed] = false;
    Capture out;
    Capture err;
    CHECK(command_resolve(dir, k_failed, "checked", host, out.get(), err.get()) == 0);
    CHECK(err.text().find("is resolved, but its boundary pgid 7 still has members")
          != std::string::npos);
  }
  SUBCASE("nothing of another boot can be alive: no warning") {
    RunRecord failed = store.load(k_failed).value();
    failed.members = {{71, 710}};
    REQUIRE(store.save(failed, Durability::durable));
    host.alive.insert({71, 710});
    host.boot = k_other_boot;
    Capture out;
    Capture err;
    CHECK(command_resolve(dir, k_failed, "checked", host, out.get(), err.get()) == 0);
    CHECK(err.text().empty());
  }
  SUBCASE("a pending run from another boot can be resolved") {
    host.boot = k_other_boot;
    CHECK(resolve_run(store, k_pending, "rebooted", host, 1, "uid 1"));
  }
  SUBCASE("a pending run of another pid namespace can be resolved (its namespace may be gone)") {
    RunRecord elsewhere = store.load(k_pending).value();
    elsewhere.pid_ns = k_pid_ns + 7;
    REQUIRE(store.save(elsewhere, Durability::lazy));
    CHECK(resolve_run(store, k_pending, "that container is gone", host, 1, "uid 1"));
  }
  SUBCASE("a pending run of a pid namespace gone can be resolved") {
    RunRecord gone = store.load(k_pending).value();
    gone.pid_ns = k_pid_ns;
    gone.pid_ns_init = k_pid_ns_init + 1000;  // the inode is another namespace's now
    REQUIRE(store.save(gone, Durability::lazy));
    CHECK(resolve_run(store, k_pending, "namespace gone", host, 1, "uid 1"));
  }
}

TEST_CASE_FIXTURE(PopulatedState, "sweep RUN finds a finished run as status lists it") {
  REQUIRE(resolve_run(store, k_failed, "checked", host, 1, "uid 1"));
  REQUIRE(store.list_finished().size() == 1);
  Capture out;
  Capture err;
  CHECK(command_sweep(dir, k_failed, host, out.get(), err.get()) == 0);
  CHECK(out.text() == "run " + k_failed + ": nothing to sweep (resolved)\n");
  CHECK(err.text().empty());
  Capture out2;
  Capture err2;
  CHECK(command_sweep(dir, std::string("20240101T000000-99-0000"), host, out2.get(), err2.get())
        == 125);
  CHECK(err2.text()
        == "treeguard: error: sweep: no run 20240101T000000-99-0000 in " + dir.string() + "\n");
}

TEST_CASE_FIXTURE(
    PopulatedState,
    "sweep of a pending run from another boot: the resolve it suggests works pasted") {
  host.boot = k_other_boot;
  Capture out;
  Capture err;
  CHECK(command_sweep(dir, k_pending, host, out.get(), err.get()) == 0);
  CHECK(out.text()
        == "run " + k_pending
               + ": from another boot; nothing of it can be alive or proven; resolve it: "
               + suggested_command("resolve", dir, k_pending, "--why TEXT") + "\n");
  CHECK(out.text().find("--state-dir") != std::string::npos);
  CHECK(err.text().empty());
}

TEST_SUITE_END();
