#include "compiler/host/compiled_policy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <map>

#include "compiler/codegen/codegen.h"
#include "compiler/frontend.h"
#include "compiler/host/host_symbols.h"
#include "compiler/jit/kiln_jit.h"
#include "compiler/passes/walk.h"
#include "runtime/thread_pool.h"

namespace kiln {

namespace {

std::string ToString(llvm::Error err) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << err;
  return os.str();
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

Result<std::unique_ptr<ast::Policy>> Front(const SourceFile& source,
                                           PhaseTimings* timings = nullptr) {
  FrontendResult fe = RunFrontend(source);
  if (timings) timings->Append(fe.timings);
  if (!fe.ok()) {
    std::string text = FormatDiagnostics(fe.diagnostics, source);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return Error{fmt::format("policy {} does not compile:\n{}", source.path, text),
                 SourceLocation{source.path, 0, 0}};
  }
  return std::move(fe.policy);
}

// Whether any code of the policy reads the session clock: a call of `now()` or `session.now`.
// Over-approximates (a record field named `now` counts too), which only costs skipped sessions.
bool ReadsClock(ast::Policy& policy) {
  bool reads = false;
  passes::Walker w;
  w.on_expr = [&](ast::Expr* e) {
    if (auto* c = ast::As<ast::Call>(e); c && c->callee == "now") reads = true;
    if (auto* s = ast::As<ast::Select>(e); s && s->field == "now") reads = true;
  };
  for (auto* fn : policy.All<ast::FnDecl>()) w.Stmt(fn->body.get());
  for (auto* h : policy.All<ast::HandlerDecl>()) w.Stmt(h->body.get());
  for (auto* st : policy.All<ast::StateDecl>())
    if (st->init) w.Expr(st->init.get());
  return reads;
}

}  // namespace

CompiledPolicy::~CompiledPolicy() {
  if (release) release();
}

struct PolicyCompiler::Impl {
  std::unique_ptr<KilnJit> jit;
  std::mutex mu;
  // path → (version, policy). A new version of a path replaces the entry; the old code is
  // dropped once the last session/provider using it lets go.
  std::map<std::string, std::pair<uint64_t, std::shared_ptr<const CompiledPolicy>>> cache;
  // Compiles under way, by path: a second request for the same version waits for the first.
  std::map<std::string, std::pair<uint64_t, std::shared_future<CompileResult>>> in_flight;
  std::atomic<uint64_t> units = 0;

  // Front end → codegen → JIT; touches no shared state but the (thread-safe) JIT.
  CompileResult CompileUncached(const SourceFile& source, uint64_t version);
};

PolicyCompiler::PolicyCompiler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PolicyCompiler::~PolicyCompiler() = default;

Result<PolicyCompiler*> PolicyCompiler::Global() {
  static std::mutex mu;
  static PolicyCompiler* global = nullptr;
  static std::string error;
  std::lock_guard<std::mutex> lock(mu);
  if (global) return global;
  if (!error.empty()) return Error{error, {}};
  auto jit = KilnJit::Create(AllHostSymbols());
  if (!jit) {
    error = "cannot create the JIT: " + ToString(jit.takeError());
    return Error{error, {}};
  }
  auto impl = std::make_unique<Impl>();
  impl->jit = std::move(*jit);
  // Deliberately never destroyed: compiled policies may be released during static destruction.
  global = new PolicyCompiler(std::move(impl));
  if (const char* dir = std::getenv("KILN_COMPILE_CACHE"); dir && *dir)
    global->SetCompileCacheDir(dir);
  global->SetShippedCacheDir(DefaultShippedCacheDir());
  return global;
}

std::string PolicyCompiler::DefaultShippedCacheDir() {
  if (const char* dir = std::getenv("KILN_BUILTIN_CACHE")) return dir;
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const char* rel : {"kiln-builtins", "../lib/kiln/builtins"}) {
    std::filesystem::path dir = exe.parent_path() / rel;
    if (std::filesystem::is_directory(dir, ec)) return dir.lexically_normal().string();
  }
  return "";
}

void PolicyCompiler::SetShippedCacheDir(const std::string& dir) {
  impl_->jit->SetShippedCache(
      dir.empty() ? nullptr
                  : std::make_shared<ObjectCache>(dir, ObjectCache::Mode::kReadOnly));
}

