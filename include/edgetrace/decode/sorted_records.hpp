// SPDX-License-Identifier: MIT
// Fixed-size records put in order with bounded memory: sorted in memory up to a limit, beyond it as sorted runs in one temporary file merged as they are read back.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <stdio.h>   // fdopen
#include <unistd.h>  // unlink, close

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// A temporary file that is gone once closed: created in $TMPDIR (else
/// /tmp) and unlinked at once. Null when none could be created.
inline std::unique_ptr<std::FILE, int (*)(std::FILE*)> temporary_file() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/edgetrace-XXXXXX";
  const int fd = ::mkstemp(&path[0]);
  std::FILE* file = nullptr;
  if (fd >= 0) {
    ::unlink(path.c_str());
    file = ::fdopen(fd, "w+b");
    if (file == nullptr) ::close(fd);
  }
  return {file, &std::fclose};
}

/// Collects records of a trivially copyable type `T` and hands them back
/// in the order `Less` gives. Records it calls equal come in no set order:
/// give `Less` a last key that tells every two apart (a number counted up
/// as they are added) where that matters. Each run is sorted in place
/// (std::sort: no buffer of the records' size again). Up to `memory_limit` bytes of records are kept and sorted
/// in memory; each time that is full, it is sorted and appended to one
/// temporary file as a run, and for_each() merges the runs with what is
/// left in memory, reading each run through a 64 KiB buffer. Memory: about
/// `memory_limit` plus 64 KiB a run; disk: sizeof(T) a record. Where no
/// temporary file can be written, the records stay in memory (correct,
/// not bounded). Records are read back by this process only: they may
/// hold pointers.
template <class T, class Less = std::less<T>>
class sorted_records {
  static_assert(std::is_trivially_copyable<T>::value, "records are written to a file as bytes");

 public:
  explicit sorted_records(Less less = Less{}, std::size_t memory_limit = std::size_t{4} << 20)
      : less_(std::move(less)), per_run_(std::max<std::size_t>(memory_limit / sizeof(T), 1024)) {}

  void add(const T& record) {
    memory_.push_back(record);
    ++size_;
    if (memory_.size() >= per_run_ && !in_memory_only_) spill();
  }

  /// Records added so far.
  std::uint64_t size() const noexcept { return size_; }
  /// Runs written to the temporary file (0 while everything fits in memory).
  std::size_t runs() const noexcept { return runs_.size(); }

  /// Calls `fn(const T&)` for every record, in order. May be called again
  /// (and records added between calls). False when the temporary file
  /// could not be read back; the records handed over until then were in
  /// order.
  template <class Fn>
  bool for_each(Fn&& fn) {
    sort_memory();
    if (runs_.empty()) {
      for (const T& r : memory_) fn(r);
      return true;
    }
    // Sources: the runs, then the records in memory.
    struct cursor {
      std::uint64_t next = 0, end = 0;  ///< records of the source still to fill
      std::vector<T> buffer;
      std::size_t at = 0;
    };
    const std::size_t sources = runs_.size() + 1;
    std::vector<cursor> cursors(sources);
    bool ok = true;
    const auto current = [&](std::size_t s) -> const T& {
      return s == runs_.size() ? memory_[cursors[s].at] : cursors[s].buffer[cursors[s].at];
    };
    // Moves source `s` on by one record; false when it has none left.
    const auto advance = [&](std::size_t s, bool first) {
      cursor& c = cursors[s];
      if (s == runs_.size()) {
        if (!first) ++c.at;
        return c.at < memory_.size();
      }
      if (!first) ++c.at;
      if (c.at < c.buffer.size()) return true;
      if (c.next == c.end) return false;
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(c.end - c.next, read_block));
      c.buffer.resize(n);
      c.at = 0;
      if (std::fseek(file_.get(), static_cast<long>(c.next * sizeof(T)), SEEK_SET) != 0 ||
          std::fread(c.buffer.data(), sizeof(T), n, file_.get()) != n) {
        ok = false;
        return false;
      }
      c.next += n;
      return true;
    };
    const auto later = [&](std::size_t a, std::size_t b) {  // priority_queue: the top is the earliest
      if (less_(current(a), current(b))) return false;
      if (less_(current(b), current(a))) return true;
      return a > b;
    };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> heads(later);
    for (std::size_t s = 0; s < sources; ++s) {
      if (s < runs_.size()) cursors[s].next = runs_[s].first, cursors[s].end = runs_[s].first + runs_[s].second;
      if (advance(s, true)) heads.push(s);
    }
    while (!heads.empty() && ok) {
      const std::size_t s = heads.top();
      heads.pop();
      fn(current(s));
      if (advance(s, false)) heads.push(s);
    }
    return ok;
  }

 private:
  static constexpr std::size_t read_block = (std::size_t{64} << 10) / sizeof(T) + 1;

  void sort_memory() { std::sort(memory_.begin(), memory_.end(), less_); }

  /// Appends the records in memory, sorted, as one more run. When the
  /// file cannot be written, they stay in memory from then on.
  void spill() {
    if (!file_) file_ = temporary_file();
    sort_memory();
    if (!file_ || std::fseek(file_.get(), static_cast<long>(written_ * sizeof(T)), SEEK_SET) != 0 ||
        std::fwrite(memory_.data(), sizeof(T), memory_.size(), file_.get()) != memory_.size() ||
        std::fflush(file_.get()) != 0) {
      in_memory_only_ = true;
      return;
    }
    runs_.emplace_back(written_, memory_.size());
    written_ += memory_.size();
    memory_.clear();
  }

  Less less_;
  std::size_t per_run_;
  std::vector<T> memory_;
  std::uint64_t size_ = 0, written_ = 0;
  bool in_memory_only_ = false;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs_;  ///< (first record, count)
};

