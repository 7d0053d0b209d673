#include "cli/huge_page_malloc.h"

#include <gnu/libc-version.h>
#include <spdlog/spdlog.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace kiln::cli {
namespace {

constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
constexpr const char* kMarker = "KILN_MALLOC_HUGEPAGES_SET";

int g_argc = 0;
char** g_argv = nullptr;

// "2.36" -> 236; 0 when it does not read as MAJOR.MINOR.
int GlibcVersion(std::string_view v) {
  int major = 0, minor = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, major);
  if (ec != std::errc{} || p == end || *p != '.') return 0;
  if (std::from_chars(p + 1, end, minor).ec != std::errc{}) return 0;
  return major * 100 + minor;
}

std::string ThpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::optional<std::string> HugePageTunables(const char* tunables, const char* opt_out,
                                            std::string_view thp_mode, std::string_view glibc) {
  if (opt_out != nullptr && std::string_view(opt_out) == "0") return std::nullopt;
  const std::string_view current = tunables != nullptr ? tunables : "";
  if (current.find(kTunable) != std::string_view::npos) return std::nullopt;
  // "always [madvise] never": the bracketed word is the mode. Under "madvise" and "always" the
  // advice takes effect.
  if (thp_mode.empty() || thp_mode.find("[never]") != std::string_view::npos) return std::nullopt;
  if (GlibcVersion(glibc) < 235) return std::nullopt;
  std::string out(current);
  if (!out.empty()) out += ':';
  out += kTunable;
  out += "=1";
  return out;
}

void RememberCommandLine(int argc, char** argv) {
  g_argc = argc;
  g_argv = argv;
}

void ReexecWithHugePageMalloc() {
  if (g_argv == nullptr || g_argc < 1) return;
  if (std::getenv(kMarker) != nullptr) return;  // this is the second start
  // A secure-execution process (setuid and the like) has its tunables removed by glibc.
  if (getauxval(AT_SECURE) != 0) return;
  const char* before = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> tunables = HugePageTunables(
      before, std::getenv("KILN_MALLOC_HUGEPAGES"), ThpMode(), gnu_get_libc_version());
  if (!tunables) return;
  // The file's own path, so that the process keeps its name (a comm of "exe" otherwise); the
  // link itself only when the file was replaced or removed since.
  std::error_code ec;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec || self.empty() || self.ends_with(" (deleted)") || access(self.c_str(), X_OK) != 0)
    self = "/proc/self/exe";
  // Started through the dynamic loader (`ld-linux-x86-64.so.2 kiln serve ...`): the file is the
  // loader, and our arguments would not name the program for it.
  if (const std::string_view base = std::string_view(self).substr(self.rfind('/') + 1);
      base.starts_with("ld-linux") || base.starts_with("ld.so"))
    return;
  const std::optional<std::string> saved =
      before != nullptr ? std::optional<std::string>(before) : std::nullopt;
  if (setenv("GLIBC_TUNABLES", tunables->c_str(), 1) == 0 && setenv(kMarker, "1", 1) == 0) {
    std::fflush(nullptr);
    execv(self.c_str(), g_argv);
  }
  // Still here: run on as started, the environment as it was (HugePageMallocState reads it).
  const int error = errno;
  if (saved)
    setenv("GLIBC_TUNABLES", saved->c_str(), 1);
  else
    unsetenv("GLIBC_TUNABLES");
  unsetenv(kMarker);
  spdlog::warn("kiln serve: could not execute {} again with {}: {}; malloc stays on 4 KiB pages",
               self, *tunables, std::strerror(error));
}

std::string HugePageMallocState() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr &&
      std::string_view(tunables).find(std::string(kTunable) + "=1") != std::string_view::npos)
    return "malloc advises transparent huge pages (GLIBC_TUNABLES=" + std::string(tunables) +
           "; KILN_MALLOC_HUGEPAGES=0 turns it off)";
  return "malloc on 4 KiB pages";
}

}  // namespace kiln::cli
