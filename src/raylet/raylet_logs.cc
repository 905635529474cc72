// The node's log files for `orb logs` and the dashboard: the files directly in
// <session>/logs (daemons' and workers' stdout and stderr), listed and read in pieces.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

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

}  // namespace

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