/// Records of a trivially copyable type written in order and read back in
/// the same order, through a temporary file: memory stays one stdio
/// buffer. Where no temporary file can be written, they stay in memory.
/// Each record carries a variable number of trailing items.
template <class T, class Item>
class spilled_sequence {
  static_assert(std::is_trivially_copyable<T>::value && std::is_trivially_copyable<Item>::value,
                "records are written to a file as bytes");

 public:
  /// Appends `record` with `count` trailing `items`.
  void add(const T& record, const Item* items, std::uint32_t count) {
    if (!opened_) {
      opened_ = true;
      file_ = temporary_file();
    }
    ++size_;
    if (file_ && std::fwrite(&record, sizeof record, 1, file_.get()) == 1 &&
        std::fwrite(&count, sizeof count, 1, file_.get()) == 1 &&
        (count == 0 || std::fwrite(items, sizeof(Item), count, file_.get()) == count))
      return;
    if (file_) {  // failed part-way: what the file holds is not usable
      failed_ = size_ > 1;
      file_.reset();
    }
    memory_.push_back({record, std::vector<Item>(items, items + count)});
  }

  std::uint64_t size() const noexcept { return size_; }

  /// Goes back to the first record. False when the file cannot be read.
  bool rewind() {
    read_ = 0;
    return !failed_ && (!file_ || (std::fflush(file_.get()) == 0 && std::fseek(file_.get(), 0, SEEK_SET) == 0));
  }
  /// The next record and its items; false at the end or on a read error
  /// (then failed() is true).
  bool next(T& record, std::vector<Item>& items) {
    if (failed_ || read_ == size_) return false;
    const std::uint64_t in_file = size_ - memory_.size();
    if (read_ >= in_file) {
      record = memory_[read_ - in_file].first;
      items = memory_[read_ - in_file].second;
      ++read_;
      return true;
    }
    std::uint32_t count = 0;
    if (std::fread(&record, sizeof record, 1, file_.get()) != 1 || std::fread(&count, sizeof count, 1, file_.get()) != 1)
      return failed_ = true, false;
    items.resize(count);
    if (count != 0 && std::fread(items.data(), sizeof(Item), count, file_.get()) != count) return failed_ = true, false;
    ++read_;
    return true;
  }
  bool failed() const noexcept { return failed_; }

 private:
  bool opened_ = false, failed_ = false;
  std::uint64_t size_ = 0, read_ = 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
  std::vector<std::pair<T, std::vector<Item>>> memory_;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
