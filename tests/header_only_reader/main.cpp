// SPDX-License-Identifier: MIT
// A tool on the header-only reader (no edgetrace::reader): two TUs include
// all of <edgetrace/reader.hpp>, so a definition that is not inline fails
// this program's link. It prints the summary of a dump as CSV (this TU)
// and converts it to JSON (other.cpp); check.cmake compares both with what
// the `edgetrace` tool, which reads with the library, makes of it.
#include <edgetrace/reader.hpp>

#include <cstdio>
#include <string>

#if EDGETRACE_SEPARATE_READER || !EDGETRACE_DETAIL_READER_BODIES
#error "main.cpp is the header-only reader's test: built without EDGETRACE_SEPARATE_READER"
#endif

bool write_json(const char* path, const char* json_path, std::string& error);  // other.cpp

int main(int argc, char** argv) {
  namespace er = edgetrace::reader;
  if (argc != 3) {
    std::fprintf(stderr, "usage: reader_header_only DUMP.etr OUT.json\n");
    return 2;
  }
  er::dump_reader r;
  std::string error;
  if (!r.open(argv[1]) || !r.read_metadata()) {
    std::fprintf(stderr, "reader_header_only: error: %s\n", r.error().c_str());
    return 1;
  }
  er::summary_builder builder{er::summary_options{}};
  if (!builder.add(r, error)) {
    std::fprintf(stderr, "reader_header_only: error: %s\n", error.c_str());
    return 1;
  }
  if (!write_json(argv[1], argv[2], error)) {
    std::fprintf(stderr, "reader_header_only: error: %s\n", error.c_str());
    return 1;
  }
  std::fputs(er::summary_csv(builder.finish()).c_str(), stdout);
  return 0;
}
