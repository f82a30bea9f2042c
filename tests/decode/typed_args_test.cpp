// SPDX-License-Identifier: MIT
// Floating-point and bool span arguments (format 1.5) through real traced runs: reader, JSON, summary and info, and what a 1.4 reader makes of a 1.5 dump.
#include <doctest/doctest.h>

#include <support/analysis_workload.hpp>
#include <support/files.hpp>
#include <support/json_lite.hpp>
#include <support/process.hpp>
#include <support/read_dump.hpp>
#include <support/sanitizers.hpp>
#include <support/test_env.hpp>

#include <edgetrace/decode/dump_reader.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace typed_args_test {

using edgetrace_test::app;
using edgetrace_test::cli;
using edgetrace_test::fresh;
using edgetrace_test::run;
using edgetrace_test::tmp;
namespace reader = edgetrace::reader;
namespace format = edgetrace::format;

namespace {
constexpr int steps = 200;  // trace_app typed-args COUNT

/// What trace_app's "typed-args" mode records in step k (its comment).
double step_x(int k) { return k / 8.0 - 3; }

/// The dump of `trace_app typed-args`, recorded once.
std::string typed_dump() {
  std::string path;
  REQUIRE(edgetrace_test::recorded_once("typed-args.etr", {"typed-args", std::to_string(steps)}, path));
  return path;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// The last value of each argument key of the first span named `name`,
/// as the reader's annotations give them (time order within the span).
std::map<std::string, const reader::annotation*> span_args(const std::vector<reader::annotation>& all, std::int64_t begin,
                                                          std::int64_t end, const reader::thread_info* thread) {
  std::map<std::string, const reader::annotation*> out;
  for (const reader::annotation& a : all)
    if (a.thread == thread && a.ns >= begin && a.ns <= end &&
        (a.type == format::annotation_record::arg || a.type == format::annotation_record::arg_name))
      out[a.name()] = &a;
  return out;
}

/// Rewrites every annotations record of tag `from` to tag `to` (CRC
/// resealed): a 1.5 dump as a reader that does not know `from` sees it.
void retag_annotations(const std::string& in, const std::string& out, std::uint8_t from, std::uint8_t to,
                       std::uint64_t& retagged) {
  reader::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, in), r.error());
  std::string bytes(format::file_header_size, '\0');
  format::write_file_header(reinterpret_cast<unsigned char*>(&bytes[0]));
  retagged = 0;
  REQUIRE(r.for_each_chunk([&](const reader::dump_reader::raw_chunk& c) {
    std::string chunk(reinterpret_cast<const char*>(c.bytes), c.size);
    auto* p = reinterpret_cast<unsigned char*>(&chunk[0]);
    const std::size_t payload = c.size - format::chunk_header_size - format::chunk_trailer_size;
    if (c.type == format::chunk_type::annotations) {
      const unsigned char* at = p + format::chunk_header_size;
      const unsigned char* end = at + payload;
      while (at < end) {
        unsigned char* tag = const_cast<unsigned char*>(at++);
        std::uint64_t size = 0;
        REQUIRE(format::get_varint(at, end, size));
        if (*tag == from) {
          *tag = to;
          ++retagged;
        }
        at += size;
      }
      format::put_u32(p + format::chunk_header_size + payload, format::crc32(p, format::chunk_header_size + payload));
    }
    bytes += chunk;
  }));
  std::FILE* f = std::fopen(out.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  REQUIRE(std::fclose(f) == 0);
}

/// Tags of every annotations record of a dump, counted.
std::map<int, std::uint64_t> annotation_tags(const std::string& path) {
  reader::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, path), r.error());
  std::map<int, std::uint64_t> tags;
  REQUIRE(r.for_each_chunk([&](const reader::dump_reader::raw_chunk& c) {
    if (c.type != format::chunk_type::annotations) return;
    const unsigned char* at = c.bytes + format::chunk_header_size;
    const unsigned char* end = c.bytes + c.size - format::chunk_trailer_size;
    while (at < end) {
      const int tag = *at++;
      std::uint64_t size = 0;
      REQUIRE(format::get_varint(at, end, size));
      ++tags[tag];
      at += size;
    }
  }));
  return tags;
}

// The encoding EDGETRACE_ARG picks for each value type.
static_assert(edgetrace::detail::arg_value<double>::kind == format::site_kind::arg_float);
static_assert(edgetrace::detail::arg_value<float>::kind == format::site_kind::arg_float);
static_assert(edgetrace::detail::arg_value<long double>::kind == format::site_kind::arg_float);
static_assert(edgetrace::detail::arg_value<volatile double>::kind == format::site_kind::arg_float);
static_assert(edgetrace::detail::arg_value<bool>::kind == format::site_kind::arg_bool);
static_assert(edgetrace::detail::arg_value<volatile bool>::kind == format::site_kind::arg_bool);
static_assert(edgetrace::detail::arg_value<int>::kind == format::site_kind::arg);
static_assert(edgetrace::detail::arg_value<unsigned long long>::kind == format::site_kind::arg);
static_assert(edgetrace::detail::arg_value<char>::kind == format::site_kind::arg);
static_assert(edgetrace::detail::arg_value<format::chunk_type>::kind == format::site_kind::arg);  // an enum

