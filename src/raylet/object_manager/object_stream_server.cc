#include "raylet/object_manager/object_stream_server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/metrics.h"
#include "common/rpc.h"
#include "common/sockets.h"
#include "raylet/object_manager/object_stream_protocol.h"

namespace orb {

namespace os = object_stream;

absl::StatusOr<std::unique_ptr<ObjectStreamServer>> ObjectStreamServer::Start(const std::string& bind_ip, int port,
                                                                               std::string token,
                                                                               ObjectStreamSource source) {
  auto listener = ListenTcp(bind_ip, port, "object stream");
  if (!listener.ok()) return listener.status();
  auto server = std::unique_ptr<ObjectStreamServer>(new ObjectStreamServer(listener->fd, listener->port, std::move(token), source));
  server->acceptor_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

ObjectStreamServer::ObjectStreamServer(int listener, int port, std::string token, ObjectStreamSource source)
    : listener_(listener), port_(port), token_(std::move(token)), source_(std::move(source)) {}

ObjectStreamServer::~ObjectStreamServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
    for (int fd : unauthenticated_) ::shutdown(fd, SHUT_RDWR);
  }
  ::shutdown(listener_, SHUT_RDWR);  // wakes accept()
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listener_);
  std::unique_lock<std::mutex> lock(mu_);
  drained_.wait(lock, [this] { return serving_ == 0; });
}

void ObjectStreamServer::AcceptLoop() {
  while (true) {
    int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    if (unauthenticated_.size() >= kMaxUnauthenticated) {
      // The oldest has had the longest to send its token: it goes (its thread closes it).
      ::shutdown(unauthenticated_.front(), SHUT_RDWR);
      unauthenticated_.pop_front();
      IncrementCounter("object_stream_unauthenticated_evicted");
    }
    os::ConfigureSocket(fd, kTokenDeadlineSeconds);
    unauthenticated_.push_back(fd);
    serving_++;
    std::thread([this, fd] { Serve(fd); }).detach();
  }
}

void ObjectStreamServer::Serve(int fd) {
  WorkerID reader = WorkerID::FromRandom();  // this connection's pins
  bool authenticated = false;
  while (ServeOne(fd, reader, &authenticated)) {
  }
  Forget(fd);
}

bool ObjectStreamServer::Admit(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  if (connections_.size() >= kMaxConnections) return false;
  unauthenticated_.remove(fd);
  connections_.insert(fd);
  os::ConfigureSocket(fd, kIdleMemberSeconds);
  return true;
}

void ObjectStreamServer::Forget(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  ::close(fd);
  connections_.erase(fd);
  unauthenticated_.remove(fd);  // no-op when it was evicted (the list holds it no more)
  serving_--;
  drained_.notify_all();
}

bool ObjectStreamServer::ServeOne(int fd, const WorkerID& reader, bool* authenticated) {
  os::RequestHeader request;
  if (!ReadAll(fd, &request, sizeof(request))) return false;  // closed, or no request in time
  auto answer = [fd](os::Status status, uint64_t length) {
    os::ResponseHeader response{status, length};
    return WriteAll(fd, &response, sizeof(response));
  };
  if (request.magic != os::kMagic || request.version != os::kVersion || request.token_bytes > os::kMaxTokenBytes) {
    IncrementCounter("object_stream_malformed");
    answer(os::kMalformed, 0);
    return false;
  }
  std::string token(request.token_bytes, '\0');
  if (!ReadAll(fd, token.data(), token.size())) return false;
  if (!TokenMatches(token, token_)) {
    IncrementCounter("object_stream_rejected_unauthenticated");
    answer(os::kUnauthenticated, 0);
    return false;
  }
  if (!*authenticated) {
    if (!Admit(fd)) {
      IncrementCounter("object_stream_busy");
      answer(os::kBusy, 0);
      return false;
    }
    *authenticated = true;
  }
  ObjectID id = ObjectID::FromBinary(std::string(request.object_id, os::kObjectIdBytes));
  ObjectLocationInArena where = source_.pin(id, reader);
  if (!where.found) {
    // No room to read it back from disk is transient; a damaged file is a loss.
    bool no_room = absl::IsResourceExhausted(where.unreadable) || absl::IsFailedPrecondition(where.unreadable);
    return answer(no_room ? os::kNoRoom : os::kNotFound, 0);
  }
  if (request.offset > where.size || request.length > where.size - request.offset) {
    source_.unpin(id, reader);
    IncrementCounter("object_chunk_requests_rejected");
    return answer(os::kOutOfRange, 0);
  }
  bool sent = answer(os::kOk, request.length) &&
              WriteAll(fd, source_.arena + where.offset + request.offset, request.length);
  source_.unpin(id, reader);
  if (sent) IncrementCounter("object_transfer_sent_bytes", static_cast<int64_t>(request.length));
  return sent;
}

}  // namespace orb
