// SPDX-License-Identifier: MIT
// The encoder's lower half: sealed-chunk output, definitions and annotations chunks (arguments, flows, allocations), all in memory.
//
// Part of the pure chunk encoder (writer/encoding/encoder.hpp): no descriptor, no
// global, no thread. What it must learn from outside (a category's or an
// interned name, whether a site's library is still loaded) it asks the
// encoder_host its owner passes in.
#pragma once

#include <edgetrace/category.hpp>
#include <edgetrace/face/ring.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/writer/encoding/site_watch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// What the encoder asks its owner: the flusher passes itself in; a test
/// passes a table. Called on the encoding thread only.
class encoder_host {
 public:
  /// Calls read(descriptor, context) while `s`'s library cannot be
  /// unloaded; false, and no call, if it was unloaded already.
  virtual bool read_loaded_site(const site* s, void (*read)(const site&, void*), void* context) = 0;
  /// Copies category `index`'s name into `out` ("unknown" if it is gone).
  virtual void category_name(std::uint32_t index, std::string& out) = 0;
  /// Copies interned name `id` into `out` ("(unnamed)" if there is none).
  virtual void interned_name(std::uint32_t id, std::string& out) = 0;
  /// A record of a site the latency triggers watch (encoder::watch).
  virtual void watched_record(const thread_ring& ring, std::uint32_t id, const record& r) = 0;
  /// The sealed chunks passed output_batch bytes: take them now
  /// (encoder::output()).
  virtual void output_full() = 0;

 protected:
  ~encoder_host() = default;
};

/// Sealed chunks, definitions and annotations being built.
class chunk_writer {
 public:
  /// Sealed chunks are handed on (output_full) once this many wait.
  static constexpr std::size_t output_batch = 256u << 10;

  explicit chunk_writer(encoder_host& host) noexcept : host_(&host) {}

  /// The chunks sealed so far (the owner writes and clears them).
  std::vector<unsigned char>& output() noexcept { return out_; }
  /// The id every chunk header carries.
  void set_writer_id(std::uint32_t id) noexcept { writer_id_ = id; }
  std::uint32_t writer_id() const noexcept { return writer_id_; }
  /// A site watcher (the latency triggers) learns every site defined and
  /// has its watched records handed to the host (null: none, the one
  /// branch a record pays).
  void watch(site_watch* watcher) noexcept { watch_ = watcher; }

  static void begin_chunk(std::vector<unsigned char>& buffer) noexcept { buffer.assign(format::chunk_header_size, 0); }
  static void put_varint(std::vector<unsigned char>& buffer, std::uint64_t value) {
    unsigned char bytes[format::max_varint_size];
    buffer.insert(buffer.end(), bytes, format::put_varint(bytes, value));
  }

  static void put_string(std::vector<unsigned char>& buffer, const char* text, std::size_t size) {
    if (size > format::max_string_size) size = format::max_string_size;
    put_varint(buffer, size);
    buffer.insert(buffer.end(), text, text + size);
  }
  static void put_string(std::vector<unsigned char>& buffer, const char* text) {
    put_string(buffer, text != nullptr ? text : "", text != nullptr ? std::strlen(text) : 0);
  }

  /// Frames `payload` (already in `buffer` after chunk_header_size bytes of
  /// room) as a chunk and appends it to the output. Sealed chunks are
  /// written whole: a crash leaves whole chunks and at most one partial.
  void emit_chunk(std::vector<unsigned char>& buffer, format::chunk_type type) noexcept {
    const auto payload = static_cast<std::uint32_t>(buffer.size() - format::chunk_header_size);
    buffer.resize(buffer.size() + format::chunk_trailer_size);
    format::seal_chunk(buffer.data(), type, writer_id_, payload);
    out_.insert(out_.end(), buffer.begin(), buffer.end());
    if (out_.size() >= output_batch) host_->output_full();
  }

  /// Seals the pending definitions: a reader meets every site before its
  /// first use.
  void emit_definitions() {
    if (defs_.empty()) return;
    emit_chunk(defs_, format::chunk_type::definitions);
    defs_.clear();
  }

 protected:
  void define_category(std::uint32_t index, const char* name) {
    if (index < category_defined_.size() && category_defined_[index]) return;
    if (index >= category_defined_.size()) category_defined_.resize(index + 1, false);
    category_defined_[index] = true;
    if (defs_.empty()) begin_chunk(defs_);
    defs_.push_back(static_cast<unsigned char>(format::definition_tag::category));
    put_varint(defs_, index);
    put_string(defs_, name);
  }

  void define_site(std::uint32_t id, format::site_kind kind, std::uint32_t category, const char* name,
                   std::size_t name_size, const char* file, std::uint32_t line) {
    if (defs_.empty()) begin_chunk(defs_);
    defs_.push_back(static_cast<unsigned char>(format::definition_tag::site));
    put_varint(defs_, id);
    defs_.push_back(static_cast<unsigned char>(kind));
    put_varint(defs_, category);
    put_string(defs_, name, name_size);
    put_string(defs_, file);
    put_varint(defs_, line);
    if (watch_ != nullptr) watch_->define_site(id, kind, name, name_size);
  }

  /// Every category is defined again before its next use.
  void forget_categories() noexcept { category_defined_.clear(); }

