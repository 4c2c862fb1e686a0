#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <ostream>

namespace {

// A case that cannot run on this host is skipped by its decorators,
// doctest::skip(CONDITION) with doctest::description(WHY): doctest counts it
// "skipped", never "passed", and this listener prints why ("SKIP case: why"),
// as every skipped test of the suite names its reason.
class SkipReasons final : public doctest::IReporter {
public:
  explicit SkipReasons(const doctest::ContextOptions& options) : m_out(*options.cout) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData& data) override {
    if (data.m_skip) {
      m_out << "SKIP " << data.m_name << ": "
            << (data.m_description != nullptr && *data.m_description != '\0' ? data.m_description
                                                                             : "(no reason given)")
            << "\n";
    }
  }

private:
  std::ostream& m_out;
};

REGISTER_LISTENER("skip_reasons", 1, SkipReasons);

}  // namespace
