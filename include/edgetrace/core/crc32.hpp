// SPDX-License-Identifier: MIT
// CRC-32 (IEEE 802.3, reflected, as zlib's) for the dump's chunks: a portable slice-by-8 loop, and the CPU's own instructions where it has them (x86-64 carry-less multiply, aarch64 CRC32), chosen once at run time.
//
// Every chunk the flusher seals and every chunk the reader checks goes
// through it: at the 3 bytes a dense span takes, the table loop's cycle a
// byte was a third of what encoding a span costs (docs/PERFORMANCE.md).
// Async-signal-safe (the crash path seals chunks): the probe is an
// instruction or getauxval, kept in a plain atomic word.
#pragma once

#include <edgetrace/config.hpp>  // EDGETRACE_ABI_NAMESPACE

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EDGETRACE_DETAIL_CRC_CLMUL 1
#include <cpuid.h>
#include <wmmintrin.h>  // carry-less multiply, and SSE2 through <emmintrin.h>
#elif defined(__aarch64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define EDGETRACE_DETAIL_CRC_ARMV8 1
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace detail {

/// Slice-by-8 tables for the reflected IEEE polynomial, built at compile time.
constexpr std::array<std::array<std::uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
    t[0][i] = c;
  }
  for (std::uint32_t i = 0; i < 256; ++i)
    for (std::size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}
inline constexpr auto crc_tables = make_crc_tables();

/// The portable loop on the running value `state` (the CRC's complement):
/// about a cycle a byte.
inline std::uint32_t crc32_tables(const unsigned char* p, std::size_t size, std::uint32_t state) noexcept {
  const auto& t = crc_tables;
  while (size >= 8) {
    const std::uint32_t lo = state ^ (static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                                      static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24);
    state = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
            t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    size -= 8;
  }
  while (size--) state = t[0][(state ^ *p++) & 0xFF] ^ (state >> 8);
  return state;
}

#if defined(EDGETRACE_DETAIL_CRC_CLMUL)
/// Least size worth the carry-less path (its setup and final reduction).
inline constexpr std::size_t crc_hardware_min = 64;

/// One fold: the 128 bits in `x` carried 128 (or 512) bits further along
/// the message by the constant pair `k` (x^(n+32) and x^(n-32) mod P,
/// bit-reflected), added to the next 16 message bytes `next`.
__attribute__((target("pclmul,sse2"))) inline __m128i crc_fold(__m128i x, __m128i k, __m128i next) noexcept {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

/// The running value over [p, p + size) by carry-less multiplication
/// (folding four 16-byte lanes 64 bytes at a time, then one, then a
/// Barrett reduction to 32 bits): about 16 bytes a cycle. `size` is at
/// least crc_hardware_min and a multiple of 16.
__attribute__((target("pclmul,sse2"))) inline std::uint32_t crc32_hardware(const unsigned char* p, std::size_t size,
                                                                          std::uint32_t state) noexcept {
  const auto load = [](const unsigned char* at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at)); };
  // Constants as x^n mod P for the reflected polynomial (bit-reflected,
  // shifted left by one): n = 544/480 (512-bit fold), 160/96 (128-bit),
  // 64 (64 to 32 bits); then floor(x^64 / P) and P for the reduction.
  const __m128i fold_512 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
  const __m128i fold_128 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  const __m128i fold_64 = _mm_set_epi64x(0, 0x163cd6124);
  const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641);
  const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
  __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(state)));
  __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
  for (p += 64, size -= 64; size >= 64; p += 64, size -= 64) {
    x0 = crc_fold(x0, fold_512, load(p));
    x1 = crc_fold(x1, fold_512, load(p + 16));
    x2 = crc_fold(x2, fold_512, load(p + 32));
    x3 = crc_fold(x3, fold_512, load(p + 48));
  }
  x0 = crc_fold(crc_fold(crc_fold(x0, fold_128, x1), fold_128, x2), fold_128, x3);
  for (; size >= 16; p += 16, size -= 16) x0 = crc_fold(x0, fold_128, load(p));
  // 128 bits to 64 (the high half times x^96), then to 32 (times x^64).
  x0 = _mm_xor_si128(_mm_clmulepi64_si128(fold_128, x0, 0x01), _mm_srli_si128(x0, 8));
  x0 = _mm_xor_si128(_mm_srli_si128(x0, 4), _mm_clmulepi64_si128(_mm_and_si128(x0, low32), fold_64, 0x00));
  // Barrett: the quotient's low 32 bits times P cancel all but the remainder.
  __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x0, low32), barrett, 0x10), low32);
  x0 = _mm_xor_si128(x0, _mm_clmulepi64_si128(t, barrett, 0x00));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_srli_si128(x0, 4)));
}

inline bool crc_hardware_probe() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_PCLMUL) != 0 && (d & bit_SSE2) != 0;
}
#elif defined(EDGETRACE_DETAIL_CRC_ARMV8)
inline constexpr std::size_t crc_hardware_min = 16;

/// The running value over [p, p + size) with the ARMv8 CRC32 instructions
/// (the IEEE polynomial; 8 bytes an instruction).
__attribute__((target("+crc"))) inline std::uint32_t crc32_hardware(const unsigned char* p, std::size_t size,
                                                                   std::uint32_t state) noexcept {
  for (; size >= 8; p += 8, size -= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    state = __crc32d(state, v);
  }
  for (; size != 0; --size) state = __crc32b(state, *p++);
  return state;
}

inline bool crc_hardware_probe() noexcept { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#endif

/// Whether crc32 uses the CPU's instructions: 0 not probed yet, 1 no, 2 yes.
/// Relaxed: any thread may probe; they all find the same.
inline int crc_hardware_word = 0;

inline bool crc_hardware_available() noexcept {
#if defined(EDGETRACE_DETAIL_CRC_CLMUL) || defined(EDGETRACE_DETAIL_CRC_ARMV8)
  int known = __atomic_load_n(&crc_hardware_word, __ATOMIC_RELAXED);
  if (known == 0) {
    known = crc_hardware_probe() ? 2 : 1;
    __atomic_store_n(&crc_hardware_word, known, __ATOMIC_RELAXED);
  }
  return known == 2;
#else
  return false;
#endif
}

/// The running value over [p, p + size): the CPU's instructions where it
/// has them, the tables for the rest.
inline std::uint32_t crc32_update(const unsigned char* p, std::size_t size, std::uint32_t state) noexcept {
#if defined(EDGETRACE_DETAIL_CRC_CLMUL) || defined(EDGETRACE_DETAIL_CRC_ARMV8)
  if (size >= crc_hardware_min && crc_hardware_available()) {
    const std::size_t whole = size & ~std::size_t{15};
    state = crc32_hardware(p, whole, state);
    p += whole;
    size -= whole;
  }
#endif
  return crc32_tables(p, size, state);
}

}  // namespace detail
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