  // ---- annotations (1.3): arguments, flow steps, allocations, frees. They
  // go to their own chunk (an older reader skips it), written after the
  // definitions they use.

  static unsigned char* annotation_head(unsigned char* p, std::uint32_t thread_id, std::uint64_t tick,
                                        std::uint32_t site) noexcept {
    p = format::put_varint(p, thread_id);
    p = format::put_varint(p, tick);
    return format::put_varint(p, site);
  }

  // ---- argument runs (1.4): a thread's consecutive arguments as one
  // record, each after the first as (site, tick delta, value): 3 bytes for
  // a small value recorded within ~50 ns of the previous one, where a
  // record of its own costs ~12 (docs/FORMAT.md, annotations tag 6). A
  // float or bool argument (1.5) opens a typed run (tag 7) instead, whose
  // entries carry their type in the site field; integers that follow join
  // it. Integer-only runs stay tag 6, so a 1.4 reader reads them as before.
  struct {
    std::size_t at;  ///< offset of the run's tag byte in annotations_
    std::uint64_t tick;  ///< the last entry's tick
    std::uint32_t thread_id;  ///< 0: no run open
    std::uint32_t entries;
    bool typed;  ///< tag 7 (typed sites) rather than tag 6
  } arg_run_ = {};
  /// The run's size field: a varint padded to 3 bytes (up to 2 MiB; an
  /// annotations chunk is sealed past 60 KiB), filled in when it closes.
  static constexpr std::size_t run_size_bytes = 3;

  /// One argument: `value` is the int64's bits (integer), the double's bits
  /// (real) or unused (the bool is in `type`).
  void put_argument(std::uint32_t thread_id, std::uint64_t tick, std::uint32_t site, format::arg_type type,
                    std::uint64_t value) {
    unsigned char entry[4 * format::max_varint_size];
    unsigned char* p = entry;
    const bool joins = arg_run_.thread_id == thread_id && tick >= arg_run_.tick &&
                       (arg_run_.typed || type == format::arg_type::integer);
    const bool typed = joins ? arg_run_.typed : type != format::arg_type::integer;
    const std::uint64_t site_field = typed ? (std::uint64_t{site} << 2) | static_cast<std::uint8_t>(type) : site;
    if (joins) {
      p = format::put_varint(p, site_field);
      p = format::put_varint(p, tick - arg_run_.tick);
    } else {
      close_arg_run();
      if (annotations_.empty()) begin_chunk(annotations_);
      arg_run_ = {annotations_.size(), tick, thread_id, 0, typed};
      annotations_.push_back(static_cast<unsigned char>(typed ? format::annotation_record::typed_arg_run
                                                              : format::annotation_record::arg_run));
      annotations_.insert(annotations_.end(), run_size_bytes, 0);
      p = annotation_head(p, thread_id, tick, site_field);
    }
    if (type == format::arg_type::integer) {
      p = format::put_varint(p, format::zigzag(static_cast<std::int64_t>(value)));
    } else if (type == format::arg_type::real) {
      format::put_u64(p, value);
      p += 8;
    }
    annotations_.insert(annotations_.end(), entry, p);
    arg_run_.tick = tick;
    ++arg_run_.entries;
    if (annotations_.size() > format::target_event_payload) emit_annotations();
  }

  /// Fills in the open run's size. A run of one argument becomes a plain
  /// argument record (1.3's, two bytes shorter); a typed run of one keeps
  /// its tag with a one-byte size.
  void close_arg_run() noexcept {
    if (arg_run_.thread_id == 0) return;
    arg_run_.thread_id = 0;
    unsigned char* tag = annotations_.data() + arg_run_.at;
    unsigned char* body = tag + 1 + run_size_bytes;
    const std::size_t size = static_cast<std::size_t>(annotations_.data() + annotations_.size() - body);
    if (arg_run_.entries == 1) {  // four varints (or three and an f64) at most: < 128 bytes
      if (!arg_run_.typed) tag[0] = static_cast<unsigned char>(format::annotation_record::arg);
      tag[1] = static_cast<unsigned char>(size);
      std::memmove(tag + 2, body, size);
      annotations_.resize(annotations_.size() - (run_size_bytes - 1));
      return;
    }
    format::put_varint3(tag + 1, size);
  }
  void put_annotation(format::annotation_record type, const unsigned char* body, const unsigned char* end) {
    close_arg_run();
    if (annotations_.empty()) begin_chunk(annotations_);
    annotations_.push_back(static_cast<unsigned char>(type));
    put_varint(annotations_, static_cast<std::uint64_t>(end - body));
    annotations_.insert(annotations_.end(), body, end);
    if (annotations_.size() > format::target_event_payload) emit_annotations();
  }

  /// Seals the annotations chunk, after the definitions it refers to.
  void emit_annotations() {
    if (annotations_.empty()) return;
    close_arg_run();
    emit_definitions();
    emit_chunk(annotations_, format::chunk_type::annotations);
    annotations_.clear();
  }

  encoder_host* host_;
  site_watch* watch_ = nullptr;
  std::uint32_t writer_id_ = 0;
  std::vector<unsigned char> out_;          ///< sealed chunks waiting for the owner
  std::vector<unsigned char> defs_;         ///< definitions chunk being built
  std::vector<unsigned char> annotations_;  ///< annotations chunk being built (1.3)
  std::vector<bool> category_defined_;
};

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
