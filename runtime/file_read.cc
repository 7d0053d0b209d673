#include "runtime/file_read.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln {

namespace {

std::string_view KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string FormatBytes(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0)
    return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (size_t{1} << 20)) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} bytes", bytes);
}

Result<std::string> ReadBoundedFile(const std::string& path, size_t max_bytes,
                                    std::string_view what) {
  auto fail = [&](std::string why) {
    return Error{fmt::format("cannot read {} {}: {}", what, path, why), SourceLocation{path}};
  };
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail(fmt::format("{} (only regular files are read)", KindOf(st.st_mode)));
  auto too_large = [&](size_t size) {
    return fail(fmt::format("it is {}, more than the {} allowed", FormatBytes(size),
                            FormatBytes(max_bytes)));
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return too_large(st.st_size);
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      // Growing while read: look for more, up to one byte past the limit.
      if (text.size() > max_bytes) return too_large(text.size());
      text.resize(std::min(max_bytes + 1, std::max<size_t>(text.size() * 2, 4096)));
    }
    ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  if (got > max_bytes) return too_large(got);
  return text;
}

}  // namespace kiln