ObjectCacheStats PolicyCompiler::ShippedCacheStats() {
  std::shared_ptr<ObjectCache> cache = impl_->jit->GetShippedCache();
  return cache ? cache->Stats() : ObjectCacheStats{};
}

Result<size_t> PolicyCompiler::WriteCacheDir(const std::string& dir,
                                             const std::vector<SourceFile>& sources) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".kobj") fs::remove(e.path(), ec);
  auto cache = std::make_shared<ObjectCache>(dir);
  if (!cache->enabled()) return Error{fmt::format("cannot use {} as a compile cache", dir), {}};
  std::shared_ptr<ObjectCache> saved = impl_->jit->GetObjectCache();
  std::shared_ptr<ObjectCache> saved_shipped = impl_->jit->GetShippedCache();
  impl_->jit->SetObjectCache(cache);
  impl_->jit->SetShippedCache(nullptr);
  // Under a path no compile of this process has used, so the in-memory cache cannot answer and
  // every object goes through the disk cache.
  static std::atomic<uint64_t> batch{0};
  std::vector<SourceFile> fresh;
  std::string prefix = fmt::format("kiln-warm-cache/{}/", batch++);
  for (const SourceFile& s : sources) fresh.push_back(SourceFile{prefix + s.path, s.text});
  std::vector<CompileResult> results = CompileAll(fresh);
  impl_->jit->SetObjectCache(saved);
  impl_->jit->SetShippedCache(saved_shipped);
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i].ok()) {
      Error e = results[i].error();
      e.message = fmt::format("{}: {}", sources[i].path, e.message);
      return e;
    }
  ObjectCacheStats stats = cache->Stats();
  if (stats.store_failures > 0 || stats.stores + stats.hits < sources.size())
    return Error{fmt::format("{} of {} objects could not be written to {}",
                             sources.size() - stats.stores - stats.hits, sources.size(), dir),
                 {}};
  return static_cast<size_t>(stats.stores);
}

void PolicyCompiler::SetCompileCacheDir(const std::string& dir) {
  impl_->jit->SetObjectCache(dir.empty() ? nullptr : std::make_shared<ObjectCache>(dir));
}

ObjectCacheStats PolicyCompiler::CompileCacheStats() {
  std::shared_ptr<ObjectCache> cache = impl_->jit->GetObjectCache();
  return cache ? cache->Stats() : ObjectCacheStats{};
}

size_t PolicyCompiler::CachedCount() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->cache.size();
}

Result<std::shared_ptr<const CompiledPolicy>> PolicyCompiler::Compile(const SourceFile& source) {
  uint64_t version = Fnv1a(source.text);
  std::promise<CompileResult> promise;
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    if (auto it = impl_->cache.find(source.path);
        it != impl_->cache.end() && it->second.first == version)
      return it->second.second;
    if (auto it = impl_->in_flight.find(source.path);
        it != impl_->in_flight.end() && it->second.first == version) {
      std::shared_future<CompileResult> pending = it->second.second;
      lock.unlock();
      return pending.get();
    }
    impl_->in_flight[source.path] = {version, promise.get_future().share()};
  }
  // Waiters on this compile must always get an answer, so nothing may escape before set_value.
  CompileResult result = Error{"not compiled", {}};
  try {
    result = impl_->CompileUncached(source, version);
  } catch (const std::exception& e) {
    result = Error{fmt::format("policy {}: internal compiler error: {}", source.path, e.what()),
                   SourceLocation{source.path, 0, 0}};
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (result.ok()) impl_->cache[source.path] = {version, *result};
    if (auto it = impl_->in_flight.find(source.path);
        it != impl_->in_flight.end() && it->second.first == version)
      impl_->in_flight.erase(it);
  }
  promise.set_value(result);
  return result;
}

std::vector<PolicyCompiler::CompileResult> PolicyCompiler::CompileAll(
    const std::vector<SourceFile>& sources) {
  std::vector<CompileResult> results(sources.size(), Error{"not compiled", {}});
  ThreadPool::Default().ParallelFor(
      sources.size(), [&](size_t i) { results[i] = Compile(sources[i]); }, /*grain=*/1);
  return results;
}

