#include "compiler/host/compiled_policy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include "compiler/codegen/codegen.h"
#include "compiler/frontend.h"
#include "compiler/host/host_symbols.h"
#include "compiler/jit/handler_partitions.h"
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

PolicyCode::~PolicyCode() {
  if (release) release();
}

namespace {
// Handlers compiled on first use (tier 0), and the wall time those compiles took.
std::atomic<uint64_t> lazy_handler_compiles{0};
std::atomic<int64_t> lazy_handler_ns{0};
}  // namespace

PolicyCode::RawHandler PolicyCode::Handler(ExtensionPoint point) const {
  if (std::find(points.begin(), points.end(), point) == points.end()) return nullptr;
  std::atomic<RawHandler>& slot = handlers_[static_cast<size_t>(point)];
  if (RawHandler fn = slot.load(std::memory_order_acquire); fn || !compile_handler) return fn;
  std::lock_guard<std::mutex> lock(compile_mu_);
  RawHandler fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr && (failed_ & (uint64_t{1} << static_cast<int>(point))) == 0) {
    auto start = std::chrono::steady_clock::now();
    fn = compile_handler(point);
    lazy_handler_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    ++lazy_handler_compiles;
    if (fn == nullptr) failed_ |= uint64_t{1} << static_cast<int>(point);
    slot.store(fn, std::memory_order_release);
  }
  return fn;
}

namespace {
// -1: not chosen (the default decides), else 0/1: from KILN_JIT_LAZY, or forced by the setter.
std::atomic<int>& LazyHandlersChoice() {
  static std::atomic<int> choice{[] {
    const char* env = std::getenv("KILN_JIT_LAZY");
    if (env == nullptr || *env == '\0') return -1;
    return std::string_view(env) == "0" ? 0 : 1;
  }()};
  return choice;
}
std::atomic<bool> lazy_handlers_default{false};
}  // namespace

bool LazyHandlersEnabled() {
  const int choice = LazyHandlersChoice().load();
  return choice < 0 ? lazy_handlers_default.load() : choice == 1;
}
void SetDefaultLazyHandlers(bool on) { lazy_handlers_default = on; }
void SetLazyHandlers(bool on) { LazyHandlersChoice() = on ? 1 : 0; }

LazyHandlerStats JitLazyHandlerStats() {
  return {lazy_handler_compiles.load(), lazy_handler_ns.load() / 1e6};
}

std::optional<JitTiers> ParseJitTiers(std::string_view text) {
  if (text == "0" || text == "off") return JitTiers::kOptimizedOnly;
  if (text == "1" || text == "on") return JitTiers::kTwoTier;
  if (text == "tier0") return JitTiers::kFastOnly;
  return std::nullopt;
}

std::string_view JitTiersName(JitTiers tiers) {
  switch (tiers) {
    case JitTiers::kOptimizedOnly: return "off";
    case JitTiers::kTwoTier: return "on";
    case JitTiers::kFastOnly: return "tier0";
  }
  return "?";
}

namespace {

// What $KILN_JIT_TIERS chose; nullopt when unset or empty (an unknown value warns, once).
std::optional<JitTiers> JitTiersFromEnvironment() {
  static const std::optional<JitTiers> tiers = []() -> std::optional<JitTiers> {
    const char* env = std::getenv("KILN_JIT_TIERS");
    if (!env || !*env) return std::nullopt;
    std::optional<JitTiers> parsed = ParseJitTiers(env);
    if (!parsed)
      spdlog::warn("KILN_JIT_TIERS={}: expected 0/off, 1/on or tier0; using off", env);
    return parsed ? parsed : JitTiers::kOptimizedOnly;
  }();
  return tiers;
}

std::atomic<JitTiers> default_jit_tiers{JitTiers::kOptimizedOnly};
std::atomic<PolicyCompiler*> global_compiler{nullptr};

// A tier-2 compile waiting for the background thread, and where the result goes. The job lowers
// the policy again rather than take a copy of the tier-0 module: a copy would share that module's
// LLVM context, whose lock would make a session compiling a tier-0 handler on first use wait for
// the whole O2 compile. Lowering is deterministic, so both tiers run the same IR.
struct TierUpJob {
  std::weak_ptr<CompiledPolicy> policy;  // its AST is lowered again, into a context of its own
  std::string path;
  std::string unit_name;
  std::optional<KilnJit::CacheStore> store;
  std::vector<ExtensionPoint> points;
};

}  // namespace

struct PolicyCompiler::Impl {
  std::unique_ptr<KilnJit> jit;
  std::atomic<JitTiers> tiers{JitTiers::kOptimizedOnly};

