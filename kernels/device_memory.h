// Device memory for host code that includes no CUDA header: a CUDA error
// code as a Status, an allocation freed on destruction, and copies between
// host and device. `stream` is a cudaStream_t as void* (null: the default
// stream). Copies return when the data has arrived.
//
// In a build without CUDA, or on a machine without a usable GPU
// (kernels/gpu.h), every call fails with FAILED_PRECONDITION (and a
// DeviceBuffer's status() says so), so that callers need no #if of their
// own. Thread-compatible.
#ifndef LEEWAY_KERNELS_DEVICE_MEMORY_H_
#define LEEWAY_KERNELS_DEVICE_MEMORY_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace leeway {

// OK for 0; INTERNAL naming `what` and CUDA's description otherwise.
absl::Status CudaStatus(int code, const char* what);

#define LEEWAY_CUDA_OR_RETURN(expr, what)                             \
  do {                                                                \
    absl::Status _cuda_status = ::leeway::CudaStatus((expr), (what)); \
    if (!_cuda_status.ok()) return _cuda_status;                      \
  } while (0)

// `bytes` of device memory (at least 1), allocated and freed in the order
// of `stream`; status() says whether the allocation worked. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, void* stream);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  const absl::Status& status() const { return status_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  void* stream_ = nullptr;
  absl::Status status_;
};

// A CUDA stream of its own (non-blocking), destroyed with the object.
// Move-only.
class DeviceStream {
 public:
  DeviceStream() = default;
  static absl::StatusOr<DeviceStream> Create();
  ~DeviceStream();
  DeviceStream(DeviceStream&& other) noexcept;
  DeviceStream& operator=(DeviceStream&& other) noexcept;
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;

  void* get() const { return stream_; }

 private:
  void* stream_ = nullptr;
};

absl::Status CopyToDevice(void* device_dst, const void* host_src, size_t bytes, void* stream);
absl::Status CopyToHost(void* host_dst, const void* device_src, size_t bytes, void* stream);
absl::Status CopyOnDevice(void* device_dst, const void* device_src, size_t bytes, void* stream);

// A new buffer holding `host` (allocated and filled in `stream`'s order).
absl::StatusOr<DeviceBuffer> UploadFloats(absl::Span<const float> host, void* stream);
// The first n floats of `buffer`, in host memory.
absl::StatusOr<std::vector<float>> DownloadFloats(const DeviceBuffer& buffer, size_t n,
                                                  void* stream);

}  // namespace leeway

#endif  // LEEWAY_KERNELS_DEVICE_MEMORY_H_
