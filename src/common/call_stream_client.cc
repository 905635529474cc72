#include "common/call_stream_client.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/call_stream_protocol.h"
#include "common/sockets.h"

namespace orb {

namespace cs = call_stream;

struct CallStreamClient::Link {
  ~Link() {
    if (fd >= 0) ::close(fd);  // when nothing can use it any more: never reused early
  }
  std::string endpoint;
  int fd = -1;
  // Held by whoever reads the socket: the call-stream thread, or a caller that waits for
  // its own reply (Assist) while the link is out of the thread's epoll set.
  std::mutex read_mu;
  std::chrono::milliseconds dead_after{0};
  std::mutex mu;
  std::condition_variable idle;
  bool connected = false;  // the connect finished; guarded by mu
  bool broken = false;     // guarded by mu; once set, fd is only the poller's to close
  bool want_write = false; // EPOLLOUT is armed; guarded by mu
  std::string out;         // bytes not yet taken by the socket; guarded by mu
  size_t out_sent = 0;     // of `out`; guarded by mu
  std::unordered_map<uint64_t, Callback> pending;  // guarded by mu
  // When the peer was last heard from (or, the first call after a quiet spell was made).
  std::chrono::steady_clock::time_point last_heard;  // guarded by mu
  cs::FrameReader reader;  // the poller's

  // Arms or disarms EPOLLOUT. REQUIRES: mu held.
  void WatchWrites(int epoll_fd, bool on);
  // Writes what the socket takes now. REQUIRES: mu held, connected. False on an error.
  bool Flush();
  // Marks the link broken; returns the calls it failed, to be called outside mu.
  std::vector<Callback> BreakLocked() {
    broken = true;
    std::vector<Callback> failed;
    for (auto& [id, callback] : pending) failed.push_back(std::move(callback));
    pending.clear();
    idle.notify_all();
    return failed;
  }
};

namespace {

// Whether this thread is reading a link now (its callbacks run inside): it must not
// start reading another's reply from within one.
thread_local bool reading_here = false;

void FailAll(std::vector<CallStreamClient::Callback> callbacks, const absl::Status& status) {
  for (auto& callback : callbacks) callback(status, {});
}

// The process's call-stream thread: connects, writes what callers could not, reads
// replies and runs their callbacks, for every link.
class Poller {
 public:
  static Poller& Instance() {
    static Poller* poller = new Poller();  // never destroyed: its thread may run until exit
    return *poller;
  }
  int epoll_fd() const { return epoll_fd_; }

  void Add(const std::shared_ptr<CallStreamClient::Link>& link) {
    std::lock_guard<std::mutex> lock(mu_);
    links_[link.get()] = link;
    epoll_event event{};
    event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;  // writable: the connect finished
    event.data.ptr = link.get();
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link->fd, &event);
  }

 private:
  Poller() : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {
    std::thread([this] { Run(); }).detach();
  }

  void Run() {
    epoll_event events[64];
    auto next_check = std::chrono::steady_clock::now() + kCheckEvery;
    while (true) {
      int n = ::epoll_wait(epoll_fd_, events, 64, static_cast<int>(kCheckEvery.count()));
      std::unordered_set<CallStreamClient::Link*> finished;
      if (auto now = std::chrono::steady_clock::now(); now >= next_check) {
        next_check = now + kCheckEvery;
        FailSilent(now, &finished);
      }
      for (int i = 0; i < n; ++i) {
        auto* link = static_cast<CallStreamClient::Link*>(events[i].data.ptr);
        std::shared_ptr<CallStreamClient::Link> held;
        {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = links_.find(link);
          if (it == links_.end()) continue;
          held = it->second;
        }
        if (!Serve(*held, events[i].events)) finished.insert(link);
      }
      // Removed only after the round, so that no later event of it names a link gone.
      for (auto* link : finished) Forget(link);
    }
  }