namespace {

// A compile-cache payload is this description of the object, then the relocatable object:
//   u64 length of the rest of the description,
//   u64 count, that many u64 extension points (one thunk "kiln.on.<handler>" each),
//   u64 args_size, u64 args_align, u64 count, that many u64 offsets (one per `arg`, in order).
// The cache verifies the payload's checksum; the decoder still checks every count and value
// against the policy, and anything off is a miss that compiles.
struct ObjectDescription {
  std::vector<ExtensionPoint> points;
  uint64_t args_size = 0;
  uint64_t args_align = 8;
  std::vector<uint64_t> arg_offsets;
};

std::string EncodeDescription(const ObjectDescription& d) {
  std::vector<uint64_t> words;
  words.push_back(d.points.size());
  for (ExtensionPoint p : d.points) words.push_back(static_cast<uint64_t>(p));
  words.push_back(d.args_size);
  words.push_back(d.args_align);
  words.push_back(d.arg_offsets.size());
  words.insert(words.end(), d.arg_offsets.begin(), d.arg_offsets.end());
  std::string out;
  auto put = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(words.size() * 8);
  for (uint64_t w : words) put(w);
  return out;
}

// Splits `payload` into the description (checked against `policy`) and the object.
bool DecodePayload(std::string_view payload, const ast::Policy& policy, ObjectDescription* d,
                   std::string_view* object) {
  size_t pos = 0;
  auto get = [&](uint64_t* v) {
    if (payload.size() - pos < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i)
      *v |= uint64_t{static_cast<unsigned char>(payload[pos + i])} << (8 * i);
    pos += 8;
    return true;
  };
  uint64_t length = 0, count = 0;
  if (!get(&length) || length > payload.size() - pos || length % 8 != 0) return false;
  const size_t end = pos + length;
  if (!get(&count) || count > static_cast<uint64_t>(kExtensionPointCount)) return false;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t p = 0;
    if (!get(&p) || p >= static_cast<uint64_t>(kExtensionPointCount)) return false;
    d->points.push_back(static_cast<ExtensionPoint>(p));
  }
  if (!get(&d->args_size) || !get(&d->args_align) || !get(&count)) return false;
  if (d->args_align == 0 || d->args_align > 4096 || count != policy.All<ast::ArgDecl>().size())
    return false;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t offset = 0;
    if (!get(&offset) || offset > d->args_size) return false;
    d->arg_offsets.push_back(offset);
  }
  if (pos != end || end == payload.size()) return false;
  *object = payload.substr(end);
  return true;
}

}  // namespace

