// SPDX-License-Identifier: MIT
// Test helper: reads a whole dump through the real reader into plain structs
// that tests can search and compare.
#pragma once

#include <edgetrace/decode/dump_reader.hpp>

#include <cstdint>
#include <string>
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

/// How many writers (processes, library copies) a dump holds; 0 if it
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

/// cannot be read.
inline std::size_t writer_count(const std::string& path) {
  edgetrace::reader::dump_reader reader;
  if (!reader.open(path) || !reader.read_metadata()) return 0;
  return reader.writers().size();
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

}  // namespace edgetrace_test
