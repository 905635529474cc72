#include "core/store_client.h"

#include <cstring>

namespace orb {
namespace {

class StoreBuffer : public internal::ValueBuffer {
 public:
  StoreBuffer(std::shared_ptr<ShmArena> arena, const char* data, size_t size, std::function<void()> release)
      : arena_(std::move(arena)), data_(data), size_(size), release_(std::move(release)) {}
  ~StoreBuffer() override { release_(); }
  const char* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  std::shared_ptr<ShmArena> arena_;  // mapped while any view lives
  const char* data_;
  size_t size_;
  std::function<void()> release_;
};

}  // namespace

StoreClient::StoreClient(RpcClient<rpc::RayletService>* raylet, WorkerID self, std::unique_ptr<ShmArena> arena)
    : raylet_(raylet),
      self_(self),
      arena_(std::move(arena)),
      releases_(std::make_shared<ReleaseChannel>()) {
  releases_->raylet = raylet;
}

StoreClient::~StoreClient() {
  std::lock_guard<std::mutex> lock(releases_->mu);
  releases_->raylet = nullptr;
}

absl::Status StoreClient::Put(const ObjectID& id, const std::string& bytes, const rpc::Address& owner) {
  return PutWith(id, bytes.size(), owner, [&bytes](char* out) { std::memcpy(out, bytes.data(), bytes.size()); });
}

absl::Status StoreClient::PutWith(const ObjectID& id, size_t size, const rpc::Address& owner,
                                  const std::function<void(char*)>& write) {
  rpc::CreateObjectRequest create;
  create.set_object_id(id.Binary());
  create.set_size(static_cast<int64_t>(size));
  *create.mutable_owner() = owner;
  create.set_writer_worker_id(self_.Binary());
  auto created = raylet_->CallSync<rpc::CreateObjectReply>(ORB_RPC(CreateObject), create);
  if (!created.ok()) return created.status();
  if (created->error().type() == rpc::OBJECT_STORE_FULL) return absl::ResourceExhaustedError(created->error().message());
  if (created->error().type() == rpc::OUT_OF_DISK) return absl::FailedPreconditionError(created->error().message());
  if (created->already_exists()) return absl::OkStatus();  // a retried task wrote it before
  uint64_t offset = static_cast<uint64_t>(created->offset());
  if (offset + size > arena_->size()) return absl::InternalError("raylet returned an offset outside the arena");
  write(reinterpret_cast<char*>(arena_->data() + offset));
  rpc::SealObjectRequest seal;
  seal.set_object_id(id.Binary());
  auto sealed = raylet_->CallSync<rpc::SealObjectReply>(ORB_RPC(SealObject), seal);
  return sealed.ok() ? absl::OkStatus() : sealed.status();
}

absl::StatusOr<std::shared_ptr<internal::ValueBuffer>> StoreClient::Get(const ObjectID& id, int64_t timeout_ms) {
  rpc::GetObjectsRequest request;
  request.add_object_ids(id.Binary());
  request.set_worker_id(self_.Binary());
  request.set_timeout_ms(static_cast<int32_t>(std::min<int64_t>(timeout_ms < 0 ? 60000 : timeout_ms, 60000)));
  CallOptions options;
  options.timeout = std::chrono::milliseconds(request.timeout_ms() + 10000);
  auto reply = raylet_->CallSync<rpc::GetObjectsReply>(ORB_RPC(GetObjects), request, options);
  if (!reply.ok()) return reply.status();
  if (reply->objects_size() != 1) return absl::InternalError("the raylet answered a Get of one object with " +
                                                            std::to_string(reply->objects_size()));
  if (!reply->objects(0).found()) {
    const rpc::ErrorInfo& error = reply->objects(0).error();
    switch (error.type()) {
      case rpc::ERROR_NONE:
        return absl::NotFoundError("object " + id.Hex() + " is not in this node's object store");
      case rpc::OBJECT_STORE_FULL:
        return absl::ResourceExhaustedError(error.message());
      case rpc::OUT_OF_DISK:
        return absl::FailedPreconditionError(error.message());
      default:
        return absl::DataLossError(error.message());
    }
  }
  const auto& loc = reply->objects(0);
  return View(id, static_cast<uint64_t>(loc.offset()), static_cast<uint64_t>(loc.size()));
}

absl::StatusOr<std::shared_ptr<internal::ValueBuffer>> StoreClient::View(const ObjectID& id, uint64_t offset,
                                                                         uint64_t size) {
  if (offset + size > arena_->size()) return absl::InternalError("raylet returned a location outside the arena");
  std::string worker = self_.Binary();
  std::string binary = id.Binary();
  return std::shared_ptr<internal::ValueBuffer>(std::make_shared<StoreBuffer>(
      arena_, reinterpret_cast<const char*>(arena_->data() + offset), static_cast<size_t>(size),
      [channel = releases_, worker, binary] {
        std::lock_guard<std::mutex> lock(channel->mu);
        if (channel->raylet == nullptr) return;  // shut down: the raylet drops this worker's pins
        rpc::ReleaseObjectsRequest release;
        release.add_object_ids(binary);
        release.set_worker_id(worker);
        // Not retried: a release is not idempotent (a repeat could drop another pin of
        // this worker's). A lost one keeps the object at most until this worker ends,
        // when its raylet drops its pins.
        channel->raylet->Call<rpc::ReleaseObjectsReply>(ORB_RPC(ReleaseObjects), release,
                                               [](const absl::Status&, rpc::ReleaseObjectsReply&&) {});
      }));
}

absl::StatusOr<std::shared_ptr<internal::ValueBuffer>> StoreClient::Pull(const ObjectID& id, const NodeID& source,
                                                                         uint64_t size, const WorkerID& owner) {
  rpc::PullObjectRequest request;
  request.set_object_id(id.Binary());
  request.set_source_node_id(source.Binary());
  request.set_size(static_cast<int64_t>(size));
  request.set_worker_id(self_.Binary());
  if (!owner.IsNil()) request.set_owner_worker_id(owner.Binary());
  CallOptions call;
  call.timeout = std::chrono::minutes(10);  // large objects over slow links
  auto reply = raylet_->CallSync<rpc::PullObjectReply>(ORB_RPC(PullObject), request, call);
  if (!reply.ok()) return reply.status();
  if (reply->error().type() == rpc::OBJECT_STORE_FULL) return absl::ResourceExhaustedError(reply->error().message());
  if (reply->error().type() != rpc::ERROR_NONE || !reply->location().found()) {
    return absl::NotFoundError(reply->error().message().empty() ? "object " + id.Hex() + " could not be pulled"
                                                                : reply->error().message());
  }
  return View(id, static_cast<uint64_t>(reply->location().offset()), static_cast<uint64_t>(reply->location().size()));
}

void StoreClient::Delete(const ObjectID& id, const NodeID& primary) {
  rpc::DeleteObjectsRequest request;
  request.add_object_ids(id.Binary());
  request.add_primary_node_ids(primary.IsNil() ? std::string() : primary.Binary());
  raylet_->Call<rpc::DeleteObjectsReply>(
      ORB_RPC(DeleteObjects), request, [](const absl::Status&, rpc::DeleteObjectsReply&&) {}, CallOptions::Retried());
}

}  // namespace orb
