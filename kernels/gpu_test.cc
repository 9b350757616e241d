#include "kernels/gpu.h"

#include "catch2/catch.hpp"

#if LEEWAY_HAVE_CUDA
#include "kernels/cuda/device_query.h"
#endif

namespace leeway {
namespace {

TEST_CASE("GPU discovery is consistent and explains an absent GPU") {
  const GpuInventory& gpus = Gpus();
  CHECK(&gpus == &Gpus());  // probed once
#if LEEWAY_HAVE_CUDA
  CHECK(gpus.built_with_cuda);
#else
  CHECK_FALSE(gpus.built_with_cuda);
  CHECK(gpus.reason.find("without CUDA") != std::string::npos);
#endif
  if (gpus.devices.empty()) {
    CHECK_FALSE(gpus.reason.empty());
    WARN("no GPU here: " << gpus.reason);
  } else {
    CHECK(gpus.reason.empty());
    for (const GpuDevice& d : gpus.devices) {
      CHECK_FALSE(d.name.empty());
      CHECK(d.compute_major >= 8);  // built for sm_80 and sm_90
    }
  }
}

#if LEEWAY_HAVE_CUDA
TEST_CASE("device code runs on every GPU", "[gpu]") {
  if (UsableGpus() == 0) {
    WARN("skipped: " << Gpus().reason);
    return;
  }
  for (const GpuDevice& d : Gpus().devices) {
    CHECK(CudaSelfTest(d.index) == "");
  }
}
#endif

}  // namespace
}  // namespace leeway
