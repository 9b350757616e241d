// Device memory: without a usable GPU every call refuses with
// FAILED_PRECONDITION; with one, data makes the round trip through a
// buffer on a stream of its own, and buffers and streams move. Tagged
// "gpu" for the part that needs one.
#include "kernels/device_memory.h"

#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/gpu.h"

namespace leeway {
namespace {

TEST_CASE("without a GPU device memory refuses, and says why") {
  if (UsableGpus() > 0) return;
  WARN("device memory round trips skipped: no usable GPU or no CUDA build");
  DeviceBuffer buffer(64, nullptr);
  CHECK(buffer.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(buffer.as<void>() == nullptr);
  CHECK(DeviceStream::Create().status().code() == absl::StatusCode::kFailedPrecondition);
  int x = 0;
  CHECK(CopyToDevice(&x, &x, sizeof(x), nullptr).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(CopyToHost(&x, &x, sizeof(x), nullptr).code() == absl::StatusCode::kFailedPrecondition);
  CHECK(CopyOnDevice(&x, &x, sizeof(x), nullptr).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(UploadFloats(std::vector<float>{1.0f}, nullptr).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(CudaStatus(0, "nothing").ok());
  CHECK(CudaStatus(2, "allocation").code() == absl::StatusCode::kInternal);
}

TEST_CASE("data makes the round trip through device memory on a stream of its own") {
  if (UsableGpus() == 0) return;
  auto stream = DeviceStream::Create();
  REQUIRE(stream.ok());
  REQUIRE(stream->get() != nullptr);
  std::vector<float> host(100000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = 0.5f * static_cast<float>(i);
  DeviceBuffer buffer(sizeof(float) * host.size(), stream->get());
  REQUIRE(buffer.status().ok());
  REQUIRE(CopyToDevice(buffer.as<void>(), host.data(), sizeof(float) * host.size(),
                       stream->get())
              .ok());
  DeviceBuffer moved = std::move(buffer);
  CHECK(buffer.as<void>() == nullptr);  // NOLINT: moved-from is empty by contract
  DeviceBuffer copy(sizeof(float) * host.size(), stream->get());
  REQUIRE(copy.status().ok());
  REQUIRE(CopyOnDevice(copy.as<void>(), moved.as<void>(), sizeof(float) * host.size(),
                       stream->get())
              .ok());
  std::vector<float> back(host.size());
  REQUIRE(CopyToHost(back.data(), copy.as<void>(), sizeof(float) * back.size(), stream->get())
              .ok());
  CHECK(back == host);
  auto uploaded = UploadFloats(host, stream->get());
  REQUIRE(uploaded.ok());
  auto downloaded = DownloadFloats(*uploaded, host.size(), stream->get());
  REQUIRE(downloaded.ok());
  CHECK(*downloaded == host);
  DeviceStream other = *std::move(stream);
  CHECK(other.get() != nullptr);
}

}  // namespace
}  // namespace leeway
