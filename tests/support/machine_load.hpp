// SPDX-License-Identifier: MIT
// How busy the machine was during a run: for the tests that bound a time
// the machine, not the code, can stretch (docs/TESTING.md, "Timing on a
// busy machine"). Such a test repeats once a run that missed its bound,
// and skips, saying so, when the repeat missed it too on a busy machine.
#pragma once

#include <support/files.hpp>

#include <sstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace edgetrace_test {

/// CPU time, in seconds, that ran on this machine but in neither this
/// process nor its reaped children: /proc/stat's busy time less our own.
/// Take one reading before the run and one after its children were reaped:
/// outside_load::now().since(before).
struct outside_load {
  double busy = 0, ours = 0;
  static outside_load now() {
    outside_load l;
    const std::string stat = read_file("/proc/stat");
    std::istringstream in(stat.substr(0, stat.find('\n')));
    std::string cpu;
    in >> cpu;
    double v[8] = {};
    for (double& x : v) in >> x;
    l.busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / static_cast<double>(::sysconf(_SC_CLK_TCK));
    for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
      rusage u{};
      ::getrusage(who, &u);
      l.ours += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
    }
    return l;
  }
  double since(const outside_load& before) const { return (busy - before.busy) - (ours - before.ours); }
};

}  // namespace edgetrace_test
