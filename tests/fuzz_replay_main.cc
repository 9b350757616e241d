// A stand-in for libFuzzer's driver where the build has no libFuzzer (gcc):
// runs every corpus file through LLVMFuzzerTestOneInput, then seeded random
// mutations of them until the time budget is spent. Accepts libFuzzer's
// command line (directories, -max_total_time=N, -seed=N; other -flags are
// ignored), so the same test script drives both. Under --config=fuzz the
// real libFuzzer replaces this file.
#include <dirent.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::vector<uint8_t>> ReadCorpus(const std::string& dir) {
  std::vector<std::vector<uint8_t>> inputs;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return inputs;
  while (dirent* entry = readdir(d)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + entry->d_name, std::ios::binary);
    inputs.emplace_back(std::istreambuf_iterator<char>(in),
                        std::istreambuf_iterator<char>());
  }
  closedir(d);
  return inputs;
}

void Mutate(std::vector<uint8_t>* input, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < edits; ++i) {
    switch (rng() % 5) {
      case 0:  // flip a bit
        if (!input->empty()) (*input)[rng() % input->size()] ^= 1u << (rng() % 8);
        break;
      case 1:  // random byte
        if (!input->empty()) (*input)[rng() % input->size()] = rng();
        break;
      case 2:  // truncate
        if (!input->empty()) input->resize(rng() % input->size());
        break;
      case 3:  // append
        for (int n = static_cast<int>(rng() % 64); n > 0; --n) input->push_back(rng());
        break;
      default:  // interesting values at a random offset
        if (input->size() >= 4) {
          static const uint32_t kValues[] = {0, 1, 0x7fffffff, 0xffffffff, 64, 72};
          const uint32_t v = kValues[rng() % 6];
          std::memcpy(input->data() + rng() % (input->size() - 3), &v, 4);
        }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  double budget_seconds = 5;
  uint64_t seed = 1;
  std::vector<std::vector<uint8_t>> corpus;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strncmp(arg, "-max_total_time=", 16) == 0) {
      budget_seconds = std::atof(arg + 16);
    } else if (std::strncmp(arg, "-seed=", 6) == 0) {
      seed = std::strtoull(arg + 6, nullptr, 10);
    } else if (arg[0] != '-') {
      for (auto& input : ReadCorpus(arg)) corpus.push_back(std::move(input));
    }
  }
  for (const auto& input : corpus) LLVMFuzzerTestOneInput(input.data(), input.size());
  std::printf("replayed %zu corpus inputs\n", corpus.size());
  if (corpus.empty()) corpus.push_back({0});
  std::mt19937_64 rng(seed);
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(budget_seconds);
  uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int batch = 0; batch < 1000; ++batch, ++runs) {
      std::vector<uint8_t> input = corpus[rng() % corpus.size()];
      Mutate(&input, rng);
      LLVMFuzzerTestOneInput(input.data(), input.size());
    }
  }
  std::printf("ran %llu mutated inputs in %.0f s (seed %llu)\n",
              static_cast<unsigned long long>(runs), budget_seconds,
              static_cast<unsigned long long>(seed));
  return 0;
}
