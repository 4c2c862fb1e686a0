// The Windows boundary plan: one candidate, the job object.
#include "port/boundary.hpp"
#include "windows/job_boundary.hpp"

namespace treeguard {

BoundaryPlan plan_boundary(const BoundaryOptions& options) {
  BoundaryPlan plan;
  plan.request = options.requested;
  plan.none_works = options.limits.any() ? limit_names(options.limits) + " cannot be enforced"
                                         : std::string(boundary_request_name(options.requested))
                                               + " boundary unavailable";
  BoundaryCandidate job{"job object", BoundaryKind::job,
                        "job object treeguard-" + options.run_id + " (kill-on-close, no breakaway)",
                        "", nullptr};
  if (options.requested != BoundaryRequest::automatic
      && options.requested != BoundaryRequest::job) {
    job.name = std::string(boundary_request_name(options.requested));
    job.refused = "not available on Windows (only job)";
  } else if (options.limits.any()) {
    // Never silently unenforced: the job boundary sets no limits yet.
    job.refused = "the job boundary sets no limits (not built on Windows yet)";
  } else {
    job.make = [run_id = options.run_id](const PlanLog&) -> Result<std::unique_ptr<Boundary>> {
      auto made = platform::JobObjectBoundary::create(run_id);
      if (!made) {
        return fail(made.error());
      }
      return std::unique_ptr<Boundary>(std::move(*made));
    };
  }
  plan.candidates.push_back(std::move(job));
  return plan;
}

}  // namespace treeguard
