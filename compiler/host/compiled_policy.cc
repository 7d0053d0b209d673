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

PolicyCompiler::CompileResult PolicyCompiler::Impl::CompileUncached(const SourceFile& source,
                                                                    uint64_t version) {
  auto start = std::chrono::steady_clock::now();
  PhaseTimings timings;
  auto policy = Front(source, &timings);
  if (!policy.ok()) return policy.error();
  PhaseTimer codegen_timer(&timings, "codegen");
  auto lowered = LowerPolicy(**policy, jit->DataLayout());
  if (!lowered.ok()) return lowered.error();
  codegen_timer.Stop();

  auto compiled = std::make_shared<CompiledPolicy>();
  compiled->name = (*policy)->name;
  compiled->path = source.path;
  compiled->version = version;
  compiled->args_size = lowered->args_size;
  compiled->args_align = lowered->args_align;
  compiled->args = lowered->args;
  std::vector<ExtensionPoint> points = lowered->points;

  std::string unit_name = fmt::format("{}@{:016x}#{}", compiled->name, version, ++units);
  auto unit = jit->AddModule(
      llvm::orc::ThreadSafeModule(std::move(lowered->module), std::move(lowered->context)),
      unit_name, Sha256Hex(source.text));
  if (!unit) {
    return Error{fmt::format("policy {}: JIT: {}", source.path, ToString(unit.takeError())),
                 SourceLocation{source.path, 0, 0}};
  }
  auto shared_unit = std::make_shared<JitUnit>(std::move(*unit));
  // The first lookup materialises the unit on this thread: O2, then machine code and linking.
  double o2_before = KilnJit::OptimizeMsOnThisThread();
  auto jit_start = std::chrono::steady_clock::now();
  compiled->release = [jit = jit.get(), shared_unit] {
    llvm::consumeError(jit->Remove(*shared_unit));
  };

  auto lookup = [&](const std::string& symbol) -> Result<void*> {
    auto addr = jit->Lookup(*shared_unit, symbol);
    if (!addr)
      return Error{fmt::format("policy {}: JIT: {}", source.path, ToString(addr.takeError())),
                   SourceLocation{source.path, 0, 0}};
    return *addr;
  };
  for (ExtensionPoint p : points) {
    auto addr = lookup(std::string(kThunkPrefix) + std::string(Info(p).handler));
    if (!addr.ok()) return addr.error();
    compiled->handlers.emplace_back(p, reinterpret_cast<void (*)()>(*addr));
  }
  auto init = lookup(kStateInitSymbol);
  if (!init.ok()) return init.error();
  compiled->state_init = reinterpret_cast<void (*)(PolicyContext*)>(*init);
  auto defaults = lookup(kArgsDefaultSymbol);
  if (!defaults.ok()) return defaults.error();
  compiled->args_default = reinterpret_cast<void (*)(void*, PolicyContext*)>(*defaults);
  double o2_ms = KilnJit::OptimizeMsOnThisThread() - o2_before;
  timings.Add("o2", o2_ms);
  timings.Add("machine-code", std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - jit_start)
                                      .count() -
                                  o2_ms);
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
