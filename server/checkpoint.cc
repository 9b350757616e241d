#include "server/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/common/crc32c.h"
#include "core/common/little_endian.h"
#include "core/common/logging.h"

namespace leeway {
namespace {

constexpr uint32_t kDataMagic = 0x4443574Cu;      // "LWCD"
constexpr uint32_t kManifestMagic = 0x4D43574Cu;  // "LWCM"
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kRecordHeaderBytes = 68;

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// A file written under a temporary name, then fsynced and renamed into
// place (and the directory fsynced), so that it appears whole or not at all.
class AtomicFile {
 public:
  static absl::StatusOr<AtomicFile> Create(const std::string& path) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Errno(absl::StrCat("cannot create ", tmp));
    return AtomicFile(path, fd);
  }
  AtomicFile(AtomicFile&& other) noexcept
      : path_(std::move(other.path_)), fd_(other.fd_), crc_(other.crc_),
        bytes_(other.bytes_) {
    other.fd_ = -1;
  }
  ~AtomicFile() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink((path_ + ".tmp").c_str());
    }
  }
  absl::Status Append(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    crc_ = Crc32cExtend(crc_, p, size);
    bytes_ += size;
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Errno(absl::StrCat("cannot write ", path_));
      p += n;
      size -= static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }
  absl::Status Commit() {
    if (::fsync(fd_) != 0) return Errno(absl::StrCat("cannot fsync ", path_));
    ::close(fd_);
    fd_ = -1;
    if (std::rename((path_ + ".tmp").c_str(), path_.c_str()) != 0) {
      return Errno(absl::StrCat("cannot rename to ", path_));
    }
    const std::string dir = path_.substr(0, path_.find_last_of('/') + 1);
    const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return absl::OkStatus();
  }
  uint32_t crc() const { return crc_; }
  uint64_t bytes() const { return bytes_; }

 private:
  AtomicFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  uint32_t crc_ = 0;
  uint64_t bytes_ = 0;
};

// Floats in little-endian order, a block at a time.
absl::Status AppendFloats(AtomicFile& file, const std::vector<float>& values) {
  std::vector<uint8_t> buffer;
  constexpr size_t kBlock = 1 << 16;
  for (size_t begin = 0; begin < values.size(); begin += kBlock) {
    const size_t end = std::min(values.size(), begin + kBlock);
    buffer.resize(4 * (end - begin));
    for (size_t i = begin; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], 4);
      StoreLE32(buffer.data() + 4 * (i - begin), bits);
    }
    absl::Status s = file.Append(buffer.data(), buffer.size());
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void PutF32(uint8_t* p, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  StoreLE32(p, bits);
}

float GetF32(const uint8_t* p) {
  const uint32_t bits = LoadLE32(p);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void EncodeRecordHeader(const ChunkRecord& r, uint8_t* p) {
  StoreLE32(p, r.info.layer);
  StoreLE32(p + 4, r.info.chunk);
  StoreLE64(p + 8, r.info.offset);
  StoreLE32(p + 16, r.info.elements);
  StoreLE32(p + 20, static_cast<uint32_t>(r.optimizer.kind));
  PutF32(p + 24, r.optimizer.learning_rate);
  PutF32(p + 28, r.optimizer.momentum);
  StoreLE32(p + 32, r.optimizer.nesterov ? 1 : 0);
  PutF32(p + 36, r.optimizer.beta1);
  PutF32(p + 40, r.optimizer.beta2);
  PutF32(p + 44, r.optimizer.epsilon);
  PutF32(p + 48, r.optimizer.weight_decay);
  StoreLE64(p + 52, r.state.version);
  StoreLE64(p + 60, r.state.optimizer_state.size());
}

// A bounds-checked reader over a byte buffer.
class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  bool Has(size_t n) const { return bytes_.size() - at_ >= n; }
  const uint8_t* Take(size_t n) {
    const uint8_t* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  size_t left() const { return bytes_.size() - at_; }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

absl::StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path,
                                              size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, " is missing"));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0 || static_cast<uint64_t>(size) > limit) {
    return absl::DataLossError(absl::StrCat(path, " has ", size, " bytes, want at most ", limit));
  }
  in.seekg(0);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    return absl::DataLossError(absl::StrCat("cannot read ", path));
  }
  return bytes;
}

