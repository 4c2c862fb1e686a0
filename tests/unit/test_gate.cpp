#include "gate.hpp"
#include "record_fixtures.hpp"

#include <doctest/doctest.h>

using namespace treeguard;
using namespace treeguard::test;

namespace {

const std::string k_run = "20240131T235959-4242-0a9f";

RunRecord record_with(Disposition disposition) {
  RunRecord record = full_record(k_run);
  record.disposition = disposition;
  record.resolution.reset();
  return record;
}

StoredRecord stored(RunRecord record) {
  const std::string name = record.run_id + ".json";
  return StoredRecord{name, "/state/" + name, std::move(record)};
}

StoredRecord corrupt(const std::string& name, const std::string& why) {
  return StoredRecord{name, "/state/" + name, fail(plain_error(why))};
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size()
         && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The advice names the state directory the record is in (stored(): /state).
const std::string k_resolve = "treeguard resolve --state-dir /state " + k_run + " --why TEXT";
const std::string k_sweep = "treeguard sweep --state-dir /state " + k_run;

}  // namespace

TEST_SUITE_BEGIN("treeguard::gate");

TEST_CASE("an empty state directory, and records that never block") {
  FakeHost host;
  CHECK(evaluate_gate({}, host).open());
  CHECK(evaluate_gate({}, host).exit_code() == 0);

  SUBCASE("pass") {
    CHECK(evaluate_gate({stored(record_with(Disposition::pass))}, host).open());
  }
  SUBCASE("resolved, whatever the disposition") {
    for (Disposition disposition :
         {Disposition::pending, Disposition::failed, Disposition::ambiguous}) {
      RunRecord record = record_with(disposition);
      record.resolution = Resolution{"cleaned up by hand", 1, "uid 0"};
      CHECK(evaluate_gate({stored(record)}, host).open());
    }
  }
  SUBCASE("pending with a live controller (a concurrent run), even if its tree is busy") {
    RunRecord record = record_with(Disposition::pending);
    host.alive.insert({record.controller.pid, record.controller.start_time});
    host.empty_by_run[k_run] = false;
    CHECK(evaluate_gate({stored(record)}, host).open());
  }
  SUBCASE("pending, controller dead, boundary proven empty") {
    host.empty_by_run[k_run] = true;
    CHECK(evaluate_gate({stored(record_with(Disposition::pending))}, host).open());
  }
}

TEST_CASE("failed and ambiguous runs block until resolved") {
  FakeHost host;
  for (Disposition disposition : {Disposition::failed, Disposition::ambiguous}) {
    CAPTURE(disposition_name(disposition));
    const RunRecord record = record_with(disposition);

    SUBCASE("tree may be alive, controller gone: sweep") {
      const GateVerdict verdict = evaluate_gate({stored(record)}, host);
      REQUIRE(verdict.findings.size() == 1);
      const GateFinding& finding = verdict.findings[0];
      CHECK(finding.kind == FindingKind::unresolved);
      CHECK(finding.run_id == k_run);
      CHECK(finding.path == "/state/" + k_run + ".json");
      CHECK(finding.line.rfind("run " + k_run + " (make -j8 check", 0) == 0);
      CHECK(ends_with(finding.line, "; unresolved; run: " + k_sweep));
      CHECK(verdict.exit_code() == 121);
      CHECK_FALSE(verdict.corrupt());
    }
    SUBCASE("boundary proven empty: resolve") {
      host.empty_by_run[k_run] = true;
      const GateVerdict verdict = evaluate_gate({stored(record)}, host);
      REQUIRE(verdict.findings.size() == 1);
      CHECK(ends_with(verdict.findings[0].line, "run: " + k_resolve));
    }
    SUBCASE("controller still alive (writing its last words): resolve, never sweep") {
      host.alive.insert({record.controller.pid, record.controller.start_time});
      const GateVerdict verdict = evaluate_gate({stored(record)}, host);
      REQUIRE(verdict.findings.size() == 1);
      CHECK(ends_with(verdict.findings[0].line, "run: " + k_resolve));
    }
    SUBCASE("from another boot: resolve") {
      host.boot = k_other_boot;
      const GateVerdict verdict = evaluate_gate({stored(record)}, host);
      REQUIRE(verdict.findings.size() == 1);
      CHECK(ends_with(verdict.findings[0].line, "run: " + k_resolve));
      CHECK(host.boundary_questions == 0);
    }
  }
  const GateVerdict failed = evaluate_gate({stored(record_with(Disposition::failed))}, host);
  REQUIRE(failed.findings.size() == 1);
  CHECK(failed.findings[0].line.find(" failed: members survived the forced kill;")
        != std::string::npos);
  const GateVerdict ambiguous = evaluate_gate({stored(record_with(Disposition::ambiguous))}, host);
  REQUIRE(ambiguous.findings.size() == 1);
  CHECK(ambiguous.findings[0].line.find(" is ambiguous: the tree's fate is not proven;")
        != std::string::npos);
}

TEST_CASE("a pending run whose controller died blocks unless its boundary is proven empty") {
  FakeHost host;
  RunRecord record = record_with(Disposition::pending);

  SUBCASE("boundary still has members") {
    host.empty_by_run[k_run] = false;
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == FindingKind::controller_lost);
    CHECK(verdict.findings[0].line
          == "run " + k_run
                 + " (make -j8 check ARG=\"quoted\" \\ back tab?here \xc3\xa9t\xc3\xa9)"
                   " lost its controller (pid 4242) and its boundary "
                 + record.boundary.address + " still has members; run: " + k_sweep);
    CHECK(verdict.exit_code() == 121);
  }
  SUBCASE("boundary cannot be told") {
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == FindingKind::controller_lost);
    CHECK(verdict.findings[0].line.find("cannot be proven empty; run: " + k_sweep)
          != std::string::npos);
  }
  SUBCASE("the pid is alive but with another start time: recycled, so dead") {
    host.alive.insert({record.controller.pid, record.controller.start_time + 1});
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == FindingKind::controller_lost);
  }
  SUBCASE("from another boot: blocks, never asks about the boundary") {
    host.boot = k_other_boot;
    host.alive.insert({record.controller.pid, record.controller.start_time});
    host.empty_by_run[k_run] = true;
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == FindingKind::other_boot);
    CHECK(ends_with(verdict.findings[0].line,
                    "is pending from another boot; its end cannot be proven; run: " + k_resolve));
    CHECK(host.boundary_questions == 0);
  }
  SUBCASE("the host does not know its boot id: nothing can be proven") {
    host.boot = "";
    host.alive.insert({record.controller.pid, record.controller.start_time});
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == FindingKind::other_boot);
  }
}

