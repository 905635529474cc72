// A task's several returns completed from one result, objects that call back when freed
// (actor lifetime), and the owner's streams of generator items.
#include <catch2/catch.hpp>

#include <chrono>

#include "core/generator_streams.h"
#include "core/object_table.h"
#include "core/task_returns.h"

using namespace orb;

namespace {

rpc::ObjectValue Inline(const std::string& bytes) {
  rpc::ObjectValue v;
  v.set_inline_value(bytes);
  return v;
}

rpc::TaskSpec SpecWithReturns(int n) {
  rpc::TaskSpec spec;
  TaskID task = TaskID::FromRandom();
  spec.set_task_id(task.Binary());
  spec.set_return_id(ObjectID::ForTaskReturn(task, 1).Binary());
  spec.set_num_returns(n);
  spec.set_function_name("f");
  return spec;
}

std::string ValueOf(const ObjectTable& table, const ObjectID& id) {
  auto value = table.GetIfReady(id);
  if (!value) return "<pending>";
  return value->has_error() ? "error: " + value->error().message() : value->inline_value();
}

auto Soon() { return std::chrono::steady_clock::now() + std::chrono::milliseconds(50); }

}  // namespace

TEST_CASE("each return of a task gets its own value, and a failure fails them all", "[task_returns]") {
  ObjectTable table([](const ObjectID&, const std::string&) {});
  rpc::TaskSpec spec = SpecWithReturns(3);
  std::vector<ObjectID> ids = ReturnIds(spec);
  REQUIRE(ids.size() == 3);
  CHECK(ids[0] == ObjectID::FromBinary(spec.return_id()));
  CHECK(ids[1] == ObjectID::ForTaskReturn(TaskID::FromBinary(spec.task_id()), 2));
  for (const auto& id : ids) table.AddPending(id);
  MoreReturnValues more;
  *more.Add() = Inline("b");
  *more.Add() = Inline("c");
  SetReturnsReady(&table, spec, Inline("a"), std::move(more));
  CHECK(ValueOf(table, ids[0]) == "a");
  CHECK(ValueOf(table, ids[1]) == "b");
  CHECK(ValueOf(table, ids[2]) == "c");

  rpc::TaskSpec failing = SpecWithReturns(2);
  for (const auto& id : ReturnIds(failing)) table.AddPending(id);
  rpc::ObjectValue error;
  error.mutable_error()->set_type(rpc::TASK_ERROR);
  error.mutable_error()->set_message("boom");
  SetReturnsReady(&table, failing, error, {});
  for (const auto& id : ReturnIds(failing)) CHECK(ValueOf(table, id) == "error: boom");

  rpc::TaskSpec short_handed = SpecWithReturns(2);  // a worker that handed back one value
  for (const auto& id : ReturnIds(short_handed)) table.AddPending(id);
  SetReturnsReady(&table, short_handed, Inline("only"), {});
  CHECK(ValueOf(table, ReturnId(short_handed, 2)).find("num_returns=2") != std::string::npos);
}

TEST_CASE("an object's on-free callback runs once, when its last hold goes", "[object_table]") {
  ObjectTable table([](const ObjectID&, const std::string&) {});
  ObjectID id = ObjectID::FromRandom();
  table.AddReady(id, Inline("handle"));
  int freed = 0;
  REQUIRE(table.OnFree(id, [&] { freed++; }));
  table.AddTaskRef(id);       // a call in flight holds it
  table.RemoveLocalRef(id);   // the last handle goes...
  CHECK(freed == 0);          // ...but the call still holds it
  REQUIRE(table.UpdateBorrower(id, "10.0.0.2:5000", 1));
  table.RemoveTaskRef(id);
  CHECK(freed == 0);  // a borrower (a handle in another process) holds it
  REQUIRE(table.UpdateBorrower(id, "10.0.0.2:5000", -1));
  CHECK(freed == 1);
  CHECK_FALSE(table.OnFree(id, [] {}));  // gone
}

TEST_CASE("generator items reach the reader in order, once each, and the stream ends", "[generator_streams]") {
  ObjectTable table([](const ObjectID&, const std::string&) {});
  GeneratorStreams streams(&table);
  rpc::TaskSpec spec = SpecWithReturns(1);
  spec.set_streaming(true);
  table.AddPending(ObjectID::FromBinary(spec.return_id()));
  streams.Add(spec);
  auto item = [&](int64_t index, const std::string& value) {
    rpc::ReportGeneratorItemRequest request;
    request.set_task_id(spec.task_id());
    request.set_index(index);
    *request.mutable_value() = Inline(value);
    bool stop = true;
    streams.OnItem(request, [&](bool s) { stop = s; });
    return stop;
  };
  ObjectID got;
  CHECK(streams.Read(spec.task_id(), Soon(), &got) == GeneratorStreams::Next::kTimedOut);
  CHECK_FALSE(item(0, "zero"));
  CHECK_FALSE(item(1, "one"));
  CHECK_FALSE(item(0, "zero again"));  // a retried attempt: not a second item
  REQUIRE(streams.Read(spec.task_id(), Soon(), &got) == GeneratorStreams::Next::kItem);
  CHECK(ValueOf(table, got) == "zero");
  REQUIRE(streams.Read(spec.task_id(), Soon(), &got) == GeneratorStreams::Next::kItem);
  CHECK(ValueOf(table, got) == "one");
  CHECK(streams.Read(spec.task_id(), Soon(), &got) == GeneratorStreams::Next::kTimedOut);
  table.SetReady(ObjectID::FromBinary(spec.return_id()), Inline("2"));  // the task ended
  CHECK(streams.Read(spec.task_id(), Soon(), &got) == GeneratorStreams::Next::kEnd);
  CHECK(streams.size() == 0);
  table.RemoveLocalRef(got);  // the reader's hold on the last item
  CHECK_FALSE(table.IsOwned(got));
}

