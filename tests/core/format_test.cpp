// SPDX-License-Identifier: MIT
// Tests of format.hpp: varint edges, CRC-32 vectors and slicing, chunk sealing.
#include <doctest/doctest.h>

#include <edgetrace/format.hpp>

#include <cstdint>
#include <vector>

namespace format_test {

namespace fmt = edgetrace::format;

namespace {

std::vector<unsigned char> encode(std::uint64_t v) {
  std::vector<unsigned char> b(fmt::max_varint_size + 2);
  b.resize(static_cast<std::size_t>(fmt::put_varint(b.data(), v) - b.data()));
  return b;
}

bool decode(const std::vector<unsigned char>& b, std::uint64_t& v, std::size_t* used = nullptr) {
  const unsigned char* p = b.data();
  const bool ok = fmt::get_varint(p, b.data() + b.size(), v);
  if (ok && used) *used = static_cast<std::size_t>(p - b.data());
  return ok;
}

std::uint32_t crc_bytewise(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
  }
  return ~c;
}

}  // namespace

TEST_CASE("varint round trips at the edges") {
  const std::uint64_t values[] = {0, 1, 127, 128, 255, 16383, 16384, (1ull << 32) - 1, 1ull << 32, (1ull << 56) - 1,
                                  1ull << 62, 1ull << 63, UINT64_MAX - 1, UINT64_MAX};
  for (std::uint64_t v : values) {
    CAPTURE(v);
    const auto b = encode(v);
    std::uint64_t out = 42;
    std::size_t used = 0;
    REQUIRE(decode(b, out, &used));
    CHECK(out == v);
    CHECK(used == b.size());
  }
  CHECK(encode(0).size() == 1);
  CHECK(encode(127).size() == 1);
  CHECK(encode(128).size() == 2);
  CHECK(encode(1ull << 63).size() == 10);
  CHECK(encode(UINT64_MAX).size() == fmt::max_varint_size);
  CHECK(encode(UINT64_MAX) == std::vector<unsigned char>{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01});
}

TEST_CASE("varint decoding rejects overlong, truncated and overflowing input") {
  std::uint64_t v = 0;
  SUBCASE("empty") { CHECK_FALSE(decode({}, v)); }
  SUBCASE("truncated: continuation bit on the last byte") {
    CHECK_FALSE(decode({0x80}, v));
    CHECK_FALSE(decode({0xFF, 0xFF, 0xFF}, v));
    auto b = encode(UINT64_MAX);
    b.pop_back();
    CHECK_FALSE(decode(b, v));
  }
  SUBCASE("overlong: 11 bytes") {
    std::vector<unsigned char> b(10, 0x80);
    b.push_back(0x00);
    CHECK_FALSE(decode(b, v));
  }
  SUBCASE("10 bytes of zero continuation then a terminator is still too long") {
    std::vector<unsigned char> b(10, 0x80);
    CHECK_FALSE(decode(b, v));
  }
  SUBCASE("overflow in the 10th byte") {
    std::vector<unsigned char> b(9, 0xFF);
    b.push_back(0x02);  // bit 64
    CHECK_FALSE(decode(b, v));
    b.back() = 0x7F;
    CHECK_FALSE(decode(b, v));
    b.back() = 0x01;  // exactly UINT64_MAX
    REQUIRE(decode(b, v));
    CHECK(v == UINT64_MAX);
  }
  SUBCASE("a non-minimal but in-range encoding is accepted") {
    REQUIRE(decode({0x81, 0x00}, v));
    CHECK(v == 1);
  }
  SUBCASE("decoding stops at the end of the value") {
    std::size_t used = 0;
    REQUIRE(decode({0x05, 0x99}, v, &used));
    CHECK(v == 5);
    CHECK(used == 1);
  }
}

TEST_CASE("CRC-32 known vectors") {
  const char* check = "123456789";
  CHECK(fmt::crc32(check, 9) == 0xCBF43926u);
  CHECK(fmt::crc32("", 0) == 0u);
  CHECK(fmt::crc32("a", 1) == 0xE8B7BE43u);
  const char* fox = "The quick brown fox jumps over the lazy dog";
  CHECK(fmt::crc32(fox, 43) == 0x414FA339u);
}

TEST_CASE("CRC-32 incremental equals one-shot, slice-by-8 equals bytewise") {
  std::vector<unsigned char> data(64 + 8);
  std::uint32_t x = 12345;
  for (auto& b : data) {
    x = x * 1103515245u + 12345u;
    b = static_cast<unsigned char>(x >> 16);
  }
  for (std::size_t len = 0; len <= 64; ++len) {
    for (std::size_t misalign = 0; misalign < 8; misalign += 3) {
      CAPTURE(len);
      CAPTURE(misalign);
      const unsigned char* p = data.data() + misalign;
      const std::uint32_t whole = fmt::crc32(p, len);
      CHECK(whole == crc_bytewise(p, len));
      for (std::size_t split = 0; split <= len; split += 7)
        CHECK(fmt::crc32(p + split, len - split, fmt::crc32(p, split)) == whole);
    }
  }
}

