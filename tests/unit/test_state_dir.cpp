#include "record_fixtures.hpp"
#include "state_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

using namespace treeguard;
using namespace treeguard::test;
namespace fs = std::filesystem;

namespace {

EnvironmentLookup fake_environment(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    const auto found = values.find(name);
    if (found == values.end()) {
      return std::nullopt;
    }
    return found->second;
  };
}

// No platform fallbacks: the candidates from the environment alone.
std::vector<StateDirChoice> no_fallbacks(const EnvironmentLookup&) {
  return {};
}

std::string resolved(const std::optional<std::string>& cli,
                     const std::map<std::string, std::string>& environment) {
  auto path = resolve_state_dir(cli, fake_environment(environment));
  REQUIRE_MESSAGE(path, (path ? "" : path.error().message()));
  return path->string();
}

std::string refusal(const fs::path& dir) {
  auto prepared = prepare_state_dir(dir);
  REQUIRE_FALSE(prepared);
  return prepared.error().message();
}

unsigned mode_of(const fs::path& path) {
  struct stat info {};
  REQUIRE(::lstat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

}  // namespace

TEST_SUITE_BEGIN("treeguard::state_dir");

TEST_CASE("resolve_state_dir takes the first source that is set") {
  const std::map<std::string, std::string> all = {
      {"TREEGUARD_STATE_DIR", "/env/tg"}, {"XDG_STATE_HOME", "/xdg"}, {"HOME", "/home/u"}};
  CHECK(resolved(std::string("/cli/dir"), all) == "/cli/dir");
  CHECK(resolved(std::nullopt, all) == "/env/tg");
  CHECK(resolved(std::nullopt, {{"XDG_STATE_HOME", "/xdg"}, {"HOME", "/home/u"}})
        == "/xdg/treeguard");
  CHECK(resolved(std::nullopt, {{"HOME", "/home/u"}}) == "/home/u/.local/state/treeguard");

  SUBCASE("empty values are unset; relative XDG_STATE_HOME and HOME are ignored") {
    CHECK(resolved(std::nullopt,
                   {{"TREEGUARD_STATE_DIR", ""}, {"XDG_STATE_HOME", ""}, {"HOME", "/home/u"}})
          == "/home/u/.local/state/treeguard");
    CHECK(resolved(std::nullopt, {{"XDG_STATE_HOME", "relative"}, {"HOME", "/home/u/"}})
          == "/home/u/.local/state/treeguard");
  }
  SUBCASE("no usable home: the per-user runtime directory") {
    auto runtime = state_dir_candidates(
        std::nullopt, fake_environment({{"HOME", "relative"}, {"XDG_RUNTIME_DIR", "/run/user/7"}}),
        "7", no_fallbacks);
    REQUIRE(runtime);
    REQUIRE(runtime->size() == 2);
    CHECK(runtime->front().path == "/run/user/7/treeguard");
    CHECK(runtime->front().source == "XDG_RUNTIME_DIR");
    CHECK(runtime->back().path == "/tmp/treeguard-7");
    auto tmp = state_dir_candidates(std::nullopt, fake_environment({}), "7", no_fallbacks);
    REQUIRE(tmp);
    REQUIRE(tmp->size() == 1);
    CHECK(tmp->front().path == "/tmp/treeguard-7");
    // With a home, the runtime directory is the fallback after it.
    auto both = state_dir_candidates(std::nullopt, fake_environment({{"HOME", "/home/u"}}), "7",
                                     no_fallbacks);
    REQUIRE(both);
    REQUIRE(both->size() == 2);
    CHECK(both->at(0).path == "/home/u/.local/state/treeguard");
    CHECK(both->at(1).path == "/tmp/treeguard-7");
    // An explicit choice has no fallback.
    auto given =
        state_dir_candidates(std::nullopt, fake_environment({{"TREEGUARD_STATE_DIR", "/x"}}), "7");
    REQUIRE(given);
    CHECK(given->size() == 1);
  }
  SUBCASE("the platform's fallbacks come after the runtime directory, /tmp last") {
    auto fallbacks = [](const EnvironmentLookup&) {
      return std::vector<StateDirChoice>{{"/home/db/.local/state/treeguard", "the user database"},
                                         {"/run/treeguard", "/run"}};
    };
    auto all_of = state_dir_candidates(
        std::nullopt, fake_environment({{"XDG_RUNTIME_DIR", "/run/user/7"}}), "7", fallbacks);
    REQUIRE(all_of);
    REQUIRE(all_of->size() == 4);
    CHECK(all_of->at(0).source == "XDG_RUNTIME_DIR");
    CHECK(all_of->at(1).source == "the user database");
    CHECK(all_of->at(2).path == "/run/treeguard");
    CHECK(all_of->at(3).path == "/tmp/treeguard-7");
  }
  SUBCASE("a relative --state-dir or TREEGUARD_STATE_DIR is made absolute and normal") {
    const std::string cwd = fs::current_path().string();
    CHECK(resolved(std::string("a/./b/../c"), {}) == cwd + "/a/c");
    CHECK(resolved(std::nullopt, {{"TREEGUARD_STATE_DIR", "rel"}}) == cwd + "/rel");
  }
  SUBCASE("an empty --state-dir is bad usage") {
    auto empty = resolve_state_dir(std::string(), fake_environment(all));
    REQUIRE_FALSE(empty);
    CHECK(empty.error().message() == "--state-dir: must not be empty");
  }
}

TEST_CASE("the root directory and an option-like --state-dir are refused") {
  SUBCASE("/ in any spelling, from --state-dir or TREEGUARD_STATE_DIR") {
    for (const char* root : {"/", "/..", "/tmp/..", "//"}) {
      CAPTURE(root);
      auto from_cli = resolve_state_dir(std::string(root), fake_environment({}));
      REQUIRE_FALSE(from_cli);
      CHECK(from_cli.error().message().find("the root directory cannot be a state directory")
            != std::string::npos);
      auto from_environment =
          resolve_state_dir(std::nullopt, fake_environment({{"TREEGUARD_STATE_DIR", root}}));
      CHECK_FALSE(from_environment);
    }
  }
  SUBCASE("--state-dir --json: the value is missing; ./--json names such a directory") {
    auto option_like = resolve_state_dir(std::string("--json"), fake_environment({}));
    REQUIRE_FALSE(option_like);
    CHECK(option_like.error().message()
          == "--state-dir: '--json' looks like an option, not a directory (is the value "
             "missing?); to use a directory of that name, write ./--json");
    CHECK_FALSE(resolve_state_dir(std::string("-x"), fake_environment({})));
    CHECK(resolved(std::string("./--json"), {}) == fs::current_path().string() + "/--json");
  }
}

TEST_CASE("open_state_dir: a home that cannot be made gives way; a refused one does not") {
  ScratchDir scratch;
  // Nothing can be created in /proc, not even by root: an errno (EACCES,
  // ENOENT), as for a missing or read-only home.
  const fs::path blocked = "/proc/treeguard-no-home";
  const fs::path runtime = scratch.path() / "runtime";
  REQUIRE(::mkdir(runtime.c_str(), 0700) == 0);
  auto fallback = open_state_dir(
      std::nullopt,
      fake_environment({{"HOME", blocked.string()}, {"XDG_RUNTIME_DIR", runtime.string()}}), "7");
  REQUIRE_MESSAGE(fallback, (fallback ? "" : fallback.error().message()));
  CHECK(fallback->path == runtime / "treeguard");
  CHECK(fallback->source == "XDG_RUNTIME_DIR");
  CHECK(mode_of(runtime / "treeguard") == 0700);

  // A home state directory that exists but is group-writable is refused,
  // not silently replaced by another place.
  const fs::path home = scratch.path() / "home";
  REQUIRE(fs::create_directories(home / ".local" / "state" / "treeguard"));
  REQUIRE(::chmod((home / ".local" / "state" / "treeguard").c_str(), 0770) == 0);
  auto refused = open_state_dir(
      std::nullopt,
      fake_environment({{"HOME", home.string()}, {"XDG_RUNTIME_DIR", runtime.string()}}), "7");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message().find("group- or world-writable") != std::string::npos);
}

