#include "compiler/host/host_symbols.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "compiler/codegen/policy_context.h"
#include "stdlib/runtime_support.h"
#include "runtime/actions/helpers.h"
#include "runtime/explain.h"
#include "runtime/hyper_node.h"
#include "runtime/reason_codes.h"
#include "runtime/session.h"
#include "stdlib/library.h"

namespace kiln {

namespace {
const Session& SessionOf(const void* ctx) {
  return *static_cast<const PolicyContext*>(ctx)->session;
}
template <typename T>
KList List(const std::vector<T*>& v) {
  return KList{reinterpret_cast<const void* const*>(v.data()), v.size()};
}
std::string Text(const char* s, size_t n) { return std::string(s ? s : "", s ? n : 0); }

// A builtin that changes the session, for the view it names: nothing without a session (a
// benchmark's or a test's own context) or a view; a C++ exception becomes a policy fault naming
// the builtin instead of unwinding through JIT'd frames.
template <typename F>
void UpdateSession(void* ctx, const void* view, const char* builtin, F&& update) {
  auto* c = static_cast<PolicyContext*>(ctx);
  if (!c->session || !view) return;
  try {
    update(*c);
  } catch (const std::exception& e) {
    std::string msg = std::string(builtin) + ": " + e.what();
    kiln_policy_fault(msg.data(), msg.size());
  }
}
}  // namespace

std::vector<HostSymbol> AllHostSymbols() {
  std::vector<HostSymbol> out = RuntimeSupportSymbols();
  auto add = [&](const char* name, auto* fn) {
    out.push_back({name, reinterpret_cast<void*>(fn)});
  };
  // ABI accessors, from the one field table; string maps bring their _size/_at companions.
#define KILN_SYM_Field(kind, fn)
#define KILN_SYM_Derived(kind, fn)
#define KILN_SYM_Ref(kind, fn)
#define KILN_SYM_HOST_StringMap(fn) \
  add(#fn, &fn);                    \
  add(#fn "_size", &fn##_size);     \
  add(#fn "_at", &fn##_at);
#define KILN_SYM_HOST_Other(fn) add(#fn, &fn);
#define KILN_SYM_KIND_String KILN_SYM_HOST_Other
#define KILN_SYM_KIND_Int KILN_SYM_HOST_Other
#define KILN_SYM_KIND_Bool KILN_SYM_HOST_Other
#define KILN_SYM_KIND_Float KILN_SYM_HOST_Other
#define KILN_SYM_KIND_TaskStatus KILN_SYM_HOST_Other
#define KILN_SYM_KIND_Resource KILN_SYM_HOST_Other
#define KILN_SYM_KIND_TaskList KILN_SYM_HOST_Other
#define KILN_SYM_KIND_JobList KILN_SYM_HOST_Other
#define KILN_SYM_KIND_QueueList KILN_SYM_HOST_Other
#define KILN_SYM_KIND_StringMap KILN_SYM_HOST_StringMap
#define KILN_SYM_Host(kind, fn) KILN_SYM_KIND_##kind(fn)
#define KILN_X(owner, name, kind, access, target) KILN_SYM_##access(kind, target)
  KILN_ABI_FIELDS(KILN_X)
#undef KILN_X
  add("kiln_resource_id", &kiln_resource_id);
  add("kiln_policy_fault", &kiln_policy_fault);
  add("kiln_policy_fault_kind", &kiln_policy_fault_kind);
  add("kiln_policy_fuel", &kiln_policy_fuel);
  add("kiln_policy_out_of_fuel", &kiln_policy_out_of_fuel);
  add("kiln_status_add_reason", &kiln_status_add_reason);
  add("kiln_status_set_message", &kiln_status_set_message);
  add("kiln_host_mark_selected", &kiln_host_mark_selected);
  for (const AbiHostSymbol& s : AbiShapeHostSymbols())
    out.push_back({std::string(s.name), const_cast<void*>(s.address)});
  // The standard library's natives and host functions, from their rows.
  for (const stdlib::Function& f : stdlib::Functions())
    if (f.native) out.push_back({std::string(f.symbol), const_cast<void*>(f.native)});
  for (const stdlib::SessionField& f : stdlib::SessionFields())
    out.push_back({std::string(f.symbol), const_cast<void*>(f.address)});
  // The tables may name a function twice (a shape accessor also in the field table); the JIT
  // must see each symbol once.
  std::sort(out.begin(), out.end(),
            [](const HostSymbol& a, const HostSymbol& b) { return a.name < b.name; });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const HostSymbol& a, const HostSymbol& b) { return a.name == b.name; }),
            out.end());
  return out;
}

}  // namespace kiln