  // The tier-up queue and its one thread. One thread, not the actions' ThreadPool: the pool only
  // runs loops its caller waits for, and a background compile must not sit in a session's way.
  // One at a time, so O2 never takes more than one core from the sessions. Started by the first
  // job.
  std::mutex tier_mu;
  std::condition_variable tier_cv;       // a job was queued, or stop
  std::condition_variable tier_idle_cv;  // the queue ran dry
  std::deque<TierUpJob> tier_jobs;
  bool tier_running = false;
  bool tier_stop = false;
  bool tier_hold = false;  // HoldTierUpForTesting
  std::atomic<bool> tier_cancel{false};  // set by StopTierUp(false): cut the running compile short
  std::thread tier_thread;
  TierUpStats tier_stats;

  // Tier-0 handlers compiled ahead of their first dispatch (WarmHandlers), on one thread of
  // normal priority: a session that dispatches a handler not compiled yet waits for it.
  std::mutex warm_mu;
  std::condition_variable warm_cv;
  std::condition_variable warm_idle_cv;  // the queue ran dry
  std::deque<std::pair<std::weak_ptr<const PolicyCode>, ExtensionPoint>> warm_jobs;
  std::thread warm_thread;
  bool warm_stop = false;
  bool warm_running = false;
  bool warm_hold = false;  // HoldWarmUpForTesting
  void WarmLoop();
  void StopWarm();

  void QueueTierUp(TierUpJob job);
  void TierUpLoop();
  void RunTierUp(TierUpJob& job);
  // Stops the thread: runs the queued jobs first when `run_queued`, else drops them.
  void StopTierUp(bool run_queued);
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
  impl->tiers = JitTiersFromEnvironment().value_or(default_jit_tiers.load());
  global = new PolicyCompiler(std::move(impl));
  global_compiler = global;
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
  // The cache is for O2 objects, and they are wanted now: no tiers for these compiles.
  JitTiers saved_tiers = impl_->tiers.exchange(JitTiers::kOptimizedOnly);
  std::vector<CompileResult> results = CompileAll(fresh);
  impl_->tiers = saved_tiers;
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

// The handlers, state initialiser and argument defaults of `unit`, which the result owns: the
// unit is removed when the last holder of the code lets go. Looking them up materialises the unit
// on this thread. With `lazy_handlers` (a unit of partitions, handler_partitions.h) only the
// set-up entries are looked up now, and each handler when PolicyCode::Handler first asks for it.
llvm::Expected<std::shared_ptr<PolicyCode>> ResolveCode(KilnJit& jit, JitUnit unit,
                                                        const std::vector<ExtensionPoint>& points,
                                                        int tier, bool lazy_handlers = false,
                                                        std::string path = {}) {
  auto code = std::make_shared<PolicyCode>();
  code->tier = tier;
  code->points = points;
  auto shared_unit = std::make_shared<JitUnit>(std::move(unit));
  code->release = [jit = &jit, shared_unit] { llvm::consumeError(jit->Remove(*shared_unit)); };
  auto thunk = [](ExtensionPoint p) {
    return std::string(kThunkPrefix) + std::string(Info(p).handler);
  };
  std::vector<std::string> symbols;
  if (!lazy_handlers)
    for (ExtensionPoint p : points) symbols.push_back(thunk(p));
  symbols.push_back(kStateInitSymbol);
  symbols.push_back(kArgsDefaultSymbol);
  auto addresses = jit.LookupAll(*shared_unit, symbols);
  if (!addresses) return addresses.takeError();
  if (!lazy_handlers)
    for (size_t i = 0; i < points.size(); ++i)
      code->SetHandler(points[i], reinterpret_cast<void (*)()>((*addresses)[i]));
  code->state_init = reinterpret_cast<void (*)(PolicyContext*)>((*addresses)[symbols.size() - 2]);
  code->args_default =
      reinterpret_cast<void (*)(void*, PolicyContext*)>((*addresses)[symbols.size() - 1]);
  if (lazy_handlers) {
    // `shared_unit` outlives every call: the code holds it until `release` removes it.
    code->compile_handler = [jit = &jit, shared_unit, thunk,
                             path = std::move(path)](ExtensionPoint p) -> PolicyCode::RawHandler {
      const auto start = std::chrono::steady_clock::now();
      const double ir_before = KilnJit::OptimizeMsOnThisThread();
      auto address = jit->Lookup(*shared_unit, thunk(p));
      if (TimingsRequested()) {
        const double ms = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count();
        const double o0 = KilnJit::OptimizeMsOnThisThread() - ir_before;
        fmt::print(stderr,
                   "kiln: compiled {} of {} in {:.2f} ms: o0 {:.2f} ms, fast-isel {:.2f} ms\n",
                   Info(p).handler, path, ms, o0, ms - o0);
      }
      if (!address) {
        spdlog::error("policy {}: handler {} could not be compiled, so it is skipped: {}", path,
                      Info(p).handler, ToString(address.takeError()));
        return nullptr;
      }
      return reinterpret_cast<PolicyCode::RawHandler>(*address);
    };
  }
  return code;
}

}  // namespace