absl::Status ParseData(const std::vector<uint8_t>& bytes,
                       std::vector<ChunkRecord>* chunks) {
  Reader r(bytes);
  if (!r.Has(16)) return absl::DataLossError("data file shorter than its header");
  const uint8_t* h = r.Take(16);
  if (LoadLE32(h) != kDataMagic || LoadLE32(h + 4) != kFormatVersion) {
    return absl::DataLossError("data file has a bad magic or version");
  }
  const uint64_t count = LoadLE64(h + 8);
  if (count > r.left() / kRecordHeaderBytes) {
    return absl::DataLossError(absl::StrCat("data file claims ", count, " chunks"));
  }
  for (uint64_t c = 0; c < count; ++c) {
    if (!r.Has(kRecordHeaderBytes)) return absl::DataLossError("truncated chunk record");
    const uint8_t* p = r.Take(kRecordHeaderBytes);
    ChunkRecord rec;
    rec.info = ChunkInfo{LoadLE32(p), LoadLE32(p + 4), LoadLE64(p + 8), LoadLE32(p + 16)};
    const uint32_t kind = LoadLE32(p + 20);
    if (kind > static_cast<uint32_t>(OptimizerKind::kAdagrad)) {
      return absl::DataLossError(absl::StrCat("unknown optimizer ", kind));
    }
    rec.optimizer.kind = static_cast<OptimizerKind>(kind);
    rec.optimizer.learning_rate = GetF32(p + 24);
    rec.optimizer.momentum = GetF32(p + 28);
    rec.optimizer.nesterov = LoadLE32(p + 32) != 0;
    rec.optimizer.beta1 = GetF32(p + 36);
    rec.optimizer.beta2 = GetF32(p + 40);
    rec.optimizer.epsilon = GetF32(p + 44);
    rec.optimizer.weight_decay = GetF32(p + 48);
    absl::Status valid = ValidateOptimizer(rec.optimizer);
    if (!valid.ok()) return absl::DataLossError(valid.message());
    rec.state.version = LoadLE64(p + 52);
    const uint64_t state_count = LoadLE64(p + 60);
    const uint64_t n = rec.info.elements;
    if (state_count != n * uint64_t(OptimizerStateSlots(rec.optimizer.kind)) ||
        (n + state_count) > r.left() / 4) {
      return absl::DataLossError("chunk record sizes do not add up");
    }
    for (auto* values : {&rec.state.params, &rec.state.optimizer_state}) {
      const uint64_t m = values == &rec.state.params ? n : state_count;
      const uint8_t* data = r.Take(4 * m);
      values->resize(m);
      for (uint64_t i = 0; i < m; ++i) (*values)[i] = GetF32(data + 4 * i);
    }
    chunks->push_back(std::move(rec));
  }
  if (r.left() != 0) return absl::DataLossError("bytes after the last chunk");
  return absl::OkStatus();
}

bool ParseSeq(const std::string& name, const char* suffix, uint64_t* seq) {
  absl::string_view view(name);
  return absl::ConsumePrefix(&view, "ckpt-") && absl::ConsumeSuffix(&view, suffix) &&
         absl::SimpleAtoi(view, seq);
}

}  // namespace

CheckpointStore::CheckpointStore(std::string dir, int keep)
    : dir_(std::move(dir)), keep_(std::max(1, keep)) {}

std::string CheckpointStore::DataPath(uint64_t seq) const {
  return absl::StrCat(dir_, "/ckpt-", seq, ".data");
}

std::string CheckpointStore::ManifestPath(uint64_t seq) const {
  return absl::StrCat(dir_, "/ckpt-", seq, ".manifest");
}

std::vector<uint64_t> CheckpointStore::List() const {
  std::vector<uint64_t> seqs;
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) return seqs;
  while (dirent* entry = ::readdir(dir)) {
    uint64_t seq;
    if (ParseSeq(entry->d_name, ".manifest", &seq)) seqs.push_back(seq);
  }
  ::closedir(dir);
  std::sort(seqs.rbegin(), seqs.rend());
  return seqs;
}