  // Fails the links that have calls in flight and have not been heard from for their
  // dead_after.
  void FailSilent(std::chrono::steady_clock::time_point now, std::unordered_set<CallStreamClient::Link*>* finished) {
    std::vector<std::shared_ptr<CallStreamClient::Link>> links;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [ptr, link] : links_) links.push_back(link);
    }
    for (const auto& link : links) {
      std::unique_lock<std::mutex> lock(link->mu);
      if (link->broken || link->pending.empty() || now - link->last_heard < link->dead_after) continue;
      size_t in_flight = link->pending.size();
      auto failed = link->BreakLocked();
      lock.unlock();
      finished->insert(link.get());
      auto silent = std::chrono::duration_cast<std::chrono::seconds>(now - link->last_heard).count();
      FailAll(std::move(failed),
              absl::UnavailableError(link->endpoint + " sent nothing for " + std::to_string(silent) + " s with " +
                                     std::to_string(in_flight) +
                                     " call(s) in flight: the process is stopped or cannot be reached"));
    }
  }

  // False when the link is finished with.
  bool Serve(CallStreamClient::Link& link, uint32_t events) {
    absl::Status failure;
    {
      std::unique_lock<std::mutex> lock(link.mu);
      if (link.broken) return false;
      if ((events & EPOLLOUT) && !link.connected) {
        if (int error = SocketError(link.fd); error != 0) {
          failure = absl::UnavailableError("cannot connect to " + link.endpoint + ": " + std::strerror(error));
        } else {
          link.connected = true;
        }
      }
      if (failure.ok() && link.connected && (events & EPOLLOUT) && !link.Flush()) {
        failure = absl::UnavailableError("the connection to " + link.endpoint + " broke: " + std::strerror(errno));
      }
      if (failure.ok() && link.connected) link.WatchWrites(epoll_fd_, link.out_sent < link.out.size());
      if (!failure.ok()) {
        auto failed = link.BreakLocked();
        lock.unlock();
        FailAll(std::move(failed), failure);
        return false;
      }
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      std::unique_lock<std::mutex> reading(link.read_mu, std::try_to_lock);
      if (!reading) return true;  // a caller reads it (it is out of the set already)
      reading_here = true;
      bool alive = Read(link);
      reading_here = false;
      return alive;
    }
    return true;
  }

 public:
  // Stops watching `link` (its fd is closed once nothing holds the link).
  void Forget(CallStreamClient::Link* link) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link->fd, nullptr);
    std::shared_ptr<CallStreamClient::Link> last;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(link);
    if (it == links_.end()) return;
    last = std::move(it->second);
    links_.erase(it);
  }
  // Takes `link` out of the epoll set (a caller reads it), or puts it back.
  void Detach(CallStreamClient::Link& link) { ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.fd, nullptr); }
  void Reattach(CallStreamClient::Link& link) {
    std::unique_lock<std::mutex> lock(link.mu);
    if (link.broken) {  // failed meanwhile (silent for too long): nothing to watch
      lock.unlock();
      return Forget(&link);
    }
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP | (link.want_write ? EPOLLOUT : 0);
    event.data.ptr = &link;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link.fd, &event);
  }

  bool Read(CallStreamClient::Link& link) {
    while (true) {
      size_t room = 0;
      char* into = link.reader.Reserve(64 * 1024, &room);
      ssize_t n = ::recv(link.fd, into, room, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n <= 0) {
        std::string why = n == 0 ? "closed" : std::strerror(errno);
        std::unique_lock<std::mutex> lock(link.mu);
        size_t in_flight = link.pending.size();
        auto failed = link.BreakLocked();
        lock.unlock();
        FailAll(std::move(failed), absl::UnavailableError("the connection to " + link.endpoint + " " + why + " with " +
                                                         std::to_string(in_flight) + " call(s) in flight"));
        return false;
      }
      {
        std::lock_guard<std::mutex> lock(link.mu);
        link.last_heard = std::chrono::steady_clock::now();
      }
      link.reader.Commit(static_cast<size_t>(n));
      if (!Deliver(link)) return false;
      // A short read took all there was: the poll says when more comes (one recv fewer).
      if (static_cast<size_t>(n) < room) return true;
    }
  }

  // Runs the callbacks of the replies read so far; false when the peer refused the link.
  bool Deliver(CallStreamClient::Link& link) {
    while (true) {
      cs::FrameReader::Frame frame;
      std::string why;
      auto result = link.reader.Next(&frame, &why);
      if (result == cs::FrameReader::Result::kNeedMore) return true;
      absl::Status refused;
      if (result == cs::FrameReader::Result::kMalformed) {
        refused = absl::InternalError("the call stream from " + link.endpoint + " sent a malformed frame: " + why);
      } else if (frame.kind == cs::kError && frame.call_id == 0) {
        absl::Status status = cs::ErrorFromFrame(frame.code, frame.payload);
        refused = absl::Status(status.code(), link.endpoint + " refused the call stream: " + std::string(status.message()));
      } else if (frame.kind == cs::kPing) {
        continue;  // heard from: that is all a ping says
      } else if (frame.kind != cs::kReply && frame.kind != cs::kError) {
        refused = absl::InternalError("the call stream from " + link.endpoint + " sent an unexpected frame");
      }
      if (!refused.ok()) {
        std::unique_lock<std::mutex> lock(link.mu);
        auto failed = link.BreakLocked();
        lock.unlock();
        FailAll(std::move(failed), refused);
        return false;
      }
      CallStreamClient::Callback callback;
      {
        std::lock_guard<std::mutex> lock(link.mu);
        auto it = link.pending.find(frame.call_id);
        if (it == link.pending.end()) continue;  // cancelled meanwhile
        callback = std::move(it->second);
        link.pending.erase(it);
        if (link.pending.empty()) link.idle.notify_all();
      }
      if (frame.kind == cs::kReply) {
        callback(absl::OkStatus(), frame.payload);
      } else {
        callback(cs::ErrorFromFrame(frame.code, frame.payload), {});
      }
    }
  }

 private:
  static constexpr std::chrono::milliseconds kCheckEvery{1000};
  const int epoll_fd_;
  std::mutex mu_;
  std::unordered_map<CallStreamClient::Link*, std::shared_ptr<CallStreamClient::Link>> links_;  // guarded by mu_
};

}  // namespace

