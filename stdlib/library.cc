// The standard library tables (see library.h). Adding a function: one row here and its
// implementation (natives.cc for a Native, the host for a Host); the checker, codegen and the
// JIT's symbol list pick it up from the row.
#include "stdlib/library.h"

#include "stdlib/runtime_support.h"
#include "stdlib/host_functions.h"
#include "stdlib/k8s_natives.h"
#include "stdlib/natives.h"

namespace kiln::stdlib {

namespace {

#define ADDRESS(fn) #fn, reinterpret_cast<const void*>(&fn)
#define NATIVE(fn) Impl::Native, ADDRESS(fn), Lower::Call
// A native codegen lowers inline; the C function serves host-side callers.
#define NATIVE_INLINE(fn, how) Impl::Native, ADDRESS(fn), Lower::how
#define HOST(fn) Impl::Host, ADDRESS(fn), Lower::ArenaCall
#define SESSION(fn) Impl::Host, ADDRESS(fn), Lower::ContextCall
#define INTRINSIC(how) Impl::Intrinsic, "", nullptr, Lower::how

const Function kFunctions[] = {
    // ---- math ----
    {"math", "share", "", "(float, float) -> float", NATIVE_INLINE(kiln_std_share, Share),
     "Volcano's helpers.Share: a / b, and b == 0 → (a == 0 ? 0 : 1)"},
    {"math", "sqrt", "", "(float) -> float", NATIVE_INLINE(kiln_std_sqrt, Sqrt),
     "square root; 0 for x ≤ 0"},
    {"math", "floor", "", "(float) -> float", NATIVE_INLINE(kiln_std_floor, Floor), "round down"},
    {"math", "ceil", "", "(float) -> float", NATIVE_INLINE(kiln_std_ceil, Ceil), "round up"},
    {"math", "round", "", "(float) -> float", NATIVE(kiln_std_round),
     "round half away from zero (Go's math.Round)"},
    {"math", "log", "", "(float) -> float", NATIVE(kiln_std_log), "natural log; 0 for x ≤ 0"},
    {"math", "pow", "", "(float, float) -> float", NATIVE(kiln_std_pow),
     "x to the power y, as Go's math.Pow (pow(0, 0) = 1)"},
    {"math", "clamp", "", "(float, float, float) -> float", NATIVE(kiln_std_clamp),
     "clamp(x, lo, hi): x held within [lo, hi] (lo when lo > hi or x is NaN)"},

    // ---- resources (Volcano's api.Resource semantics) ----
    {"resource", "dominant_share", "", "(Resource, Resource) -> float",
     NATIVE(kiln_std_dominant_share),
     "max over the second argument's dimensions (pods included) of share(alloc, total) — drf"},
    {"resource", "less_equal", "", "(Resource, Resource, Missing) -> bool",
     NATIVE(kiln_std_less_equal), "LessEqual with tolerance 0.1; Zero or Infinity for missing dims"},
    {"resource", "less", "", "(Resource, Resource, Missing) -> bool", NATIVE(kiln_std_less),
     "Less: strict on every dimension"},
    {"resource", "less_partly", "", "(Resource, Resource, Missing) -> bool",
     NATIVE(kiln_std_less_partly), "LessPartly: some dimension strictly less"},
    {"resource", "less_equal_in", "", "(Resource, Resource, Resource) -> bool",
     NATIVE(kiln_std_less_equal_in),
     "LessEqualWithDimensionAndResourcesName: only the dims the third argument requests"},
    {"resource", "less_equal_partly_in", "", "(Resource, Resource, Resource) -> bool",
     NATIVE(kiln_std_less_equal_partly_in), "LessEqualPartlyWithDimensionZeroFiltered"},
    {"resource", "greater_partly_in", "", "(Resource, Resource, Resource) -> bool",
     NATIVE(kiln_std_greater_partly_in), "GreaterPartlyWithDimension"},
    {"resource", "greater_partly_relevant", "", "(Resource, Resource, Resource) -> bool",
     NATIVE(kiln_std_greater_partly_relevant), "GreaterPartlyWithRelevantDimensions"},
    {"resource", "exceeded", "", "(Resource, Resource) -> Resource", NATIVE(kiln_std_exceeded),
     "ExceededPart: per-dimension max(0, a − b)"},
    {"resource", "min_dims", "", "(Resource, Resource, Missing) -> Resource",
     NATIVE(kiln_std_min_dims), "MinDimensionResource: per-dimension min"},
    {"resource", "max_dims", "", "(Resource, Resource) -> Resource", NATIVE(kiln_std_max_dims),
     "per-dimension max"},
    {"resource", "infinite_resource", "", "() -> Resource", NATIVE(kiln_std_infinite_resource),
     "cpu and memory at +max, no scalars (Volcano's InfiniteResource)"},
    {"resource", "has", "Resource", "(string) -> bool", NATIVE(kiln_std_resource_has),
     "`r.has(name)`: the dimension is present (even when 0)"},
    {"resource", "resource_id", "", "(string) -> int", INTRINSIC(ResourceId),
     "the dimension id of a resource name, for `r.dim(id)`; the same for the whole process, so "
     "a policy looks names up once (session_open) instead of per `r[name]`"},
    {"resource", "dim", "Resource", "(int) -> float", INTRINSIC(Dim),
     "`r.dim(resource_id(name))` is `r[name]`, without the name lookup; 0 for an unknown id"},

    // ---- strings and parsing ----
    {"strings", "parse_duration", "", "(string) -> duration?", NATIVE(kiln_std_parse_duration),
     "Go duration syntax (`\"1h30m\"`); none when malformed"},
    {"strings", "quantity", "", "(string) -> quantity", NATIVE(kiln_std_quantity),
     "a Kubernetes quantity (`\"250m\"` = 0.25); 0 when malformed"},
    {"strings", "parse_quantity", "", "(string) -> quantity?", NATIVE(kiln_std_parse_quantity),
     "a Kubernetes quantity; none when malformed"},
    {"strings", "parse_int", "", "(string) -> int?", NATIVE(kiln_std_parse_int), "decimal integer"},
    {"strings", "parse_float", "", "(string) -> float?", NATIVE(kiln_std_parse_float), "number"},
    {"strings", "parse_bool", "", "(string) -> bool?", NATIVE(kiln_std_parse_bool),
     "Go's strconv.ParseBool"},
    {"strings", "contains", "", "(string, string) -> bool", NATIVE(kiln_std_contains),
     "substring test"},
    {"strings", "starts_with", "", "(string, string) -> bool", NATIVE(kiln_std_starts_with),
     "prefix test"},
    {"strings", "ends_with", "", "(string, string) -> bool", NATIVE(kiln_std_ends_with),
     "suffix test"},
    {"strings", "trim", "", "(string) -> string", NATIVE(kiln_std_trim), "strip blanks"},
    {"strings", "to_upper", "", "(string) -> string", HOST(kiln_host_to_upper),
     "ASCII upper case (Go's strings.ToUpper on ASCII text)"},
    {"strings", "split", "", "(string, string) -> list<string>", HOST(kiln_rt_str_split),
     "Go's strings.Split: split(\"\", \"/\") == [\"\"]"},
    {"strings", "parse_json_number_map", "", "(string) -> map<string, float>?",
     HOST(kiln_host_parse_json_number_map), "a JSON object of numbers; none otherwise"},
    {"strings", "parse_json_resource_map", "", "(string) -> map<string, Resource>?",
     HOST(kiln_host_parse_json_resource_map),
     "a JSON object of Kubernetes ResourceLists (nodegroup limits); none otherwise"},

    // ---- lists (generic: `T` is bound at each call) ----
    {"lists", "append", "", "(list<T>, T) -> list<T>", Impl::Native, ADDRESS(kiln_std_append),
     Lower::ArenaCall, "append(xs, x): xs with x added at the end, as `xs + [x]`"},

    // ---- JSON (replies of HTTP services; `pointer` is an RFC 6901 JSON pointer, "" = all) ----
    {"json", "json_quote", "", "(string) -> string", HOST(kiln_host_json_quote),
     "the string as a JSON string literal, quotes and escapes included"},
    {"json", "json_number", "", "(string, string) -> float?", HOST(kiln_host_json_number),
     "json_number(text, pointer): the number there; none when text is not JSON, nothing is "
     "there or it is not a number"},
    {"json", "json_string", "", "(string, string) -> string?", HOST(kiln_host_json_string),
     "json_string(text, pointer): the string there; none otherwise"},
    {"json", "json_bool", "", "(string, string) -> bool?", HOST(kiln_host_json_bool),
     "json_bool(text, pointer): the boolean there; none otherwise"},
    {"json", "json_text", "", "(string, string) -> string?", HOST(kiln_host_json_text),
     "json_text(text, pointer): the value there as compact JSON text (to hand to "
     "parse_json_number_map and friends); none when nothing is there"},
    {"json", "json_keys", "", "(string, string) -> list<string>?", HOST(kiln_host_json_keys),
     "json_keys(text, pointer): the member names of the object there, sorted; none when it is "
     "not an object"},
    {"json", "json_strings", "", "(string, string, string) -> list<string>?",
     HOST(kiln_host_json_strings),
     "json_strings(text, pointer, field): the array there as strings — its elements, or with a "
     "non-empty field each element's member `field`; none unless every one is a string"},

    // ---- Kubernetes matching (stdlib/k8s_natives.h; apimachinery / component-helpers rules) ----
    {"k8s", "requirement_matches", "", "(SelectorRequirement, map<string, string>) -> bool",
     NATIVE(kiln_std_requirement_matches),
     "one selector requirement: In, NotIn (absent label passes), Exists, DoesNotExist, Gt, Lt"},
    {"k8s", "selector_matches", "", "(LabelSelector, map<string, string>) -> bool",
     NATIVE(kiln_std_selector_matches),
     "a LabelSelector: all matchLabels and matchExpressions; empty selector matches all"},
    {"k8s", "selector_matches_task", "", "(LabelSelector, Task) -> bool",
     NATIVE(kiln_std_selector_matches_task),
     "selector_matches against the pod's labels, read in place (no map copy)", "", "labels"},
    {"k8s", "term_matches_node", "", "(NodeSelectorTerm, Node) -> bool",
     NATIVE(kiln_std_term_matches_node),
     "a NodeSelectorTerm: expressions on labels, matchFields on metadata.name; empty term: false"},
    {"k8s", "required_node_affinity_matches", "", "(Task, Node) -> bool",
     NATIVE(kiln_std_required_node_affinity_matches),
     "the pod's nodeSelector and required node affinity (terms ORed) admit the node"},
    {"k8s", "term_matches_pod", "", "(PodAffinityTerm, Task, Task) -> bool",
     NATIVE(kiln_std_term_matches_pod),
     "term_matches_pod(term, owner, pod): namespaces (owner's by default) and labelSelector", "",
     "namespace,labels"},
    {"k8s", "tolerates", "", "(Toleration, Taint) -> bool", NATIVE(kiln_std_tolerates),
     "Toleration.ToleratesTaint: effect, key (empty = any), Equal/Exists"},
    {"k8s", "task_tolerates", "", "(Task, Taint) -> bool", NATIVE(kiln_std_task_tolerates),
     "some toleration of the pod tolerates the taint"},
    {"k8s", "task_tolerates_taint", "", "(Task, string, string, string) -> bool",
     NATIVE(kiln_std_task_tolerates_taint),
     "task_tolerates_taint(task, key, value, effect): the same for a taint given by its parts"},

    // ---- task status sets (Volcano's api helpers) ----
    {"status", "allocated_status", "", "(TaskStatus) -> bool", INTRINSIC(AllocatedStatus),
     "Bound, Binding, Running or Allocated"},
    {"status", "preemptable_status", "", "(TaskStatus) -> bool", INTRINSIC(PreemptableStatus),
     "Bound or Running"},
    {"status", "completed_status", "", "(TaskStatus) -> bool", INTRINSIC(CompletedStatus),
     "Succeeded or Failed"},
    {"status", "scheduled_status", "", "(TaskStatus) -> bool", INTRINSIC(ScheduledStatus),
     "Running, Bound, Failed or Succeeded"},

    // ---- handler results ----
    {"results", "unschedulable", "", "(string) -> Fit", INTRINSIC(Unschedulable),
     "fit status Unschedulable (2)"},
    {"results", "unresolvable", "", "(string) -> Fit", INTRINSIC(Unresolvable),
     "fit status UnschedulableAndUnresolvable (3)"},
    {"results", "fit_error", "", "(string) -> Fit", INTRINSIC(FitError), "fit status Error (1)"},
    {"results", "fit_wait", "", "(string) -> Fit", INTRINSIC(FitWait), "fit status Wait (4)"},
    {"results", "fit_skip", "", "(string) -> Fit", INTRINSIC(FitSkip), "fit status Skip (5)"},
    {"results", "combine", "", "(Fit, Fit) -> Fit", INTRINSIC(Combine),
     "fits if both fit; otherwise the reasons of both, in order, with the more severe code"},
    {"results", "coded", "", "(string, string) -> string", HOST(kiln_host_coded),
     "coded(code, text): a reason text that carries its stable code (docs/reasons.md), for "
     "unschedulable/unresolvable/fit_error: explain, whatif and the PodGroup condition show the "
     "code, every text output shows the text alone"},
    {"results", "invalid", "", "(string, string) -> Validation", INTRINSIC(Invalid),
     "an invalid job: reason, message"},
    {"results", "victims", "", "(list<Task>) -> Victims", INTRINSIC(Victims),
     "permit evicting exactly these tasks"},
    {"results", "abstain_victims", "", "() -> Victims", INTRINSIC(AbstainVictims),
     "no opinion on victims"},

    // ---- session (provided by the runtime) ----
    {"session", "now", "", "() -> time", INTRINSIC(Now),
     "the session clock (never the wall clock)"},
    {"session", "set_condition", "", "(Job, string, string, string, string)",
     SESSION(kiln_host_set_condition),
     "set_condition(job, type, status, reason, message): replace/append a PodGroup condition"},
    {"session", "set_fit_error", "", "(Job, string)", SESSION(kiln_host_set_fit_error),
     "set_fit_error(job, message): the job's fit error (Volcano's JobFitErrors), the reason its "
     "pending tasks without a node fit error report at close"},
    {"session", "set_pod_annotation", "", "(Task, string, string)",
     SESSION(kiln_host_set_pod_annotation),
     "set_pod_annotation(task, key, value): an annotation the task's binding carries onto the pod "
     "if it binds in this session (Volcano's TaskInfo.PodAnnotations; deviceshare's device "
     "assignment); call it from allocate"},
    {"session", "remove_pod_annotation", "", "(Task, string)",
     SESSION(kiln_host_remove_pod_annotation),
     "remove_pod_annotation(task, key): forgets an annotation set_pod_annotation set for the "
     "task (call it from deallocate)"},
    {"session", "show", "", "(string, Resource)", SESSION(kiln_host_show_resource),
     "show(name, r): in a show_queue handler, a resource figure `kiln explain` prints for the "
     "queue (deserved, allocated, capability); does nothing when nobody is explaining"},
    {"session", "show_number", "", "(string, float)", SESSION(kiln_host_show_number),
     "show_number(name, x): in a show_queue handler, a number `kiln explain` prints for the "
     "queue (a share, a weight)"},

    {"session", "reject_with", "", "(string, string) -> Vote", SESSION(kiln_host_reject_with),
     "reject_with(code, message): `reject`, saying why (docs/reasons.md): in job_enqueueable, "
     "explain and the session's result name the plugin, the code and the message"},

    {"session", "victim_order", "", "(Task, list<Task>) -> list<Task>",
     SESSION(kiln_host_victim_order),
     "victim_order(preemptor, tasks): the tasks in the order the session evicts them for the "
     "preemptor (Volcano's BuildVictimsPriorityQueue: task, job and victim-queue orders)"},

    // ---- http (extender only) ----
    {"http", "http_post", "", "(string, string, duration) -> string?", HOST(kiln_host_http_post),
     "POST body to url with a timeout; none on error or timeout", "http"},
};

#undef NATIVE
#undef NATIVE_INLINE
#undef HOST
#undef SESSION
#undef INTRINSIC

const Constant kConstants[] = {
    {"permit", "Vote", 1, "the plugin permits"},
    {"abstain", "Vote", 0, "no opinion"},
    {"reject", "Vote", -1, "the plugin rejects"},
    {"fits", "Fit", 0, "the predicate passes (status Success)"},
    {"valid", "Validation", 0, "the job is valid"},
    {"Zero", "Missing", 0, "a missing dimension counts as 0"},
    {"Infinity", "Missing", 1, "a missing dimension counts as +∞"},
    // Task statuses are Volcano's bit flags; written bare because policies compare them often.
    {"Pending", "TaskStatus", 1, ""},
    {"Allocated", "TaskStatus", 2, ""},
    {"Pipelined", "TaskStatus", 4, ""},
    {"Binding", "TaskStatus", 8, ""},
    {"Bound", "TaskStatus", 16, ""},
    {"Running", "TaskStatus", 32, ""},
    {"Releasing", "TaskStatus", 64, ""},
    {"Succeeded", "TaskStatus", 128, ""},
    {"Failed", "TaskStatus", 256, ""},
    {"Unknown", "TaskStatus", 512, ""},
    {"PodGroupPhase.Pending", "PodGroupPhase", 0, ""},
    {"PodGroupPhase.Running", "PodGroupPhase", 1, ""},
    {"PodGroupPhase.Unknown", "PodGroupPhase", 2, ""},
    {"PodGroupPhase.Inqueue", "PodGroupPhase", 3, ""},
    {"PodGroupPhase.Completed", "PodGroupPhase", 4, ""},
    {"QueueState.Open", "QueueState", 0, ""},
    {"QueueState.Closed", "QueueState", 1, ""},
    {"QueueState.Closing", "QueueState", 2, ""},
    {"QueueState.Unknown", "QueueState", 3, ""},
};

const SessionField kSessionFields[] = {
    {"jobs", "list<Job>", ADDRESS(kiln_host_session_jobs), "every job of the session"},
    {"queues", "list<Queue>", ADDRESS(kiln_host_session_queues), "every queue"},
    {"nodes", "list<Node>", ADDRESS(kiln_host_session_nodes), "every node"},
    {"affinity_nodes", "list<Node>", ADDRESS(kiln_host_session_affinity_nodes),
     "the nodes holding a pod with pod (anti-)affinity terms, in no particular order"},
    {"total", "Resource", ADDRESS(kiln_host_session_total), "Σ node allocatable"},
    {"pdbs", "list<PodDisruptionBudget>", ADDRESS(kiln_host_session_pdbs),
     "every PodDisruptionBudget, in cluster order (pdb)"},
    {"resource_quotas", "list<ResourceQuota>", ADDRESS(kiln_host_session_resource_quotas),
     "every ResourceQuota, in cluster order (resourcequota)"},
    {"hyper_nodes", "list<HyperNode>", ADDRESS(kiln_host_session_hyper_nodes),
     "every HyperNode, in cluster order, the virtual top last (empty without network topology)"},
    {"evicting", "bool", ADDRESS(kiln_host_session_evicting),
     "in hyper_node_gradient_for_job / _for_sub_job: true when gangpreempt or gangreclaim ask for "
     "eviction domains (Volcano's PurposeEvict), false when allocate asks where to place"},
};

#undef ADDRESS

}  // namespace

std::span<const Function> Functions() { return kFunctions; }
std::span<const Constant> Constants() { return kConstants; }
std::span<const SessionField> SessionFields() { return kSessionFields; }

}  // namespace kiln::stdlib
