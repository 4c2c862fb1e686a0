#include "state_dir.hpp"

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

Result<std::filesystem::path> made_absolute(const std::string& text, const char* origin) {
  std::error_code error;
  auto path = std::filesystem::absolute(std::filesystem::path(text), error);
  if (error) {
    return fail(Error{error, std::string("state directory ") + text + " (from " + origin + ")"});
  }
  return path.lexically_normal();
}

}  // namespace

std::optional<std::string> process_environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

Result<std::filesystem::path> resolve_state_dir(const std::optional<std::string>& cli,
                                                const EnvironmentLookup& environment) {
  if (cli) {
    if (cli->empty()) {
      return fail(plain_error("--state-dir: must not be empty"));
    }
    return made_absolute(*cli, "--state-dir");
  }
  if (auto value = non_empty(environment, "TREEGUARD_STATE_DIR")) {
    return made_absolute(*value, "TREEGUARD_STATE_DIR");
  }
  if (auto value = non_empty(environment, "XDG_STATE_HOME")) {
    const std::filesystem::path base(*value);
    if (base.is_absolute()) {
      return (base / "treeguard").lexically_normal();
    }
  }
  if (auto value = non_empty(environment, "HOME")) {
    const std::filesystem::path base(*value);
    if (base.is_absolute()) {
      return (base / ".local" / "state" / "treeguard").lexically_normal();
    }
  }
  return fail(plain_error("no state directory: give --state-dir, or set TREEGUARD_STATE_DIR, "
                          "XDG_STATE_HOME or HOME"));
}

}  // namespace treeguard
