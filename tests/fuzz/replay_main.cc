// The fuzz targets without libFuzzer (KILN_FUZZ=OFF): one binary links every target under its
// own entry name and replays a corpus through one of them, so CI runs each target's corpus in
// every build. Usage: fuzz_replay frontend|loaders|jit|kube FILE|DIR...
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int FuzzFrontend(const uint8_t* data, size_t size);
extern "C" int FuzzLoaders(const uint8_t* data, size_t size);
extern "C" int FuzzJit(const uint8_t* data, size_t size);
extern "C" int FuzzKube(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s frontend|loaders|jit|kube FILE|DIR...\n", argv[0]);
    return 2;
  }
  int (*target)(const uint8_t*, size_t) = nullptr;
  if (std::strcmp(argv[1], "frontend") == 0) target = FuzzFrontend;
  if (std::strcmp(argv[1], "loaders") == 0) target = FuzzLoaders;
  if (std::strcmp(argv[1], "jit") == 0) target = FuzzJit;
  if (std::strcmp(argv[1], "kube") == 0) target = FuzzKube;
  if (!target) {
    std::fprintf(stderr, "unknown target %s\n", argv[1]);
    return 2;
  }
  std::vector<std::filesystem::path> inputs;
  for (int i = 2; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else {
      inputs.push_back(p);
    }
  }
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    target(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  std::printf("%s: replayed %zu inputs\n", argv[1], inputs.size());
  return inputs.empty() ? 1 : 0;
}
