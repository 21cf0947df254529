// The test programs' main. CTest runs one test case at a time by its name
// (--test-case=NAME). A name that matches nothing would run nothing and pass: CMake cuts
// a test's name at each ';' when it lists the tests, and a mistyped filter looks the
// same. So a run whose filters match no test case fails, and says why.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

bool g_matched_nothing = false;

struct MatchedNothing : doctest::IReporter {
  explicit MatchedNothing(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    g_matched_nothing = stats.numTestCasesPassingFilters == 0;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("matched_nothing", 1, MatchedNothing);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;  // --help, --list-test-cases and the like
  if (g_matched_nothing) {
    std::fprintf(stderr,
                 "no test case matches the filters given (a name with ';' in it, which CTest cuts?)\n");
    return 1;
  }
  return result;
}
