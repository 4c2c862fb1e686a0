// Delegation asked, not assumed, and asked once (DESIGN.md [scopes]): which
// unit holds a cgroup, the question put to its manager, the answer kept in
// the state directory per unit and boot, and the plan's leaf refused
// beneath a unit that is not delegated.
#include "linux/boundary_plan.hpp"
#include "linux/unit_delegation.hpp"
#include "record_fixtures.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace treeguard;
using platform::Delegation;
using platform::ManagedUnit;
using platform::unit_of_cgroup;

TEST_SUITE_BEGIN("treeguard::platform::linux");

namespace {

const std::string k_run = "20240101T000000-1-0000";
const std::string k_boot = "0b6c1a2e-1d3f-4c5b-9a7e-2f1e0d9c8b7a";
const std::string k_other_boot = "1b6c1a2e-1d3f-4c5b-9a7e-2f1e0d9c8b7a";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A manager that answers `answer` and counts the questions.
struct FakeManager {
  std::string answer = "no\n";
  bool fails = false;
  int asked = 0;
  std::vector<std::string> last;
  platform::AskManager ask() {
    return [this](const std::vector<std::string>& argv) -> Result<std::string> {
      ++asked;
      last = argv;
      if (fails) {
        return fail(plain_error("Failed to connect to bus"));
      }
      return answer;
    };
  }
};

ManagedUnit service() {
  return ManagedUnit{"system", "ci.service", "/system.slice/ci.service", -1};
}

std::vector<std::string> leftovers(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    out.push_back(entry.path().filename().string());
  }
  return out;
}

}  // namespace

TEST_CASE("unit delegation: the unit holding a cgroup, and whose manager it is") {
  auto ci = unit_of_cgroup("/system.slice/ci.service");
  REQUIRE(ci);
  CHECK(ci->manager == "system");
  CHECK(ci->unit == "ci.service");
  CHECK(ci->cgroup == "/system.slice/ci.service");
  // treeguard's own sub-cgroup below the unit is still the unit's.
  auto moved = unit_of_cgroup("/system.slice/ci.service/treeguard-controller");
  REQUIRE(moved);
  CHECK(moved->unit == "ci.service");
  auto session = unit_of_cgroup("/user.slice/user-0.slice/session-3.scope");
  REQUIRE(session);
  CHECK(session->manager == "system");
  CHECK(session->unit == "session-3.scope");
  // A desktop terminal's app scope: the user manager's unit.
  auto app =
      unit_of_cgroup("/user.slice/user-1000.slice/user@1000.service/app.slice/app-term-1234.scope");
  REQUIRE(app);
  CHECK(app->manager == "user");
  CHECK(app->user == 1000);
  CHECK(app->unit == "app-term-1234.scope");
  CHECK(app->cgroup
        == "/user.slice/user-1000.slice/user@1000.service/app.slice/app-term-1234.scope");
  // user@UID.service itself is the system manager's (and delegated).
  auto manager = unit_of_cgroup("/user.slice/user-1000.slice/user@1000.service");
  REQUIRE(manager);
  CHECK(manager->manager == "system");
  // No unit: the root, a cgroup namespace's view, a tree systemd did not name.
  CHECK_FALSE(unit_of_cgroup("/"));
  CHECK_FALSE(unit_of_cgroup(""));
  CHECK_FALSE(unit_of_cgroup("/tg-tests/job-1"));
  CHECK_FALSE(unit_of_cgroup("/system.slice/bad name.service"));
  // treeguard's own: the scope it asked for, a nested run inside a leaf.
  CHECK_FALSE(unit_of_cgroup("/system.slice/treeguard-" + k_run + ".scope"));
  CHECK_FALSE(unit_of_cgroup("/system.slice/ci.service/treeguard-" + k_run));
  CHECK_FALSE(unit_of_cgroup("/system.slice/ci.service/treeguard-" + k_run + "/sub"));
  // A unit below a leaf is asked of again (someone made it there).
  auto below = unit_of_cgroup("/system.slice/ci.service/treeguard-" + k_run + "/x.scope");
  REQUIRE(below);
  CHECK(below->unit == "x.scope");
}

