// The systemd user scope does not exist on Windows: the job boundary needs
// no manager's help (src/port/user_scope.hpp).
#include "port/user_scope.hpp"

namespace treeguard {

ScopeEntry take_scope_entry() {
  return ScopeEntry{};
}

Result<std::string> scope_offer(const std::string&) {
  return fail(plain_error("Windows has no systemd manager"));
}

Error reexec_in_scope(const std::string&, const std::string&) {
  return plain_error("Windows has no systemd manager");
}

}  // namespace treeguard