TEST_CASE("platform_fallback_dirs: places no other user can create first") {
  const auto with_home = [](const char* home) {
    return [home](const char* name) -> std::optional<std::string> {
      if (std::string(name) == "HOME" && home != nullptr) {
        return std::string(home);
      }
      return std::nullopt;
    };
  };
  if (::geteuid() != 0) {
    // (the user database's home of an ordinary user is host-dependent)
    for (const auto& choice : platform_fallback_dirs(with_home(nullptr))) {
      CHECK(choice.path != "/run/treeguard");
    }
    return;
  }
  // root: /root from the user database when HOME is unset (cron, services),
  // not twice when HOME is /root; /run/treeguard, which only root can make.
  struct stat root_home {};
  const bool has_root_home =
      ::lstat("/root", &root_home) == 0 && S_ISDIR(root_home.st_mode) && root_home.st_uid == 0;
  auto homeless = platform_fallback_dirs(with_home(nullptr));
  std::vector<std::string> paths;
  for (const auto& choice : homeless) {
    paths.push_back(choice.path.string());
  }
  if (has_root_home) {
    REQUIRE_FALSE(paths.empty());
    CHECK(paths.front() == "/root/.local/state/treeguard");
    CHECK(homeless.front().source == "the user database");
    auto with_root_home = platform_fallback_dirs(with_home("/root"));
    CHECK((with_root_home.empty() || with_root_home.front().source != "the user database"));
  }
  struct stat run {};
  const bool private_run = ::lstat("/run", &run) == 0 && S_ISDIR(run.st_mode) && run.st_uid == 0
                           && (run.st_mode & 022) == 0;
  CHECK((std::find(paths.begin(), paths.end(), "/run/treeguard") != paths.end()) == private_run);
}

