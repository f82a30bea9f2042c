// SPDX-License-Identifier: MIT
// The doctest main shared by every test executable: a run whose every selected case is skipped exits 77.
//
// ctest knows only exit codes: doctest::skip(condition) alone would make a
// test that cannot run here (no chromium, examples not built, a sanitizer
// build) count as passed. Every doctest entry has SKIP_RETURN_CODE 77
// (tests/CMakeLists.txt), so a run that skipped everything it selected and
// ran nothing shows as "Skipped" in ctest; a run that skipped some cases
// and ran others passes, and doctest's own summary counts the skipped ones.
// A case that finds at run time that it cannot prove its point here (a
// timing case on a busy machine) calls edgetrace_test::skip_at_run_time():
// it counts as skipped the same way.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <functional>
#include <string>

namespace {

/// Cases started, cases left out by their doctest::skip decorator, and
/// cases that skipped themselves at run time.
struct skip_counts {
  unsigned started = 0;
  unsigned skipped_by_decorator = 0;
  unsigned skipped_at_run_time = 0;
};
skip_counts counts;

/// Counts what ran and what a doctest::skip(true) left out; reports nothing.
struct skip_listener : doctest::IReporter {
  explicit skip_listener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++counts.started; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData& data) override {
    if (data.m_skip) ++counts.skipped_by_decorator;
  }
};

}  // namespace

REGISTER_LISTENER("edgetrace_skip_counts", 1, skip_listener);

namespace edgetrace_test {
void skip_at_run_time(const char* why) {
  ++counts.skipped_at_run_time;
  MESSAGE("skipped: " << std::string(why));  // doctest prints a char* as its address
}

bool judged_in_two_runs(const std::function<std::string(int run_number)>& attempt) {
  const std::string first = attempt(1);
  if (first.empty()) return true;
  MESSAGE(first << ": running it once more");
  const std::string second = attempt(2);
  if (second.empty()) return true;
  skip_at_run_time((second + ", in the second run too: not judged").c_str());
  return false;
}
}  // namespace edgetrace_test

/// The exit code ctest reads as "skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt).
constexpr int skipped_exit_code = 77;

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  const unsigned ran = counts.started - counts.skipped_at_run_time;
  if (ran == 0 && counts.skipped_by_decorator + counts.skipped_at_run_time > 0) return skipped_exit_code;
  return result;
}