/// EDGETRACE_ARG in a member function, on members: the type-picked site
/// must compile where `this` is not captured by any lambda.
struct traced_layer {
  double scale = 0.5;
  bool fused = true;
  int batch = 4;
  void run() const {
    EDGETRACE_SCOPE(work, "traced_layer");
    EDGETRACE_ARG(work, "scale", scale);
    EDGETRACE_ARG(work, "fused", fused);
    EDGETRACE_ARG(work, "batch", batch * 2);
    EDGETRACE_ARG(work, "half", static_cast<float>(scale) / 2);
    volatile double measured = scale;
    EDGETRACE_ARG(work, "measured", measured);
    EDGETRACE_ARG(work, "kind", format::chunk_type::events);
  }
};
}  // namespace

TEST_CASE("typed args: a float's text is the float's shortest, a double's the double's") {
  // A float argument is kept as the double it converts to.
  CHECK(reader::real_text(static_cast<double>(1.f / 255)) == "0.003921569");
  CHECK(std::strtof(reader::real_text(static_cast<double>(1.f / 255)).c_str(), nullptr) == 1.f / 255);
  CHECK(reader::real_text(static_cast<double>(0.1f)) == "0.1");
  CHECK(reader::real_text(static_cast<double>(-3.4e38f)) == "-3.4e+38");
  CHECK(reader::real_text(1.0 / 255) == "0.00392156862745098");
  CHECK(reader::real_text(0.1) == "0.1");
  CHECK(reader::real_text(1e300) == "1e+300");
  CHECK(reader::real_text(-2.875) == "-2.875");
  CHECK(reader::real_text(-0.0) == "-0");
  CHECK(reader::real_text(std::numeric_limits<double>::denorm_min()) == "5e-324");
}

TEST_CASE("typed args: floats and bools read back exactly; integers and names as before") {
  traced_layer{}.run();  // not recording in this process: it only has to compile
  reader::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, typed_dump()), r.error());
  REQUIRE(r.read_events([](const reader::event&) {}));  // spans count in thread stats too
  CHECK(r.version_minor() >= 5);  // typed arguments came in 1.5
  REQUIRE(r.writers().size() == 1);
  const reader::writer_info& w = r.writers().begin()->second;
  const auto dump = edgetrace_test::load_dump(typed_dump());
  const auto typed = dump.named("typed");
  REQUIRE(typed.size() == 1);
  const reader::thread_info* thread = nullptr;
  for (const auto& t : w.threads) thread = &t.second;
  const std::vector<reader::annotation> all = edgetrace_test::all_annotations(r);
  const auto args = span_args(all, typed[0].begin_ns, typed[0].end_ns, thread);
  REQUIRE(args.size() == 12);
  auto real = [&](const char* key) {
    const reader::annotation* a = args.at(key);
    CHECK_MESSAGE(a->is_real(), key);
    CHECK(a->site->kind == format::site_kind::arg_float);
    return a->real_value();
  };
  CHECK(same_bits(real("ratio"), 0.75));
  CHECK(same_bits(real("neg"), -2.5));
  CHECK(same_bits(real("huge"), 1.7976931348623157e308));
  CHECK(same_bits(real("tiny"), std::numeric_limits<double>::denorm_min()));
  CHECK(same_bits(real("third"), 1.0 / 3.0));
  CHECK(std::isnan(real("nan")));
  CHECK(same_bits(real("ninf"), -std::numeric_limits<double>::infinity()));
  CHECK(args.at("cached")->is_bool());
  CHECK(args.at("cached")->value_text() == "true");
  CHECK(args.at("fused")->value_text() == "false");
  CHECK(args.at("fused")->site->kind == format::site_kind::arg_bool);
  CHECK(args.at("batch")->value_type == format::arg_type::integer);
  CHECK(args.at("batch")->int_value() == 8);
  CHECK(args.at("min")->int_value() == std::numeric_limits<std::int64_t>::min());
  CHECK(args.at("shape")->value_text() == "1x3x224x224");
  CHECK(args.at("ratio")->value_text() == "0.75");
  CHECK(args.at("third")->value_text() == "0.3333333333333333");
  CHECK(args.at("huge")->value_text() == "1.7976931348623157e+308");
  CHECK(args.at("nan")->value_text() == "nan");
  CHECK(args.at("ninf")->value_text() == "-inf");

  // The dense loop: per step, x (double), i (int), even (bool), in order.
  std::vector<double> xs;
  std::vector<std::int64_t> is;
  std::vector<bool> evens;
  std::uint64_t previous = 0, out_of_order = 0;
  for (const reader::annotation& a : all) {
    if (a.tick < previous) ++out_of_order;
    previous = a.tick;
    if (a.name() == "x") xs.push_back(a.real_value());
    if (a.name() == "i") is.push_back(a.int_value());
    if (a.name() == "even") evens.push_back(a.value != 0 && a.is_bool());
  }
  CHECK(out_of_order == 0);
  REQUIRE(xs.size() == steps);
  REQUIRE(is.size() == steps);
  REQUIRE(evens.size() == steps);
  int wrong = 0;
  for (int k = 0; k < steps; ++k)
    if (!same_bits(xs[k], step_x(k)) || is[k] != k || evens[k] != (k % 2 == 0)) ++wrong;
  CHECK(wrong == 0);
  // Every record the writer counted was decoded (typed runs count each entry).
  for (const auto& t : w.threads) CHECK(t.second.stats_written == t.second.decoded());
  // The writer put them in typed runs (tag 7), and nothing in tag 6.
  const auto tags = annotation_tags(typed_dump());
  CHECK(tags.count(static_cast<int>(format::annotation_record::typed_arg_run)) != 0);
}

