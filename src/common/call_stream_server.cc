#include "common/call_stream_server.h"

#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/call_stream_protocol.h"
#include "common/rpc.h"
#include "common/sockets.h"

namespace orb {

namespace cs = call_stream;

class CallStreamServer::Connection {
 public:
  explicit Connection(int fd) : fd_(fd), accepted_(std::chrono::steady_clock::now()) {}
  ~Connection() { ::close(fd_); }

  int fd() const { return fd_; }
  std::chrono::steady_clock::time_point accepted() const { return accepted_; }
  cs::FrameReader& reader() { return reader_; }
  // Held by whoever reads the socket: the polling thread, or the heartbeat thread taking
  // a hello while the polling thread is busy.
  std::mutex& read_mu() { return read_mu_; }
  std::atomic<bool> authenticated{false};  // set under read_mu, read by the heartbeat thread

  // Writes one frame whole; on failure the connection is shut (the poller drops it).
  void Send(cs::Kind kind, uint8_t code, uint64_t call_id, std::string_view payload) {
    std::string frame = cs::EncodeFrame(kind, code, call_id, payload);
    std::lock_guard<std::mutex> lock(write_mu_);
    if (broken_) return;
    if (!WriteAll(fd_, frame.data(), frame.size())) {
      broken_ = true;
      ::shutdown(fd_, SHUT_RDWR);
    }
  }
  // Answers with an error frame for the whole connection, then shuts it.
  void Refuse(absl::StatusCode code, const std::string& why) {
    Send(cs::kError, static_cast<uint8_t>(code), 0, why);
    std::lock_guard<std::mutex> lock(write_mu_);
    broken_ = true;
    ::shutdown(fd_, SHUT_RDWR);
  }

