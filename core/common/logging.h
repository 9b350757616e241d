// Minimal leveled logging to stderr for every Leeway process.
//
// One line per record: "I1202 13:48:31.123456 tid file:line] message".
// Thread-safe (one write(2) per line). The minimum level is process-wide and
// set by main() (SetMinLogLevel); library code only logs.
//
// Example:
//   LEEWAY_LOG(INFO) << "listening on " << port;
//   LEEWAY_LOG_EVERY_N_SEC(WARNING, 5) << "peer slow";  // rate-limited
#ifndef LEEWAY_CORE_COMMON_LOGGING_H_
#define LEEWAY_CORE_COMMON_LOGGING_H_

#include <atomic>
#include <cstdint>
#include <sstream>

namespace leeway {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();
// Parses "debug", "info", "warning", "error" (case-insensitive).
bool ParseLogLevel(const char* text, LogLevel* out);

namespace logging_internal {

class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

// True at most once per `seconds` for the call site owning `last_ns`.
bool ShouldLogEvery(std::atomic<int64_t>* last_ns, double seconds);

}  // namespace logging_internal
}  // namespace leeway

#define LEEWAY_LOG_LEVEL_DEBUG ::leeway::LogLevel::kDebug
#define LEEWAY_LOG_LEVEL_INFO ::leeway::LogLevel::kInfo
#define LEEWAY_LOG_LEVEL_WARNING ::leeway::LogLevel::kWarning
#define LEEWAY_LOG_LEVEL_ERROR ::leeway::LogLevel::kError

#define LEEWAY_LOG(level)                                              \
  if (LEEWAY_LOG_LEVEL_##level < ::leeway::MinLogLevel()) {            \
  } else                                                               \
    ::leeway::logging_internal::LogLine(LEEWAY_LOG_LEVEL_##level,      \
                                        __FILE__, __LINE__)            \
        .stream()

// One statement (an if with a static in its init-statement), so that it
// can follow an `if` without braces.
#define LEEWAY_LOG_EVERY_N_SEC(level, seconds)                              \
  if (static std::atomic<int64_t> LEEWAY_LOG_CONCAT_(leeway_log_last_,       \
                                                     __LINE__){0};           \
      !::leeway::logging_internal::ShouldLogEvery(                           \
          &LEEWAY_LOG_CONCAT_(leeway_log_last_, __LINE__), seconds)) {       \
  } else                                                                     \
    LEEWAY_LOG(level)

#define LEEWAY_LOG_CONCAT_INNER_(a, b) a##b
#define LEEWAY_LOG_CONCAT_(a, b) LEEWAY_LOG_CONCAT_INNER_(a, b)

#endif  // LEEWAY_CORE_COMMON_LOGGING_H_
