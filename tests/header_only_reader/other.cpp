// SPDX-License-Identifier: MIT
// The second TU of the header-only reader's test program (main.cpp).
#include <edgetrace/reader.hpp>

#include <cstdio>
#include <string>

bool write_json(const char* path, const char* json_path, std::string& error) {
  namespace er = edgetrace::reader;
  er::dump_reader r;
  if (!r.open(path) || !r.read_metadata()) {
    error = r.error();
    return false;
  }
  std::FILE* out = std::fopen(json_path, "wb");
  if (out == nullptr) {
    error = std::string("cannot write ") + json_path;
    return false;
  }
  er::chrome_json_options options;
  const std::string dump = path;
  options.source_name = dump.substr(dump.find_last_of('/') + 1);  // as `edgetrace json` names it
  const bool ok = er::write_chrome_json(r, out, options);
  if (std::fclose(out) != 0 || !ok) error = std::string("the JSON conversion failed: ") + json_path;
  return error.empty();
}
