#include "core/common/health_server.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

// grpc.health.v1.Health/Check by hand: HealthCheckRequest{service = 1} and
// HealthCheckResponse{status = 1} (SERVING 1, NOT_SERVING 2), as any probe sends.
grpc::StatusCode Check(int port, const std::string& service, int* status) {
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  std::string request;
  if (!service.empty()) {
    request = std::string(1, '\x0a') + static_cast<char>(service.size()) + service;
  }
  grpc::Slice slice(request);
  grpc::ByteBuffer send(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status done;
  bool finished = false;
  std::mutex mu;
  std::condition_variable cv;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &send,
                 &reply, [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   done = s;
                   finished = true;
                   cv.notify_all();
                 });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return finished; });
  *status = 0;
  if (done.ok()) {
    std::vector<grpc::Slice> slices;
    REQUIRE(reply.Dump(&slices).ok());
    std::string bytes;
    for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    if (bytes.size() == 2 && bytes[0] == '\x08') *status = bytes[1];
  }
  return done.error_code();
}

TEST_CASE("liveness answers at once, readiness once the role says so") {
  absl::StatusOr<std::unique_ptr<HealthServer>> health = HealthServer::Start("127.0.0.1:0");
  REQUIRE(health.ok());
  const int port = (*health)->port();
  REQUIRE(port > 0);
  int status = 0;
  REQUIRE(Check(port, "", &status) == grpc::StatusCode::OK);
  CHECK(status == 1);
  REQUIRE(Check(port, kReadinessService, &status) == grpc::StatusCode::OK);
  CHECK(status == 2);
  (*health)->SetReady(true);
  REQUIRE(Check(port, kReadinessService, &status) == grpc::StatusCode::OK);
  CHECK(status == 1);
  CHECK(Check(port, "no-such-service", &status) == grpc::StatusCode::NOT_FOUND);
  (*health)->Shutdown();
  CHECK(Check(port, "", &status) != grpc::StatusCode::OK);
}

TEST_CASE("a port that is taken is an error, not a crash") {
  absl::StatusOr<std::unique_ptr<HealthServer>> first = HealthServer::Start("127.0.0.1:0");
  REQUIRE(first.ok());
  absl::StatusOr<std::unique_ptr<HealthServer>> second =
      HealthServer::Start("127.0.0.1:" + std::to_string((*first)->port()));
  CHECK(second.status().code() == absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace leeway