TEST_CASE("backpressure holds the generator until its reader catches up; a dropped reader releases it",
          "[generator_streams]") {
  ObjectTable table([](const ObjectID&, const std::string&) {});
  GeneratorStreams streams(&table);
  rpc::TaskSpec spec = SpecWithReturns(1);
  spec.set_streaming(true);
  spec.set_generator_backpressure(2);
  table.AddPending(ObjectID::FromBinary(spec.return_id()));
  streams.Add(spec);
  std::vector<int> answered;  // -1: not yet; 0 go on; 1 stop
  auto item = [&](int64_t index) {
    rpc::ReportGeneratorItemRequest request;
    request.set_task_id(spec.task_id());
    request.set_index(index);
    *request.mutable_value() = Inline(std::to_string(index));
    answered.push_back(-1);
    size_t slot = answered.size() - 1;
    streams.OnItem(request, [&answered, slot](bool stop) { answered[slot] = stop ? 1 : 0; });
  };
  item(0);
  CHECK(answered[0] == 0);
  item(1);  // two unread: the generator waits
  CHECK(answered[1] == -1);
  ObjectID got;
  REQUIRE(streams.Read(spec.task_id(), Soon(), &got) == GeneratorStreams::Next::kItem);
  CHECK(answered[1] == 0);
  table.RemoveLocalRef(got);
  item(2);
  CHECK(answered[2] == -1);
  ObjectID unread_1 = ObjectID::ForTaskReturn(TaskID::FromBinary(spec.task_id()), 3);
  ObjectID unread_2 = ObjectID::ForTaskReturn(TaskID::FromBinary(spec.task_id()), 4);
  REQUIRE(table.IsOwned(unread_1));
  // A wait only looks: the item stays unread, the generator still waits.
  CHECK(streams.Read(spec.task_id(), Soon(), nullptr) == GeneratorStreams::Next::kItem);
  CHECK(answered[2] == -1);
  streams.Drop(spec.task_id());
  CHECK(answered[2] == 0);  // released: it runs on, as Ray's
  CHECK_FALSE(table.IsOwned(unread_1));
  CHECK_FALSE(table.IsOwned(unread_2));
  item(3);
  CHECK(answered[3] == 0);
  CHECK_FALSE(table.IsOwned(ObjectID::ForTaskReturn(TaskID::FromBinary(spec.task_id()), 5)));
  table.SetReady(ObjectID::FromBinary(spec.return_id()), Inline("4"));
  CHECK(streams.size() == 0);
}

TEST_CASE("items peeked ahead become the item when it comes, else the task's end", "[generator_streams]") {
  ObjectTable table([](const ObjectID&, const std::string&) {});
  GeneratorStreams streams(&table);
  auto stream_of = [&] {
    rpc::TaskSpec spec = SpecWithReturns(1);
    spec.set_streaming(true);
    table.AddPending(ObjectID::FromBinary(spec.return_id()));
    streams.Add(spec);
    return spec;
  };
  auto item = [&](const rpc::TaskSpec& spec, int64_t index, const std::string& value) {
    rpc::ReportGeneratorItemRequest request;
    request.set_task_id(spec.task_id());
    request.set_index(index);
    *request.mutable_value() = Inline(value);
    streams.OnItem(request, [](bool) {});
  };
  // Ended well after one item: the second peeked is the end of the stream.
  rpc::TaskSpec ok = stream_of();
  std::vector<ObjectID> peeked = streams.Peek(ok.task_id(), 2);
  REQUIRE(peeked.size() == 2);
  CHECK_FALSE(table.GetIfReady(peeked[0]));
  item(ok, 0, "zero");
  CHECK(ValueOf(table, peeked[0]) == "zero");
  CHECK_FALSE(table.GetIfReady(peeked[1]));
  table.SetReady(ObjectID::FromBinary(ok.return_id()), Inline("1"));
  REQUIRE(table.GetIfReady(peeked[1]));
  CHECK(table.GetIfReady(peeked[1])->error().type() == rpc::END_OF_STREAM);
  ObjectID got;
  REQUIRE(streams.Read(ok.task_id(), Soon(), &got) == GeneratorStreams::Next::kItem);
  CHECK(got == peeked[0]);  // the same item, once
  CHECK(streams.Read(ok.task_id(), Soon(), &got) == GeneratorStreams::Next::kEnd);
  for (const ObjectID& id : peeked) table.RemoveLocalRef(id);
  table.RemoveLocalRef(peeked[0]);  // the read's hold
  CHECK_FALSE(table.IsOwned(peeked[0]));
  CHECK_FALSE(table.IsOwned(peeked[1]));
  // Failed: what was peeked, or is peeked after, is the task's error.
  rpc::TaskSpec failing = stream_of();
  std::vector<ObjectID> early = streams.Peek(failing.task_id(), 1);
  rpc::ObjectValue cancelled;
  cancelled.mutable_error()->set_type(rpc::TASK_CANCELLED);
  cancelled.mutable_error()->set_message("cancelled");
  table.SetReady(ObjectID::FromBinary(failing.return_id()), cancelled);
  CHECK(table.GetIfReady(early[0])->error().type() == rpc::TASK_CANCELLED);
  std::vector<ObjectID> late = streams.Peek(failing.task_id(), 2);
  CHECK(late[0] == early[0]);
  CHECK(table.GetIfReady(late[1])->error().type() == rpc::TASK_CANCELLED);
  CHECK(streams.Peek("not a stream", 1).empty());
}
