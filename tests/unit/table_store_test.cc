#include <catch2/catch.hpp>
#include <filesystem>

#include "gcs/space_guarded_table_store.h"
#include "gcs/table_store.h"

using namespace orb::gcs;

namespace {
void Exercise(TableStore& store) {
  REQUIRE(store.Put("kv", "a/1", "one").ok());
  REQUIRE(store.Put("kv", "a/2", "two").ok());
  REQUIRE(store.Put("kv", "b/1", "three").ok());
  REQUIRE(store.Put("job", "a/9", "other table").ok());
  auto v = store.Get("kv", "a/2");
  REQUIRE(v.ok());
  CHECK(v->value() == "two");
  CHECK_FALSE(store.Get("kv", "missing")->has_value());
  auto rows = store.Scan("kv", "a/");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].first == "a/1");
  REQUIRE(store.Delete("kv", "a/1").ok());
  CHECK(store.Scan("kv", "a/")->size() == 1);
}
}  // namespace

TEST_CASE("the in-memory table store keeps tables apart and scans by prefix", "[gcs]") {
  auto store = NewInMemoryTableStore();
  Exercise(*store);
}

TEST_CASE("the RocksDB table store behaves the same and survives reopening", "[gcs]") {
  auto dir = std::filesystem::temp_directory_path() / ("orb-rocks-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    auto store = OpenRocksDbTableStore(dir.string());
    REQUIRE(store.ok());
    Exercise(**store);
  }
  auto reopened = OpenRocksDbTableStore(dir.string());
  REQUIRE(reopened.ok());
  CHECK((*reopened)->Get("kv", "b/1")->value() == "three");
  CHECK_FALSE((*reopened)->Get("kv", "a/1")->has_value());
  std::filesystem::remove_all(dir);
}

TEST_CASE("a store on a nearly full disk refuses writes with the reason, and still reads", "[gcs]") {
  uint64_t free_bytes = 100 << 20;
  SpaceGuardedTableStore store(NewInMemoryTableStore(), "/var/orb/storage", 64 << 20,
                               [&](const std::string&) -> absl::StatusOr<uint64_t> { return free_bytes; });
  Exercise(store);
  REQUIRE(store.Put("kv", "kept", "before").ok());
  free_bytes = 1 << 20;
  absl::Status refused = store.Put("kv", "lost", "after");
  CHECK(refused.code() == absl::StatusCode::kResourceExhausted);
  CHECK_THAT(std::string(refused.message()), Catch::Contains("no space left on /var/orb/storage") &&
                                                 Catch::Contains("1048576 bytes free") &&
                                                 Catch::Contains("the write was not made"));
  CHECK_FALSE(store.Delete("kv", "kept").ok());
  CHECK(store.Get("kv", "kept")->value() == "before");
  CHECK_FALSE(store.Get("kv", "lost")->has_value());
  free_bytes = 100 << 20;
  CHECK(store.Put("kv", "lost", "after").ok());  // room again: writes go through
}
