// make_boundary() for Linux: a cgroup v2 leaf when the hierarchy is
// writable here, else a process group with a subreaper. A user+PID
// namespace only when asked for: programs see other pids in it.
#include "boundary.hpp"
#include "linux/cgroup_boundary.hpp"
#include "linux/cgroup_fs.hpp"
#include "linux/pid_namespace_boundary.hpp"
#include "linux/process_group_boundary.hpp"

#include <fmt/format.h>

namespace treeguard {

namespace {

Result<std::unique_ptr<Boundary>> make_cgroup(const BoundaryOptions& options) {
  auto parent = options.cgroup_parent.empty()
                    ? platform::own_cgroup_dir()
                    : platform::resolve_cgroup_parent(options.cgroup_parent);
  if (!parent) {
    return fail(parent.error());
  }
  auto boundary = platform::CgroupBoundary::create(*parent, options.run_id, options.limits);
  if (!boundary) {
    return fail(boundary.error());
  }
  return std::unique_ptr<Boundary>(std::move(*boundary));
}

// A limit is enforced or the run does not start: only a leaf with the
// controller can hold one, so neither "cgroup" nor "auto" falls back.
Result<std::unique_ptr<Boundary>> make_limited(const BoundaryOptions& options) {
  const std::string names = limit_names(options.limits);
  if (options.requested == BoundaryRequest::process_group) {
    return fail(plain_error(fmt::format(
        "{} cannot be enforced by the process-group boundary (it needs a cgroup v2 leaf with "
        "the {} controller)",
        names, options.limits.memory_max ? "memory" : "pids")));
  }
  if (options.requested != BoundaryRequest::cgroup
      && options.requested != BoundaryRequest::automatic) {
    return fail(plain_error(
        fmt::format("unknown boundary '{}'", boundary_request_name(options.requested))));
  }
  auto boundary = make_cgroup(options);
  if (!boundary) {
    return fail(
        plain_error(fmt::format("{} cannot be enforced: {}", names, boundary.error().message())));
  }
  return boundary;
}

}  // namespace

Result<std::unique_ptr<Boundary>> make_boundary(const BoundaryOptions& options) {
  if (options.limits.any() && options.requested != BoundaryRequest::job) {
    return make_limited(options);
  }
  if (options.requested == BoundaryRequest::cgroup) {
    auto boundary = make_cgroup(options);
    if (!boundary) {
      return fail(
          Error{boundary.error().code, "cgroup boundary unavailable: " + boundary.error().context});
    }
    return boundary;
  }
  if (options.requested == BoundaryRequest::process_group) {
    return std::unique_ptr<Boundary>(new platform::ProcessGroupBoundary());
  }
  if (options.requested == BoundaryRequest::pid_namespace) {
    // Whether the namespaces can be made is found at spawn: clone3 fails,
    // nothing runs, exit 125.
    return std::unique_ptr<Boundary>(new platform::PidNamespaceBoundary());
  }
  if (options.requested == BoundaryRequest::automatic) {
    auto boundary = make_cgroup(options);
    if (boundary) {
      return boundary;
    }
    if (!options.cgroup_parent.empty()) {
      // The user named a parent: falling back would hide their mistake.
      return fail(
          Error{boundary.error().code, "cgroup boundary unavailable: " + boundary.error().context});
    }
    if (options.why_not_stronger != nullptr) {
      *options.why_not_stronger = boundary.error().message();
    }
    return std::unique_ptr<Boundary>(new platform::ProcessGroupBoundary());
  }
  if (options.requested == BoundaryRequest::job) {
    return fail(plain_error("the job boundary exists on Windows only"));
  }
  return fail(
      plain_error(fmt::format("unknown boundary '{}'", boundary_request_name(options.requested))));
}

}  // namespace treeguard
