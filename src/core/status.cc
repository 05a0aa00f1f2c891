#include "flowstone/status.h"

namespace flowstone {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kCancelled:
      return "Cancelled";
    case Code::kUnknown:
      return "Unknown";
    case Code::kInvalidArgument:
      return "Invalid argument";
    case Code::kDeadlineExceeded:
      return "Deadline exceeded";
    case Code::kNotFound:
      return "Not found";
    case Code::kAlreadyExists:
      return "Already exists";
    case Code::kPermissionDenied:
      return "Permission denied";
    case Code::kResourceExhausted:
      return "Resource exhausted";
    case Code::kFailedPrecondition:
      return "Failed precondition";
    case Code::kAborted:
      return "Aborted";
    case Code::kOutOfRange:
      return "Out of range";
    case Code::kUnimplemented:
      return "Unimplemented";
    case Code::kInternal:
      return "Internal";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kDataLoss:
      return "Data loss";
    case Code::kUnauthenticated:
      return "Unauthenticated";
  }
  return "Unknown code";
}

Status::Status(Code code, std::string message) {
  if (code != Code::kOk) state_.reset(new State{code, std::move(message), {}});
}

Status::Status(const Status& other) : state_(other.state_ ? new State(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) state_.reset(other.state_ ? new State(*other.state_) : nullptr);
  return *this;
}

const std::string& Status::message() const {
  static const std::string* empty = new std::string;
  return ok() ? *empty : state_->message;
}

void Status::SetPayload(const std::string& key, std::string value) {
  if (state_) state_->payloads[key] = std::move(value);
}

std::string Status::GetPayload(const std::string& key) const {
  if (!state_) return {};
  auto it = state_->payloads.find(key);
  return it == state_->payloads.end() ? std::string() : it->second;
}

const std::map<std::string, std::string>* Status::payloads() const {
  return state_ ? &state_->payloads : nullptr;
}

Status& Status::Append(const std::string& text) {
  if (state_) state_->message += text;
  return *this;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return StrCat(CodeName(state_->code), ": ", state_->message);
}

}  // namespace flowstone
