#include "flowstone/logging.h"

#include <sys/time.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace flowstone {
namespace {

int MinLogLevel() {
  const char* value = std::getenv("TF_CPP_MIN_LOG_LEVEL");
  if (value == nullptr || *value == '\0') return 0;
  return std::atoi(value);
}

}  // namespace

void Log(LogSeverity severity, const char* component, const std::string& message) {
  // Read at each call: programs set the variable after import, as they do for TensorFlow.
  if (static_cast<int>(severity) < MinLogLevel()) return;
  timeval now;
  gettimeofday(&now, nullptr);
  tm local;
  localtime_r(&now.tv_sec, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &local);
  const char letter = "IWE"[static_cast<int>(severity)];
  std::string line = StrCat(stamp, ".", std::to_string(1000000 + now.tv_usec).substr(1), ": ",
                            letter, " ", component, "] ", message, "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace flowstone
