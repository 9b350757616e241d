#include "kernels/gpu.h"

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"

#if LEEWAY_HAVE_CUDA
#include "kernels/cuda/device_query.h"
#endif

namespace leeway {
namespace {

GpuInventory Probe() {
  GpuInventory inventory;
#if LEEWAY_HAVE_CUDA
  inventory.built_with_cuda = true;
  const CudaDeviceQuery query = QueryCudaDevices();
  if (!query.error.empty()) {
    inventory.reason = query.error;
    return inventory;
  }
  inventory.devices = query.devices;
  if (inventory.devices.empty()) inventory.reason = "no CUDA device found";
#else
  inventory.reason = "built without CUDA (nvcc was not found at build time)";
#endif
  return inventory;
}

}  // namespace

const GpuInventory& Gpus() {
  static const GpuInventory* const inventory = [] {
    auto* probed = new GpuInventory(Probe());
    if (probed->devices.empty()) {
      LEEWAY_LOG(INFO) << "kernels run on the CPU: " << probed->reason;
    } else {
      for (const GpuDevice& d : probed->devices) {
        LEEWAY_LOG(INFO) << "GPU " << d.index << ": " << d.name << " (sm_"
                         << d.compute_major << d.compute_minor << ", "
                         << (d.memory_bytes >> 20) << " MiB)";
      }
    }
    return probed;
  }();
  return *inventory;
}

}  // namespace leeway
