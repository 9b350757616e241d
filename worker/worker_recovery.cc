// Losing a server and getting it back (worker_impl.h, "worker_recovery.cc").
//
// A dead server process fails every operation on its endpoint with
// UNAVAILABLE. The thread that sees it asks the server's pull thread to
// recover; that thread polls the coordinator until the server's rank is
// alive under a new incarnation (restarted, usually from its checkpoint),
// connects to it, rejoins at the clock the old server had for this worker,
// offers the chunk values this worker last pulled (a server restarted
// without a checkpoint takes the first it gets) and installs the new
// connection. Chunk caches are dropped: a restored server's versions do
// not continue the old ones. When the connection was lost because this
// worker's own transport stalled (its shared-memory FIFO stopped by a peer
// that died inside a send: data_plane.h), the server is probably fine: the
// data plane is replaced and the same server process reconnected at once.
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "worker/worker_impl.h"

namespace leeway {
namespace {

// The same server process may be reachable again after a transient loss;
// until this long has passed only a new incarnation is tried.
constexpr absl::Duration kSameIncarnationGrace = absl::Seconds(5);
constexpr absl::Duration kPoll = absl::Milliseconds(200);

}  // namespace

absl::Status Worker::Impl::SendClock(ServerLink* server, uint32_t clock) {
  const absl::Time deadline = absl::Now() + options.timeout + options.server_recovery_timeout;
  while (true) {
    std::shared_ptr<ServerClient> client;
    uint64_t generation = 0;
    uint32_t pushes = 0;
    {
      absl::MutexLock lock(&server->mu);
      if (!server->failed.ok()) return server->failed;
      // A server restored from a checkpoint written after this CLOCK
      // arrived already has it.
      if (server->view >= clock) return absl::OkStatus();
      client = server->client;
      generation = server->generation;
      pushes = server->pushes;
    }
    absl::Status status = client->Clock(clock, pushes);
    if (status.ok()) {
      absl::MutexLock lock(&server->mu);
      if (server->generation == generation) {
        server->pushes = 0;
        server->view = clock;
      }
      return absl::OkStatus();
    }
    if (!IsPeerLoss(status)) return status;
    absl::Status recovered = AwaitRecovery(server, generation, deadline);
    if (!recovered.ok()) return recovered;
  }
}

absl::Status Worker::Impl::AwaitRecovery(ServerLink* server, uint64_t generation,
                                         absl::Time deadline) {
  absl::MutexLock lock(&server->mu);
  if (server->generation == generation && server->failed.ok()) {
    server->recovery_requested = true;
  }
  struct Args {
    ServerLink* server;
    uint64_t generation;
  } args{server, generation};
  const bool done = server->mu.AwaitWithDeadline(
      absl::Condition(
          +[](Args* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(a->server->mu) {
            return a->server->generation != a->generation || !a->server->failed.ok() ||
                   a->server->stopping;
          },
          &args),
      deadline);
  if (!server->failed.ok()) return server->failed;
  if (!done || server->generation == generation) {
    return absl::DeadlineExceededError(
        absl::StrCat("server ", server->rank, " was lost and is not back"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Member> Worker::Impl::AwaitServer(ServerLink* server,
                                                     uint32_t lost_incarnation,
                                                     absl::Time same_from, absl::Time deadline) {
  const uint32_t rank = server->rank;
  absl::Status last = absl::UnavailableError("the coordinator never listed it alive");
  while (absl::Now() < deadline) {
    {
      absl::MutexLock lock(&server->mu);
      if (server->stopping) return absl::CancelledError("the worker is stopping");
    }
    absl::StatusOr<v1::GetMembersResponse> members = session->client().GetMembers();
    if (members.ok()) {
      for (const v1::Member& m : members->members()) {
        if (m.role() != v1::ROLE_SERVER || m.rank() != rank) continue;
        if (m.health() != v1::HEALTH_ALIVE) break;
        if (m.incarnation() != lost_incarnation || absl::Now() >= same_from) {
          return m;
        }
        break;
      }
    } else {
      last = members.status();
    }
    absl::SleepFor(kPoll);
  }
  return absl::DeadlineExceededError(
      absl::StrCat("server ", rank, " lost and not back within ",
                   absl::FormatDuration(options.server_recovery_timeout), ": ",
                   last.message()));
}

absl::StatusOr<std::shared_ptr<ServerClient>> Worker::Impl::ConnectServer(
    const v1::Member& m) {
  absl::StatusOr<Transport*> healthy = data_plane->Healthy();
  if (!healthy.ok()) return healthy.status();
  Transport* transport = *healthy;
  absl::StatusOr<PeerId> peer;
  if (options.connect == "sockaddr") {
    const size_t colon = m.data_address().rfind(':');
    uint32_t port = 0;
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(m.data_address().substr(colon + 1), &port) || port == 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("server ", m.rank(), " has a bad data address '", m.data_address(), "'"));
    }
    peer = transport->Connect(m.data_address().substr(0, colon), static_cast<uint16_t>(port));
  } else {
    peer = transport->ConnectToWorkerAddress(m.ucx_worker_address());
  }
  if (!peer.ok()) {
    return absl::Status(peer.status().code(), absl::StrCat("cannot connect to server ", m.rank(),
                                                           ": ", peer.status().message()));
  }
  LEEWAY_LOG(INFO) << "connected to server " << m.rank() << " (incarnation " << m.incarnation()
                   << ") over " << transport->PeerTransportName(*peer).value_or("?");
  return std::make_shared<ServerClient>(transport, *peer, options.timeout);
}

absl::Status Worker::Impl::OfferChunks(ServerLink* server, ServerClient* client,
                                       absl::Time deadline) {
  for (size_t i = 0; i < layers.size(); ++i) {
    for (ChunkState& c : layers[i].chunks) {
      if (c.server != server) continue;
      if (c.cache.version != ChunkCopy().version) {
        absl::StatusOr<bool> taken = client->InitializeWhenDeclared(
            static_cast<uint32_t>(i), c.chunk, c.cache.values, deadline);
        if (!taken.ok()) return taken.status();
      }
      c.cache = ChunkCopy();
      c.mirror = nullptr;
    }
  }
  return absl::OkStatus();
}

absl::Status Worker::Impl::Recover(ServerLink* server, uint64_t generation) {
  uint32_t lost_incarnation = 0;
  Transport* lost_over = nullptr;
  {
    absl::MutexLock lock(&server->mu);
    if (!server->failed.ok()) return server->failed;
    if (server->generation != generation) return absl::OkStatus();
    lost_incarnation = server->incarnation;
    lost_over = server->client->transport();
  }
  const absl::Time lost_at = absl::Now();
  const absl::Time deadline = lost_at + options.server_recovery_timeout;
  // Lost because this worker's transport stalled: the same server process
  // is worth trying at once (through a new transport).
  absl::StatusOr<Transport*> healthy = data_plane->Healthy();
  const bool stalled_here = healthy.ok() && *healthy != lost_over;
  const absl::Time same_from = stalled_here ? lost_at : lost_at + kSameIncarnationGrace;
  if (stalled_here) {
    LEEWAY_LOG(WARNING) << "server " << server->rank
                        << " lost through this worker's stalled data plane; reconnecting";
  } else {
    LEEWAY_LOG(WARNING) << "server " << server->rank << " lost; waiting up to "
                        << absl::FormatDuration(options.server_recovery_timeout)
                        << " for the coordinator to list it alive again";
  }
  absl::Status status;
  while (true) {
    absl::StatusOr<v1::Member> member =
        AwaitServer(server, lost_incarnation, same_from, deadline);
    if (!member.ok()) {
      status = member.status();
      break;
    }
    absl::StatusOr<std::shared_ptr<ServerClient>> connected = ConnectServer(*member);
    if (!connected.ok()) {
      // Listed alive but not reachable (yet, or any more): ask again.
      LEEWAY_LOG_EVERY_N_SEC(WARNING, 5) << connected.status();
      absl::SleepFor(kPoll);
      continue;
    }
    std::shared_ptr<ServerClient> client = *std::move(connected);
    uint32_t resume_at = 0;
    {
      absl::MutexLock lock(&server->mu);
      resume_at = server->view;
    }
    absl::StatusOr<uint32_t> joined = client->Join(resume_at);
    if (joined.ok() && *joined > resume_at + 1) {
      joined = absl::FailedPreconditionError(absl::StrCat(
          "server ", server->rank, " resumed this worker at clock ", *joined, ", past ",
          resume_at));
    }
    if (joined.ok()) status = OfferChunks(server, client.get(), deadline);
    if (!joined.ok() || !status.ok()) {
      status = joined.ok() ? status : joined.status();
      if (IsPeerLoss(status) && absl::Now() < deadline) continue;  // died again
      break;
    }
    uint64_t lost = 0;
    {
      absl::MutexLock stats(&stats_mu);
      lost = lost_pushes;
    }
    absl::MutexLock lock(&server->mu);
    server->client = std::move(client);
    server->incarnation = member->incarnation();
    server->pushes = 0;
    server->view = *joined;
    server->recovery_requested = false;
    ++server->generation;
    LEEWAY_LOG(WARNING) << "server " << server->rank << " is back (incarnation "
                        << member->incarnation() << ") after "
                        << absl::FormatDuration(absl::Trunc(absl::Now() - lost_at,
                                                            absl::Milliseconds(1)))
                        << "; resumed at clock " << *joined << "; " << lost
                        << " pushes lost so far";
    return absl::OkStatus();
  }
  LEEWAY_LOG(ERROR) << "server " << server->rank << " is gone: " << status;
  absl::MutexLock lock(&server->mu);
  server->failed = status;
  server->recovery_requested = false;
  return status;
}

}  // namespace leeway
