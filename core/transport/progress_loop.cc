#include "core/transport/progress_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/common/logging.h"
#include "core/common/thread_name.h"
#include "core/common/wall_clock.h"
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
  // UCX 1.13's rendezvous over TCP by PUT zcopy fails an assertion and
  // aborts the process when its peer dies mid-transfer (tcp_ep.c,
  // PUT_TX_WAITING_ACK; a server in transport_process_test died of it when
  // a client was killed). Without it, rendezvous over TCP goes by active
  // messages. The UCT options are read from the environment when the
  // worker opens its interfaces; a user's own setting wins.
  setenv("UCX_TCP_PUT_ENABLE", "n", /*overwrite=*/0);
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcsToStatus(st, "ucp_config_read");
  const std::string tls = ConfiguredTransports(config);
  const bool has_network = TransportListHasNetwork(tls);
  if (!options.allow_cma) {
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
  const int nap_epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (event_fd < 0 || epoll_fd < 0 || nap_epoll_fd < 0) {
    const int err = errno;
    for (int fd : {event_fd, epoll_fd, nap_epoll_fd}) {
      if (fd >= 0) close(fd);
    }
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
    if (fd == event_fd) epoll_ctl(nap_epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  auto loop = std::unique_ptr<ProgressLoop>(
      new ProgressLoop(options, context, worker, ucx_fd, event_fd, epoll_fd,
                       nap_epoll_fd));
  loop->has_network_ = has_network;
  return loop;
}

ProgressLoop::ProgressLoop(const Options& options, ucp_context_h context,
                           ucp_worker_h worker, int ucx_fd, int event_fd,
                           int epoll_fd, int nap_epoll_fd)
    : options_(options),
      context_(context),
      worker_(worker),
      ucx_fd_(ucx_fd),
      event_fd_(event_fd),
      epoll_fd_(epoll_fd),
      nap_epoll_fd_(nap_epoll_fd) {}

ProgressLoop::~ProgressLoop() {
  Stop();
  close(nap_epoll_fd_);
  close(epoll_fd_);
  close(event_fd_);
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

void ProgressLoop::Start(std::function<void(absl::Time)> on_tick,
                         std::function<void()> on_stop,
                         std::function<bool()> has_shared_memory_peers) {
  on_tick_ = std::move(on_tick);
  on_stop_ = std::move(on_stop);
  has_shared_memory_peers_ = std::move(has_shared_memory_peers);
  thread_ = std::thread([this] {
    NameThisThread("lw-progress");
    Run();
  });
}

bool ProgressLoop::Post(std::function<void()> fn) {
  {
    absl::MutexLock lock(&mu_);
    if (!accepting_) return false;
    posted_.push_back(std::move(fn));
  }
  pending_.fetch_add(1);
  Wake();
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


bool ProgressLoop::RunPosted() {
  if (pending_.load(std::memory_order_acquire) == 0) return false;
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

namespace {

// The loop whose worker lock this thread holds, if any: a thread that holds
// it must not take it again (WorkerLock is not recursive).
thread_local const ProgressLoop* t_holding = nullptr;

}  // namespace

bool ProgressLoop::HeldByThisThread() const { return t_holding == this; }

void ProgressLoop::Sleep(absl::Duration max_sleep) {
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

void ProgressLoop::Nap() {
  napping_.store(true);
  struct epoll_event event;
  if (epoll_wait(nap_epoll_fd_, &event, 1, 1) > 0) {
    uint64_t drained;
    ssize_t unused = read(event_fd_, &drained, sizeof(drained));
    (void)unused;
  }
  napping_.store(false);
}

void ProgressLoop::HandBack() {
  if (napping_.exchange(false)) {
    const uint64_t one = 1;
    ssize_t unused = write(event_fd_, &one, sizeof(one));
    (void)unused;
  } else {
    Wake();
  }
}

void ProgressLoop::Wake() {
  if (sleeping_.exchange(false)) {
    const uint64_t one = 1;
    ssize_t unused = write(event_fd_, &one, sizeof(one));
    (void)unused;
  }
}

ProgressLoop::Guard::Guard(ProgressLoop* loop, Mode mode) : loop_(loop) {
  if (loop->HeldByThisThread()) return;
  if (mode != kWait) {
    // A progress round holds the lock for well under a microsecond.
    const int tries = mode == kBriefly ? 64 : 1;
    for (int i = 0; i < tries && !held_; ++i) {
      if (loop->stop_requested_.load(std::memory_order_relaxed)) break;
      if (i > 0) CpuPause();
      held_ = loop->worker_mu_.try_lock();
    }
  } else {
    loop->worker_mu_.lock();
    held_ = true;
  }
  if (held_) {
    t_holding = loop;
    BumpUnderLock(loop->caller_turns_, 1);
    // Work posted before runs first: a thread's operations keep their order
    // whether they were posted or run under the lock.
    loop->RunPosted();
  }
}

ProgressLoop::Guard::~Guard() {
  if (!held_) return;
  t_holding = nullptr;
  loop_->worker_mu_.unlock();
  if (wake_) loop_->Wake();
}

bool ProgressLoop::RunOrPost(std::function<bool()> fn) {
  Guard guard(this, Guard::kBriefly);
  if (!guard.held()) return Post([fn = std::move(fn)] { fn(); });
  // UCX needs progress to push an operation in flight out; a sleeping loop
  // armed before it would not see it. (Incoming messages, a call's reply
  // among them, wake an armed loop.)
  if (fn()) guard.WakeOnRelease();
  return true;
}

bool ProgressLoop::TryDrive(bool* busy, absl::Time* now) {
  *busy = false;
  if (HeldByThisThread() || stop_requested_.load(std::memory_order_relaxed) ||
      !worker_mu_.try_lock()) {
    return false;
  }
  t_holding = this;
  BumpUnderLock(caller_turns_, 1);
  *busy = ucp_worker_progress(worker_) != 0;
  *busy |= RunPosted();
  // Reading the clock costs more than an idle progress call: a driver that
  // spins reads it every 16th round.
  if (*busy || ++drive_rounds_ % 16 == 0) MaybeTick(now_ = WallNow());
  *now = now_;  // read under the lock: the loop thread writes it next
  t_holding = nullptr;
  worker_mu_.unlock();
  return true;
}

void ProgressLoop::MaybeTick(absl::Time now) {
  // Whoever drives runs the ticks, so that deadlines and keepalives keep
  // their pace while a caller drives for a long time.
  if (now - last_tick_ < half_tick_) return;
  last_tick_ = now;
  if (on_tick_) on_tick_(now);
}

void ProgressLoop::Run() {
  absl::Time last_event = absl::Now();
  // When the thread last woke from a sleep, until the next event.
  absl::Time woke_at = absl::InfinitePast();
  SpinPolicy policy(options_.busy_poll);
  bool reported_stall = false;
  uint64_t rounds = 0;
  uint64_t idle_rounds = 0;
  uint64_t caller_turns = 0;  // caller_turns_ when this thread last slept
  bool saw_event = false;
  bool armed_busy = false;
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    std::unique_lock<WorkerLock> lock(worker_mu_, std::try_to_lock);
    if (!lock.owns_lock()) {
      // A caller is driving the worker itself (Transport::Wait): stay out
      // of its way until it hands back (HandBack) or a millisecond passes.
      Nap();
      continue;
    }
    t_holding = this;
    bool busy = ucp_worker_progress(worker_) != 0;
    stall_.OnProgress(busy);
    busy |= RunPosted();
    if (busy && idle_rounds > 0 && !armed_busy) {
      // An idle gap ended. Slept through: would polling have caught it?
      // Caught while polling: it would. (Not counted: an event that came
      // while arming, which says nothing about the gaps.)
      absl::Duration gap = absl::ZeroDuration();
      if (woke_at != absl::InfinitePast()) {
        gap = woke_at - last_event;
        last_event = woke_at;
        woke_at = absl::InfinitePast();
      }
      policy.OnGap(gap);
      spin_ns_.store(absl::ToInt64Nanoseconds(policy.spin()),
                     std::memory_order_relaxed);
    }
    armed_busy = false;
    idle_rounds = busy ? 0 : idle_rounds + 1;
    saw_event |= busy;
    bool sleep = false;
    // Nothing to poll for: sleep at once, after a clock read for the ticks
    // (a sleep costs more than the read).
    const bool sleep_now =
        idle_rounds > 0 && policy.spin() == absl::ZeroDuration();
    // Else the clock costs more than a progress call: read it every 16th
    // round.
    if (++rounds % 16 == 0 || sleep_now) {
      const absl::Time now = now_ = WallNow();
      MaybeTick(now);
      if (stall_.OnClock(now, has_shared_memory_peers_ && has_shared_memory_peers_()) !=
          reported_stall) {
        reported_stall = stall_.stalled();
        ReportStall(reported_stall);
      }
      if (saw_event) last_event = now;
      saw_event = false;
      // While callers send on their own threads, spinning only takes the
      // CPU they need: sleep as soon as the worker is idle. Armed, it wakes
      // for the next incoming message anyway. "While" is since this thread
      // last slept: a caller that woke it (a send UCX left in flight) has
      // often lost its core to it by the next look, and would look idle.
      const bool callers_active =
          caller_turns_.load(std::memory_order_relaxed) != caller_turns;
      sleep = sleep_now ||
              (idle_rounds >= 16 &&
               (callers_active || now - last_event >= policy.spin()));
    }
    // Arm under the lock; UCS_ERR_BUSY means events are already pending.
    bool nap = false;
    if (sleep) {
      const bool arm_busy = ucp_worker_arm(worker_) == UCS_ERR_BUSY;
      stall_.OnArm(arm_busy);
      if (arm_busy) {
        sleep = false;
        armed_busy = true;
        // Pending events that never come: poll each millisecond, no faster.
        nap = stall_.stalled();
      }
    }
    if (sleep) {
      sleeping_.store(true);
      if (pending_.load() != 0 || stop_requested_.load()) {
        sleeping_.store(false);
        sleep = false;
      }
    }
    t_holding = nullptr;
    lock.unlock();
    if (sleep) {
      caller_turns = caller_turns_.load(std::memory_order_relaxed);
      Sleep(options_.tick);
      woke_at = WallNow();
    } else if (nap) {
      sleeping_.store(true);  // so that Post wakes it
      if (pending_.load() == 0 && !stop_requested_.load()) Nap();
      sleeping_.store(false);
    }
  }
  std::lock_guard<WorkerLock> lock(worker_mu_);
  t_holding = this;
  if (on_stop_) on_stop_();
  {
    absl::MutexLock posted_lock(&mu_);
    accepting_ = false;
  }
  RunPosted();  // posted work sees the transport stopping and fails fast
  t_holding = nullptr;
}

void ProgressLoop::ReportStall(bool started) {
  if (started) {
    stalls_.fetch_add(1, std::memory_order_relaxed);
    LEEWAY_LOG(ERROR)
        << "UCX has said for " << absl::FormatDuration(options_.stall_window)
        << " that events are pending and none has come, and no shared-memory "
           "peer has been heard meanwhile: a shared-memory "
           "peer probably died inside a send and stopped this process's "
           "shared-memory FIFO (README, data plane), and shared-memory "
           "peers can no longer reach this process; polling every "
           "millisecond instead of spinning";
  } else {
    LEEWAY_LOG(WARNING) << "UCX events flow again (the stall is over)";
  }
}

void ProgressLoop::ProgressUntil(const std::function<bool()>& done,
                                 absl::Duration limit) {
  const absl::Time end = WallNow() + limit;
  while (!done() && WallNow() < end) {
    ucp_worker_progress(worker_);
    RunPosted();
  }
}

}  // namespace leeway
