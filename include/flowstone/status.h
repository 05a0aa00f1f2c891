// Status: the error value every fallible Flowstone call returns.
//
// Codes are TensorFlow's 16 canonical codes (the same numbers), so the Python layer can map a
// Status straight onto the matching `flowstone.errors.*` class.
#pragma once

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

namespace flowstone {

enum class Code : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// TensorFlow's spelling of a code in messages, e.g. "Invalid argument".
const char* CodeName(Code code);

// Concatenates anything that streams into an ostream.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

class Status {
 public:
  // The OK status; holds no allocation.
  Status() = default;
  Status(Code code, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return ok() ? Code::kOk : state_->code; }
  const std::string& message() const;

  // Payloads carry structured facts next to the message (as TensorFlow's do), e.g. the node that
  // failed ("node") or the Python exception a graph-building error should become ("py_type").
  void SetPayload(const std::string& key, std::string value);
  std::string GetPayload(const std::string& key) const;
  const std::map<std::string, std::string>* payloads() const;

  // Appends context to the message, keeping the code and payloads.
  Status& Append(const std::string& text);

  // "Invalid argument: <message>".
  std::string ToString() const;

 private:
  struct State {
    Code code;
    std::string message;
    std::map<std::string, std::string> payloads;
  };
  std::unique_ptr<State> state_;
};

namespace errors {
#define FLOWSTONE_DECLARE_ERROR(Name, CodeValue)     \
  template <typename... Args>                        \
  Status Name(const Args&... args) {                 \
    return Status(Code::CodeValue, StrCat(args...)); \
  }
FLOWSTONE_DECLARE_ERROR(Cancelled, kCancelled)
FLOWSTONE_DECLARE_ERROR(Unknown, kUnknown)
FLOWSTONE_DECLARE_ERROR(InvalidArgument, kInvalidArgument)
FLOWSTONE_DECLARE_ERROR(DeadlineExceeded, kDeadlineExceeded)
FLOWSTONE_DECLARE_ERROR(NotFound, kNotFound)
FLOWSTONE_DECLARE_ERROR(AlreadyExists, kAlreadyExists)
FLOWSTONE_DECLARE_ERROR(PermissionDenied, kPermissionDenied)
FLOWSTONE_DECLARE_ERROR(ResourceExhausted, kResourceExhausted)
FLOWSTONE_DECLARE_ERROR(FailedPrecondition, kFailedPrecondition)
FLOWSTONE_DECLARE_ERROR(Aborted, kAborted)
FLOWSTONE_DECLARE_ERROR(OutOfRange, kOutOfRange)
FLOWSTONE_DECLARE_ERROR(Unimplemented, kUnimplemented)
FLOWSTONE_DECLARE_ERROR(Internal, kInternal)
FLOWSTONE_DECLARE_ERROR(Unavailable, kUnavailable)
FLOWSTONE_DECLARE_ERROR(DataLoss, kDataLoss)
FLOWSTONE_DECLARE_ERROR(Unauthenticated, kUnauthenticated)
#undef FLOWSTONE_DECLARE_ERROR

// A graph-construction error that Python raises as TypeError (TensorFlow does so for dtype
// mismatches); other graph-construction errors become ValueError.
template <typename... Args>
Status TypeError(const Args&... args) {
  Status s(Code::kInvalidArgument, StrCat(args...));
  s.SetPayload("py_type", "TypeError");
  return s;
}
}  // namespace errors

// A value or the Status explaining why there is none.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  T& operator*() { return value_; }
  T* operator->() { return &value_; }

 private:
  Status status_;
  T value_{};
};

}  // namespace flowstone

#define FS_CONCAT_INNER(a, b) a##b
#define FS_CONCAT(a, b) FS_CONCAT_INNER(a, b)

#define FS_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::flowstone::Status _fs_status = (expr); \
    if (!_fs_status.ok()) return _fs_status; \
  } while (0)

#define FS_ASSIGN_OR_RETURN(lhs, expr)                                                  \
  auto FS_CONCAT(_fs_or_, __LINE__) = (expr);                                           \
  if (!FS_CONCAT(_fs_or_, __LINE__).ok()) return FS_CONCAT(_fs_or_, __LINE__).status(); \
  lhs = std::move(FS_CONCAT(_fs_or_, __LINE__).value())