TEST_CASE("prepare_state_dir creates a private directory") {
  ScratchDir scratch;
  const fs::path dir = scratch.path() / "a" / "b" / "treeguard";

  SUBCASE("missing parents too, each 0700, whatever the umask") {
    const mode_t old_umask = ::umask(0777);
    auto prepared = prepare_state_dir(dir);
    ::umask(old_umask);
    REQUIRE_MESSAGE(prepared, (prepared ? "" : prepared.error().message()));
    CHECK(fs::is_directory(dir));
    CHECK(mode_of(dir) == 0700);
    CHECK(mode_of(scratch.path() / "a") == 0700);
    CHECK(mode_of(scratch.path() / "a" / "b") == 0700);
    CHECK(prepare_state_dir(dir));  // idempotent
  }
  SUBCASE("a trailing separator is the same directory") {
    REQUIRE(prepare_state_dir(dir.string() + "/"));
    CHECK(fs::is_directory(dir));
  }
  SUBCASE("an existing private directory is kept as it is") {
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec,
                    fs::perm_options::replace);
    CHECK(prepare_state_dir(dir));
    CHECK(mode_of(dir) == 0750);
  }
}

TEST_CASE("prepare_state_dir refuses what it cannot trust") {
  ScratchDir scratch;
  const fs::path real = scratch.path() / "real";
  fs::create_directory(real);
  fs::permissions(real, fs::perms::owner_all, fs::perm_options::replace);

  SUBCASE("the directory is a symlink") {
    fs::create_directory_symlink(real, scratch.path() / "link");
    CHECK(refusal(scratch.path() / "link")
          == "state directory " + (scratch.path() / "link").string() + ": is a symlink");
  }
  SUBCASE("a component of its path is a symlink") {
    fs::create_directory_symlink(real, scratch.path() / "link");
    fs::create_directory(real / "state");
    const fs::path through = scratch.path() / "link" / "state";
    CHECK(refusal(through)
          == "state directory " + through.string() + ": path component "
                 + (scratch.path() / "link").string() + " is a symlink");
    // Nothing was created on the other side of the link.
    CHECK_FALSE(fs::exists(real / "state" / "x"));
  }
  SUBCASE("a dangling symlink is not followed to create its target") {
    fs::create_symlink(scratch.path() / "elsewhere", scratch.path() / "dangling");
    CHECK(refusal(scratch.path() / "dangling")
          == "state directory " + (scratch.path() / "dangling").string() + ": is a symlink");
    CHECK_FALSE(fs::exists(scratch.path() / "elsewhere"));
  }
  SUBCASE("a file, or a file on the way") {
    write_text(scratch.path() / "file", "x");
    CHECK(refusal(scratch.path() / "file")
          == "state directory " + (scratch.path() / "file").string() + ": is not a directory");
    CHECK(refusal(scratch.path() / "file" / "sub")
          == "state directory " + (scratch.path() / "file" / "sub").string() + ": path component "
                 + (scratch.path() / "file").string() + " is not a directory");
  }
  SUBCASE("a parent others may write to, without the sticky bit: it could be moved away") {
    fs::permissions(real, fs::perms::others_write | fs::perms::others_exec, fs::perm_options::add);
    const fs::path below = real / "state";
    CHECK(refusal(below)
          == "state directory " + below.string() + ": path component " + real.string()
                 + " is group- or world-writable without the sticky bit");
    // The sticky bit (as on /tmp) keeps others from renaming what is ours.
    fs::permissions(real, fs::perms::sticky_bit, fs::perm_options::add);
    CHECK(prepare_state_dir(below));
  }
  SUBCASE("group- or world-writable") {
    fs::permissions(real, fs::perms::group_write, fs::perm_options::add);
    CHECK(refusal(real) == "state directory " + real.string() + ": is group- or world-writable");
    fs::permissions(real, fs::perms::group_write, fs::perm_options::remove);
    fs::permissions(real, fs::perms::others_write | fs::perms::others_exec, fs::perm_options::add);
    CHECK(refusal(real) == "state directory " + real.string() + ": is group- or world-writable");
  }
}

