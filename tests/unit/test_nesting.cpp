// Which runs enclose a nested one (nesting.hpp): only a live run does.
#include "nesting.hpp"
#include "record.hpp"

#include <doctest/doctest.h>

using namespace treeguard;

namespace {

RunRecord running() {
  RunRecord record;
  record.run_id = "20240101T000000-1-0000";
  record.disposition = Disposition::pending;
  return record;
}

}  // namespace

TEST_CASE("a run that is over is never an enclosing run: finished, failed, resolved") {
  SUBCASE("running (pending, not resolved): live") {
    CHECK_FALSE(run_is_over(running()));
  }
  SUBCASE("finished (pass)") {
    RunRecord record = running();
    record.disposition = Disposition::pass;
    CHECK(run_is_over(record));
  }
  SUBCASE("failed") {
    RunRecord record = running();
    record.disposition = Disposition::failed;
    CHECK(run_is_over(record));
  }
  SUBCASE("ambiguous") {
    RunRecord record = running();
    record.disposition = Disposition::ambiguous;
    CHECK(run_is_over(record));
  }
  SUBCASE("resolved: treeguard resolve leaves the disposition pending") {
    RunRecord record = running();
    record.resolution = Resolution{"checked by hand", 1, "uid 0"};
    CHECK(record.disposition == Disposition::pending);
    CHECK(run_is_over(record));
  }
}
