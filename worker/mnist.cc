#include "worker/mnist.h"

#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace leeway {
namespace {

constexpr uint32_t kImageMagic = 0x00000803;
constexpr uint32_t kLabelMagic = 0x00000801;
constexpr uint32_t kMaxSide = 4096;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return bytes;
}

uint32_t BigEndian32(const std::string& b, size_t at) {
  return (uint32_t(uint8_t(b[at])) << 24) | (uint32_t(uint8_t(b[at + 1])) << 16) |
         (uint32_t(uint8_t(b[at + 2])) << 8) | uint32_t(uint8_t(b[at + 3]));
}

}  // namespace

Dataset Dataset::Shard(size_t shard, size_t shards) const {
  Dataset out;
  out.features = features;
  for (size_t i = shard; shards > 0 && i < count; i += shards) {
    out.images.insert(out.images.end(), images.begin() + i * features,
                      images.begin() + (i + 1) * features);
    out.labels.push_back(labels[i]);
  }
  out.count = out.labels.size();
  return out;
}

absl::StatusOr<Dataset> ReadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path) {
  absl::StatusOr<std::string> images = ReadFile(images_path);
  if (!images.ok()) return images.status();
  absl::StatusOr<std::string> labels = ReadFile(labels_path);
  if (!labels.ok()) return labels.status();
  if (images->size() < 16 || BigEndian32(*images, 0) != kImageMagic) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, ": not an IDX image file"));
  }
  if (labels->size() < 8 || BigEndian32(*labels, 0) != kLabelMagic) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path, ": not an IDX label file"));
  }
  const uint64_t count = BigEndian32(*images, 4);
  const uint32_t rows = BigEndian32(*images, 8), cols = BigEndian32(*images, 12);
  if (rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, ": bad image size ", rows, "x",
                                                   cols));
  }
  const uint64_t features = uint64_t{rows} * cols;
  if (images->size() != 16 + count * features) {
    return absl::InvalidArgumentError(absl::StrCat(images_path, ": ", images->size(),
                                                   " bytes, expected ", 16 + count * features));
  }
  if (BigEndian32(*labels, 4) != count || labels->size() != 8 + count) {
    return absl::InvalidArgumentError(absl::StrCat(labels_path, ": label count or length does not match ",
                                                   count, " images"));
  }
  Dataset d;
  d.count = count;
  d.features = features;
  d.images.resize(count * features);
  for (size_t i = 0; i < d.images.size(); ++i) {
    d.images[i] = float(uint8_t((*images)[16 + i])) / 255.0f;
  }
  d.labels.resize(count);
  for (size_t i = 0; i < count; ++i) {
    d.labels[i] = uint8_t((*labels)[8 + i]);
    if (d.labels[i] > 9) {
      return absl::InvalidArgumentError(absl::StrCat(labels_path, ": label ", int(d.labels[i]),
                                                     " at ", i, " is not a digit"));
    }
  }
  return d;
}

absl::StatusOr<Dataset> ReadMnist(const std::string& dir, bool train) {
  const std::string prefix = absl::StrCat(dir, "/", train ? "train" : "t10k");
  return ReadIdxDataset(prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte");
}

}  // namespace leeway