// x86-64: carry-less multiply; aarch64: the CRC32 instructions (core/crc32.hpp). Skipped on a CPU
// without them, where crc32 runs on the tables alone (the cases above).
TEST_CASE("CRC-32 with the CPU's instructions equals the tables: every length to 4 KiB, every alignment" *
          doctest::skip(!edgetrace::detail::crc_hardware_available())) {
  std::vector<unsigned char> data(4096 + 16);
  std::uint32_t x = 777;
  for (auto& b : data) {
    x = x * 1103515245u + 12345u;
    b = static_cast<unsigned char>(x >> 16);
  }
  std::size_t differ = 0;
  for (std::size_t len = 0; len <= 4096; ++len) {
    const std::size_t misalign = len % 16;
    const unsigned char* p = data.data() + misalign;
    const std::uint32_t fast = fmt::crc32(p, len);
    const std::uint32_t table = ~edgetrace::detail::crc32_tables(p, len, ~0u);
    if (fast != table || (len < 300 && fast != crc_bytewise(p, len))) {
      ++differ;
      if (differ < 5) MESSAGE("length " << len << ": " << fast << " != " << table);
    }
  }
  CHECK(differ == 0);
  // Continuing from a running value, across the hardware's least size.
  for (std::size_t split = 0; split <= 200; ++split)
    CHECK(fmt::crc32(data.data() + split, 3000 - split, fmt::crc32(data.data(), split)) == fmt::crc32(data.data(), 3000));
  // A chunk of the size the encoder seals, all ones and all zeros.
  std::vector<unsigned char> ones(61440, 0xFF), zeros(61440, 0);
  CHECK(fmt::crc32(ones.data(), ones.size()) == ~edgetrace::detail::crc32_tables(ones.data(), ones.size(), ~0u));
  CHECK(fmt::crc32(zeros.data(), zeros.size()) == ~edgetrace::detail::crc32_tables(zeros.data(), zeros.size(), ~0u));
}

TEST_CASE("seal_chunk frames a chunk that validates and round-trips") {
  const unsigned char body[] = {1, 2, 3, 4, 5};
  std::vector<unsigned char> c(fmt::chunk_header_size + sizeof body + fmt::chunk_trailer_size);
  std::copy(body, body + sizeof body, c.begin() + fmt::chunk_header_size);
  const std::size_t total = fmt::seal_chunk(c.data(), fmt::chunk_type::events, 0xDEADBEEFu, sizeof body);
  REQUIRE(total == c.size());
  CHECK(c[0] == fmt::chunk_sync0);
  CHECK(c[1] == fmt::chunk_sync1);
  CHECK(c[2] == static_cast<unsigned char>(fmt::chunk_type::events));
  CHECK(c[3] == 0);
  CHECK(fmt::get_u32(c.data() + 4) == sizeof body);
  CHECK(fmt::get_u32(c.data() + 8) == 0xDEADBEEFu);
  CHECK(std::equal(body, body + sizeof body, c.begin() + fmt::chunk_header_size));
  const std::size_t crc_at = fmt::chunk_header_size + sizeof body;
  CHECK(fmt::get_u32(c.data() + crc_at) == fmt::crc32(c.data(), crc_at));
  c[5] ^= 1;  // any flipped bit breaks the CRC
  CHECK(fmt::get_u32(c.data() + crc_at) != fmt::crc32(c.data(), crc_at));
}

TEST_CASE("fixed-width little-endian helpers and the file header") {
  unsigned char b[8];
  fmt::put_u16(b, 0xBEEF);
  CHECK(b[0] == 0xEF);
  CHECK(fmt::get_u16(b) == 0xBEEF);
  fmt::put_u32(b, 0x01020304u);
  CHECK(b[0] == 0x04);
  CHECK(fmt::get_u32(b) == 0x01020304u);
  fmt::put_u64(b, 0x0102030405060708ull);
  CHECK(b[0] == 0x08);
  CHECK(b[7] == 0x01);
  CHECK(fmt::get_u64(b) == 0x0102030405060708ull);

  unsigned char h[fmt::file_header_size];
  fmt::write_file_header(h);
  CHECK(h[0] == 0x89);
  CHECK(h[1] == 'E');
  CHECK(fmt::get_u16(h + 8) == 1);
  CHECK(fmt::get_u16(h + 10) == fmt::version_minor);
  CHECK(fmt::get_u32(h + 12) == 0);
}

}  // namespace format_test
