#include <catch2/catch.hpp>
#include <filesystem>

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
