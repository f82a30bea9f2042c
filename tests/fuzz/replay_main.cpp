// SPDX-License-Identifier: MIT
// main() for reader_fuzz_replay: runs LLVMFuzzerTestOneInput once per file
// named on the command line (as a libFuzzer binary does when given files).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  int ran = 0;
  for (int i = 1; i < argc; ++i) {
    std::FILE* f = std::fopen(argv[i], "rb");
    if (f == nullptr) {
      std::fprintf(stderr, "reader_fuzz_replay: cannot open %s\n", argv[i]);
      return 2;
    }
    std::vector<std::uint8_t> data;
    std::uint8_t buffer[65536];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) data.insert(data.end(), buffer, buffer + n);
    std::fclose(f);
    LLVMFuzzerTestOneInput(data.data(), data.size());
    ++ran;
  }
  std::printf("replayed %d input(s)\n", ran);
  return 0;
}
