#include "core/common/logging.h"

#include <strings.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace leeway {
namespace {

std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};

const char kLevelLetters[] = {'D', 'I', 'W', 'E'};

const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

void SetMinLogLevel(LogLevel level) {
  g_min_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel MinLogLevel() {
  return static_cast<LogLevel>(g_min_level.load(std::memory_order_relaxed));
}

bool ParseLogLevel(const char* text, LogLevel* out) {
  static const struct {
    const char* name;
    LogLevel level;
  } kNames[] = {{"debug", LogLevel::kDebug},
                {"info", LogLevel::kInfo},
                {"warning", LogLevel::kWarning},
                {"error", LogLevel::kError}};
  for (const auto& entry : kNames) {
    if (strcasecmp(text, entry.name) == 0) {
      *out = entry.level;
      return true;
    }
  }
  return false;
}

namespace logging_internal {

LogLine::LogLine(LogLevel level, const char* file, int line) : level_(level) {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char prefix[64];
  std::snprintf(prefix, sizeof(prefix), "%c%02d%02d %02d:%02d:%02d.%06ld %ld ",
                kLevelLetters[static_cast<int>(level)], tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long>(tv.tv_usec),
                static_cast<long>(syscall(SYS_gettid)));
  stream_ << prefix << Basename(file) << ':' << line << "] ";
}

LogLine::~LogLine() {
  stream_ << '\n';
  const std::string text = stream_.str();
  // One write per line so that lines from threads never interleave.
  ssize_t unused = ::write(STDERR_FILENO, text.data(), text.size());
  (void)unused;
  (void)level_;
}

bool ShouldLogEvery(std::atomic<int64_t>* last_ns, double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t now = ts.tv_sec * 1000000000LL + ts.tv_nsec;
  int64_t last = last_ns->load(std::memory_order_relaxed);
  if (last != 0 && now - last < static_cast<int64_t>(seconds * 1e9)) {
    return false;
  }
  return last_ns->compare_exchange_strong(last, now);
}

}  // namespace logging_internal
}  // namespace leeway