TEST_CASE("unit delegation: the question is systemctl's, with --user for a user's manager") {
  CHECK(platform::delegation_question("/usr/bin/systemctl", service())
        == std::vector<std::string>{"/usr/bin/systemctl", "--no-pager", "show", "-p", "Delegate",
                                    "--value", "--", "ci.service"});
  ManagedUnit app{"user", "app-x.scope", "/u/app-x.scope", 1000};
  const auto user = platform::delegation_question("systemctl", app);
  REQUIRE(user.size() > 2);
  CHECK(user[1] == "--user");
  CHECK(user.back() == "app-x.scope");
}

TEST_CASE("unit delegation: asked once per unit and boot, the answer kept in the state dir") {
  test::ScratchDir state;
  FakeManager manager;
  auto first =
      platform::unit_delegation(service(), state.path(), k_boot, 42, "systemctl", manager.ask());
  CHECK(manager.asked == 1);
  CHECK(first.asked);
  REQUIRE(first.delegated);
  CHECK(*first.delegated == false);
  const auto file = state.path() / "units" / "system-ci.service";
  CHECK(first.how == "asked systemd, kept in " + file.string());
  struct stat info {};
  REQUIRE(::lstat(file.c_str(), &info) == 0);
  CHECK(S_ISREG(info.st_mode));
  CHECK((info.st_mode & 0777) == 0600);
  REQUIRE(::lstat((state.path() / "units").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);
  CHECK(leftovers(state.path() / "units") == std::vector<std::string>{"system-ci.service"});

  // The second run reads it: the manager is not asked again.
  manager.answer = "yes\n";
  auto second =
      platform::unit_delegation(service(), state.path(), k_boot, 42, "systemctl", manager.ask());
  CHECK(manager.asked == 1);
  CHECK_FALSE(second.asked);
  CHECK(second.delegated == false);
  CHECK(contains(second.how, "kept in " + file.string()));

  // Another boot: asked again, and the new answer kept.
  auto rebooted = platform::unit_delegation(service(), state.path(), k_other_boot, 42, "systemctl",
                                            manager.ask());
  CHECK(manager.asked == 2);
  CHECK(rebooted.delegated == true);
  // The unit stopped and started again (a new cgroup): asked again.
  auto restarted = platform::unit_delegation(service(), state.path(), k_other_boot, 43, "systemctl",
                                             manager.ask());
  CHECK(manager.asked == 3);
  CHECK(restarted.delegated == true);
  platform::unit_delegation(service(), state.path(), k_other_boot, 43, "systemctl", manager.ask());
  CHECK(manager.asked == 3);
  // Another unit has an answer of its own.
  ManagedUnit other{"system", "other.service", "/system.slice/other.service", -1};
  platform::unit_delegation(other, state.path(), k_other_boot, 43, "systemctl", manager.ask());
  CHECK(manager.asked == 4);
}

TEST_CASE("unit delegation: no answer: nothing known; one that is not yes or no: not delegated; "
          "neither kept") {
  test::ScratchDir state;
  FakeManager manager;
  manager.fails = true;
  auto failed =
      platform::unit_delegation(service(), state.path(), k_boot, 1, "systemctl", manager.ask());
  CHECK_FALSE(failed.delegated);
  CHECK(contains(failed.how, "did not answer (Failed to connect to bus)"));
  manager.fails = false;
  // An answer nobody can read is no yes: no leaf beneath the unit on it.
  manager.answer = "Running in chroot, ignoring command 'show'\n";
  auto odd =
      platform::unit_delegation(service(), state.path(), k_boot, 1, "systemctl", manager.ask());
  REQUIRE(odd.delegated);
  CHECK(*odd.delegated == false);
  CHECK(contains(odd.how, "answered 'Running in chroot, ignoring command 'show'\n', not yes or "
                          "no: taken as not delegated"));
  CHECK_FALSE(std::filesystem::exists(state.path() / "units" / "system-ci.service"));
  // Neither is kept: asked again next time.
  platform::unit_delegation(service(), state.path(), k_boot, 1, "systemctl", manager.ask());
  CHECK(manager.asked == 3);
}

TEST_CASE("unit delegation: a kept file that is a symlink or a FIFO is not followed; replaced") {
  test::ScratchDir state;
  test::ScratchDir elsewhere;
  std::filesystem::create_directory(state.path() / "units");
  std::filesystem::permissions(state.path() / "units", std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  const auto file = state.path() / "units" / "system-ci.service";
  const auto target = elsewhere.path() / "planted";
  // A planted answer of this boot, reached through a symlink.
  test::write_text(target,
                   "treeguard unit delegation 1\nboot " + k_boot + "\ncgroup 7\ndelegate yes\n");
  std::filesystem::create_symlink(target, file);
  FakeManager manager;
  auto through_link =
      platform::unit_delegation(service(), state.path(), k_boot, 7, "systemctl", manager.ask());
  CHECK(manager.asked == 1);
  CHECK(through_link.delegated == false);
  CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(file)));
  std::ifstream planted(target);
  std::string first_line;
  std::getline(planted, first_line);
  CHECK(first_line == "treeguard unit delegation 1");  // the target untouched

  std::filesystem::remove(file);
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
  auto fifo =
      platform::unit_delegation(service(), state.path(), k_boot, 7, "systemctl", manager.ask());
  CHECK(manager.asked == 2);  // not blocked on the FIFO, and asked
  CHECK(fifo.delegated == false);
  CHECK(std::filesystem::is_regular_file(std::filesystem::symlink_status(file)));
}