extern "C" {

KList kiln_host_session_jobs(const void* ctx) {
  return kiln::List(kiln::SessionOf(ctx).cluster().jobs());
}
KList kiln_host_session_queues(const void* ctx) {
  return kiln::List(kiln::SessionOf(ctx).cluster().queues());
}
KList kiln_host_session_nodes(const void* ctx) {
  return kiln::List(kiln::SessionOf(ctx).cluster().nodes());
}
KList kiln_host_session_affinity_nodes(const void* ctx) {
  return kiln::List(kiln::SessionOf(ctx).cluster().affinity_nodes());
}
KList kiln_host_session_pdbs(const void* ctx) {
  return kiln::List(kiln::SessionOf(ctx).cluster().pdb_list());
}
KList kiln_host_session_resource_quotas(const void* ctx) {
  return kiln::List(kiln::SessionOf(ctx).cluster().resource_quota_list());
}
KList kiln_host_session_hyper_nodes(const void* ctx) {
  const kiln::HyperNodeTree* tree = kiln::SessionOf(ctx).cluster().hyper_nodes();
  if (tree == nullptr) return KList{nullptr, 0};
  return kiln::List(tree->all());
}
bool kiln_host_session_evicting(const void* ctx) {
  return kiln::SessionOf(ctx).gradient_for_eviction();
}
const kiln::Resource* kiln_host_session_total(const void* ctx) {
  return &kiln::SessionOf(ctx).total_resource();
}

void kiln_host_set_condition(void* ctx, const kiln::Job* job, const char* type, size_t type_len,
                             const char* status, size_t status_len, const char* reason,
                             size_t reason_len, const char* message, size_t message_len) {
  kiln::UpdateSession(ctx, job, "set_condition", [&](kiln::PolicyContext& c) {
    kiln::PodGroupCondition cond;
    cond.type = kiln::Text(type, type_len);
    cond.status = kiln::Text(status, status_len);
    cond.reason = kiln::Text(reason, reason_len);
    cond.message = kiln::Text(message, message_len);
    cond.last_transition_time = c.now;
    cond.transition_id = c.session->uid();
    // The job views handed to policies are const; the session owns them and lets plugins
    // update PodGroup conditions, as Volcano's UpdatePodGroupCondition does.
    c.session->UpdatePodGroupCondition(const_cast<kiln::Job*>(job), std::move(cond));
  });
}

void kiln_host_set_fit_error(void* ctx, const kiln::Job* job, const char* message,
                             size_t message_len) {
  kiln::UpdateSession(ctx, job, "set_fit_error", [&](kiln::PolicyContext& c) {
    // As for conditions: the session owns the job and lets plugins record its fit error.
    c.session->SetJobFitError(const_cast<kiln::Job*>(job), kiln::Text(message, message_len));
  });
}

void kiln_host_set_pod_annotation(void* ctx, const kiln::Task* task, const char* key,
                                  size_t key_len, const char* value, size_t value_len) {
  kiln::UpdateSession(ctx, task, "set_pod_annotation", [&](kiln::PolicyContext& c) {
    if (!kiln::ChargeHostWork(static_cast<int64_t>(key_len + value_len))) return;
    c.session->SetPodAnnotation(task, kiln::Text(key, key_len), kiln::Text(value, value_len));
  });
}

void kiln_host_remove_pod_annotation(void* ctx, const kiln::Task* task, const char* key,
                                     size_t key_len) {
  kiln::UpdateSession(ctx, task, "remove_pod_annotation", [&](kiln::PolicyContext& c) {
    c.session->RemovePodAnnotation(task, kiln::Text(key, key_len));
  });
}

void kiln_host_victim_order(void* ctx, const kiln::Task* preemptor, const void* const* items,
                            int64_t n, KList* out) {
  *out = KList{items, static_cast<size_t>(n > 0 ? n : 0)};
  auto* c = static_cast<kiln::PolicyContext*>(ctx);
  if (!c->session || !preemptor || n < 2) return;
  try {
    std::vector<kiln::Task*> tasks(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      tasks[i] = static_cast<kiln::Task*>(const_cast<void*>(items[i]));
    auto queue = kiln::actions::BuildVictimsPriorityQueue(*c->session, tasks, preemptor);
    // The result lives with the caller's other temporaries (its call arena is current again once
    // the nested order handlers have returned).
    auto* ordered = static_cast<const void**>(
        kiln::CurrentArena()->Allocate(sizeof(void*) * static_cast<size_t>(n), alignof(void*)));
    size_t k = 0;
    while (!queue.Empty()) ordered[k++] = queue.Pop();
    *out = KList{ordered, k};
  } catch (const std::exception& e) {
    std::string msg = std::string("victim_order: ") + e.what();
    kiln_policy_fault(msg.data(), msg.size());
  }
}
namespace {
// The recorder and the showing plugin's name, when a recorder is collecting figures.
void ShowFigure(void* ctx, const char* name, size_t name_len,
                std::variant<double, kiln::Resource> value) {
  auto* c = static_cast<kiln::PolicyContext*>(ctx);
  if (!c->session) return;
  kiln::ExplainRecorder* recorder = c->session->explain();
  if (recorder == nullptr) return;
  const auto& call = kiln::detail::ThisThreadCall();
  const auto& plugins = c->session->plugins();
  if (call.slot < 0 || call.slot >= static_cast<int>(plugins.size())) return;
  try {
    recorder->AddFigure(plugins[call.slot].name,
                        kiln::Figure{std::string(name ? name : "", name ? name_len : 0),
                                     std::move(value)});
  } catch (const std::exception& e) {
    std::string msg = std::string("show: ") + e.what();
    kiln_policy_fault(msg.data(), msg.size());
  }
}
}  // namespace

void kiln_host_show_resource(void* ctx, const char* name, size_t name_len,
                             const kiln::Resource* r) {
  ShowFigure(ctx, name, name_len, r ? *r : kiln::Resource{});
}

void kiln_host_show_number(void* ctx, const char* name, size_t name_len, double x) {
  ShowFigure(ctx, name, name_len, x);
}

KStr kiln_host_coded(const char* code, size_t code_len, const char* text, size_t text_len) {
  if (!kiln::ChargeHostWork(static_cast<int64_t>(code_len + text_len))) return KStr{"", 0};
  try {
    std::string coded = kiln::CodedReason(std::string_view(code ? code : "", code ? code_len : 0),
                                          std::string_view(text ? text : "", text ? text_len : 0));
    char* bytes = static_cast<char*>(kiln_rt_alloc(static_cast<int64_t>(coded.size()) + 1));
    if (!bytes) return KStr{"", 0};
    std::memcpy(bytes, coded.data(), coded.size());
    return KStr{bytes, coded.size()};
  } catch (const std::exception& e) {
    std::string msg = std::string("coded: ") + e.what();
    kiln_policy_fault(msg.data(), msg.size());
    return KStr{"", 0};
  }
}

int32_t kiln_host_reject_with(void* /*ctx*/, const char* code, size_t code_len,
                              const char* message, size_t message_len) {
  if (!kiln::ChargeHostWork(static_cast<int64_t>(code_len + message_len))) return -1;
  try {
    kiln::StateVoteReason(std::string(code ? code : "", code ? code_len : 0),
                          std::string(message ? message : "", message ? message_len : 0));
  } catch (const std::exception& e) {
    std::string msg = std::string("reject_with: ") + e.what();
    kiln_policy_fault(msg.data(), msg.size());
  }
  return -1;
}

void kiln_host_mark_selected(const void* const* candidates, int64_t n, const void* const* chosen,
                             int64_t m, uint8_t* selected) {
  if (m <= 8) {
    // Victim lists are usually short: a scan beats building a set.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j)
        if (candidates[i] == chosen[j]) {
          selected[i] = 1;
          break;
        }
    return;
  }
  try {
    std::unordered_set<const void*> set(chosen, chosen + m);
    for (int64_t i = 0; i < n; ++i)
      if (set.count(candidates[i])) selected[i] = 1;
  } catch (...) {
    kiln_policy_fault("out of memory marking victims", 29);
  }
}

}  // extern "C"
