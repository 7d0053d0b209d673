#include "compiler/host/compiled_policy_provider.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "compiler/ast.h"
#include "compiler/builtin_policies.h"
#include "compiler/diagnostics.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/host/kept_state.h"
#include "runtime/clock_use.h"
#include "runtime/session.h"

namespace kiln {

namespace {

// One session's instance of a compiled policy. It runs the code its arguments were bound with,
// from session_open to session_close, whatever the compiler installs meanwhile.
class JitPlugin : public Plugin {
 public:
  JitPlugin(std::shared_ptr<const BoundArgs> args, std::shared_ptr<KeptBlock> kept)
      : args_(std::move(args)), kept_(std::move(kept)) {
    // The state's budget: a store past it faults and disables the plugin for the session.
    arena_.set_limit(PolicyStateMemoryBudget());
    arena_.set_state(true);
  }

  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    const CompiledPolicy& policy = *args_->policy;
    const PolicyCode& code = *args_->code;
    ctx_.args = args_->data;
    ctx_.now = ssn.now();
    // A session of a policy with state kept across sessions may change that state even when it
    // decides nothing, so the simulator must not skip it as a repeat (simulator/simulator.h).
    if (policy.reads_clock || kept_) NoteClockUse();
    ctx_.session = &ssn;
    ctx_.session_arena = &arena_;
    ctx_.kept = kept_ ? kept_->data() : nullptr;
    if (policy.ast && policy.ast->Uses("http")) ssn.RequireIoPool();
    code.state_init(&ctx_);
    // Tier-0 code compiles a handler when the session first dispatches its point, unless the
    // compiler's warm-up thread (queued by Prepare) got to it first.
    for (ExtensionPoint point : code.points) {
      if (code.HandlerReady(point))
        ssn.RegisterRaw(self, point, &ctx_, code.Handler(point));
      else
        ssn.RegisterLazy(self, point, &ctx_, &code);
    }
    if (policy.node_order_cacheable) ssn.EnableScoreCache(self, policy.node_order_key);
    return Status::Ok();
  }

  // The session calls no handler after its close (runtime/plugin.h), so the state goes back
  // now rather than with the session, and the results its caller builds next reuse the memory:
  // at 10k nodes × 100k pods drf's state holds 5.2 MB (a Resource and a share per job), and
  // returning it here lowers simulate's peak RSS there by 1.5–3 MiB.
  void OnSessionClose(Session&) override { arena_.Release(); }

 private:
  std::shared_ptr<const BoundArgs> args_;  // holds the code: it outlives the session's calls
  std::shared_ptr<KeptBlock> kept_;  // the conf entry's `state ... across sessions`, or null
  PolicyContext ctx_;
  Arena arena_;  // per-session state; freed with the plugin at session end
};

// A conf entry's bound arguments, rebound when the policy's code changes (the tier-2 compile
// landed): the block is built by the code that reads it, so the tier-0 code and its argument
// block go away together once the last session that opened on them closes.
struct CurrentArgs {
  std::mutex mu;
  std::shared_ptr<const BoundArgs> args;