TEST_CASE("unit delegation: a units directory that is not one: asked, not kept, no temp left") {
  test::ScratchDir state;
  test::ScratchDir elsewhere;
  // units a symlink to a directory elsewhere: never written through.
  std::filesystem::create_directory_symlink(elsewhere.path(), state.path() / "units");
  FakeManager manager;
  auto result =
      platform::unit_delegation(service(), state.path(), k_boot, 7, "systemctl", manager.ask());
  CHECK(result.delegated == false);
  CHECK(contains(result.how, "asked systemd, not kept: "));
  CHECK(leftovers(elsewhere.path()).empty());
  CHECK(leftovers(state.path()) == std::vector<std::string>{"units"});
}

TEST_CASE("plan: beneath a unit that is not delegated no leaf; root gets the system scope") {
  platform::LinuxHostFacts facts;
  facts.root = true;
  facts.leaf_parent = std::string("/sys/fs/cgroup/system.slice/ci.service");
  facts.system_scope = Result<std::string>(
      std::string("/usr/bin/systemd-run --scope (system manager at /run/systemd/private)"));
  facts.user_scope = fail(plain_error("no user manager"));
  facts.own_unit = platform::OwnUnit{
      service(), Delegation{false, "asked systemd, kept in /s/units/system-ci.service", true}};
  auto plan = platform::plan_linux(BoundaryRequest::automatic, {}, k_run, facts);
  REQUIRE(plan.candidates.size() == 4);
  CHECK(plan.candidates[0].refused
        == "unit ci.service is not delegated (asked systemd, kept in "
           "/s/units/system-ci.service)");
  CHECK_FALSE(plan.candidates[0].make);
  CHECK(plan.candidates[1].name == "system scope");
  CHECK(plan.candidates[1].refused.empty());

  // Delegated: the leaf as before, and -v says why.
  facts.own_unit->delegation.delegated = true;
  plan = platform::plan_linux(BoundaryRequest::automatic, {}, k_run, facts);
  CHECK(plan.candidates[0].refused.empty());
  CHECK(contains(plan.candidates[0].where, "(unit ci.service is delegated: asked systemd"));
  // Not known (no manager answered): the leaf as before.
  facts.own_unit->delegation.delegated.reset();
  facts.own_unit->delegation.how = "no systemd manages this host (not asked)";
  plan = platform::plan_linux(BoundaryRequest::automatic, {}, k_run, facts);
  CHECK(plan.candidates[0].refused.empty());
  CHECK(contains(plan.candidates[0].where, "not known: no systemd manages this host"));
}