TEST_CASE("prepare_state_dir refuses a directory owned by another user"
          * doctest::skip(::geteuid() != 0)
          * doctest::description("giving a directory away needs root")) {
  ScratchDir scratch;
  const fs::path real = scratch.path() / "real";
  fs::create_directory(real);
  fs::permissions(real, fs::perms::owner_all, fs::perm_options::replace);
  REQUIRE(::chown(real.c_str(), 65534, 65534) == 0);
  // The owner is named (by the user database too), and what to do.
  const std::string why = refusal(real);
  CHECK(why.rfind("state directory " + real.string() + ": owned by uid 65534", 0) == 0);
  CHECK(why.find(", not uid 0 (root); another user made it: remove it, or choose")
        != std::string::npos);
}

TEST_CASE("prepare_state_dir refuses a parent owned by another user: they could move it away"
          * doctest::skip(::geteuid() != 0)
          * doctest::description("giving a directory away needs root")) {
  ScratchDir scratch;
  const fs::path parent = scratch.path() / "theirs";
  fs::create_directory(parent);
  fs::permissions(parent,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec
                      | fs::perms::others_read | fs::perms::others_exec,
                  fs::perm_options::replace);
  REQUIRE(::chown(parent.c_str(), 65534, 65534) == 0);
  const fs::path below = parent / "state";
  CHECK(refusal(below)
        == "state directory " + below.string() + ": path component " + parent.string()
               + " is owned by uid 65534, who could move the state directory away");
  // root's own parents are trusted as ours (/, /var, /home).
  REQUIRE(::chown(parent.c_str(), 0, 0) == 0);
  CHECK(prepare_state_dir(below));
}

TEST_SUITE_END();
