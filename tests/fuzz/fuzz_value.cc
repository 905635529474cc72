// Fuzzes the deserialization of user values (orb/serialization.h): arbitrary bytes read
// as each type a task argument or a result can have must either give a value or throw
// orb::Error naming the type — never crash, overflow or allocate without bound.
//
// Input: one byte choosing the type, then the msgpack bytes.
#include <orb/serialization.h>

#include "fuzz_input.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace {

struct Sample {
  int64_t id = 0;
  std::string name;
  std::vector<double> weights;
  std::map<std::string, int> counts;
  MSGPACK_DEFINE(id, name, weights, counts);
};

template <class T>
void ReadAs(const char* data, size_t size) {
  try {
    T value = orb::internal::Deserialize<T>(data, size);
    // A value that came out whole serializes again.
    (void)orb::internal::Serialize(value);
  } catch (const orb::Error&) {
  }
}

// One value of each type, behind its selector byte.
std::vector<std::string> Seeds() {
  using orb::internal::Serialize;
  Sample sample{7, "abc", {1.0, 2.5}, {{"x", 2}}};
  return {
      '\0' + Serialize(int64_t{-42}),
      '\1' + Serialize(3.25),
      '\2' + Serialize(std::string("hello")),
      '\3' + Serialize(std::vector<int>{1, 2, 3}),
      '\4' + Serialize(std::vector<std::string>{"a", "bc"}),
      '\5' + Serialize(std::map<std::string, std::vector<double>>{{"k", {2.0}}}),
      '\6' + Serialize(std::make_tuple(7, std::string("hi"), true)),
      '\7' + Serialize(sample),
      '\10' + Serialize(std::vector<std::vector<uint8_t>>{{1, 2}, {}}),
      '\11' + Serialize(std::unordered_map<int64_t, std::pair<float, std::string>>{{5, {1.5f, "v"}}}),
  };
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return orb::fuzz::WriteSeedsIfAsked(Seeds); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const char* bytes = reinterpret_cast<const char*>(data + 1);
  size_t n = size - 1;
  switch (data[0] % 10) {
    case 0: ReadAs<int64_t>(bytes, n); break;
    case 1: ReadAs<double>(bytes, n); break;
    case 2: ReadAs<std::string>(bytes, n); break;
    case 3: ReadAs<std::vector<int>>(bytes, n); break;
    case 4: ReadAs<std::vector<std::string>>(bytes, n); break;
    case 5: ReadAs<std::map<std::string, std::vector<double>>>(bytes, n); break;
    case 6: ReadAs<std::tuple<int, std::string, bool>>(bytes, n); break;
    case 7: ReadAs<Sample>(bytes, n); break;
    case 8: ReadAs<std::vector<std::vector<uint8_t>>>(bytes, n); break;
    case 9: ReadAs<std::unordered_map<int64_t, std::pair<float, std::string>>>(bytes, n); break;
  }
  return 0;
}
