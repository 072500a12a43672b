// The authentication of trace lines: SipHash-2-4 (Aumasson and Bernstein), a keyed 64-bit
// MAC, under a 16-byte key that only the trace writer (inside the sandbox, gpu/trace) and the
// executor (outside it) hold. Header-only: both share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kgym {

constexpr size_t trace_key_bytes = 16;

namespace siphash_detail {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

inline void round(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = rotl(v1, 13);
  v1 ^= v0;
  v0 = rotl(v0, 32);
  v2 += v3;
  v3 = rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = rotl(v1, 17);
  v1 ^= v2;
  v2 = rotl(v2, 32);
}

}  // namespace siphash_detail

inline uint64_t siphash24(const uint8_t key[trace_key_bytes], const void* data, size_t size) {
  using namespace siphash_detail;
  const uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
  uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
  const auto* in = static_cast<const uint8_t*>(data);
  const size_t whole = size - size % 8;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m = load_le64(in + i);
    v3 ^= m;
    round(v0, v1, v2, v3);
    round(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(size) << 56;
  for (size_t i = 0; i < size % 8; ++i)
    last |= static_cast<uint64_t>(in[whole + i]) << (8 * i);
  v3 ^= last;
  round(v0, v1, v2, v3);
  round(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i)
    round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

// A trace line is "<16 hex digits of the MAC> <JSON record>".
inline std::string trace_mac_hex(const uint8_t key[trace_key_bytes], const std::string& record) {
  static const char digits[] = "0123456789abcdef";
  uint64_t mac = siphash24(key, record.data(), record.size());
  std::string hex(16, '0');
  for (int i = 15; i >= 0; --i, mac >>= 4)
    hex[static_cast<size_t>(i)] = digits[mac & 0xf];
  return hex;
}

}  // namespace kgym
