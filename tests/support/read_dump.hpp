// SPDX-License-Identifier: MIT
// Test helper: reads a whole dump through the real reader into plain structs
// that tests can search and compare.
#pragma once

#include <doctest/doctest.h>

#include <support/process.hpp>
#include <support/test_env.hpp>

#include <edgetrace/decode/annotations.hpp>
#include <edgetrace/decode/dump_reader.hpp>
#include <edgetrace/decode/span_walker.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace edgetrace_test {

/// Every annotation of an opened dump (after read_metadata), resolved, in
/// file order: arguments and flow steps are not kept by the reader.
inline std::vector<edgetrace::reader::annotation> all_annotations(const edgetrace::reader::dump_reader& r) {
  std::vector<edgetrace::reader::annotation> out;
  r.for_each_annotation([&out](const edgetrace::reader::annotation& a) { out.push_back(a); });
  return out;
}

struct loaded_event {
  edgetrace::reader::event_kind kind;
  edgetrace::format::site_kind site_kind = edgetrace::format::site_kind::span;
  std::string name;
  std::string category;
  std::string thread_name;
  std::uint64_t os_tid = 0;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
  double value = 0;
  std::uint64_t count = 0;
};

struct loaded_dump {
  bool opened = false;
  std::string error;
  bool complete = false;
  bool damaged = false;
  std::vector<loaded_event> events;
  std::vector<edgetrace::reader::thread_info> threads;
  std::vector<std::string> diagnostics;

  std::vector<loaded_event> named(const std::string& name) const {
    std::vector<loaded_event> out;
    for (const auto& e : events)
      if (e.name == name) out.push_back(e);
    return out;
  }
  const edgetrace::reader::thread_info* thread_named(const std::string& name) const {
    for (const auto& t : threads)
      if (t.name == name) return &t;
    return nullptr;
  }
};

/// Opens `path` and reads its metadata (REQUIRE it; r.error() says why not).
inline bool opened(edgetrace::reader::dump_reader& r, const std::string& path) {
  return r.open(path) && r.read_metadata();
}

/// The first diagnostic of `r` whose message contains `text`, or null.
inline const edgetrace::reader::diagnostic* find_diagnostic(const edgetrace::reader::dump_reader& r,
                                                          const std::string& text) {
  for (const auto& d : r.diagnostics())
    if (d.message.find(text) != std::string::npos) return &d;
  return nullptr;
}

/// Every diagnostic message of `r`, one a line.
inline std::string all_diagnostics(const edgetrace::reader::dump_reader& r) {
  std::string s;
  for (const auto& d : r.diagnostics()) s += d.message + "\n";
  return s;
}

/// How many writers (processes, library copies) a dump holds; 0 if it
/// cannot be read.
inline std::size_t writer_count(const std::string& path) {
  edgetrace::reader::dump_reader reader;
  if (!reader.open(path) || !reader.read_metadata()) return 0;
  return reader.writers().size();
}

/// The records the dump's threads lost, as the reader counts them after
/// reading every event; 0 if it cannot be read.
inline std::uint64_t dropped_records(const std::string& path) {
  edgetrace::reader::dump_reader reader;
  if (!reader.open(path) || !reader.read_events([](const edgetrace::reader::event&) {})) return 0;
  std::uint64_t dropped = 0;
  for (const auto* t : reader.threads_in_order()) dropped += t->dropped();
  return dropped;
}

inline loaded_dump load_dump(const std::string& path) {
  loaded_dump dump;
  edgetrace::reader::dump_reader reader;
  if (!reader.open(path)) {
    dump.error = reader.error();
    return dump;
  }
  dump.opened = true;
  const bool read = reader.read_events([&](const edgetrace::reader::event& e) {
    loaded_event out;
    out.kind = e.kind;
    if (e.site != nullptr) {
      out.name = e.site->name;
      out.category = e.site->category;
      out.site_kind = e.site->kind;
    }
    out.thread_name = e.thread->name;
    out.os_tid = e.thread->os_tid;
    out.begin_ns = e.begin_ns;
    out.end_ns = e.end_ns;
    out.value = e.value;
    out.count = e.count;
    dump.events.push_back(out);
  });
  if (!read) dump.error = reader.error();  // e.g. a tick rate it cannot know
  dump.complete = reader.complete();
  dump.damaged = reader.damaged();
  for (const auto* t : reader.threads_in_order()) dump.threads.push_back(*t);
  for (const auto& d : reader.diagnostics()) dump.diagnostics.push_back(d.message);
  return dump;
}