TEST_CASE("unit delegation: a unit of another user's manager is not delegated to this user") {
  // `sudo treeguard run` in a user's terminal: root's process sits in that
  // user's app scope. That tree is the user's: no manager is asked, and no
  // leaf of root's is made beneath it.
  const long other = ::geteuid() == 1000 ? 1001 : 1000;
  const std::string user = std::to_string(other);
  const std::string scope =
      "/user.slice/user-" + user + ".slice/user@" + user + ".service/app.slice/app-term-7.scope";
  test::ScratchDir state;
  auto own = platform::own_unit_delegation(state.path(), scope);
  REQUIRE(own);
  CHECK(own->unit.manager == "user");
  CHECK(own->unit.user == other);
  REQUIRE(own->delegation.delegated);
  CHECK(*own->delegation.delegated == false);
  CHECK_FALSE(own->delegation.asked);
  CHECK(own->delegation.how
        == "it is user " + user + "'s manager's, not uid " + std::to_string(::geteuid())
               + "'s (not asked)");
  CHECK(leftovers(state.path()).empty());  // nothing asked, nothing kept

  platform::LinuxHostFacts facts;
  facts.root = ::geteuid() == 0;
  facts.leaf_parent = "/sys/fs/cgroup" + scope;
  facts.system_scope = fail(plain_error("no system manager"));
  facts.user_scope = fail(plain_error("no user manager"));
  facts.own_unit = own;
  auto plan = platform::plan_linux(BoundaryRequest::automatic, {}, k_run, facts);
  REQUIRE_FALSE(plan.candidates.empty());
  CHECK(plan.candidates[0].refused
        == "unit app-term-7.scope is not delegated (" + own->delegation.how + ")");
  CHECK_FALSE(plan.candidates[0].make);
}

TEST_CASE("plan: an ordinary user in an app scope that is not delegated gets the user scope") {
  platform::LinuxHostFacts facts;
  facts.leaf_parent = std::string(
      "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/app-t.scope");
  facts.user_scope = Result<std::string>(
      std::string("/usr/bin/systemd-run --user --scope (user manager at /run/user/1000/bus)"));
  facts.own_unit = platform::OwnUnit{
      ManagedUnit{"user", "app-t.scope", "/x/app-t.scope", 1000},
      Delegation{false, "asked the user's systemd, kept in /s/units/user-app-t.scope", true}};
  auto plan = platform::plan_linux(BoundaryRequest::automatic, {}, k_run, facts);
  CHECK(contains(plan.candidates[0].refused, "unit app-t.scope is not delegated"));
  CHECK(contains(plan.candidates[1].refused, "not root"));
  CHECK(plan.candidates[2].name == "user scope");
  CHECK(plan.candidates[2].refused.empty());
}

TEST_CASE("unit delegation: run_for_output gives a program's words, bounds its time") {
  auto said = platform::run_for_output({"/bin/sh", "-c", "echo yes"}, std::chrono::seconds(10));
  REQUIRE(said);
  CHECK(*said == "yes\n");
  auto failed = platform::run_for_output({"/bin/sh", "-c", "echo nope >&2; exit 3"},
                                         std::chrono::seconds(10));
  REQUIRE_FALSE(failed);
  CHECK(contains(failed.error().message(), "failed: nope"));
  // A warning on stderr is no part of the answer (systemctl warns there).
  auto warned = platform::run_for_output(
      {"/bin/sh", "-c", "echo 'Warning: the unit file changed on disk' >&2; echo no"},
      std::chrono::seconds(10));
  REQUIRE(warned);
  CHECK(*warned == "no\n");
  // Both pipes read to their end, whichever the program fills first.
  auto both = platform::run_for_output(
      {"/bin/sh", "-c", "head -c 100000 /dev/zero >&2; echo yes; head -c 100000 /dev/zero >&2"},
      std::chrono::seconds(10));
  REQUIRE(both);
  CHECK(*both == "yes\n");
  auto slow =
      platform::run_for_output({"/bin/sh", "-c", "exec sleep 30"}, std::chrono::milliseconds(200));
  REQUIRE_FALSE(slow);
  CHECK(contains(slow.error().message(), "did not answer within 200 ms"));
  auto missing = platform::run_for_output({"/nonexistent/systemctl"}, std::chrono::seconds(1));
  CHECK_FALSE(missing);
}

TEST_SUITE_END();
