// The systemd user scope does not exist on Windows: the job boundary needs
// no manager's help (src/user_scope.hpp).
#include "user_scope.hpp"

namespace treeguard {

ScopeEntry take_scope_entry() {
  return ScopeEntry{};
}

Result<std::string> user_scope_offer() {
  return fail(plain_error("Windows has no systemd user manager"));
}

Error reexec_in_user_scope(const std::string&) {
  return plain_error("Windows has no systemd user manager");
}

}  // namespace treeguard
