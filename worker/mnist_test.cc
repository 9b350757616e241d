#include "worker/mnist.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

void Put32(std::string* s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s->push_back(char((v >> shift) & 0xFF));
}

std::string Images(uint32_t count, uint32_t rows, uint32_t cols) {
  std::string s;
  Put32(&s, 0x803);
  Put32(&s, count);
  Put32(&s, rows);
  Put32(&s, cols);
  for (uint32_t i = 0; i < count * rows * cols; ++i) s.push_back(char(i % 256));
  return s;
}

std::string Labels(uint32_t count, uint8_t first = 0) {
  std::string s;
  Put32(&s, 0x801);
  Put32(&s, count);
  for (uint32_t i = 0; i < count; ++i) s.push_back(char((first + i) % 10));
  return s;
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

absl::StatusOr<Dataset> ReadPair(const std::string& images, const std::string& labels) {
  Write(TempPath("img"), images);
  Write(TempPath("lbl"), labels);
  return ReadIdxDataset(TempPath("img"), TempPath("lbl"));
}

TEST_CASE("an IDX pair is read and scaled to [0, 1]") {
  auto d = ReadPair(Images(3, 2, 2), Labels(3, 4));
  REQUIRE(d.ok());
  CHECK(d->count == 3);
  CHECK(d->features == 4);
  CHECK(d->images[1] == Approx(1.0f / 255));
  CHECK(d->images[11] == Approx(11.0f / 255));
  CHECK(d->labels == std::vector<uint8_t>{4, 5, 6});
  Dataset even = d->Shard(0, 2);
  CHECK(even.count == 2);
  CHECK(even.labels == std::vector<uint8_t>{4, 6});
  CHECK(even.images[4] == d->images[8]);
}

TEST_CASE("bad IDX files are refused with the reason") {
  std::string truncated = Images(3, 2, 2);
  truncated.pop_back();
  CHECK(ReadPair(truncated, Labels(3)).status().code() == absl::StatusCode::kInvalidArgument);
  std::string magic = Images(3, 2, 2);
  magic[3] = 0x01;
  CHECK_FALSE(ReadPair(magic, Labels(3)).ok());
  CHECK_FALSE(ReadPair(Images(3, 2, 2), Labels(2)).ok());
  CHECK_FALSE(ReadPair(Images(0, 0, 2), Labels(0)).ok());
  CHECK_FALSE(ReadPair(Images(1, 2, 2).substr(0, 10), Labels(1)).ok());
  std::string bad_label = Labels(3);
  bad_label[9] = 12;
  auto refused = ReadPair(Images(3, 2, 2), bad_label);
  REQUIRE_FALSE(refused.ok());
  CHECK(std::string(refused.status().message()).find("not a digit") != std::string::npos);
  // A huge count must not be trusted before the length is checked.
  std::string huge = Images(1, 28, 28);
  huge[4] = char(0xFF);
  CHECK_FALSE(ReadPair(huge, Labels(1)).ok());
  CHECK(ReadIdxDataset(TempPath("missing"), TempPath("lbl")).status().code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace leeway
