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
bool kiln_std_resource_has(const kiln::Resource* r, KStr name);
double kiln_std_resource_get(const kiln::Resource* r, KStr name);

// Parsing and strings.
bool kiln_std_parse_duration(KStr s, int64_t* out);
double kiln_std_quantity(KStr s);
bool kiln_std_parse_quantity(KStr s, double* out);
bool kiln_std_parse_int(KStr s, int64_t* out);
bool kiln_std_parse_float(KStr s, double* out);
bool kiln_std_parse_bool(KStr s, bool* out);
bool kiln_std_contains(KStr s, KStr sub);
bool kiln_std_starts_with(KStr s, KStr prefix);
bool kiln_std_ends_with(KStr s, KStr suffix);
KStr kiln_std_trim(KStr s);  // a view into `s`

}  // extern "C"