TEST_CASE("typed args: a dense loop of floats costs about 11 bytes per argument and reads back in order") {
  constexpr int spans = 20000;
  const std::string path = fresh("float-dense.etr");
  REQUIRE(run({app, "float-dense", std::to_string(spans)}, {"EDGETRACE_OUTPUT=" + path}).exit_code == 0);
  reader::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, path), r.error());
  std::vector<double> values;
  r.for_each_annotation([&values](const reader::annotation& a) { values.push_back(a.real_value()); });
  REQUIRE(values.size() == spans);
  int wrong = 0;
  for (int k = 0; k < spans; ++k) wrong += !same_bits(values[k], k * 0.25);
  CHECK(wrong == 0);
  std::uint64_t annotation_bytes = 0;
  REQUIRE(r.for_each_chunk([&](const reader::dump_reader::raw_chunk& c) {
    if (c.type == format::chunk_type::annotations)
      annotation_bytes += c.size - format::chunk_header_size - format::chunk_trailer_size;
  }));
  const double per_argument = static_cast<double>(annotation_bytes) / spans;
  MESSAGE("float arguments: " << per_argument << " bytes each");
  // Typed site (1 byte), tick delta (1-2), 8 value bytes. Slower builds
  // (sanitizers, qemu) need a wider delta more often; a record of its own
  // would cost ~20.
  CHECK(per_argument <= (edgetrace_test::sanitized_build || edgetrace_test::emulated() ? 13.0 : 12.0));
}

TEST_CASE("typed args: the JSON shows floats as numbers, bools as true/false, NaN and infinities as strings") {
  const auto r = run({cli, "json", typed_dump(), "-o", "-"});
  REQUIRE(r.exit_code == 0);
  json_lite::value doc;
  std::string error;
  REQUIRE_MESSAGE(json_lite::parse(r.out, doc, error), error);
  const json_lite::value& list = doc["traceEvents"];
  const json_lite::value* typed = nullptr;
  std::vector<const json_lite::value*> step_events;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i]["ph"].str() != "X") continue;
    if (list[i]["name"].str() == "typed") typed = &list[i];
    if (list[i]["name"].str() == "step") step_events.push_back(&list[i]);
  }
  REQUIRE(typed != nullptr);
  const json_lite::value& args = (*typed)["args"];
  CHECK(args["ratio"].is_number());
  CHECK(args["ratio"].num() == 0.75);
  CHECK(args["neg"].num() == -2.5);
  CHECK(args["huge"].num() == 1.7976931348623157e308);
  CHECK(args["tiny"].num() == std::numeric_limits<double>::denorm_min());
  CHECK(args["third"].num() == 1.0 / 3.0);
  CHECK(args["nan"].str() == "nan");
  CHECK(args["ninf"].str() == "-inf");
  CHECK(args["cached"].is_bool());
  CHECK(args["cached"].boolean == true);
  CHECK(args["fused"].is_bool());
  CHECK(args["fused"].boolean == false);
  CHECK(args["batch"].num() == 8);
  CHECK(args["shape"].str() == "1x3x224x224");
  CHECK(r.out.find("\"ratio\":0.75,") != std::string::npos);  // shortest text, not 0.75000000000000000
  REQUIRE(step_events.size() == steps);
  int wrong = 0;
  for (const json_lite::value* e : step_events) {
    const json_lite::value& a = (*e)["args"];
    const int k = static_cast<int>(a["i"].num(-1));
    if (k < 0 || a["x"].num() != step_x(k) || !a["even"].is_bool() || a["even"].boolean != (k % 2 == 0)) ++wrong;
  }
  CHECK(wrong == 0);
}

