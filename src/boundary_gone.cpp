// The error of a boundary whose own object disappeared under the run: one
// category of its own, so that no errno a boundary meets on the way (ENODEV
// from a read, say) is ever taken for it by accident.
#include "port/boundary.hpp"

namespace treeguard {

namespace {

class GoneCategory final : public std::error_category {
public:
  const char* name() const noexcept override { return "treeguard boundary"; }
  std::string message(int) const override { return "the boundary is gone"; }
};

const GoneCategory& gone_category() {
  static const GoneCategory category;
  return category;
}

}  // namespace

Error boundary_gone(std::string why) {
  return Error{std::error_code(1, gone_category()), std::move(why)};
}

bool is_boundary_gone(const Error& error) {
  return error.code.category() == gone_category();
}

}  // namespace treeguard