absl::StatusOr<uint64_t> CheckpointStore::Write(const CheckpointContents& contents) {
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return Errno(absl::StrCat("cannot create ", dir_));
  }
  const std::vector<uint64_t> existing = List();
  const uint64_t seq = existing.empty() ? 1 : existing.front() + 1;

  absl::StatusOr<AtomicFile> data = AtomicFile::Create(DataPath(seq));
  if (!data.ok()) return data.status();
  uint8_t header[16];
  StoreLE32(header, kDataMagic);
  StoreLE32(header + 4, kFormatVersion);
  StoreLE64(header + 8, contents.chunks.size());
  absl::Status s = data->Append(header, sizeof(header));
  for (const ChunkRecord& rec : contents.chunks) {
    uint8_t record[kRecordHeaderBytes];
    EncodeRecordHeader(rec, record);
    if (s.ok()) s = data->Append(record, sizeof(record));
    if (s.ok()) s = AppendFloats(*data, rec.state.params);
    if (s.ok()) s = AppendFloats(*data, rec.state.optimizer_state);
  }
  if (s.ok()) s = data->Commit();
  if (!s.ok()) return s;

  std::vector<uint8_t> manifest(32 + 8 * contents.clocks.size());
  StoreLE32(manifest.data(), kManifestMagic);
  StoreLE32(manifest.data() + 4, kFormatVersion);
  StoreLE64(manifest.data() + 8, seq);
  StoreLE64(manifest.data() + 16, data->bytes());
  StoreLE32(manifest.data() + 24, data->crc());
  StoreLE32(manifest.data() + 28, static_cast<uint32_t>(contents.clocks.size()));
  for (size_t i = 0; i < contents.clocks.size(); ++i) {
    StoreLE32(manifest.data() + 32 + 8 * i, contents.clocks[i].rank);
    StoreLE32(manifest.data() + 36 + 8 * i, contents.clocks[i].clock);
  }
  uint8_t crc[4];
  StoreLE32(crc, Crc32c(manifest.data(), manifest.size()));
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(ManifestPath(seq));
  if (!file.ok()) return file.status();
  s = file->Append(manifest.data(), manifest.size());
  if (s.ok()) s = file->Append(crc, 4);
  if (s.ok()) s = file->Commit();
  if (!s.ok()) return s;
  Prune();
  return seq;
}

void CheckpointStore::Prune() {
  const std::vector<uint64_t> seqs = List();
  for (size_t i = keep_; i < seqs.size(); ++i) {
    ::unlink(ManifestPath(seqs[i]).c_str());  // manifest first: never half
    ::unlink(DataPath(seqs[i]).c_str());
  }
  // Data files whose manifest never came (a crash between the two).
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> orphans;
  const uint64_t newest = seqs.empty() ? 0 : seqs.front();
  while (dirent* entry = ::readdir(dir)) {
    uint64_t seq;
    if (ParseSeq(entry->d_name, ".data", &seq) && seq < newest &&
        std::find(seqs.begin(), seqs.end(), seq) == seqs.end()) {
      orphans.push_back(DataPath(seq));
    }
  }
  ::closedir(dir);
  for (const std::string& path : orphans) ::unlink(path.c_str());
}

absl::StatusOr<CheckpointContents> CheckpointStore::Read(uint64_t seq) const {
  absl::StatusOr<std::vector<uint8_t>> manifest = ReadFile(ManifestPath(seq), 1 << 24);
  if (!manifest.ok()) return manifest.status();
  const std::vector<uint8_t>& m = *manifest;
  if (m.size() < 36) return absl::DataLossError("manifest is truncated");
  if (LoadLE32(m.data() + m.size() - 4) != Crc32c(m.data(), m.size() - 4)) {
    return absl::DataLossError("manifest checksum mismatch");
  }
  const uint32_t clocks = LoadLE32(m.data() + 28);
  if (LoadLE32(m.data()) != kManifestMagic || LoadLE32(m.data() + 4) != kFormatVersion ||
      LoadLE64(m.data() + 8) != seq || m.size() != 36 + 8 * uint64_t{clocks}) {
    return absl::DataLossError("manifest fields are inconsistent");
  }
  const uint64_t data_bytes = LoadLE64(m.data() + 16);
  absl::StatusOr<std::vector<uint8_t>> data = ReadFile(DataPath(seq), data_bytes);
  if (!data.ok()) return data.status();
  if (data->size() != data_bytes) {
    return absl::DataLossError(absl::StrCat("data file has ", data->size(),
                                            " bytes, manifest says ", data_bytes));
  }
  if (Crc32c(data->data(), data->size()) != LoadLE32(m.data() + 24)) {
    return absl::DataLossError("data file checksum mismatch");
  }
  CheckpointContents contents;
  absl::Status parsed = ParseData(*data, &contents.chunks);
  if (!parsed.ok()) return parsed;
  for (uint32_t i = 0; i < clocks; ++i) {
    contents.clocks.push_back({LoadLE32(m.data() + 32 + 8 * i), LoadLE32(m.data() + 36 + 8 * i)});
  }
  return contents;
}

absl::StatusOr<CheckpointContents> CheckpointStore::ReadNewest(uint64_t* seq) const {
  for (uint64_t candidate : List()) {
    absl::StatusOr<CheckpointContents> contents = Read(candidate);
    if (contents.ok()) {
      if (seq != nullptr) *seq = candidate;
      return contents;
    }
    LEEWAY_LOG(WARNING) << "skipping checkpoint " << candidate << " in " << dir_
                        << ": " << contents.status();
  }
  return absl::NotFoundError(absl::StrCat("no complete checkpoint in ", dir_));
}

}  // namespace leeway