TEST_CASE("typed args: summary groups by a float's text; info counts each value type") {
  const auto s = run({cli, "summary", typed_dump(), "--by", "name,arg:x", "--format", "csv"});
  REQUIRE_MESSAGE(s.exit_code == 0, s.err);
  for (int k : {0, 1, 3, 17, steps - 1}) {
    const std::string row = "step [x=" + reader::real_text(step_x(k)) + "]";
    CHECK_MESSAGE(s.out.find(row) != std::string::npos, row);
  }
  const auto b = run({cli, "summary", typed_dump(), "--by", "arg:even", "--format", "csv"});
  REQUIRE_MESSAGE(b.exit_code == 0, b.err);
  CHECK(b.out.find("even=true,") != std::string::npos);
  CHECK(b.out.find("even=false,") != std::string::npos);

  reader::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, typed_dump()), r.error());
  std::uint64_t ints = 0, reals = 0, bools = 0, names = 0;
  for (const auto& a : edgetrace_test::all_annotations(r)) {
    if (a.type == format::annotation_record::arg_name) ++names;
    else if (a.type != format::annotation_record::arg) continue;
    else if (a.is_real()) ++reals;
    else if (a.is_bool()) ++bools;
    else ++ints;
  }
  CHECK(reals == 7 + steps);
  CHECK(bools == 2 + steps);
  CHECK(ints == 2 + steps);
  const auto info = run({cli, "info", typed_dump()});
  REQUIRE(info.exit_code == 0);
  const std::string counts = std::to_string(ints + reals + bools + names) + " arguments, " +
                             std::to_string(2 * steps / 10) + " flow steps, 0 allocations, 0 frees; argument values: " +
                             std::to_string(ints) + " integer, " + std::to_string(reals) + " floating, " +
                             std::to_string(bools) + " bool, " + std::to_string(names) + " named";
  CHECK_MESSAGE(info.out.find(counts) != std::string::npos, info.out);
}

TEST_CASE("typed args: a 1.4 reader steps over typed runs and never reads a float as an integer") {
  // A 1.4 reader knows tags 1-6: it handles tag 7 as any unknown tag. Give
  // the typed runs a tag this reader does not know either and read the
  // result: what remains is what a 1.4 reader sees.
  const std::string old_view = fresh("typed-args-as-1.4.etr");
  std::uint64_t retagged = 0;
  retag_annotations(typed_dump(), old_view, static_cast<std::uint8_t>(format::annotation_record::typed_arg_run), 250,
                    retagged);
  REQUIRE(retagged > 0);
  reader::dump_reader r;
  REQUIRE_MESSAGE(edgetrace_test::opened(r, old_view), r.error());
  REQUIRE(r.read_events([](const reader::event&) {}));
  const auto& w = r.writers().begin()->second;
  std::uint64_t args = 0, as_integer_of_float_site = 0, typed = 0, named = 0;
  for (const auto& a : edgetrace_test::all_annotations(r)) {
    if (a.type == format::annotation_record::arg_name) ++named;
    if (a.type != format::annotation_record::arg) continue;
    ++args;
    if (a.is_real() || a.is_bool()) ++typed;
    if (a.site != nullptr && a.site->kind != format::site_kind::arg) ++as_integer_of_float_site;
  }
  CHECK(typed == 0);
  CHECK(as_integer_of_float_site == 0);
  CHECK(named == 1);  // the shape: a named argument closes the run, tag 2 as in 1.3
  // The lost entries are counted: thread stats say more were written.
  std::uint64_t missing = 0;
  for (const auto& t : w.threads) missing += t.second.stats_written - t.second.decoded();
  CHECK(missing == (7 + steps) + (2 + steps) + (2 + steps) - args);
  const auto info = run({cli, "info", old_view});
  CHECK(info.out.find("missing") != std::string::npos);

  // A thread that records only integer arguments is written as in 1.4: tags
  // 1 and 6 only, which a 1.4 reader reads in full.
  const std::string ints = fresh("int-only.etr");
  REQUIRE(run({app, "arg-dense", "500"}, {"EDGETRACE_OUTPUT=" + ints}).exit_code == 0);
  const auto tags = annotation_tags(ints);
  CHECK(tags.count(static_cast<int>(format::annotation_record::typed_arg_run)) == 0);
  CHECK(tags.count(static_cast<int>(format::annotation_record::arg_run)) != 0);
}

}  // namespace typed_args_test
