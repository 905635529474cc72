#include "core/generator_streams.h"

#include "core/object_table.h"

namespace orb {
namespace {

ObjectID ItemId(const std::string& task_id, int64_t index) {
  return ObjectID::ForTaskReturn(TaskID::FromBinary(task_id), static_cast<uint32_t>(2 + index));
}

}  // namespace

void GeneratorStreams::Add(const rpc::TaskSpec& spec) {
  std::string task_id = spec.task_id();
  {
    std::lock_guard<std::mutex> lock(mu_);
    Stream& stream = streams_[task_id];
    stream.spec.set_task_id(task_id);
    stream.spec.set_function_name(spec.function_name());
    stream.spec.set_generator_backpressure(spec.generator_backpressure());
  }
  objects_->OnReady(ObjectID::FromBinary(spec.return_id()), [this, task_id](ObjectValuePtr) { OnEnded(task_id); });
}

void GeneratorStreams::OnItem(const rpc::ReportGeneratorItemRequest& request, std::function<void(bool stop)> answer) {
  ObjectID id = ItemId(request.task_id(), request.index());
  bool stop = false;
  bool kept = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(request.task_id());
    if (it == streams_.end() || it->second.dropped) {
      stop = true;
    } else if (request.index() == it->second.received) {
      Stream& stream = it->second;
      // A new object, ready, held once here until the reader takes it. (No callback
      // runs in these calls: nothing else knows the item yet.)
      objects_->AddPending(id, nullptr,
                           "it is an item of streaming generator '" + stream.spec.function_name() +
                               "', and generator items are not rebuilt");
      objects_->SetReady(id, request.value());
      stream.received++;
      kept = true;
      cv_.notify_all();
      int64_t bound = stream.spec.generator_backpressure();
      if (bound > 0 && stream.received - stream.read >= bound) {
        stream.held_answers.push_back(std::move(answer));  // answered once the reader catches up
        return;
      }
    }
  }
  // Not kept (a retried task's item already here, or nobody reads the stream): its store
  // copy and the refs inside it go, as for any completed object no one references.
  if (!kept) objects_->SetReady(id, request.value());
  answer(stop);
}

GeneratorStreams::Next GeneratorStreams::Read(const std::string& task_id, std::chrono::steady_clock::time_point deadline,
                                              ObjectID* item) {
  std::vector<std::function<void(bool)>> answers;
  {
    std::unique_lock<std::mutex> lock(mu_);
    Stream* stream = nullptr;
    auto ready = [&] {
      auto it = streams_.find(task_id);
      stream = it == streams_.end() ? nullptr : &it->second;
      return !stream || stream->dropped || stream->read < stream->received || stream->ended;
    };
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      cv_.wait(lock, ready);
    } else if (!cv_.wait_until(lock, deadline, ready)) {
      return Next::kTimedOut;
    }
    if (!stream || stream->dropped) return Next::kUnknown;
    if (stream->read == stream->received) {  // ended, and every item taken
      if (item) streams_.erase(task_id);
      return Next::kEnd;
    }
    if (!item) return Next::kItem;  // a peek: the item stays unread
    *item = ItemId(task_id, stream->read);
    stream->read++;
    int64_t bound = stream->spec.generator_backpressure();
    if (bound <= 0 || stream->received - stream->read < bound) answers.swap(stream->held_answers);
  }
  for (auto& answer : answers) answer(false);
  return Next::kItem;
}

void GeneratorStreams::Drop(const std::string& task_id) {
  std::vector<ObjectID> unread;
  std::vector<std::function<void(bool)>> answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(task_id);
    if (it == streams_.end()) return;
    Stream& stream = it->second;
    for (int64_t i = stream.read; i < stream.received; ++i) unread.push_back(ItemId(task_id, i));
    stream.read = stream.received;
    stream.dropped = true;
    answers.swap(stream.held_answers);
    if (stream.ended) streams_.erase(it);
    cv_.notify_all();
  }
  for (const ObjectID& id : unread) objects_->RemoveLocalRef(id);
  for (auto& answer : answers) answer(true);
}

void GeneratorStreams::OnEnded(const std::string& task_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(task_id);
  if (it == streams_.end()) return;
  it->second.ended = true;
  if (it->second.dropped) streams_.erase(it);
  cv_.notify_all();
}

size_t GeneratorStreams::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

}  // namespace orb