void PolicyCompiler::Impl::QueueTierUp(TierUpJob job) {
  std::lock_guard<std::mutex> lock(tier_mu);
  tier_jobs.push_back(std::move(job));
  if (!tier_thread.joinable()) {
    static std::once_flag at_exit;
    // Registered after the JIT and LLVM's statics exist, so it runs before they are destroyed.
    std::call_once(at_exit, [] { std::atexit(FinishJitTierUp); });
    tier_stop = false;
    tier_cancel = false;
    tier_thread = std::thread([this] { TierUpLoop(); });
  }
  tier_cv.notify_one();
}

void PolicyCompiler::WarmHandlers(const std::shared_ptr<const PolicyCode>& code,
                                  const std::vector<ExtensionPoint>& points) {
  {
    std::lock_guard<std::mutex> lock(impl_->warm_mu);
    // session_open first: it runs when a session opens, before any action dispatches.
    std::vector<ExtensionPoint> order = points;
    std::stable_partition(order.begin(), order.end(),
                          [](ExtensionPoint p) { return p == ExtensionPoint::SessionOpen; });
    for (ExtensionPoint point : order)
      if (!code->HandlerReady(point) && code->MarkWarmQueued(point))
        impl_->warm_jobs.emplace_back(code, point);
    if (impl_->warm_jobs.empty()) return;
    if (!impl_->warm_thread.joinable()) {
      static std::once_flag at_exit;
      std::call_once(at_exit, [] { std::atexit(FinishJitTierUp); });
      impl_->warm_stop = false;
      impl_->warm_thread = std::thread([impl = impl_.get()] { impl->WarmLoop(); });
    }
  }
  impl_->warm_cv.notify_one();
}

void PolicyCompiler::Impl::WarmLoop() {
  std::unique_lock<std::mutex> lock(warm_mu);
  while (true) {
    warm_cv.wait(lock, [&] { return warm_stop || (!warm_hold && !warm_jobs.empty()); });
    if (warm_stop) break;
    auto [weak, point] = std::move(warm_jobs.front());
    warm_jobs.pop_front();
    warm_running = true;
    lock.unlock();
    // Code replaced meanwhile (a reload, the O2 code installed) is not compiled for nobody.
    if (std::shared_ptr<const PolicyCode> code = weak.lock()) (void)code->Handler(point);
    lock.lock();
    warm_running = false;
    if (warm_jobs.empty()) warm_idle_cv.notify_all();
  }
  warm_idle_cv.notify_all();
}

void PolicyCompiler::WaitForWarmUp() {
  std::unique_lock<std::mutex> lock(impl_->warm_mu);
  impl_->warm_idle_cv.wait(lock, [&] {
    return impl_->warm_stop || (impl_->warm_jobs.empty() && !impl_->warm_running);
  });
}

void PolicyCompiler::HoldWarmUpForTesting(bool hold) {
  {
    std::lock_guard<std::mutex> lock(impl_->warm_mu);
    impl_->warm_hold = hold;
  }
  impl_->warm_cv.notify_all();
}

void PolicyCompiler::Impl::StopWarm() {
  {
    std::lock_guard<std::mutex> lock(warm_mu);
    warm_jobs.clear();
    warm_stop = true;
  }
  warm_cv.notify_all();
  if (warm_thread.joinable() && warm_thread.get_id() != std::this_thread::get_id())
    warm_thread.join();
}

void PolicyCompiler::Impl::TierUpLoop() {
  // Below the sessions: O2 code is worth having soon, but not at the price of slowing the
  // session that runs tier-0 code meanwhile (on two cores a 1k-node session ran 2× longer
  // beside an O2 compile of equal priority). Per thread on Linux.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10);
  KilnJit::SetCancelFlagForThisThread(&tier_cancel);
  std::unique_lock<std::mutex> lock(tier_mu);
  for (;;) {
    tier_cv.wait(lock, [&] { return tier_stop || (!tier_hold && !tier_jobs.empty()); });
    if (tier_jobs.empty()) break;  // stopping, and nothing left to run
    {
      TierUpJob job = std::move(tier_jobs.front());
      tier_jobs.pop_front();
      tier_running = true;
      lock.unlock();
      RunTierUp(job);
    }
    lock.lock();
    tier_running = false;
    if (tier_jobs.empty()) tier_idle_cv.notify_all();
  }
  tier_idle_cv.notify_all();
}