void CallStreamClient::Link::WatchWrites(int epoll_fd, bool on) {
  if (want_write == on) return;
  want_write = on;
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0);
  event.data.ptr = this;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event);
}

bool CallStreamClient::Link::Flush() {
  while (out_sent < out.size()) {
    ssize_t n = ::send(fd, out.data() + out_sent, out.size() - out_sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) return false;
    out_sent += static_cast<size_t>(n);
  }
  if (out_sent == out.size()) {
    out.clear();
    out_sent = 0;
  }
  return true;
}

CallStreamClient::CallStreamClient(std::string endpoint, std::string token, std::chrono::milliseconds dead_after)
    : endpoint_(std::move(endpoint)), token_(std::move(token)), dead_after_(dead_after) {}

CallStreamClient::~CallStreamClient() { CancelAll(); }

void CallStreamClient::Call(uint8_t method, std::string_view request, Callback done) {
  if (request.size() > cs::kMaxPayloadBytes) {
    return done(absl::ResourceExhaustedError("a request of " + std::to_string(request.size()) +
                                             " bytes is over the call stream's limit"),
                {});
  }
  std::shared_ptr<Link> link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool usable = false;
    if (link_) {
      std::lock_guard<std::mutex> link_lock(link_->mu);
      usable = !link_->broken;
    }
    if (!usable) {
      auto fd = ConnectNonBlocking(endpoint_);
      // Whatever the cause (refused, unresolvable), the peer cannot be reached: as gRPC.
      if (!fd.ok()) return done(absl::UnavailableError(fd.status().message()), {});
      ConfigureTcp(*fd, 10);
      link_ = std::make_shared<Link>();
      link_->endpoint = endpoint_;
      link_->fd = *fd;
      link_->dead_after = dead_after_;
      link_->out = cs::EncodeFrame(cs::kHello, 0, 0, token_);
      link_->want_write = true;
      Poller::Instance().Add(link_);
    }
    link = link_;
  }
  uint64_t id = next_call_id_++;
  std::string frame = cs::EncodeFrame(cs::kRequest, method, id, request);
  std::unique_lock<std::mutex> lock(link->mu);
  if (link->broken) {
    lock.unlock();
    return done(absl::UnavailableError("the connection to " + endpoint_ + " is closed"), {});
  }
  // A quiet spell is not silence: the clock starts with the first call after it.
  if (link->pending.empty()) link->last_heard = std::chrono::steady_clock::now();
  link->pending.emplace(id, std::move(done));
  bool was_empty = link->out.empty();
  if (was_empty) {
    link->out = std::move(frame);
  } else {
    link->out += frame;
  }
  // Written here when nothing is ahead of it: no hand-off to the call-stream thread.
  if (link->connected && was_empty) {
    if (!link->Flush()) {
      // The poller sees the broken socket and fails what is pending, this call included.
      ::shutdown(link->fd, SHUT_RDWR);
      return;
    }
    link->WatchWrites(Poller::Instance().epoll_fd(), link->out_sent < link->out.size());
  }
}

void CallStreamClient::CancelAll() {
  std::shared_ptr<Link> link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    link = std::move(link_);
  }
  if (!link) return;
  std::unique_lock<std::mutex> lock(link->mu);
  if (link->broken) return;
  auto failed = link->BreakLocked();
  ::shutdown(link->fd, SHUT_RDWR);  // the poller sees it and closes the fd
  lock.unlock();
  FailAll(std::move(failed), absl::CancelledError("the call was cancelled: the client to " + endpoint_ + " closed"));
}

bool CallStreamClient::Assist(const std::function<bool()>& done, std::chrono::steady_clock::time_point until) {
  std::shared_ptr<Link> link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    link = link_;
  }
  if (!link || reading_here) return false;
  std::unique_lock<std::mutex> reading(link->read_mu, std::try_to_lock);
  if (!reading) return false;  // the call-stream thread is reading it this moment
  {
    std::lock_guard<std::mutex> lock(link->mu);
    if (link->broken || !link->connected || link->pending.empty()) return false;
  }
  Poller& poller = Poller::Instance();
  poller.Detach(*link);
  reading_here = true;
  bool alive = true;
  while (alive && !done()) {
    auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    // In slices, so that a result that comes another way (another worker, a report) is
    // seen soon too.
    auto slice = std::min<std::chrono::steady_clock::duration>(until - now, kAssistSlice);
    pollfd pfd{link->fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count()));
    if (ready > 0) alive = poller.Read(*link);
  }
  reading_here = false;
  if (alive) {
    poller.Reattach(*link);
  } else {
    poller.Forget(link.get());
  }
  return true;
}

bool CallStreamClient::WaitIdle(std::chrono::milliseconds timeout) {
  std::shared_ptr<Link> link;
  {
    std::lock_guard<std::mutex> lock(mu_);
    link = link_;
  }
  if (!link) return true;
  std::unique_lock<std::mutex> lock(link->mu);
  return link->idle.wait_for(lock, timeout, [&] { return link->pending.empty(); });
}

}  // namespace orb
