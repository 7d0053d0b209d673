#include "compiler/jit/perf_map.h"

#include <llvm/ExecutionEngine/JITEventListener.h>
#include <llvm/ExecutionEngine/RuntimeDyld.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Object/SymbolSize.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "compiler/codegen/policy_context.h"

namespace kiln {

namespace {

bool EnvOn(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

// The compiled object's buffer is named after the module (the policy name), with LLVM's
// "-jitted-objectbuffer" suffix on a fresh compile; a cached object carries the bare name.
std::string_view PolicyOf(std::string_view file) {
  constexpr std::string_view kSuffix = "-jitted-objectbuffer";
  if (file.size() > kSuffix.size() && file.substr(file.size() - kSuffix.size()) == kSuffix)
    file.remove_suffix(kSuffix.size());
  return file.empty() ? std::string_view("policy") : file;
}

class PerfMapListener : public llvm::JITEventListener {
 public:
  PerfMapListener() {
    std::string path = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
    file_ = std::fopen(path.c_str(), "a");
  }

  void notifyObjectLoaded(ObjectKey, const llvm::object::ObjectFile& obj,
                          const llvm::RuntimeDyld::LoadedObjectInfo& info) override {
    if (file_ == nullptr) return;
    // The debug copy has its sections at their load addresses, so symbol addresses are final.
    llvm::object::OwningBinary<llvm::object::ObjectFile> loaded = info.getObjectForDebug(obj);
    const llvm::object::ObjectFile* view = loaded.getBinary() ? loaded.getBinary() : &obj;
    const std::string file_name = obj.getFileName().str();
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [symbol, size] : llvm::object::computeSymbolSizes(*view)) {
      auto type = symbol.getType();
      if (!type || *type != llvm::object::SymbolRef::ST_Function || size == 0) {
        if (!type) llvm::consumeError(type.takeError());
        continue;
      }
      auto name = symbol.getName();
      auto address = symbol.getAddress();
      if (!name || !address) {
        if (!name) llvm::consumeError(name.takeError());
        if (!address) llvm::consumeError(address.takeError());
        continue;
      }
      std::string line = PerfSymbolName(file_name, name->str());
      std::fprintf(file_, "%llx %llx %s\n", static_cast<unsigned long long>(*address),
                   static_cast<unsigned long long>(size), line.c_str());
    }
    std::fflush(file_);
  }

 private:
  std::mutex mu_;
  std::FILE* file_ = nullptr;
};

}  // namespace

std::string PerfSymbolName(std::string_view module_file, std::string_view symbol) {
  std::string_view policy = PolicyOf(module_file);
  std::string_view prefix = kThunkPrefix;
  if (symbol.substr(0, prefix.size()) == prefix) symbol.remove_prefix(prefix.size());
  return std::string(policy) + "::" + std::string(symbol);
}

std::vector<llvm::JITEventListener*> PerfListenersFromEnvironment() {
  std::vector<llvm::JITEventListener*> listeners;
  if (EnvOn("KILN_PERF_MAP")) {
    static PerfMapListener* map = new PerfMapListener();  // process lifetime, see the header
    listeners.push_back(map);
  }
  if (EnvOn("KILN_PERF_JITDUMP")) {
    if (llvm::JITEventListener* dump = llvm::JITEventListener::createPerfJITEventListener())
      listeners.push_back(dump);
  }
  return listeners;
}

}  // namespace kiln
