#include "core/transport/progress_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/common/logging.h"
#include "core/transport/ucx_tls.h"

namespace leeway {

absl::Status UcsToStatus(ucs_status_t status, const char* what) {
  if (status == UCS_OK) return absl::OkStatus();
  const std::string message =
      absl::StrCat(what, ": ", ucs_status_string(status));
  switch (status) {
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_IO_ERROR:
      return absl::UnavailableError(message);
    case UCS_ERR_CANCELED:
      return absl::CancelledError(message);
    case UCS_ERR_TIMED_OUT:
      return absl::DeadlineExceededError(message);
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_EXCEEDS_LIMIT:
      return absl::ResourceExhaustedError(message);
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_MESSAGE_TRUNCATED:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

namespace {

// The UCX_TLS value UCX parsed (from the environment or its default).
std::string ConfiguredTransports(const ucp_config_t* config) {
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return "all";
  ucp_config_print(config, stream, nullptr, UCS_CONFIG_PRINT_CONFIG);
  fclose(stream);
  std::string tls = "all";
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(text, size), '\n')) {
    if (absl::ConsumePrefix(&line, "UCX_TLS=")) tls = std::string(line);
  }
  free(text);
  return tls;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProgressLoop>> ProgressLoop::Create(
    const Options& options) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcsToStatus(st, "ucp_config_read");
  if (!options.allow_cma) {
    const std::string tls = ConfiguredTransports(config);
    const std::string safe = TransportListWithoutCma(tls);
    if (safe != tls) {
      st = ucp_config_modify(config, "TLS", safe.c_str());
      if (st != UCS_OK) {
        ucp_config_release(config);
        return UcsToStatus(st, "ucp_config_modify(TLS)");
      }
      LEEWAY_LOG(DEBUG) << "UCX transports " << tls << " -> " << safe
                        << " (CMA aborts survivors when a peer dies)";
    }
  }

  ucp_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "leeway";
  ucp_context_h context = nullptr;
  st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (st != UCS_OK) return UcsToStatus(st, "ucp_init");

  ucp_worker_params_t worker_params;
  std::memset(&worker_params, 0, sizeof(worker_params));
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker = nullptr;
  st = ucp_worker_create(context, &worker_params, &worker);
  if (st != UCS_OK) {
    ucp_cleanup(context);
    return UcsToStatus(st, "ucp_worker_create");
  }
  int ucx_fd = -1;
  st = ucp_worker_get_efd(worker, &ucx_fd);
  if (st != UCS_OK) {
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return UcsToStatus(st, "ucp_worker_get_efd");
  }
  const int event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (event_fd < 0 || epoll_fd < 0) {
    const int err = errno;
    if (event_fd >= 0) close(event_fd);
    if (epoll_fd >= 0) close(epoll_fd);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return absl::InternalError(absl::StrCat("eventfd/epoll: ", strerror(err)));
  }
  for (int fd : {ucx_fd, event_fd}) {
    struct epoll_event ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  return std::unique_ptr<ProgressLoop>(
      new ProgressLoop(options, context, worker, ucx_fd, event_fd, epoll_fd));
}

ProgressLoop::ProgressLoop(const Options& options, ucp_context_h context,
                           ucp_worker_h worker, int ucx_fd, int event_fd,
                           int epoll_fd)
    : options_(options),
      context_(context),
      worker_(worker),
      ucx_fd_(ucx_fd),
      event_fd_(event_fd),
      epoll_fd_(epoll_fd) {}

ProgressLoop::~ProgressLoop() {
  Stop();
  close(epoll_fd_);
  close(event_fd_);
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

void ProgressLoop::Start(std::function<void(absl::Time)> on_tick,
                         std::function<void()> on_stop) {
  on_tick_ = std::move(on_tick);
  on_stop_ = std::move(on_stop);
  thread_ = std::thread([this] { Run(); });
}

bool ProgressLoop::Post(std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    if (!accepting_) return false;
    posted_.push_back(std::move(fn));
  }
  pending_.fetch_add(1);
  if (sleeping_.load()) {
    const uint64_t one = 1;
    ssize_t unused = write(event_fd_, &one, sizeof(one));
    (void)unused;
  }
  return true;
}

void ProgressLoop::Stop() {
  if (!thread_.joinable()) return;
  stop_requested_.store(true);
  const uint64_t one = 1;
  ssize_t unused = write(event_fd_, &one, sizeof(one));
  (void)unused;
  thread_.join();
}

bool ProgressLoop::InLoopThread() const {
  return std::this_thread::get_id() == thread_.get_id();
}

bool ProgressLoop::RunPosted() {
  std::deque<std::function<void()>> batch;
  {
    absl::MutexLock lock(&mu_);
    batch.swap(posted_);
  }
  if (batch.empty()) return false;
  pending_.fetch_sub(batch.size());
  for (auto& fn : batch) fn();
  return true;
}

void ProgressLoop::Sleep(absl::Duration max_sleep) {
  // Arm first: UCS_ERR_BUSY means events are already pending.
  if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) return;
  sleeping_.store(true);
  if (pending_.load() != 0 || stop_requested_.load()) {
    sleeping_.store(false);
    return;
  }
  struct epoll_event events[2];
  const int timeout_ms =
      std::max<int64_t>(1, absl::ToInt64Milliseconds(max_sleep));
  const int n = epoll_wait(epoll_fd_, events, 2, timeout_ms);
  for (int i = 0; i < n; ++i) {
    if (events[i].data.fd == event_fd_) {
      uint64_t drained;
      ssize_t unused = read(event_fd_, &drained, sizeof(drained));
      (void)unused;
    }
  }
  sleeping_.store(false);
}

void ProgressLoop::Run() {
  absl::Time last_event = absl::Now();
  absl::Time last_tick = last_event;
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    bool busy = ucp_worker_progress(worker_) != 0;
    busy |= RunPosted();
    const absl::Time now = now_ = absl::Now();
    if (now - last_tick >= options_.tick / 2) {
      last_tick = now;
      if (on_tick_) on_tick_(now);
    }
    if (busy) {
      last_event = now;
      continue;
    }
    if (now - last_event < options_.busy_poll) continue;
    Sleep(options_.tick);
    last_event = absl::Now() - options_.busy_poll / 2;
  }
  if (on_stop_) on_stop_();
  {
    absl::MutexLock lock(&mu_);
    accepting_ = false;
  }
  RunPosted();  // posted work sees the transport stopping and fails fast
}

void ProgressLoop::ProgressUntil(const std::function<bool()>& done,
                                 absl::Duration limit) {
  const absl::Time end = absl::Now() + limit;
  while (!done() && absl::Now() < end) {
    ucp_worker_progress(worker_);
    RunPosted();
  }
}

}  // namespace leeway
