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
  objects_->OnReady(ObjectID::FromBinary(spec.return_id()),
                    [this, task_id](ObjectValuePtr result) { OnEnded(task_id, result); });
}

void GeneratorStreams::OnItem(const rpc::ReportGeneratorItemRequest& request, std::function<void(bool stop)> answer) {
  ObjectID id = ItemId(request.task_id(), request.index());
  bool stop = false;
  bool kept = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(request.task_id());
    if (it == streams_.end()) {
      stop = true;  // not a stream of this process (any more): nothing will read it
    } else if (it->second.dropped) {
      // The reader went away: the generator runs on to its end (as Ray's; orb.cancel
      // stops it), and its items go at once.
    } else if (request.index() == it->second.received) {
      Stream& stream = it->second;
      // A new object, ready, held once here until the reader takes it. (No callback
      // runs in these calls: nothing else knows the item yet.) One peeked ahead is
      // pending already, and the reader's refs to it wake.
      if (request.index() >= stream.reserved) {
        objects_->AddPending(id, nullptr,
                             "it is an item of streaming generator '" + stream.spec.function_name() +
                                 "', and generator items are not rebuilt");
      }
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
  std::vector<ObjectID> released;
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
      if (item) {
        ReleaseReserved(task_id, *stream, &released);
        streams_.erase(task_id);
      }
      lock.unlock();
      for (const ObjectID& id : released) objects_->RemoveLocalRef(id);
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
    ReleaseReserved(task_id, stream, &unread);
    stream.read = stream.received;
    stream.dropped = true;
    answers.swap(stream.held_answers);
    if (stream.ended) streams_.erase(it);
    cv_.notify_all();
  }
  for (const ObjectID& id : unread) objects_->RemoveLocalRef(id);
  for (auto& answer : answers) answer(false);
}

void GeneratorStreams::OnEnded(const std::string& task_id, const std::shared_ptr<const rpc::ObjectValue>& result) {
  std::vector<std::pair<ObjectID, rpc::ObjectValue>> never_came;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(task_id);
    if (it == streams_.end()) return;
    Stream& stream = it->second;
    stream.ended = true;
    stream.result = result;
    for (int64_t i = stream.received; i < stream.reserved; ++i) never_came.emplace_back(ItemId(task_id, i), NeverCame(stream));
    if (stream.dropped) streams_.erase(it);
    cv_.notify_all();
  }
  for (auto& [id, value] : never_came) objects_->SetReady(id, std::move(value));
}

std::vector<ObjectID> GeneratorStreams::Peek(const std::string& task_id, int64_t n) {
  std::vector<ObjectID> out;
  std::vector<std::pair<ObjectID, rpc::ObjectValue>> never_coming;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(task_id);
    if (it == streams_.end() || it->second.dropped) return out;
    Stream& stream = it->second;
    for (int64_t i = stream.read; i < stream.read + n; ++i) {
      ObjectID id = ItemId(task_id, i);
      if (i >= stream.received && i >= stream.reserved) {
        objects_->AddPending(id, nullptr,
                             "it is an item of streaming generator '" + stream.spec.function_name() +
                                 "', and generator items are not rebuilt");  // the stream's hold
        stream.reserved = i + 1;
        if (stream.ended) never_coming.emplace_back(id, NeverCame(stream));  // it will never come
      }
      objects_->AddLocalRef(id);  // the reader's
      out.push_back(id);
    }
  }
  for (auto& [id, value] : never_coming) objects_->SetReady(id, std::move(value));
  return out;
}

rpc::ObjectValue GeneratorStreams::NeverCame(const Stream& stream) {
  rpc::ObjectValue end;
  if (stream.result && stream.result->has_error()) {
    *end.mutable_error() = stream.result->error();
  } else {
    end.mutable_error()->set_type(rpc::END_OF_STREAM);
    end.mutable_error()->set_message("generator '" + stream.spec.function_name() + "' ended after " +
                                     std::to_string(stream.received) + " item(s), before this one");
  }
  return end;
}

void GeneratorStreams::ReleaseReserved(const std::string& task_id, Stream& stream, std::vector<ObjectID>* released) {
  for (int64_t i = stream.received; i < stream.reserved; ++i) released->push_back(ItemId(task_id, i));
}

size_t GeneratorStreams::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

}  // namespace orb
