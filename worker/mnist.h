// Reads the MNIST data set in its standard IDX files (images: magic 0x803,
// count, rows, cols, then count*rows*cols bytes; labels: magic 0x801,
// count, then count bytes, each < 10), as produced by
// deploy/fetch-mnist.sh. Everything is checked against the file's length
// before it is used; a bad file is an error naming what is wrong.
#ifndef LEEWAY_WORKER_MNIST_H_
#define LEEWAY_WORKER_MNIST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leeway {

struct Dataset {
  size_t count = 0;
  size_t features = 0;         // rows * cols
  std::vector<float> images;   // count x features, scaled to [0, 1]
  std::vector<uint8_t> labels; // count

  // The samples i with i % shards == shard (each worker its own share).
  Dataset Shard(size_t shard, size_t shards) const;
};

// Reads `<prefix>-images-idx3-ubyte` and `<prefix>-labels-idx1-ubyte`.
absl::StatusOr<Dataset> ReadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path);
// "train" and "t10k" sets from a directory.
absl::StatusOr<Dataset> ReadMnist(const std::string& dir, bool train);

}  // namespace leeway

#endif  // LEEWAY_WORKER_MNIST_H_
