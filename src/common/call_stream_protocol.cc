#include "common/call_stream_protocol.h"

#include <cstring>

namespace orb::call_stream {

std::string EncodeFrame(Kind kind, uint8_t code, uint64_t call_id, std::string_view payload) {
  FrameHeader header{kMagic, kind, code, 0, static_cast<uint32_t>(payload.size()), call_id};
  std::string frame(sizeof(header) + payload.size(), '\0');
  std::memcpy(frame.data(), &header, sizeof(header));
  std::memcpy(frame.data() + sizeof(header), payload.data(), payload.size());
  return frame;
}

char* FrameReader::Reserve(size_t min, size_t* room) {
  if (begin_ == end_) begin_ = end_ = 0;
  if (buffer_.size() - end_ < min) {
    // Move what is unread to the front first; grow only when that is not enough.
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (buffer_.size() - end_ < min) buffer_.resize(end_ + min);
  }
  *room = buffer_.size() - end_;
  return buffer_.data() + end_;
}

FrameReader::Result FrameReader::Next(Frame* frame, std::string* why) {
  if (end_ - begin_ < sizeof(FrameHeader)) return Result::kNeedMore;
  FrameHeader header;
  std::memcpy(&header, buffer_.data() + begin_, sizeof(header));
  if (header.magic != kMagic || header.zero != 0) {
    *why = "not a frame of orb's call stream (bad magic)";
    return Result::kMalformed;
  }
  if (header.kind < kHello || header.kind > kPing) {
    *why = "unknown frame kind " + std::to_string(header.kind);
    return Result::kMalformed;
  }
  if (header.length > kMaxPayloadBytes) {
    *why = "a frame of " + std::to_string(header.length) + " bytes is over the limit of " +
           std::to_string(kMaxPayloadBytes);
    return Result::kMalformed;
  }
  if (end_ - begin_ < sizeof(header) + header.length) return Result::kNeedMore;
  frame->kind = static_cast<Kind>(header.kind);
  frame->code = header.code;
  frame->call_id = header.call_id;
  frame->payload = std::string_view(buffer_.data() + begin_ + sizeof(header), header.length);
  begin_ += sizeof(header) + header.length;
  return Result::kFrame;
}

std::string EncodeRoute(std::string_view path, std::string_view request) {
  auto length = static_cast<uint16_t>(path.size());
  std::string payload(sizeof(length) + path.size() + request.size(), '\0');
  std::memcpy(payload.data(), &length, sizeof(length));
  std::memcpy(payload.data() + sizeof(length), path.data(), path.size());
  std::memcpy(payload.data() + sizeof(length) + path.size(), request.data(), request.size());
  return payload;
}

bool DecodeRoute(std::string_view payload, std::string_view* path, std::string_view* request) {
  uint16_t length = 0;
  if (payload.size() < sizeof(length)) return false;
  std::memcpy(&length, payload.data(), sizeof(length));
  if (payload.size() - sizeof(length) < length) return false;
  *path = payload.substr(sizeof(length), length);
  *request = payload.substr(sizeof(length) + length);
  return true;
}

absl::Status ErrorFromFrame(uint8_t code, std::string_view message) {
  auto status_code = static_cast<absl::StatusCode>(code);
  if (status_code == absl::StatusCode::kOk) status_code = absl::StatusCode::kUnknown;
  return absl::Status(status_code, absl::string_view(message.data(), message.size()));
}

}  // namespace orb::call_stream
