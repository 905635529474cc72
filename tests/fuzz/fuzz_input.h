// What the fuzzers share: the input format of those that replay several messages per
// input — records of [1 byte: target][2 bytes: length, little-endian][length bytes], a
// record cut short taking what is left — and the writing of seed corpora.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace orb::fuzz {

struct Record {
  uint8_t target = 0;
  std::string bytes;
};

class RecordReader {
 public:
  RecordReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool Next(Record* record) {
    if (pos_ + 3 > size_) return false;
    record->target = data_[pos_];
    size_t length = data_[pos_ + 1] | (size_t{data_[pos_ + 2]} << 8);
    pos_ += 3;
    if (length > size_ - pos_) length = size_ - pos_;
    record->bytes.assign(reinterpret_cast<const char*>(data_ + pos_), length);
    pos_ += length;
    return true;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

inline std::string MakeRecord(uint8_t target, const std::string& bytes) {
  std::string out(1, static_cast<char>(target));
  out.push_back(static_cast<char>(bytes.size() & 0xff));
  out.push_back(static_cast<char>((bytes.size() >> 8) & 0xff));
  return out + bytes.substr(0, 0xffff);
}

// With ORB_FUZZ_WRITE_SEEDS=DIR set (run_fuzzers.sh does it), writes `seeds()` to
// DIR/seed-N and exits; otherwise returns. For LLVMFuzzerInitialize.
inline int WriteSeedsIfAsked(std::vector<std::string> (*seeds)()) {
  const char* dir = std::getenv("ORB_FUZZ_WRITE_SEEDS");
  if (!dir) return 0;
  std::filesystem::create_directories(dir);
  std::vector<std::string> inputs = seeds();
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::ofstream(std::string(dir) + "/seed-" + std::to_string(i), std::ios::binary) << inputs[i];
  }
  std::exit(0);
}

}  // namespace orb::fuzz
