#include "state_dir.hpp"

#include "printable.hpp"

#include <cstdlib>
#include <system_error>

namespace treeguard {

namespace {

std::optional<std::string> non_empty(const EnvironmentLookup& environment, const char* name) {
  auto value = environment(name);
  if (!value || value->empty()) {
    return std::nullopt;
  }
  return value;
}

// An explicit state directory as an absolute, normal path. The root of a
// file system is refused: the records would lie among the system's own
// files, and a sweep's view of "the state directory" would be all of it.
Result<std::filesystem::path> made_absolute(const std::string& text, const char* origin) {
  std::error_code error;
  auto path = std::filesystem::absolute(std::filesystem::path(text), error);
  if (error) {
    return fail(Error{error, std::string("state directory ") + text + " (from " + origin + ")"});
  }
  path = path.lexically_normal();
  if (path.relative_path().empty()) {
    return fail(plain_error(std::string("state directory ") + path.string() + " (from " + origin
                            + "): the root directory cannot be a state directory; name a "
                              "directory of its own, such as "
                            + (path / "treeguard-state").string()));
  }
  return path;
}

// "--state-dir --json": the value is missing and the next option was taken
// for it. A directory whose name starts with '-' is still reachable as
// ./-name, which says it is meant.
Result<void> not_an_option(const std::string& text) {
  if (text.front() != '-') {
    return {};
  }
  return fail(plain_error("--state-dir: '" + escaped(text)
                          + "' looks like an option, not a directory (is the value missing?); "
                            "to use a directory of that name, write ./"
                          + escaped(text)));
}

}  // namespace

Result<std::vector<StateDirChoice>> state_dir_candidates(const std::optional<std::string>& cli,
                                                         const EnvironmentLookup& environment,
                                                         const std::string& user_id,
                                                         const FallbackLookup& fallbacks) {
  if (cli) {
    if (cli->empty()) {
      return fail(plain_error("--state-dir: must not be empty"));
    }
    if (auto checked = not_an_option(*cli); !checked) {
      return fail(checked.error());
    }
    auto path = made_absolute(*cli, "--state-dir");
    if (!path) {
      return fail(path.error());
    }
    return std::vector<StateDirChoice>{{*path, "--state-dir"}};
  }
  if (auto value = non_empty(environment, "TREEGUARD_STATE_DIR")) {
    auto path = made_absolute(*value, "TREEGUARD_STATE_DIR");
    if (!path) {
      return fail(path.error());
    }
    return std::vector<StateDirChoice>{{*path, "TREEGUARD_STATE_DIR"}};
  }
  std::vector<StateDirChoice> out;
  auto absolute_base = [&](const char* name) -> std::optional<std::filesystem::path> {
    auto value = non_empty(environment, name);
    if (!value || !std::filesystem::path(*value).is_absolute()) {
      return std::nullopt;
    }
    return std::filesystem::path(*value);
  };
  if (auto base = platform_state_dir(environment)) {
    out.push_back({*base, "LOCALAPPDATA"});
  }
  if (auto base = absolute_base("XDG_STATE_HOME")) {
    out.push_back({(*base / "treeguard").lexically_normal(), "XDG_STATE_HOME"});
  }
  if (auto base = absolute_base("HOME")) {
    out.push_back({(*base / ".local" / "state" / "treeguard").lexically_normal(), "HOME"});
  }
  if (auto base = absolute_base("XDG_RUNTIME_DIR")) {
    out.push_back({(*base / "treeguard").lexically_normal(), "XDG_RUNTIME_DIR"});
  }
  for (auto& choice : fallbacks(environment)) {
    out.push_back(std::move(choice));
  }
  out.push_back({std::filesystem::path("/tmp") / ("treeguard-" + user_id), "/tmp"});
  return out;
}

Result<std::filesystem::path> resolve_state_dir(const std::optional<std::string>& cli,
                                                const EnvironmentLookup& environment) {
  auto candidates = state_dir_candidates(cli, environment);
  if (!candidates) {
    return fail(candidates.error());
  }
  return candidates->front().path;
}

Result<StateDirChoice> open_state_dir(const std::optional<std::string>& cli,
                                      const EnvironmentLookup& environment,
                                      const std::string& user_id, const FallbackLookup& fallbacks) {
  auto candidates = state_dir_candidates(cli, environment, user_id, fallbacks);
  if (!candidates) {
    return fail(candidates.error());
  }
  std::optional<Error> last_error;
  for (const auto& candidate : *candidates) {
    auto prepared = prepare_state_dir(candidate.path);
    if (prepared) {
      return candidate;
    }
    last_error = prepared.error();
    // A refusal (no errno: foreign, writable by others, a symlink) is final;
    // only a default place that cannot be made gives way to the next.
    const bool explicit_choice =
        candidate.source == "--state-dir" || candidate.source == "TREEGUARD_STATE_DIR";
    if (explicit_choice || !prepared.error().code) {
      return fail(prepared.error());
    }
  }
  return fail(*last_error);
}

}  // namespace treeguard