 private:
  const int fd_;  // closed only when the last Responder lets go, so it is never reused early
  const std::chrono::steady_clock::time_point accepted_;
  cs::FrameReader reader_;  // guarded by read_mu_
  std::mutex read_mu_;
  std::mutex write_mu_;
  bool broken_ = false;  // guarded by write_mu_
};

CallStreamServer::Responder::Responder(std::shared_ptr<Connection> connection, uint64_t call_id)
    : connection_(std::move(connection)), call_id_(call_id) {}

void CallStreamServer::Responder::Reply(std::string_view payload) {
  if (payload.size() > cs::kMaxPayloadBytes) {
    return Fail(absl::ResourceExhaustedError("the reply of " + std::to_string(payload.size()) +
                                             " bytes is over the call stream's limit"));
  }
  connection_->Send(cs::kReply, 0, call_id_, payload);
}

void CallStreamServer::Responder::Fail(const absl::Status& status) {
  connection_->Send(cs::kError, static_cast<uint8_t>(status.code()), call_id_,
                    std::string_view(status.message().data(), status.message().size()));
}

absl::StatusOr<std::unique_ptr<CallStreamServer>> CallStreamServer::Start(Options options, Handler handler) {
  auto server = std::unique_ptr<CallStreamServer>(new CallStreamServer(std::move(options), std::move(handler)));
  server->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  server->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (server->epoll_fd_ < 0 || server->wake_fd_ < 0) {
    return absl::InternalError(std::string("call stream: ") + std::strerror(errno));
  }
  auto watch = [&](int fd) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    ::epoll_ctl(server->epoll_fd_, EPOLL_CTL_ADD, fd, &event);
  };
  watch(server->wake_fd_);
  if (!server->options_.unix_path.empty()) {
    auto listener = ListenUnix(server->options_.unix_path, "call stream");
    if (!listener.ok()) return listener.status();
    server->unix_listener_ = listener->fd;
    watch(listener->fd);
  }
  if (!server->options_.tcp_ip.empty()) {
    auto listener = ListenTcp(server->options_.tcp_ip, 0, "call stream");
    if (!listener.ok()) return listener.status();
    server->tcp_listener_ = listener->fd;
    server->port_ = listener->port;
    watch(listener->fd);
  }
  // Non-blocking: both threads may accept, and the one that finds none goes on.
  for (int fd : {server->unix_listener_, server->tcp_listener_}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  if (server->options_.heartbeat_interval.count() > 0) {
    server->heartbeat_thread_ = std::thread([s = server.get()] { s->Heartbeats(); });
  }
  return server;
}

CallStreamServer::CallStreamServer(Options options, Handler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {}

CallStreamServer::~CallStreamServer() {
  {
    std::lock_guard<std::mutex> lock(heartbeat_mu_);
    stopping_ = true;
  }
  heartbeat_cv_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  std::lock_guard<std::mutex> lock(connections_mu_);
  for (auto& [fd, connection] : connections_) ::shutdown(fd, SHUT_RDWR);
  connections_.clear();
  for (int fd : {unix_listener_, tcp_listener_, wake_fd_, epoll_fd_}) {
    if (fd >= 0) ::close(fd);
  }
  if (unix_listener_ >= 0) ::unlink(options_.unix_path.c_str());
}

void CallStreamServer::Heartbeats() {
  std::unique_lock<std::mutex> lock(heartbeat_mu_);
  while (!heartbeat_cv_.wait_for(lock, options_.heartbeat_interval, [this] { return stopping_; })) {
    std::vector<std::shared_ptr<Connection>> live;
    for (auto it = to_ping_.begin(); it != to_ping_.end();) {
      if (auto connection = it->lock()) {
        live.push_back(std::move(connection));
        ++it;
      } else {
        it = to_ping_.erase(it);
      }
    }
    lock.unlock();
    // New callers while the polling thread is busy: accepted here (greeted from the
    // next round on, as every connection to ping).
    for (int listener : {unix_listener_, tcp_listener_}) {
      if (listener < 0) continue;
      while (Accept(listener)) {
      }
    }
    auto now = std::chrono::steady_clock::now();
    for (const auto& connection : live) {
      if (!connection->authenticated) TakeHello(*connection);
      if (connection->authenticated) {
        connection->Send(cs::kPing, 0, 0, {});
      } else if (now - connection->accepted() > options_.hello_timeout) {
        spdlog::warn("call stream: closing a connection that showed no token in time");
        connection->Refuse(absl::StatusCode::kUnauthenticated, "no cluster token within " +
                                                                   std::to_string(options_.hello_timeout.count()) + " ms");
      }
    }
    live.clear();  // the last reference may close a socket: not under the lock
    lock.lock();
  }
}

void CallStreamServer::Wake() {
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void CallStreamServer::PollOnce(int timeout_ms) {
  epoll_event events[32];
  int n = ::epoll_wait(epoll_fd_, events, 32, timeout_ms);
  for (int i = 0; i < n; ++i) {
    int fd = events[i].data.fd;
    if (fd == wake_fd_) {
      uint64_t count;
      (void)!::read(wake_fd_, &count, sizeof(count));
    } else if (fd == unix_listener_ || fd == tcp_listener_) {
      Accept(fd);
    } else {
      std::shared_ptr<Connection> connection;
      {
        std::lock_guard<std::mutex> lock(connections_mu_);
        auto it = connections_.find(fd);
        if (it != connections_.end()) connection = it->second;
      }
      if (!connection) continue;
      bool open;
      {
        std::lock_guard<std::mutex> reading(connection->read_mu());
        open = Read(connection);
      }
      if (!open) Drop(fd);
    }
  }
}

bool CallStreamServer::Accept(int listener) {
  int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return false;
  std::unique_lock<std::mutex> connections(connections_mu_);
  size_t waiting = 0;
  for (const auto& [other, connection] : connections_) waiting += !connection->authenticated;
  if (waiting >= options_.max_unauthenticated) {
    connections.unlock();
    spdlog::warn("call stream: refusing a connection: {} others have not shown the token yet", waiting);
    ::close(fd);
    return true;
  }
  ConfigureTcp(fd, 10);
  timeval send_timeout{options_.send_timeout_seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.fd = fd;
  auto connection = std::make_shared<Connection>(fd);
  connections_[fd] = connection;  // before the poll can report it
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    connections_.erase(fd);  // closes it
    return true;
  }
  connections.unlock();
  std::lock_guard<std::mutex> lock(heartbeat_mu_);
  to_ping_.push_back(connection);
  return true;
}

void CallStreamServer::TakeHello(Connection& connection) {
  std::unique_lock<std::mutex> reading(connection.read_mu(), std::try_to_lock);
  if (!reading.owns_lock() || connection.authenticated || connection.reader().partial_bytes() > 0) return;
  cs::FrameHeader header;
  if (::recv(connection.fd(), &header, sizeof(header), MSG_PEEK | MSG_DONTWAIT) != sizeof(header)) return;
  if (header.magic != cs::kMagic || header.kind != cs::kHello || header.length > cs::kMaxTokenBytes) return;
  std::string frame(sizeof(header) + header.length, '\0');
  ssize_t n = ::recv(connection.fd(), frame.data(), frame.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n != static_cast<ssize_t>(frame.size())) return;  // not whole yet: the polling thread reads it later
  if (!TokenMatches(std::string_view(frame).substr(sizeof(header)), options_.token)) return;  // refused there
  // Taken off the socket: only this frame, so the requests after it wake the poll.
  if (::recv(connection.fd(), frame.data(), frame.size(), MSG_DONTWAIT) == n) connection.authenticated = true;
}

bool CallStreamServer::Read(const std::shared_ptr<Connection>& shared) {
  Connection& connection = *shared;
  while (true) {
    size_t room = 0;
    char* into = connection.reader().Reserve(64 * 1024, &room);
    ssize_t n = ::recv(connection.fd(), into, room, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) {
      if (connection.reader().partial_bytes() > 0) {
        spdlog::debug("call stream: a peer closed mid-frame ({} bytes of it came)", connection.reader().partial_bytes());
      }
      return false;
    }
    connection.reader().Commit(static_cast<size_t>(n));
    if (!Dispatch(shared)) return false;
    // A short read took all there was: the poll says when more comes (one recv fewer).
    if (static_cast<size_t>(n) < room) return true;
  }
}

bool CallStreamServer::Dispatch(const std::shared_ptr<Connection>& shared) {
  Connection& connection = *shared;
  while (true) {
    cs::FrameReader::Frame frame;
    std::string why;
    switch (connection.reader().Next(&frame, &why)) {
      case cs::FrameReader::Result::kNeedMore:
        return true;
      case cs::FrameReader::Result::kMalformed:
        spdlog::warn("call stream: closing a connection that sent a malformed frame: {}", why);
        connection.Refuse(absl::StatusCode::kInvalidArgument, "malformed frame: " + why);
        return false;
      case cs::FrameReader::Result::kFrame:
        break;
    }
    if (!connection.authenticated) {
      if (frame.kind != cs::kHello || frame.payload.size() > cs::kMaxTokenBytes ||
          !TokenMatches(frame.payload, options_.token)) {
        spdlog::warn("call stream: refusing a connection without the cluster token");
        connection.Refuse(absl::StatusCode::kUnauthenticated,
                          frame.kind == cs::kHello ? "wrong cluster token"
                                                   : "the first frame must present the cluster token");
        return false;
      }
      connection.authenticated = true;
      continue;
    }
    if (frame.kind != cs::kRequest) {
      connection.Refuse(absl::StatusCode::kInvalidArgument,
                        "malformed frame: a client may send only requests after its hello");
      return false;
    }
    handler_(frame.code, frame.payload, Responder(shared, frame.call_id));
  }
}

void CallStreamServer::Drop(int fd) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::shutdown(fd, SHUT_RDWR);
  std::lock_guard<std::mutex> lock(connections_mu_);
  connections_.erase(fd);
}

}  // namespace orb
