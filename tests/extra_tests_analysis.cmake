# SPDX-License-Identifier: MIT
# Analysis tests beyond the doctest glob: the headless-Chromium rendering of
# `edgetrace report` as its own entry with the `browser` label (it also runs,
# or skips without /usr/bin/chromium, inside report_test).
if(TEST report_test)
  add_test(NAME report_browser COMMAND ${report_test_command} "--test-case=report renders in headless chromium")
  set_tests_properties(report_browser PROPERTIES LABELS "sinks;browser")
endif()
