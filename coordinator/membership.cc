#include "coordinator/membership.h"

#include "absl/strings/str_cat.h"

namespace leeway {

const char* MemberRoleName(MemberRole role) {
  return role == MemberRole::kWorker ? "worker" : "server";
}

const char* MemberHealthName(MemberHealth health) {
  switch (health) {
    case MemberHealth::kAlive: return "alive";
    case MemberHealth::kDead: return "dead";
    case MemberHealth::kDown: return "down";
  }
  return "?";
}

Membership::Membership(absl::Duration heartbeat_timeout) : timeout_(heartbeat_timeout) {}

absl::StatusOr<MemberInfo> Membership::Register(const Registration& request,
                                                absl::Time now) {
  absl::MutexLock lock(&mu_);
  uint32_t rank = 0;
  if (request.requested_rank.has_value()) {
    rank = *request.requested_rank;
    auto it = members_.find({request.role, rank});
    if (it != members_.end() && it->second.health == MemberHealth::kAlive) {
      return absl::AlreadyExistsError(absl::StrCat(
          MemberRoleName(request.role), " rank ", rank, " is held by a live member at ",
          it->second.host));
    }
  } else {
    // The lowest rank that is free or whose holder is gone.
    while (true) {
      auto it = members_.find({request.role, rank});
      if (it == members_.end() || it->second.health != MemberHealth::kAlive) break;
      ++rank;
    }
  }
  MemberInfo& m = members_[{request.role, rank}];
  const uint32_t incarnation = m.incarnation + 1;
  m = MemberInfo();
  m.role = request.role;
  m.rank = rank;
  m.incarnation = incarnation;
  m.host = request.host;
  m.data_address = request.data_address;
  m.ucx_worker_address = request.ucx_worker_address;
  m.gpu = request.gpu;
  m.last_heartbeat = now;
  return m;
}

absl::Status Membership::Heartbeat(MemberRole role, uint32_t rank,
                                   uint32_t incarnation, uint32_t clock,
                                   absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find({role, rank});
  if (it == members_.end()) {
    return absl::NotFoundError(
        absl::StrCat(MemberRoleName(role), " ", rank, " never registered"));
  }
  MemberInfo& m = it->second;
  if (incarnation != m.incarnation) {
    return absl::FailedPreconditionError(absl::StrCat(
        MemberRoleName(role), " ", rank, " incarnation ", incarnation,
        " was replaced by incarnation ", m.incarnation));
  }
  if (m.health != MemberHealth::kAlive) {
    return absl::FailedPreconditionError(absl::StrCat(
        MemberRoleName(role), " ", rank, " was declared ", MemberHealthName(m.health),
        "; register again"));
  }
  m.last_heartbeat = now;
  m.clock = clock;
  return absl::OkStatus();
}

std::vector<MemberInfo> Membership::Sweep(absl::Time now) {
  absl::MutexLock lock(&mu_);
  std::vector<MemberInfo> changed;
  for (auto& [key, m] : members_) {
    if (m.health == MemberHealth::kAlive && now - m.last_heartbeat > timeout_) {
      m.health = m.role == MemberRole::kWorker ? MemberHealth::kDead : MemberHealth::kDown;
      changed.push_back(m);
    }
  }
  return changed;
}

std::vector<MemberInfo> Membership::Members() const {
  absl::MutexLock lock(&mu_);
  std::vector<MemberInfo> all;
  for (const auto& [key, m] : members_) all.push_back(m);
  return all;
}

std::vector<uint32_t> Membership::Ranks(MemberRole role, MemberHealth health) const {
  absl::MutexLock lock(&mu_);
  std::vector<uint32_t> ranks;
  for (const auto& [key, m] : members_) {
    if (m.role == role && m.health == health) ranks.push_back(m.rank);
  }
  return ranks;
}

size_t Membership::LiveCount(MemberRole role) const {
  return Ranks(role, MemberHealth::kAlive).size();
}

}  // namespace leeway
