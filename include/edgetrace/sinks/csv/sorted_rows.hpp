// SPDX-License-Identifier: MIT
// Text rows put in key order with bounded memory: sorted in memory up to a limit, beyond it as sorted runs in temporary files merged at the end. The CSV output's, beside it.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE
#include <edgetrace/decode/sorted_records.hpp>  // temporary_file

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// The order of `edgetrace csv` rows: begin time, then thread (pid, tid),
/// then depth (a parent before a child that begins at the same tick).
struct row_key {
  std::int64_t begin_ns = 0;
  std::uint64_t pid = 0, tid = 0, depth = 0;
  bool operator<(const row_key& o) const noexcept {
    return std::tie(begin_ns, pid, tid, depth) < std::tie(o.begin_ns, o.pid, o.tid, o.depth);
  }
};

/// Collects rows (a key and a line of text) and hands them back in key
/// order; rows with equal keys keep the order they were added in. Up to
/// `memory_limit` bytes (text plus 48 bytes a row) are sorted in memory;
/// past that, each full buffer is sorted and written to a temporary file
/// (temporary_file(): in $TMPDIR, else /tmp) and finish() merges the files: memory stays about
/// `memory_limit` plus one stdio buffer per file, the files hold about the
/// text's size on disk.
class sorted_rows {
 public:
  explicit sorted_rows(std::size_t memory_limit) : memory_limit_(memory_limit) {}

  /// Adds a row. False when a temporary file could not be written.
  bool add(const row_key& key, std::string_view line) {
    entries_.push_back(entry{key, text_.size(), line.size()});
    text_.append(line);
    if (text_.size() + entries_.size() * per_row_bytes < memory_limit_) return true;
    return spill();
  }

  /// Calls `out(std::string_view line)` for every row in key order. False
  /// when a temporary file could not be read or written.
  template <class Out>
  bool finish(Out&& out) {
    sort_buffer();
    if (runs_.empty()) {
      for (const entry& e : entries_) out(std::string_view(text_).substr(e.at, e.size));
      return true;
    }
    if (!spill()) return false;
    struct head {
      row_key key;
      std::size_t run;
      bool operator>(const head& o) const noexcept {
        if (key < o.key) return false;
        if (o.key < key) return true;
        return run > o.run;  // earlier runs hold earlier rows
      }
    };
    std::vector<std::string> lines(runs_.size());
    std::priority_queue<head, std::vector<head>, std::greater<head>> heads;
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      std::rewind(runs_[i].get());
      row_key key;
      if (read_row(runs_[i].get(), key, lines[i])) heads.push(head{key, i});
    }
    while (!heads.empty()) {
      const head h = heads.top();
      heads.pop();
      out(std::string_view(lines[h.run]));
      row_key key;
      if (read_row(runs_[h.run].get(), key, lines[h.run])) heads.push(head{key, h.run});
    }
    for (const auto& run : runs_)
      if (std::ferror(run.get())) return false;
    return true;
  }

  /// Temporary files written so far (0 when everything fit in memory).
  std::size_t runs() const noexcept { return runs_.size(); }

 private:
  struct entry {
    row_key key;
    std::size_t at;
    std::size_t size;
  };
  static constexpr std::size_t per_row_bytes = sizeof(entry) + 8;

  /// Equal keys in the order added: by where the text lies, which grows
  /// with each row (std::sort in place; a stable sort would take half
  /// the entries' size again).
  void sort_buffer() {
    std::sort(entries_.begin(), entries_.end(), [](const entry& a, const entry& b) {
      if (a.key < b.key) return true;
      if (b.key < a.key) return false;
      return a.at < b.at;
    });
  }

  /// Writes the buffer, sorted, as one more run.
  bool spill() {
    if (entries_.empty()) return true;
    sort_buffer();
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file = temporary_file();
    if (!file) return false;
    for (const entry& e : entries_) {
      const std::uint64_t size = e.size;
      if (std::fwrite(&e.key, sizeof e.key, 1, file.get()) != 1 || std::fwrite(&size, sizeof size, 1, file.get()) != 1 ||
          std::fwrite(text_.data() + e.at, 1, e.size, file.get()) != e.size)
        return false;
    }
    if (std::fflush(file.get()) != 0) return false;
    runs_.push_back(std::move(file));
    entries_.clear();
    text_.clear();
    return true;
  }

  /// The next row of a run (written by spill() in this process).
  static bool read_row(std::FILE* file, row_key& key, std::string& line) {
    std::uint64_t size;
    if (std::fread(&key, sizeof key, 1, file) != 1 || std::fread(&size, sizeof size, 1, file) != 1) return false;
    line.resize(size);
    return std::fread(&line[0], 1, size, file) == size;
  }

  std::size_t memory_limit_;
  std::vector<entry> entries_;
  std::string text_;
  std::vector<std::unique_ptr<std::FILE, int (*)(std::FILE*)>> runs_;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
