#include "raylet/object_manager/object_stream_client.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "common/sockets.h"
#include "raylet/object_manager/object_stream_protocol.h"

namespace orb {

namespace os = object_stream;

ObjectStreamClient::ObjectStreamClient(std::string token, int threads)
    : token_(std::move(token)), threads_(std::make_unique<ThreadPool>(threads)) {}

ObjectStreamClient::~ObjectStreamClient() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (const auto& [fd, address] : open_) ::shutdown(fd, SHUT_RDWR);
  }
  threads_.reset();  // runs what is queued (it fails fast now) and joins
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [fd, address] : open_) ::close(fd);
}

void ObjectStreamClient::Abandon(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  for (auto it = abandoned_.begin(); it != abandoned_.end();) {
    it = now - it->second > std::chrono::minutes(1) ? abandoned_.erase(it) : std::next(it);
  }
  abandoned_[address] = now;
  if (auto idle = idle_.find(address); idle != idle_.end()) {
    for (int fd : idle->second) {
      open_.erase(fd);
      ::close(fd);
    }
    idle_.erase(idle);
  }
  // In use: shut down, so that the fetch blocked on it returns; it closes the socket.
  for (const auto& [fd, where] : open_) {
    if (where == address) ::shutdown(fd, SHUT_RDWR);
  }
}

void ObjectStreamClient::Fetch(const std::string& address, const ObjectID& id, uint64_t offset, uint64_t length,
                               uint8_t* dest, std::function<void(absl::Status)> done) {
  threads_->Post([this, address, id, offset, length, dest, done = std::move(done)] {
    done(FetchNow(address, id, offset, length, dest));
  });
}

absl::Status ObjectStreamClient::FetchNow(const std::string& address, const ObjectID& id, uint64_t offset,
                                          uint64_t length, uint8_t* dest) {
  os::RequestHeader request{};
  request.magic = os::kMagic;
  request.version = os::kVersion;
  request.token_bytes = static_cast<uint32_t>(token_.size());
  std::string binary = id.Binary();
  std::memcpy(request.object_id, binary.data(), os::kObjectIdBytes);
  request.offset = offset;
  request.length = length;
  os::ResponseHeader response{};
  int fd = -1;
  auto started = std::chrono::steady_clock::now();
  // A connection kept from earlier may have been closed by its peer (a restart): then
  // once more on a new one.
  for (int attempt = 0;; ++attempt) {
    absl::Status error;
    bool reused = false;
    fd = Borrow(address, started, &reused, &error);
    if (fd < 0) return error;
    if (WriteAll(fd, &request, sizeof(request)) && WriteAll(fd, token_.data(), token_.size()) &&
        ReadAll(fd, &response, sizeof(response))) {
      break;
    }
    Close(fd);
    if (!reused || attempt > 0) return absl::UnavailableError("the object stream at " + address + " broke off");
  }
  switch (response.status) {
    case os::kOk:
      break;
    case os::kNotFound:
      GiveBack(address, fd);
      return absl::NotFoundError("the node no longer has object " + id.Hex());
    case os::kNoRoom:
      GiveBack(address, fd);
      return absl::ResourceExhaustedError("the node holding object " + id.Hex() +
                                          " has no room to read it back from disk now");
    case os::kOutOfRange:
      GiveBack(address, fd);
      return absl::OutOfRangeError("bytes " + std::to_string(offset) + "+" + std::to_string(length) +
                                   " are not inside object " + id.Hex());
    case os::kBusy:
      Close(fd);
      return absl::UnavailableError("the object stream at " + address + " is busy (every connection in use)");
    case os::kUnauthenticated:
      Close(fd);
      return absl::PermissionDeniedError("the object stream at " + address + " refused the cluster token");
    default:
      Close(fd);
      return absl::DataLossError("the object stream at " + address + " answered status " +
                                 std::to_string(response.status));
  }
  if (response.length != length) {
    Close(fd);
    return absl::DataLossError("the object stream at " + address + " offered " + std::to_string(response.length) +
                               " bytes where " + std::to_string(length) + " were asked for");
  }
  if (!ReadAll(fd, dest, length)) {
    Close(fd);
    return absl::UnavailableError("the object stream at " + address + " broke off mid-range");
  }
  GiveBack(address, fd);
  return absl::OkStatus();
}

int ObjectStreamClient::Borrow(const std::string& address, std::chrono::steady_clock::time_point since,
                               bool* reused, absl::Status* error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      *error = absl::CancelledError("this node is shutting down");
      return -1;
    }
    if (auto gone = abandoned_.find(address); gone != abandoned_.end() && gone->second >= since) {
      *error = absl::UnavailableError("the node serving objects at " + address + " was declared dead");
      return -1;
    }
    auto& idle = idle_[address];
    if (!idle.empty()) {
      int fd = idle.back();
      idle.pop_back();
      *reused = true;
      return fd;
    }
  }
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    *error = absl::InvalidArgumentError("not an ip:port address: " + address);
    return -1;
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), address.c_str() + colon + 1, &hints, &found); rc != 0) {
    *error = absl::UnavailableError("cannot resolve " + address + ": " + ::gai_strerror(rc));
    return -1;
  }
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) os::ConfigureSocket(fd, 60);  // also bounds connect()
  bool connected = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0;
  ::freeaddrinfo(found);
  if (!connected) {
    *error = absl::UnavailableError("cannot connect to the object stream at " + address + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return -1;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    ::close(fd);
    *error = absl::CancelledError("this node is shutting down");
    return -1;
  }
  open_.emplace(fd, address);
  return fd;
}

void ObjectStreamClient::GiveBack(const std::string& address, int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_[address].push_back(fd);
}

void ObjectStreamClient::Close(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(fd);
  ::close(fd);
}

}  // namespace orb