TEST_CASE("a pending run whose guardian is alive does not block: it is being taken down") {
  FakeHost host;
  RunRecord record = record_with(Disposition::pending);
  host.empty_by_run[k_run] = false;
  REQUIRE(record.guardian);
  host.alive.insert({record.guardian->pid, record.guardian->start_time});
  const GateVerdict verdict = evaluate_gate({stored(record)}, host);
  CHECK(verdict.open());
  CHECK(verdict.settle.empty());  // the guardian will record how it ended
  CHECK(host.boundary_questions == 0);

  SUBCASE("a recycled guardian pid is not the guardian") {
    host.alive.clear();
    host.alive.insert({record.guardian->pid, record.guardian->start_time + 1});
    CHECK_FALSE(evaluate_gate({stored(record)}, host).open());
  }
  SUBCASE("a failed run blocks whoever is alive") {
    CHECK_FALSE(evaluate_gate({stored(record_with(Disposition::failed))}, host).open());
  }
}

TEST_CASE("a run whose controller is in another pid namespace is reported, never judged") {
  FakeHost host;
  host.pid_ns = k_pid_ns + 1;
  host.empty_by_run[k_run] = true;  // as it would look through another namespace's /proc

  SUBCASE("pending: does not block, is not settled, is named as unjudged") {
    const RunRecord record = record_with(Disposition::pending);
    CHECK(controller_state(record, host) == ControllerState::other_namespace);
    host.namespace_questions = 0;
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    // Asked once per record (every launch pays for it: a scan of the host)
    CHECK(host.namespace_questions == 1);
    CHECK(verdict.open());
    CHECK(verdict.settle.empty());
    REQUIRE(verdict.unjudged.size() == 1);
    CHECK(verdict.unjudged[0].find(k_run) != std::string::npos);
    CHECK(host.boundary_questions == 0);
  }
  SUBCASE("failed: blocks, and the cure is resolve, never sweep from here") {
    host.empty_by_run[k_run] = false;
    const GateVerdict verdict = evaluate_gate({stored(record_with(Disposition::failed))}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(ends_with(verdict.findings[0].line, k_resolve));
  }
  SUBCASE("a record that does not know its namespace is judged as before") {
    RunRecord record = record_with(Disposition::pending);
    record.pid_ns.reset();
    CHECK(controller_state(record, host) == ControllerState::dead);
  }
  SUBCASE("a host that does not know its namespace judges as before") {
    host.pid_ns = 0;
    CHECK(controller_state(record_with(Disposition::pending), host) == ControllerState::dead);
  }
}

TEST_CASE("a pid namespace is its inode and its init: a record of a namespace gone is settled") {
  // Inodes are handed on (four `unshare --pid` in a row gave ...178, ...179,
  // ...180, ...178); a record of a dead namespace was judged by a later, unrelated one.
  FakeHost host;
  host.empty_by_run[k_run] = false;  // as the recorded pids would look from here
  SUBCASE("the same inode under another init: the record's namespace is gone") {
    host.pid_ns_init = k_pid_ns_init + 1000;
    const RunRecord record = record_with(Disposition::pending);
    CHECK(controller_state(record, host) == ControllerState::namespace_gone);
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    CHECK(verdict.open());
    CHECK(verdict.unjudged.empty());
    REQUIRE(verdict.settle.size() == 1);
    CHECK(verdict.settle[0].settled.disposition == Disposition::pass);
    CHECK(verdict.settle[0].settled.notes.back().find("pid namespace") != std::string::npos);
    CHECK(host.boundary_questions == 0);  // its pids mean nothing here: never looked up
  }
  SUBCASE("the same inode and the same init: this namespace, judged as ever") {
    const RunRecord record = record_with(Disposition::pending);
    CHECK(controller_state(record, host) == ControllerState::dead);
    CHECK_FALSE(evaluate_gate({stored(record)}, host).open());
  }
  SUBCASE("the same inode, either side not knowing the init: judged as this namespace") {
    RunRecord record = record_with(Disposition::pending);
    record.pid_ns_init.reset();
    host.pid_ns_init = k_pid_ns_init + 1000;
    CHECK(controller_state(record, host) == ControllerState::dead);
    host.pid_ns_init.reset();
    CHECK(controller_state(record_with(Disposition::pending), host) == ControllerState::dead);
  }
  SUBCASE("another inode, proven gone from here: settled") {
    host.pid_ns = k_pid_ns + 1;
    host.gone_namespaces.insert(k_pid_ns);
    const RunRecord record = record_with(Disposition::pending);
    CHECK(controller_state(record, host) == ControllerState::namespace_gone);
    REQUIRE(evaluate_gate({stored(record)}, host).settle.size() == 1);
  }
  SUBCASE("a failed run of a namespace gone still blocks until a person resolves it") {
    host.pid_ns_init = k_pid_ns_init + 1000;
    const GateVerdict verdict = evaluate_gate({stored(record_with(Disposition::failed))}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(ends_with(verdict.findings[0].line, k_resolve));
  }
}

TEST_CASE("a pending run of an earlier boot of this machine ended with that boot: settled") {
  FakeHost host;
  host.boot = k_other_boot;
  host.empty_by_run[k_run] = false;  // never asked: nothing of another boot is looked up
  RunRecord record = record_with(Disposition::pending);
  record.machine_id = k_machine;
  // Its pids mean nothing after the reboot, even if they are alive now.
  host.alive.insert({record.controller.pid, record.controller.start_time});

  SUBCASE("same machine, last written before this boot began: settled as pass") {
    CHECK(controller_state(record, host) == ControllerState::earlier_boot);
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    CHECK(verdict.open());
    CHECK(verdict.unjudged.empty());
    REQUIRE(verdict.settle.size() == 1);
    const RunRecord& settled = verdict.settle[0].settled;
    CHECK(settled.disposition == Disposition::pass);
    CHECK(settled.phases.back().name == "settled");
    CHECK(settled.notes.back().find("ended by the host's reboot") == 0);
    CHECK(host.boundary_questions == 0);
  }
  SUBCASE("same machine id, but written since this boot began: another machine (a clone)") {
    record.phases.push_back(PhaseEntry{"verify", k_boot_began});
    CHECK(controller_state(record, host) == ControllerState::other_machine);
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    CHECK(verdict.open());
    CHECK(verdict.settle.empty());
    CHECK(verdict.unjudged.size() == 1);
  }
  SUBCASE("an authority entry written since this boot began counts too") {
    record.authority.back().at = k_boot_began + 1;
    CHECK(controller_state(record, host) == ControllerState::other_machine);
  }
  SUBCASE("the host does not know when its boot began: not settled") {
    host.began.reset();
    CHECK(controller_state(record, host) == ControllerState::other_machine);
    CHECK(evaluate_gate({stored(record)}, host).settle.empty());
  }
  SUBCASE("a record without a machine id cannot be proven this machine's: blocks as before") {
    record.machine_id.reset();
    CHECK(controller_state(record, host) == ControllerState::other_boot);
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == FindingKind::other_boot);
    CHECK(verdict.settle.empty());
  }
  SUBCASE("a host without a machine id did not write a record that names one: another "
          "machine's, never settled, never blocking") {
    host.machine = "";
    CHECK(controller_state(record, host) == ControllerState::other_machine);
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    CHECK(verdict.open());
    CHECK(verdict.settle.empty());
    CHECK(verdict.unjudged.size() == 1);
    CHECK(host.boundary_questions == 0);
  }
  SUBCASE("a host without a machine id cannot tell a record that names none: blocks") {
    host.machine = "";
    record.machine_id.reset();
    CHECK(controller_state(record, host) == ControllerState::other_boot);
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    REQUIRE(verdict.findings.size() == 1);
    CHECK(verdict.findings[0].kind == FindingKind::other_boot);
    CHECK(ends_with(verdict.findings[0].line, k_resolve));
    CHECK(verdict.settle.empty());
  }
  SUBCASE("failed or ambiguous of an earlier boot still wants a person: resolve") {
    for (Disposition disposition : {Disposition::failed, Disposition::ambiguous}) {
      RunRecord unresolved = record;
      unresolved.disposition = disposition;
      const GateVerdict verdict = evaluate_gate({stored(unresolved)}, host);
      REQUIRE(verdict.findings.size() == 1);
      CHECK(ends_with(verdict.findings[0].line, k_resolve));
    }
  }
}

TEST_CASE("a pending run recorded on another machine is reported, never judged, never blocks") {
  FakeHost host;
  host.boot = k_other_boot;
  host.empty_by_run[k_run] = true;
  RunRecord record = record_with(Disposition::pending);
  record.machine_id = k_other_machine;
  CHECK(controller_state(record, host) == ControllerState::other_machine);
  const GateVerdict verdict = evaluate_gate({stored(record)}, host);
  CHECK(verdict.open());
  CHECK(verdict.settle.empty());
  REQUIRE(verdict.unjudged.size() == 1);
  CHECK(verdict.unjudged[0].find("recorded on another machine (machine id "
                                 + std::string(k_other_machine))
        != std::string::npos);
  CHECK(host.boundary_questions == 0);

  SUBCASE("the same boot id is the same kernel, whatever the machine id says") {
    host.boot = k_boot;
    CHECK(controller_state(record, host) == ControllerState::dead);
  }
}

TEST_CASE("what can never block again is handed back to be settled, once") {
  FakeHost host;
  SUBCASE("pending, controller and guardian dead, boundary proven empty: settled as pass") {
    host.empty_by_run[k_run] = true;
    const RunRecord record = record_with(Disposition::pending);
    const GateVerdict verdict = evaluate_gate({stored(record)}, host);
    CHECK(verdict.open());
    REQUIRE(verdict.settle.size() == 1);
    const RunRecord& settled = verdict.settle[0].settled;
    CHECK(settled.run_id == k_run);
    CHECK(verdict.settle[0].read == record);
    CHECK(settled.disposition == Disposition::pass);
    CHECK(settled.phases.back().name == "settled");
    CHECK(settled.notes.back().find("controller lost") == 0);
  }
  SUBCASE("pass and resolved records among the open ones are moved as they are") {
    RunRecord resolved = record_with(Disposition::failed);
    resolved.resolution = Resolution{"checked", 1, "uid 0"};
    resolved.run_id = "20240131T235959-4242-0a9e";
    resolved.boundary.address = "/sys/fs/cgroup/unified/tg-tests/treeguard-" + resolved.run_id;
    const RunRecord pass = record_with(Disposition::pass);
    const GateVerdict verdict = evaluate_gate({stored(pass), stored(resolved)}, host);
    CHECK(verdict.open());
    REQUIRE(verdict.settle.size() == 2);
    CHECK(verdict.settle[0].settled == pass);
    CHECK(verdict.settle[0].read == pass);
    CHECK(verdict.settle[1].settled == resolved);
  }
  SUBCASE("nothing that may still be alive is settled") {
    host.empty_by_run[k_run] = std::nullopt;
    CHECK(evaluate_gate({stored(record_with(Disposition::pending))}, host).settle.empty());
    RunRecord running = record_with(Disposition::pending);
    host.alive.insert({running.controller.pid, running.controller.start_time});
    host.empty_by_run[k_run] = true;
    CHECK(evaluate_gate({stored(running)}, host).settle.empty());
  }
}

TEST_CASE("corrupt or foreign files close the gate with 125") {
  FakeHost host;
  const std::vector<StoredRecord> records = {
      stored(record_with(Disposition::pass)),
      corrupt("x.json", "record /state/x.json: not valid JSON: oops"),
      stored(record_with(Disposition::failed)),
  };
  const GateVerdict verdict = evaluate_gate(records, host);
  REQUIRE(verdict.findings.size() == 2);
  CHECK(verdict.findings[0].kind == FindingKind::corrupt);
  CHECK(verdict.findings[0].path == "/state/x.json");
  CHECK(verdict.findings[0].run_id.empty());
  CHECK(verdict.findings[0].line == "untrusted record: record /state/x.json: not valid JSON: oops");
  CHECK(verdict.findings[1].kind == FindingKind::unresolved);
  CHECK(verdict.corrupt());
  CHECK(verdict.exit_code() == 125);
}

TEST_CASE("suggested commands work pasted: the state directory, absolute and shell-quoted") {
  CHECK(suggested_command("sweep", "/var/lib/tg", k_run)
        == "treeguard sweep --state-dir /var/lib/tg " + k_run);
  CHECK(suggested_command("resolve", "/home/a b/it's", k_run, "--why TEXT")
        == "treeguard resolve --state-dir '/home/a b/it'\\''s' " + k_run + " --why TEXT");
  CHECK(suggested_command("sweep", "/x/$HOME/`id`", k_run)
        == "treeguard sweep --state-dir '/x/$HOME/`id`' " + k_run);
  const std::string relative = suggested_command("sweep", "rel/state", k_run);
  const std::string absolute = (std::filesystem::current_path() / "rel/state").string();
  CHECK(relative.find("--state-dir " + shell_quoted(absolute) + " ") != std::string::npos);
  CHECK(shell_quoted("") == "''");
  CHECK(shell_quoted("--timeout=5") == "--timeout=5");
  CHECK(shell_quoted("=ls") == "'=ls'");
  CHECK(shell_quoted("it's") == "'it'\\''s'");
}

TEST_CASE("controller_state") {
  FakeHost host;
  const RunRecord record = record_with(Disposition::pending);
  CHECK(controller_state(record, host) == ControllerState::dead);
  host.alive.insert({record.controller.pid, record.controller.start_time});
  CHECK(controller_state(record, host) == ControllerState::alive);
  host.boot = k_other_boot;
  CHECK(controller_state(record, host) == ControllerState::other_boot);
}

TEST_SUITE_END();
