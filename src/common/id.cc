#include "common/id.h"

#include <random>

namespace orb {
namespace id_internal {

void FillRandom(uint8_t* out, size_t n) {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = gen();
    std::memcpy(out + i, &v, std::min<size_t>(8, n - i));
  }
}

}  // namespace id_internal

std::string RandomUuid() {
  uint8_t bytes[16];
  id_internal::FillRandom(bytes, sizeof(bytes));
  bytes[6] = (bytes[6] & 0x0F) | 0x40;  // version 4
  bytes[8] = (bytes[8] & 0x3F) | 0x80;  // RFC 4122 variant
  std::string hex = id_internal::ToHex(bytes, sizeof(bytes));
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
         hex.substr(20);
}

namespace id_internal {

std::string ToHex(const uint8_t* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[data[i] >> 4];
    s[2 * i + 1] = kDigits[data[i] & 0xF];
  }
  return s;
}

static int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool FromHex(std::string_view hex, uint8_t* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    int hi = HexValue(hex[2 * i]);
    int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

}  // namespace id_internal

ObjectID ObjectID::ForTaskReturn(const TaskID& task, uint32_t index) {
  ObjectID id;
  std::memcpy(id.mutable_data(), task.data(), TaskID::kSize);
  std::memcpy(id.mutable_data() + TaskID::kSize, &index, 4);
  return id;
}

ObjectID ObjectID::ForPut(const TaskID& creator, uint32_t put_index) {
  return ForTaskReturn(creator, put_index | 0x80000000u);
}

TaskID ObjectID::Task() const {
  return TaskID::FromBinary(std::string_view(reinterpret_cast<const char*>(data()), TaskID::kSize));
}

JobID JobIDFromInt(uint32_t n) {
  JobID id;
  for (int i = 3; i >= 0; --i) {
    id.mutable_data()[i] = static_cast<uint8_t>(n & 0xFF);
    n >>= 8;
  }
  return id;
}

uint32_t JobIDToInt(const JobID& id) {
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n = n << 8 | id.data()[i];
  return n;
}

}  // namespace orb