void PolicyCompiler::Impl::RunTierUp(TierUpJob& job) {
  auto count = [&](uint64_t TierUpStats::*field) {
    std::lock_guard<std::mutex> lock(tier_mu);
    ++(tier_stats.*field);
  };
  auto start = std::chrono::steady_clock::now();
  std::optional<LoweredPolicy> lowered;
  if (std::shared_ptr<CompiledPolicy> policy = job.policy.lock()) {
    auto again = LowerPolicy(*policy->ast, jit->DataLayout());
    if (!again.ok()) {
      spdlog::warn("policy {}: the O2 compile failed, it keeps running unoptimised code: {}",
                   job.path, again.error().message);
      return count(&TierUpStats::failed);
    }
    lowered = std::move(*again);
  } else {
    return count(&TierUpStats::dropped);
  }
  double o2_before = KilnJit::OptimizeMsOnThisThread();
  llvm::orc::ThreadSafeModule module(std::move(lowered->module), std::move(lowered->context));
  // Into the cache that is writable now: it may have been set since the tier-0 compile.
  auto added = jit->AddModule(std::move(module), job.unit_name,
                              jit->CacheWritable() ? job.store : std::nullopt,
                              JitTier::kOptimized);
  llvm::Expected<std::shared_ptr<PolicyCode>> code =
      added ? ResolveCode(*jit, std::move(*added), job.points, 2)
            : llvm::Expected<std::shared_ptr<PolicyCode>>(added.takeError());
  if (!code) {
    spdlog::warn("policy {}: the O2 compile failed, it keeps running unoptimised code: {}",
                 job.path, ToString(code.takeError()));
    return count(&TierUpStats::failed);
  }
  std::shared_ptr<CompiledPolicy> policy = job.policy.lock();
  if (!policy || tier_cancel) return count(&TierUpStats::dropped);  // `code` goes, and its unit
  policy->SetCode(std::move(*code));
  count(&TierUpStats::installed);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  double o2_ms = KilnJit::OptimizeMsOnThisThread() - o2_before;
  if (TimingsRequested()) {
    fmt::print(stderr,
               "kiln: tier 2 of {} ready in {:.2f} ms: o2 {:.2f} ms, machine-code {:.2f} ms\n",
               job.path, ms, o2_ms, ms - o2_ms);
  } else {
    spdlog::debug("tier 2 of {} ready in {:.2f} ms (o2 {:.2f} ms)", job.path, ms, o2_ms);
  }
}

void PolicyCompiler::Impl::StopTierUp(bool run_queued) {
  {
    std::lock_guard<std::mutex> lock(tier_mu);
    if (!run_queued) {
      tier_stats.dropped += tier_jobs.size();
      tier_jobs.clear();
      tier_cancel = true;
    }
    tier_stop = true;
  }
  tier_cv.notify_all();
  if (tier_thread.joinable() && tier_thread.get_id() != std::this_thread::get_id())
    tier_thread.join();
}

void PolicyCompiler::SetJitTiers(JitTiers tiers) { impl_->tiers = tiers; }

JitTiers PolicyCompiler::GetJitTiers() { return impl_->tiers; }

PolicyCompiler::TierUpStats PolicyCompiler::GetTierUpStats() {
  std::lock_guard<std::mutex> lock(impl_->tier_mu);
  TierUpStats stats = impl_->tier_stats;
  stats.pending = impl_->tier_jobs.size() + (impl_->tier_running ? 1 : 0);
  return stats;
}

void PolicyCompiler::WaitForTierUp() {
  std::unique_lock<std::mutex> lock(impl_->tier_mu);
  impl_->tier_idle_cv.wait(lock,
                          [&] { return impl_->tier_jobs.empty() && !impl_->tier_running; });
}

void PolicyCompiler::HoldTierUpForTesting(bool hold) {
  {
    std::lock_guard<std::mutex> lock(impl_->tier_mu);
    impl_->tier_hold = hold;
  }
  impl_->tier_cv.notify_all();
}

void PolicyCompiler::FinishTierUp() {
  impl_->StopWarm();
  impl_->StopTierUp(impl_->jit->CacheWritable());
}

void SetDefaultJitTiers(JitTiers tiers) {
  default_jit_tiers = tiers;
  if (PolicyCompiler* compiler = global_compiler.load(); compiler && !JitTiersFromEnvironment())
    compiler->SetJitTiers(tiers);
}