/// `trace_app stress 0.2 2` with 4 KiB rings and EDGETRACE_ON_FULL=drop,
/// traced to tmp/NAME (its path left in `path`): a real run that lost
/// records. Returns how many the dump counts (required to be some).
inline std::uint64_t lossy_stress_run(const std::string& name, std::string& path) {
  path = fresh(name);
  const process_result r =
      run({app, "stress", "0.2", "2"}, {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_BUFFER_KB=4", "EDGETRACE_ON_FULL=drop"});
  REQUIRE(r.exit_code == 0);
  const std::uint64_t dropped = dropped_records(path);
  REQUIRE(dropped > 0);
  return dropped;
}

/// The dump at `path`, which must be whole: opened (required), complete
/// and undamaged (checked in the calling test case).
inline loaded_dump whole_dump(const std::string& path) {
  loaded_dump dump = load_dump(path);
  CAPTURE(path);
  REQUIRE(dump.opened);
  CHECK(dump.complete);
  CHECK_FALSE(dump.damaged);
  return dump;
}

/// How many events of each name a dump must hold (0: none).
using name_counts = std::vector<std::pair<std::string, std::size_t>>;

/// `trace_app MODE` with EDGETRACE_FORK=follow and EDGETRACE_OUTPUT=tmp/NAME.etr,
/// whose child prints "child=PID ... status=S": both exit 0, the parent's
/// dump and the child's own (tmp/NAME.PID.etr, removed once loaded) are
/// complete and hold the events named, as many as given. Returns the
/// child's dump.
inline loaded_dump check_followed_fork(const std::string& mode, const std::string& name, const name_counts& parent,
                                       const name_counts& child) {
  const std::string path = fresh(name + ".etr");
  const process_result r = run({app, mode}, {"EDGETRACE_OUTPUT=" + path, "EDGETRACE_FORK=follow"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  REQUIRE(r.out.rfind("child=", 0) == 0);
  CHECK(r.out.find("status=0") != std::string::npos);
  const std::string child_path = tmp + "/" + name + "." + r.out.substr(6, r.out.find(' ') - 6) + ".etr";
  const loaded_dump dumps[2] = {load_dump(path), load_dump(child_path)};
  ::unlink(child_path.c_str());
  for (int i = 0; i < 2; ++i) {
    CAPTURE(i == 0 ? "parent" : "child");
    REQUIRE(dumps[i].opened);
    CHECK(dumps[i].complete);
    for (const auto& expected : i == 0 ? parent : child)
      CHECK_MESSAGE(dumps[i].named(expected.first).size() == expected.second, expected.first);
  }
  return dumps[1];
}

/// A span as walk_spans placed it, with the arguments it claimed.
struct walked_span {
  std::string name, category, thread;
  std::int64_t begin_ns = 0, end_ns = 0;
  std::uint64_t self_ns = 0;
  std::uint32_t depth = 0;
  std::map<std::string, std::string> args;  ///< key -> value text (the last of a key)

  /// The argument's text, or "" when the span has none of that key.
  std::string arg(const std::string& key) const {
    const auto it = args.find(key);
    return it == args.end() ? std::string() : it->second;
  }
};

/// Every span of the dump at `path` as walk_spans gives them (per thread,
/// latest end first), with their arguments; REQUIREs that it reads, and
/// CHECKs that every argument found its span.
inline std::vector<walked_span> walked_spans(const std::string& path) {
  namespace er = edgetrace::reader;
  er::dump_reader r;
  REQUIRE(opened(r, path));
  er::span_annotations notes(r, er::span_order::walk_spans);
  std::vector<const er::annotation*> args;
  std::vector<walked_span> rows;
  REQUIRE(er::walk_spans(
      r,
      [&](const er::span_record& s) {
        walked_span row;
        row.name = s.site->name;
        row.category = s.site->category;
        row.thread = s.thread->name;
        row.begin_ns = s.begin_ns;
        row.end_ns = s.end_ns;
        row.self_ns = s.self_ns;
        row.depth = s.depth;
        notes.collect(s.thread, s.site, s.begin_ns, s.end_ns, &args, nullptr, s.depth == 0);
        for (const er::annotation* a : args) row.args[a->name()] = a->value_text();
        rows.push_back(row);
      },
      [](const er::event&) {}));
  CHECK(notes.unclaimed() == 0);
  return rows;
}

}  // namespace edgetrace_test