  std::shared_ptr<const BoundArgs> ForSession(const PluginOption& entry) {
    std::lock_guard<std::mutex> lock(mu);
    std::shared_ptr<const PolicyCode> code = args->policy->Code();
    if (code != args->code) {
      // The entry bound once already, so this cannot fail; if it did, stay on the old code.
      auto rebound = BindArguments(args->policy, entry, std::move(code));
      if (rebound.ok()) args = *rebound;
    }
    return args;
  }
};

Result<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("cannot read {}", path.string()), {}};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A policy that declares `uses CAP;` loads only under a conf entry that grants CAP (`grants:`,
// runtime/conf.h): declaring a capability is the policy asking, the conf is the operator
// answering.
Status CheckCapabilities(const CompiledPolicy& policy, const PluginOption& option) {
  if (!policy.ast) return Status::Ok();
  for (std::string_view cap : kCapabilities) {
    if (!policy.ast->Uses(cap) || option.Grant(cap) != nullptr) continue;
    return Error{fmt::format("plugin `{}`: the policy uses the `{}` capability, which this "
                             "scheduler.conf entry does not grant; add `grants: {{{}: [URL "
                             "prefix, ...]}}` (or `{}: true` for any URL) to the entry",
                             option.name, cap, cap, cap),
                 option.where};
  }
  return Status::Ok();
}

class CompiledPolicyProvider : public PolicyProvider {
 public:
  CompiledPolicyProvider(PolicyCompiler* compiler, std::map<std::string, std::string> user,
                         std::map<std::string, NamedPolicySource> named,
                         std::shared_ptr<KeptStateStore> kept)
      : compiler_(compiler),
        user_(std::move(user)),
        named_(std::move(named)),
        kept_(std::move(kept)) {}

  std::vector<std::string> Names() const override {
    std::vector<std::string> names;
    for (const auto& p : BuiltinPolicies()) names.emplace_back(p.name);
    for (const auto& [name, path] : user_)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    for (const auto& [name, named] : named_) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
  }

  void Prefetch(const std::vector<std::string>& names) override {
    std::vector<SourceFile> sources;
    for (const std::string& name : names) {
      auto source = Source(name);
      if (source.ok() && *source) sources.push_back(**source);
    }
    // The results land in the compiler's cache, where Prepare finds them (errors included).
    if (sources.size() > 1) (void)compiler_->CompileAll(sources);
  }

  Result<const PluginBuilder*> Prepare(const PluginOption& option) override {
    auto source = Source(option.name);
    if (!source.ok()) return source.error();
    if (!*source) return static_cast<const PluginBuilder*>(nullptr);
    auto compiled = compiler_->Compile(**source);
    if (!compiled.ok()) {
      Error e = compiled.error();
      e.message = fmt::format("plugin `{}`: {}", option.name, e.message);
      e.where = option.where;
      return e;
    }
    std::string declared = option.name;
    if (auto it = named_.find(option.name); it != named_.end()) declared = it->second.declared_name;
    if ((*compiled)->name != declared) {
      return Error{fmt::format("plugin `{}`: {} declares `policy {};`, not `{}`", option.name,
                               (*source)->path, (*compiled)->name, declared),
                   option.where};
    }
    if (auto it = named_.find(option.name); it != named_.end() && it->second.manifest_uses &&
                                            (*compiled)->ast) {
      for (std::string_view cap : kCapabilities) {
        const auto& listed = *it->second.manifest_uses;
        if ((*compiled)->ast->Uses(cap) &&
            std::find(listed.begin(), listed.end(), cap) == listed.end())
          return Error{fmt::format("plugin `{}`: {} uses the `{}` capability, which its pack's "
                                   "manifest does not list (`uses:`); the pack must be rebuilt "
                                   "with `kiln pack build`",
                                   option.name, it->second.source.path, cap),
                       option.where};
      }
    }
    if (Status granted = CheckCapabilities(**compiled, option); !granted) return granted.error();
    auto bound = BindArguments(*compiled, option);
    if (!bound.ok()) return bound.error();
    // Tier-0 handlers this entry enables start compiling now, in the background, so that the
    // first session (after a kiln serve's initial LIST, say) finds them ready.
    if (std::shared_ptr<const PolicyCode> code = (*bound)->code; !code->points.empty()) {
      std::vector<ExtensionPoint> enabled;
      for (ExtensionPoint point : code->points)
        if (PointEnabledBy(option, point)) enabled.push_back(point);
      compiler_->WarmHandlers(code, enabled);
    }
    auto current = std::make_shared<CurrentArgs>();
    current->args = *bound;
    std::shared_ptr<KeptBlock> kept;
    if (size_t n = KeptStates(**compiled); n > 0)
      kept = kept_ ? kept_->Block(option, (*compiled)->version, n + 1)
                   : std::make_shared<KeptBlock>(n + 1);
    builders_.push_back(
        [current, kept](const PluginOption& entry) -> Result<std::unique_ptr<Plugin>> {
          return std::unique_ptr<Plugin>(
              std::make_unique<JitPlugin>(current->ForSession(entry), kept));
        });
    return &builders_.back();
  }

 private:
  static size_t KeptStates(const CompiledPolicy& policy) {
    if (!policy.ast) return 0;
    size_t n = 0;
    for (const ast::StateDecl* s : policy.ast->All<ast::StateDecl>()) n += s->across_sessions;
    return n;
  }

  // The source a plugin name resolves to; nullopt-like null when none.
  Result<std::unique_ptr<SourceFile>> Source(const std::string& name) {
    if (auto it = named_.find(name); it != named_.end())
      return std::make_unique<SourceFile>(it->second.source);
    if (auto it = user_.find(name); it != user_.end()) {
      auto text = ReadFile(it->second);
      if (!text.ok()) return text.error();
      return std::make_unique<SourceFile>(SourceFile{it->second, std::move(*text)});
    }
    if (const BuiltinPolicy* b = FindBuiltinPolicy(name))
      return std::make_unique<SourceFile>(SourceFile{std::string(b->path), std::string(b->text)});
    return std::unique_ptr<SourceFile>();
  }

  PolicyCompiler* compiler_;
  std::map<std::string, std::string> user_;  // name → path
  std::map<std::string, NamedPolicySource> named_;  // conf name → source held in memory (packs)
  std::deque<PluginBuilder> builders_;       // stable addresses for Prepare's result
  // Where a reload finds the blocks of `state ... across sessions` the previous conf used; null:
  // each Prepare (each conf load: a simulation, a test case) starts afresh.
  std::shared_ptr<KeptStateStore> kept_;
};

}  // namespace

