// SPDX-License-Identifier: MIT
// A value per thread for passes that meet one thread's records in runs: the last thread's entry is kept at hand.
#pragma once

#include <unordered_map>

#include <edgetrace/decode/model.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {
namespace detail {

/// One T per thread, created on first use. Records of one thread come in
/// runs (a chunk holds one thread's), so the entry last asked for is
/// remembered and a run costs one map lookup. References stay valid (the
/// map is node-based).
template <class T>
class by_thread {
 public:
  T& operator[](const thread_info* thread) {
    if (last_value_ == nullptr || thread != last_thread_) {
      last_thread_ = thread;
      last_value_ = &values_[thread];
    }
    return *last_value_;
  }
  auto begin() noexcept { return values_.begin(); }
  auto end() noexcept { return values_.end(); }
  /// The value of largest size() (null when none): O(threads).
  T* largest() noexcept {
    T* best = nullptr;
    for (auto& entry : values_)
      if (best == nullptr || entry.second.size() > best->size()) best = &entry.second;
    return best;
  }

 private:
  std::unordered_map<const thread_info*, T> values_;
  const thread_info* last_thread_ = nullptr;
  T* last_value_ = nullptr;
};

}  // namespace detail
}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