PolicyCompiler::CompileResult PolicyCompiler::Impl::CompileUncached(const SourceFile& source,
                                                                    uint64_t version) {
  auto start = std::chrono::steady_clock::now();
  PhaseTimings timings;
  auto policy = Front(source, &timings);
  if (!policy.ok()) return policy.error();

  auto compiled = std::make_shared<CompiledPolicy>();
  compiled->name = (*policy)->name;
  compiled->path = source.path;
  compiled->version = version;
  std::string unit_name = fmt::format("{}@{:016x}#{}", compiled->name, version, ++units);
  auto jit_error = [&](llvm::Error err) -> Error {
    return Error{fmt::format("policy {}: JIT: {}", source.path, ToString(std::move(err))),
                 SourceLocation{source.path, 0, 0}};
  };

  // The compile cache is asked before codegen: its key is the source (plus the compiler and the
  // target), so a hit skips lowering, O2 and machine code.
  PhaseTimer lookup_timer(&timings, "cache-lookup");
  ObjectCacheKey key = jit->CacheKey(Sha256Hex(source.text));
  std::optional<std::string> payload = jit->LookupCached(key);
  lookup_timer.Stop();
  ObjectDescription description;
  std::optional<JitUnit> unit;
  bool from_cache = false;
  if (payload) {
    std::string_view object;
    if (DecodePayload(*payload, **policy, &description, &object)) {
      auto added = jit->AddObject(object, unit_name, compiled->name);
      if (!added) return jit_error(added.takeError());
      unit = std::move(*added);
      from_cache = true;
    } else {
      spdlog::warn("compile cache: the object cached for {} is not one this compiler wrote; "
                   "compiling it",
                   source.path);
      description = ObjectDescription{};
    }
  }
  if (!unit) {
    PhaseTimer codegen_timer(&timings, "codegen");
    auto lowered = LowerPolicy(**policy, jit->DataLayout());
    if (!lowered.ok()) return lowered.error();
    codegen_timer.Stop();
    description.points = lowered->points;
    description.args_size = lowered->args_size;
    description.args_align = lowered->args_align;
    for (const ArgSlot& slot : lowered->args) description.arg_offsets.push_back(slot.offset);
    std::optional<KilnJit::CacheStore> store;
    if (jit->CacheWritable()) store = KilnJit::CacheStore{key, EncodeDescription(description)};
    auto added = jit->AddModule(
        llvm::orc::ThreadSafeModule(std::move(lowered->module), std::move(lowered->context)),
        unit_name, store);
    if (!added) return jit_error(added.takeError());
    unit = std::move(*added);
  }
  compiled->args_size = description.args_size;
  compiled->args_align = description.args_align;
  std::vector<ast::ArgDecl*> arg_decls = (*policy)->All<ast::ArgDecl>();
  for (size_t i = 0; i < arg_decls.size(); ++i)
    compiled->args.push_back(ArgSlot{arg_decls[i], description.arg_offsets[i]});

  auto shared_unit = std::make_shared<JitUnit>(std::move(*unit));
  compiled->release = [jit = jit.get(), shared_unit] {
    llvm::consumeError(jit->Remove(*shared_unit));
  };
  // The lookup materialises the unit on this thread: O2, then machine code and linking (or only
  // linking, for a cached object).
  double o2_before = KilnJit::OptimizeMsOnThisThread();
  auto jit_start = std::chrono::steady_clock::now();
  std::vector<std::string> symbols;
  for (ExtensionPoint p : description.points)
    symbols.push_back(std::string(kThunkPrefix) + std::string(Info(p).handler));
  symbols.push_back(kStateInitSymbol);
  symbols.push_back(kArgsDefaultSymbol);
  auto addresses = jit->LookupAll(*shared_unit, symbols);
  if (!addresses) return jit_error(addresses.takeError());
  for (size_t i = 0; i < description.points.size(); ++i)
    compiled->handlers.emplace_back(description.points[i],
                                    reinterpret_cast<void (*)()>((*addresses)[i]));
  compiled->state_init =
      reinterpret_cast<void (*)(PolicyContext*)>((*addresses)[symbols.size() - 2]);
  compiled->args_default =
      reinterpret_cast<void (*)(void*, PolicyContext*)>((*addresses)[symbols.size() - 1]);
  double jit_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - jit_start)
          .count();
  if (from_cache) {
    timings.Add("link", jit_ms);
  } else {
    double o2_ms = KilnJit::OptimizeMsOnThisThread() - o2_before;
    timings.Add("o2", o2_ms);
    timings.Add("machine-code", jit_ms - o2_ms);
  }
  compiled->reads_clock = ReadsClock(**policy);
  compiled->ast = std::move(*policy);
  compiled->compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (TimingsRequested()) {
    fmt::print(stderr, "kiln: compiled {} in {:.2f} ms: {}\n", source.path, compiled->compile_ms,
               timings.Format());
  } else {
    spdlog::debug("compiled {} in {:.2f} ms: {}", source.path, compiled->compile_ms,
                  timings.Format());
  }
  compiled->timings = std::move(timings);

  return std::shared_ptr<const CompiledPolicy>(std::move(compiled));
}

Result<std::string> PolicyCompiler::EmitIr(const SourceFile& source) {
  InitializeNativeTargetOnce();
  auto policy = Front(source);
  if (!policy.ok()) return policy.error();
  auto tm_layout = [&]() -> Result<llvm::DataLayout> {
    // The JIT's layout: lowering depends on it (argument offsets, sizes).
    auto jit = PolicyCompiler::Global();
    if (!jit.ok()) return jit.error();
    return (*jit)->impl_->jit->DataLayout();
  }();
  if (!tm_layout.ok()) return tm_layout.error();
  auto lowered = LowerPolicy(**policy, *tm_layout);
  if (!lowered.ok()) return lowered.error();
  if (auto err = KilnJit::Optimize(*lowered->module))
    return Error{fmt::format("policy {}: optimiser: {}", source.path, ToString(std::move(err))),
                 SourceLocation{source.path, 0, 0}};
  std::string out;
  llvm::raw_string_ostream os(out);
  lowered->module->print(os, nullptr);
  return os.str();
}

}  // namespace kiln
