// The node's log files for `orb logs` and the dashboard: the files directly in
// <session>/logs (daemons' and workers' stdout and stderr), listed and read in pieces;
// and workers' new lines, sent on to the GCS for their jobs' drivers.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "raylet/raylet.h"

namespace orb {
namespace {

constexpr int64_t kDefaultReadBytes = 64 << 10;
constexpr int64_t kMaxReadBytes = 1 << 20;

// A name ListLogs could have given: a plain file name, nothing that leaves logs/.
bool IsPlainName(const std::string& name) {
  return !name.empty() && name.size() < 256 && name.find('/') == std::string::npos && name != "." && name != ".." &&
         name.find('\0') == std::string::npos;
}

constexpr int64_t kForwardBytesPerRound = 64 << 10;  // per worker; the rest next round
constexpr size_t kLongestLine = 16 << 10;            // a longer partial line goes as it is

}  // namespace

void Raylet::ForwardWorkerLogs() {
  // Workers started since the last round, and those that ended (read one last time).
  for (const WorkerProcess& w : worker_pool_->All()) {
    if (w.is_driver || w.log_file.empty() || log_cursors_.count(w.id)) continue;
    log_cursors_[w.id] = LogCursor{w.log_file, w.job, w.pid};
  }
  rpc::PublishLogsRequest request;
  for (auto it = log_cursors_.begin(); it != log_cursors_.end();) {
    LogCursor& cursor = it->second;
    bool gone = worker_pool_->Find(it->first) == nullptr;
    std::ifstream in(cursor.path, std::ios::binary);
    std::string data(kForwardBytesPerRound, '\0');
    if (in) {
      in.seekg(cursor.offset);
      in.read(data.data(), kForwardBytesPerRound);
      data.resize(static_cast<size_t>(in.gcount()));
    } else {
      data.clear();
    }
    cursor.offset += static_cast<int64_t>(data.size());
    std::string text = cursor.partial + data;
    rpc::LogBatch batch;
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
      batch.add_lines(text.substr(start, nl - start));
    }
    cursor.partial = text.substr(start);
    if (cursor.partial.size() > kLongestLine || (gone && !cursor.partial.empty())) {
      batch.add_lines(std::move(cursor.partial));
      cursor.partial.clear();
    }
    if (batch.lines_size() > 0) {
      batch.set_job_id(cursor.job.Binary());
      batch.set_node_id(node_id_.Binary());
      batch.set_worker_id(it->first.Binary());
      batch.set_pid(cursor.pid);
      *request.add_batches() = std::move(batch);
    }
    it = gone && static_cast<int64_t>(data.size()) < kForwardBytesPerRound ? log_cursors_.erase(it) : std::next(it);
  }
  if (request.batches_size() == 0) return;
  gcs_->Call<rpc::PublishLogsReply>(ORB_RPC(PublishLogs), request, [](const absl::Status& status, rpc::PublishLogsReply&&) {
    if (!status.ok()) spdlog::debug("workers' lines not sent to the GCS: {}", status.ToString());
  });
}

std::string Raylet::LogDir() const { return options_.session_dir.empty() ? "" : options_.session_dir + "/logs"; }

void Raylet::HandleListLogs(const rpc::ListLogsRequest&, rpc::ListLogsReply* reply, SendReply send) {
  std::error_code ec;
  if (LogDir().empty()) return send(grpc::Status::OK);
  for (const auto& entry : std::filesystem::directory_iterator(LogDir(), ec)) {
    if (!entry.is_regular_file(ec)) continue;
    rpc::LogFile* file = reply->add_files();
    file->set_name(entry.path().filename().string());
    file->set_size(static_cast<int64_t>(entry.file_size(ec)));
    struct stat st;
    if (::stat(entry.path().c_str(), &st) == 0) file->set_modified_ms(st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000);
  }
  std::sort(reply->mutable_files()->begin(), reply->mutable_files()->end(),
            [](const rpc::LogFile& a, const rpc::LogFile& b) { return a.name() < b.name(); });
  send(grpc::Status::OK);
}

void Raylet::HandleReadLog(const rpc::ReadLogRequest& req, rpc::ReadLogReply* reply, SendReply send) {
  if (!IsPlainName(req.name())) {
    return send(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             "ReadLog: '" + req.name().substr(0, 64) + "' is not a file name in the node's logs"));
  }
  std::string path = LogDir() + "/" + req.name();
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (LogDir().empty() || !in) {
    return send(grpc::Status(grpc::StatusCode::NOT_FOUND, "ReadLog: no log file '" + req.name() + "' on this node"));
  }
  int64_t size = static_cast<int64_t>(in.tellg());
  int64_t offset = req.offset() < 0 ? std::max<int64_t>(0, size + req.offset()) : std::min(req.offset(), size);
  int64_t want = req.max_bytes() <= 0 ? kDefaultReadBytes : std::min(req.max_bytes(), kMaxReadBytes);
  int64_t length = std::min(want, size - offset);
  std::string data(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(data.data(), length);
  data.resize(static_cast<size_t>(in.gcount()));
  reply->set_offset(offset);
  reply->set_next_offset(offset + static_cast<int64_t>(data.size()));
  reply->set_size(size);
  reply->set_data(std::move(data));
  send(grpc::Status::OK);
}

}  // namespace orb
