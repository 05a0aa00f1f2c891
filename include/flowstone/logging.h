// Log lines on stderr in TensorFlow's shape, "2026-11-23 10:55:01.123456: W flowstone/gpu] ...",
// filtered by TF_CPP_MIN_LOG_LEVEL (0 shows everything, 1 hides INFO, 2 hides WARNING as well,
// 3 hides ERROR too), which TensorFlow users already know.
#pragma once

#include <string>

#include "flowstone/status.h"

namespace flowstone {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2 };

// Writes one line (or several, for a message with newlines) unless filtered out.
void Log(LogSeverity severity, const char* component, const std::string& message);

template <typename... Args>
void LogInfo(const char* component, const Args&... args) {
  Log(LogSeverity::kInfo, component, StrCat(args...));
}
template <typename... Args>
void LogWarning(const char* component, const Args&... args) {
  Log(LogSeverity::kWarning, component, StrCat(args...));
}

}  // namespace flowstone
