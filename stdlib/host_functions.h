#pragma once
// The standard library's Host functions (stdlib/library.h rows with Impl::Host, and the session
// fields): C-ABI functions JIT'd policy code calls, defined by the policy host
// (compiler/host/host_symbols.cc, json_natives.cc, http_natives.cc) because they reach the
// session or a library (JSON, HTTP). Declared here so that the table can carry their addresses.

#include <cstddef>
#include <cstdint>

#include "runtime/abi.h"

extern "C" {
// session.jobs / .queues / .nodes / .total of the PolicyContext's session.
KList kiln_host_session_jobs(const void* ctx);
KList kiln_host_session_queues(const void* ctx);
KList kiln_host_session_nodes(const void* ctx);
KList kiln_host_session_affinity_nodes(const void* ctx);
const kiln::Resource* kiln_host_session_total(const void* ctx);
// session.pdbs / .resource_quotas: the cluster's PodDisruptionBudgets and ResourceQuotas.
KList kiln_host_session_pdbs(const void* ctx);
KList kiln_host_session_hyper_nodes(const void* ctx);
bool kiln_host_session_evicting(const void* ctx);
KList kiln_host_session_resource_quotas(const void* ctx);
// set_condition(job, type, status, reason, message): replaces/appends a PodGroup condition,
// stamped with the session clock (Session::UpdatePodGroupCondition).
void kiln_host_set_condition(void* ctx, const kiln::Job* job, const char* type, size_t type_len,
                             const char* status, size_t status_len, const char* reason,
                             size_t reason_len, const char* message, size_t message_len);
// set_pod_annotation(task, key, value) / remove_pod_annotation(task, key): the annotations the
// task's binding carries (Session::SetPodAnnotation).
void kiln_host_set_pod_annotation(void* ctx, const kiln::Task* task, const char* key,
                                  size_t key_len, const char* value, size_t value_len);
void kiln_host_remove_pod_annotation(void* ctx, const kiln::Task* task, const char* key,
                                     size_t key_len);
// stdlib `coded(code, text)`: the text marked with its reason code (runtime/reason_codes.h),
// built in the call arena.
KStr kiln_host_coded(const char* code, size_t code_len, const char* text, size_t text_len);
// stdlib `reject_with(code, message)`: -1 (reject), with the code and message kept for the vote's
// dispatcher (runtime/reason_codes.h).
int32_t kiln_host_reject_with(void* ctx, const char* code, size_t code_len, const char* message,
                              size_t message_len);
// stdlib `to_upper`: ASCII upper case, built in the call arena.
KStr kiln_host_to_upper(const char* s, size_t s_size);
// set_fit_error(job, message): the job's JobFitErrors (Session::SetJobFitError).
void kiln_host_set_fit_error(void* ctx, const kiln::Job* job, const char* message,
                             size_t message_len);
// victim_order(preemptor, tasks): the tasks in the order the session evicts them for the
// preemptor (Volcano's ssn.BuildVictimsPriorityQueue popped to the end). It runs the session's
// task, job and victim-queue orders, which are other handlers: those calls nest (runtime_support.cc).
void kiln_host_victim_order(void* ctx, const kiln::Task* preemptor, const void* const* items,
                            int64_t n, KList* out);
// show(name, resource) / show_number(name, x) inside a show_queue handler: a figure that
// `kiln explain` prints for the queue (the session's ExplainRecorder; nothing without one).
void kiln_host_show_resource(void* ctx, const char* name, size_t name_len, const kiln::Resource* r);
void kiln_host_show_number(void* ctx, const char* name, size_t name_len, double x);
// stdlib `parse_json_number_map` / `parse_json_resource_map` (json_natives.cc): T? results as
// a bool with the map through `out`.
bool kiln_host_parse_json_number_map(const char* text, size_t text_size, void** out);
bool kiln_host_parse_json_resource_map(const char* text, size_t text_size, void** out);
// stdlib `json_*` (json_natives.cc): values read from JSON text by JSON pointer; `T?` results as
// a bool with the value through `out`.
KStr kiln_host_json_quote(const char* s, size_t s_size);
bool kiln_host_json_number(const char* text, size_t text_size, const char* pointer,
                           size_t pointer_size, double* out);
bool kiln_host_json_string(const char* text, size_t text_size, const char* pointer,
                           size_t pointer_size, KStr* out);
bool kiln_host_json_bool(const char* text, size_t text_size, const char* pointer,
                         size_t pointer_size, bool* out);
bool kiln_host_json_text(const char* text, size_t text_size, const char* pointer,
                         size_t pointer_size, KStr* out);
bool kiln_host_json_keys(const char* text, size_t text_size, const char* pointer,
                         size_t pointer_size, KList* out);
bool kiln_host_json_strings(const char* text, size_t text_size, const char* pointer,
                            size_t pointer_size, const char* field, size_t field_size, KList* out);
// stdlib `http_post(url, body, timeout)` (http_natives.cc): the reply body on status 200.
bool kiln_host_http_post(const char* url, size_t url_size, const char* body, size_t body_size,
                         int64_t timeout_ns, KStr* out);
}