Result<std::unique_ptr<PolicyProvider>> MakeCompiledPolicyProvider(
    const CompiledPolicyOptions& options) {
  auto compiler = PolicyCompiler::Global();
  if (!compiler.ok()) return compiler.error();
  if (!options.compile_cache_dir.empty())
    (*compiler)->SetCompileCacheDir(options.compile_cache_dir);
  std::map<std::string, std::string> user;
  for (const std::string& dir : options.policy_dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      return Error{fmt::format("--policy-dir {}: not a directory", dir), {}};
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (entry.is_regular_file() && entry.path().extension() == ".policy")
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      std::string name = path.stem().string();
      if (FindBuiltinPolicy(name) && !options.allow_builtin_override)
        return Error{fmt::format("user policy `{}` has the name of a built-in policy; rename it "
                                 "or allow overriding built-ins explicitly "
                                 "(--allow-builtin-override)",
                                 name),
                     SourceLocation{path.string(), 0, 0}};
      if (auto it = user.find(name); it != user.end())
        return Error{fmt::format("policy `{}` is also defined by {}", name, it->second),
                     SourceLocation{path.string(), 0, 0}};
      user[name] = path.string();
    }
  }
  std::map<std::string, NamedPolicySource> named;
  for (const NamedPolicySource& n : options.named_policies) {
    if (user.count(n.conf_name) || FindBuiltinPolicy(n.conf_name))
      return Error{fmt::format("policy `{}` ({}) has the name of another policy", n.conf_name,
                               n.source.path),
                   SourceLocation{n.source.path, 0, 0}};
    if (auto [it, fresh] = named.emplace(n.conf_name, n); !fresh)
      return Error{fmt::format("policy `{}` is provided twice: by {} and by {}", n.conf_name,
                               it->second.source.path, n.source.path),
                   SourceLocation{n.source.path, 0, 0}};
  }
  return std::unique_ptr<PolicyProvider>(
      std::make_unique<CompiledPolicyProvider>(*compiler, std::move(user), std::move(named),
                                               options.kept_state));
}

Result<std::unique_ptr<PolicyProvider>> MakeCompiledPolicyProvider(
    const PolicyProviderOptions& options) {
  return MakeCompiledPolicyProvider(
      CompiledPolicyOptions{options.policy_dirs, options.allow_builtin_override, {}, {}, {}});
}

}  // namespace kiln