void FinishJitTierUp() {
  if (PolicyCompiler* compiler = global_compiler.load()) compiler->FinishTierUp();
}

uint64_t JitTierZeroCompiles() {
  PolicyCompiler* compiler = global_compiler.load();
  if (!compiler) return 0;
  PolicyCompiler::TierUpStats stats = compiler->GetTierUpStats();
  return stats.pending + stats.installed + stats.dropped + stats.failed;
}

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
  const JitTiers tiers = this->tiers.load();
  std::optional<TierUpJob> tier_up;
  bool lazy_handlers = false;
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
    if (jit->CacheWritable() || tiers == JitTiers::kTwoTier)
      store = KilnJit::CacheStore{key, EncodeDescription(description)};
    llvm::orc::ThreadSafeContext context(std::move(lowered->context));
    if (tiers == JitTiers::kTwoTier)
      tier_up = TierUpJob{compiled, source.path, unit_name + "+o2", store, description.points};
    // Tier 0 compiles each handler when a session first asks for it (handler_partitions.h).
    std::optional<std::vector<std::unique_ptr<llvm::Module>>> partitions;
    if (tiers != JitTiers::kOptimizedOnly && LazyHandlersEnabled()) {
      PhaseTimer split_timer(&timings, "split");
      partitions = SplitHandlerPartitions(lowered->module);
    }
    if (partitions) {
      compiled->partitions = partitions->size();
      std::vector<llvm::orc::ThreadSafeModule> modules;
      for (auto& m : *partitions) modules.emplace_back(std::move(m), context);
      PhaseTimer add_timer(&timings, "add");
      auto added = jit->AddPartitions(std::move(modules), unit_name);
      if (!added) return jit_error(added.takeError());
      unit = std::move(*added);
      lazy_handlers = true;
    } else {
      const JitTier tier =
          tiers == JitTiers::kOptimizedOnly ? JitTier::kOptimized : JitTier::kFast;
      auto added =
          jit->AddModule(llvm::orc::ThreadSafeModule(std::move(lowered->module), context),
                         unit_name, jit->CacheWritable() ? store : std::nullopt, tier);
      if (!added) return jit_error(added.takeError());
      unit = std::move(*added);
    }
  }
  compiled->args_size = description.args_size;
  compiled->args_align = description.args_align;
  std::vector<ast::ArgDecl*> arg_decls = (*policy)->All<ast::ArgDecl>();
  for (size_t i = 0; i < arg_decls.size(); ++i)
    compiled->args.push_back(ArgSlot{arg_decls[i], description.arg_offsets[i]});

  // The lookup materialises the unit on this thread: O2 (or O0), then machine code and linking
  // (or only linking, for a cached object).
  double o2_before = KilnJit::OptimizeMsOnThisThread();
  auto jit_start = std::chrono::steady_clock::now();
  const int tier = from_cache || tiers == JitTiers::kOptimizedOnly ? 2 : 0;
  auto code =
      ResolveCode(*jit, std::move(*unit), description.points, tier, lazy_handlers, source.path);
  if (!code) return jit_error(code.takeError());
  compiled->SetCode(std::move(*code));
  double jit_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - jit_start)
          .count();
  if (from_cache) {
    timings.Add("link", jit_ms);
  } else {
    double ir_ms = KilnJit::OptimizeMsOnThisThread() - o2_before;
    timings.Add(tier == 0 ? "o0" : "o2", ir_ms);
    timings.Add(tier == 0 ? "fast-isel" : "machine-code", jit_ms - ir_ms);
  }
  compiled->reads_clock = ReadsClock(**policy);
  if (const ast::ScoreCacheFacts& cache = (*policy)->node_order_cache; cache.cacheable) {
    compiled->node_order_cacheable = true;
    for (const std::string& field : cache.task_fields)
      if (const ScoreKeyFieldInfo* f = FindScoreKeyField(field))
        compiled->node_order_key.push_back(f->field);
  }
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
  if (tier_up) QueueTierUp(std::move(*tier_up));
  return std::shared_ptr<const CompiledPolicy>(std::move(compiled));
}

std::optional<Error> PolicyCompiler::CheckLowering(const ast::Policy& policy) {
  InitializeNativeTargetOnce();
  auto jit = PolicyCompiler::Global();
  if (!jit.ok()) return jit.error();
  auto lowered = LowerPolicy(policy, (*jit)->impl_->jit->DataLayout());
  if (!lowered.ok()) return lowered.error();
  return std::nullopt;
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
