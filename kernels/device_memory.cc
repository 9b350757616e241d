#include "kernels/device_memory.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "kernels/gpu.h"

#if LEEWAY_HAVE_CUDA
#include "kernels/cuda/codec_kernels.h"
#endif

namespace leeway {

#if LEEWAY_HAVE_CUDA

namespace {

absl::Status NoGpu() {
  return absl::FailedPreconditionError(absl::StrCat("no usable GPU: ", Gpus().reason));
}

}  // namespace

absl::Status CudaStatus(int code, const char* what) {
  if (code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cuda::ErrorString(code)));
}

DeviceBuffer::DeviceBuffer(size_t bytes, void* stream) : stream_(stream) {
  if (UsableGpus() == 0) {
    status_ = NoGpu();
    return;
  }
  status_ = CudaStatus(cuda::Malloc(&p_, bytes, stream), "device allocation");
  if (!status_.ok()) p_ = nullptr;
}

DeviceBuffer::~DeviceBuffer() {
  if (p_ != nullptr) cuda::Free(p_, stream_);
}

absl::StatusOr<DeviceStream> DeviceStream::Create() {
  if (UsableGpus() == 0) return NoGpu();
  DeviceStream created;
  LEEWAY_CUDA_OR_RETURN(cuda::CreateStream(&created.stream_), "stream creation");
  return created;
}

DeviceStream::~DeviceStream() {
  if (stream_ != nullptr) cuda::DestroyStream(stream_);
}

absl::Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes, void* stream) {
  if (UsableGpus() == 0) return NoGpu();
  return CudaStatus(cuda::CopyToDevice(device_dst, host_src, bytes, stream), "copy to device");
}

absl::Status CopyToHost(void* host_dst, const void* device_src, size_t bytes, void* stream) {
  if (UsableGpus() == 0) return NoGpu();
  return CudaStatus(cuda::CopyToHost(host_dst, device_src, bytes, stream), "copy to host");
}

absl::Status CopyOnDevice(void* device_dst, const void* device_src, size_t bytes,
                          void* stream) {
  if (UsableGpus() == 0) return NoGpu();
  return CudaStatus(cuda::CopyOnDevice(device_dst, device_src, bytes, stream), "device copy");
}

#else  // !LEEWAY_HAVE_CUDA

namespace {
absl::Status NoCuda() {
  return absl::FailedPreconditionError("built without CUDA: no device memory");
}
}  // namespace

absl::Status CudaStatus(int code, const char* what) {
  if (code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": CUDA error ", code));
}

DeviceBuffer::DeviceBuffer(size_t, void* stream) : stream_(stream), status_(NoCuda()) {}
DeviceBuffer::~DeviceBuffer() = default;
absl::StatusOr<DeviceStream> DeviceStream::Create() { return NoCuda(); }
DeviceStream::~DeviceStream() = default;

absl::Status CopyToDevice(void*, const void*, size_t, void*) { return NoCuda(); }
absl::Status CopyToHost(void*, const void*, size_t, void*) { return NoCuda(); }
absl::Status CopyOnDevice(void*, const void*, size_t, void*) { return NoCuda(); }

#endif  // LEEWAY_HAVE_CUDA

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : p_(std::exchange(other.p_, nullptr)),
      stream_(other.stream_),
      status_(std::move(other.status_)) {}

DeviceStream::DeviceStream(DeviceStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

DeviceStream& DeviceStream::operator=(DeviceStream&& other) noexcept {
  if (this != &other) {
    DeviceStream old(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    p_ = std::exchange(other.p_, nullptr);
    stream_ = other.stream_;
    status_ = std::move(other.status_);
  }
  return *this;
}

absl::StatusOr<DeviceBuffer> UploadFloats(absl::Span<const float> host, void* stream) {
  DeviceBuffer buffer(sizeof(float) * host.size(), stream);
  if (!buffer.status().ok()) return buffer.status();
  absl::Status copied =
      CopyToDevice(buffer.as<void>(), host.data(), sizeof(float) * host.size(), stream);
  if (!copied.ok()) return copied;
  return buffer;
}

absl::StatusOr<std::vector<float>> DownloadFloats(const DeviceBuffer& buffer, size_t n,
                                                  void* stream) {
  std::vector<float> host(n);
  absl::Status copied = CopyToHost(host.data(), buffer.as<void>(), sizeof(float) * n, stream);
  if (!copied.ok()) return copied;
  return host;
}

}  // namespace leeway
