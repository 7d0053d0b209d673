#pragma once
// kiln serve's malloc on transparent huge pages.
//
// Why: a snapshot of 10k nodes × 100k pods writes ~150 MB of memory malloc has just taken from
// the kernel (the copied pod specs, the model's strings and vectors, the session's books), and
// each first touch of a 4 KiB page is a fault. In this project's VM a fault costs 3–13 µs: kiln
// serve's first snapshot spent 117–488 ms of its 404–840 ms in the kernel over 37.9k faults.
// glibc's malloc can advise what it maps as transparent huge pages (the tunable
// glibc.malloc.hugetlb=1, glibc 2.35 and later), one fault per 2 MiB; measured in
// docs/performance.md ("kiln serve's malloc on huge pages"). Tunables are read only at start, so
// kiln serve sets it and executes itself again before it starts anything.
//
// KILN_MALLOC_HUGEPAGES=0 turns this off; a GLIBC_TUNABLES that already names
// glibc.malloc.hugetlb is left as the user set it.
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cli {

// The GLIBC_TUNABLES to execute kiln serve with, or nullopt to run as it is: when `opt_out`
// (KILN_MALLOC_HUGEPAGES) is "0", when `tunables` (GLIBC_TUNABLES, null when unset) already
// names glibc.malloc.hugetlb, when `thp_mode` (the contents of
// /sys/kernel/mm/transparent_hugepage/enabled) selects [never] or is empty (no THP), or when
// `glibc` (its version, "2.36") is older than 2.35, which ignores the tunable.
std::optional<std::string> HugePageTunables(const char* tunables, const char* opt_out,
                                            std::string_view thp_mode, std::string_view glibc);

// main() keeps its arguments here for ReexecWithHugePageMalloc.
void RememberCommandLine(int argc, char** argv);

// Executes /proc/self/exe again with the same arguments and GLIBC_TUNABLES from
// HugePageTunables, at most once per process tree (KILN_MALLOC_HUGEPAGES_SET marks the second
// start). Returns when nothing is to be done, or when the exec failed (logged). Call it before
// any thread exists.
void ReexecWithHugePageMalloc();

// What the running process's malloc does, for kiln serve's first log line.
std::string HugePageMallocState();

}  // namespace kiln::cli
