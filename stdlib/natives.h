#pragma once
// C-ABI implementations of the pure standard-library functions (see stdlib/library.h for the
// calling convention). Every function is total: bad input gives a defined result, never UB.

#include <cstddef>
#include <cstdint>

#include "runtime/abi.h"  // KStr, kiln::Resource

extern "C" {

double kiln_std_share(double a, double b);
double kiln_std_sqrt(double x);
double kiln_std_floor(double x);
double kiln_std_ceil(double x);
double kiln_std_fabs(double x);
double kiln_std_log(double x);
double kiln_std_pow(double x, double y);
double kiln_std_clamp(double x, double lo, double hi);
double kiln_std_round(double x);

// Resources (wrap kiln::Resource, Volcano semantics).
double kiln_std_dominant_share(const kiln::Resource* alloc, const kiln::Resource* total);
bool kiln_std_less_equal(const kiln::Resource* a, const kiln::Resource* b, int32_t mode);
bool kiln_std_less(const kiln::Resource* a, const kiln::Resource* b, int32_t mode);
bool kiln_std_less_partly(const kiln::Resource* a, const kiln::Resource* b, int32_t mode);
bool kiln_std_less_equal_in(const kiln::Resource* a, const kiln::Resource* b,
                            const kiln::Resource* req);
bool kiln_std_less_equal_partly_in(const kiln::Resource* a, const kiln::Resource* b,
                                   const kiln::Resource* req);
bool kiln_std_greater_partly_in(const kiln::Resource* a, const kiln::Resource* b,
                                const kiln::Resource* req);
bool kiln_std_greater_partly_relevant(const kiln::Resource* a, const kiln::Resource* b,
                                      const kiln::Resource* req);
void kiln_std_exceeded(const kiln::Resource* a, const kiln::Resource* b, kiln::Resource* out);
void kiln_std_min_dims(const kiln::Resource* a, const kiln::Resource* b, int32_t mode,
                       kiln::Resource* out);
void kiln_std_max_dims(const kiln::Resource* a, const kiln::Resource* b, kiln::Resource* out);
void kiln_std_infinite_resource(kiln::Resource* out);
bool kiln_std_resource_is_empty(const kiln::Resource* r);
bool kiln_std_resource_has(const kiln::Resource* r, const char* name, size_t name_size);
double kiln_std_resource_get(const kiln::Resource* r, const char* name, size_t name_size);

// Parsing and strings.
bool kiln_std_parse_duration(const char* s, size_t s_size, int64_t* out);
double kiln_std_quantity(const char* s, size_t s_size);
bool kiln_std_parse_quantity(const char* s, size_t s_size, double* out);
bool kiln_std_parse_int(const char* s, size_t s_size, int64_t* out);
bool kiln_std_parse_float(const char* s, size_t s_size, double* out);
bool kiln_std_parse_bool(const char* s, size_t s_size, bool* out);
bool kiln_std_contains(const char* s, size_t s_size, const char* sub, size_t sub_size);
bool kiln_std_starts_with(const char* s, size_t s_size, const char* prefix, size_t prefix_size);
bool kiln_std_ends_with(const char* s, size_t s_size, const char* suffix, size_t suffix_size);
KStr kiln_std_trim(const char* s, size_t s_size);  // a view into `s`

// Lists (generic: an element of the type variable comes as a pointer and its size).
void kiln_std_append(const void* items, int64_t n, const void* elem, int64_t elem_size,
                     KList* out);

}  // extern "C"
