// The generated protocol code: messages round-trip, and the services work
// over a real gRPC channel on loopback.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "admin.grpc.pb.h"
#include "catch2/catch.hpp"
#include "coordinator.grpc.pb.h"

namespace leeway {
namespace {

TEST_CASE("shard maps and plans survive serialization") {
  v1::ShardMap map;
  map.set_version(3);
  map.set_chunk_bytes(4 << 20);
  v1::LayerSpec* layer = map.add_layers();
  layer->set_id(7);
  layer->set_name("transformer.h.0.attn.c_attn.weight");
  layer->add_shape(768);
  layer->add_shape(2304);
  layer->set_dtype(v1::DTYPE_F32);
  layer->mutable_optimizer()->set_kind(v1::OptimizerSpec::KIND_ADAM);
  v1::ChunkAssignment* chunk = map.add_chunks();
  chunk->set_layer(7);
  chunk->set_server_rank(1);
  chunk->set_elements(1 << 20);

  v1::ShardMap parsed;
  REQUIRE(parsed.ParseFromString(map.SerializeAsString()));
  CHECK(parsed.layers(0).shape(1) == 2304);
  CHECK(parsed.layers(0).optimizer().kind() == v1::OptimizerSpec::KIND_ADAM);
  CHECK(parsed.chunks(0).server_rank() == 1);

  v1::RegisterRequest request;
  CHECK_FALSE(request.has_requested_rank());
  request.set_requested_rank(0);
  CHECK(request.has_requested_rank());  // rank 0 is distinguishable from unset
}

class CountingCoordinator final : public v1::Coordinator::Service {
 public:
  grpc::Status Register(grpc::ServerContext* context,
                        const v1::RegisterRequest* request,
                        v1::RegisterResponse* response) override {
    auto auth = context->client_metadata().find("authorization");
    if (auth == context->client_metadata().end() || auth->second != "Bearer t") {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no token");
    }
    response->set_rank(request->role() == v1::ROLE_SERVER ? 0 : 5);
    response->set_staleness(-1);
    return grpc::Status::OK;
  }
};

TEST_CASE("the generated services run over a real channel") {
  grpc::EnableDefaultHealthCheckService(true);
  CountingCoordinator coordinator;
  v1::Admin::Service admin;  // every method: UNIMPLEMENTED
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&coordinator);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  REQUIRE(port > 0);

  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::Coordinator::NewStub(channel);
  v1::RegisterRequest request;
  request.set_role(v1::ROLE_WORKER);
  v1::RegisterResponse response;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    CHECK(stub->Register(&context, request, &response).error_code() ==
          grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    context.AddMetadata("authorization", "Bearer t");
    REQUIRE(stub->Register(&context, request, &response).ok());
    CHECK(response.rank() == 5);
    CHECK(response.staleness() == -1);
  }
  auto admin_stub = v1::Admin::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  v1::ClusterStatus status;
  CHECK(admin_stub->GetClusterStatus(&context, v1::ClusterStatusRequest(),
                                     &status)
            .error_code() == grpc::StatusCode::UNIMPLEMENTED);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

}  // namespace
}  // namespace leeway
