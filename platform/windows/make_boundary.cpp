#include "boundary.hpp"
#include "windows/job_boundary.hpp"

namespace treeguard {

Result<std::unique_ptr<Boundary>> make_boundary(const BoundaryOptions& options) {
  if (options.requested != BoundaryRequest::automatic
      && options.requested != BoundaryRequest::job) {
    return fail(plain_error("--boundary " + std::string(boundary_request_name(options.requested))
                            + ": not available on Windows (only job)"));
  }
  if (options.limits.any()) {
    // Never silently unenforced: the job boundary sets no limits yet.
    return fail(
        plain_error(limit_names(options.limits)
                    + " cannot be enforced by the job boundary (not built on Windows yet)"));
  }
  auto job = platform::JobObjectBoundary::create(options.run_id);
  if (!job) {
    return fail(job.error());
  }
  return std::unique_ptr<Boundary>(std::move(*job));
}

}  // namespace treeguard
