#include "compiler/jit/object_cache.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/SHA256.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <vector>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'O', 'B', 'J', '\n'};
// magic, format (u32), reserved (u32), key, payload length (u64), payload SHA-256.
constexpr size_t kHeaderSize = 8 + 4 + 4 + 32 + 8 + 32;
// Policy objects are tens of kilobytes; anything near this is not one of ours.
constexpr uint64_t kMaxPayload = uint64_t{256} << 20;

void PutLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

std::array<uint8_t, 32> Sha256(std::string_view data) {
  return llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

// mkdir -p with mode 0700 for every directory it creates.
bool MakeDirs(const std::string& dir, std::string* error) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = fmt::format("cannot create {}: {}", prefix, std::strerror(errno));
      return false;
    }
  }
  return true;
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string ObjectCacheKey::Hex() const {
  std::string out;
  for (uint8_t b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::string Sha256Hex(std::string_view text) {
  ObjectCacheKey digest{Sha256(text)};
  return digest.Hex();
}

ObjectCacheKey MakeObjectCacheKey(std::string_view source_sha256,
                                  const ObjectCacheTarget& target) {
  llvm::SHA256 sha;
  // Each field length-prefixed, so no two different inputs hash the same byte stream.
  auto field = [&](std::string_view s) {
    std::string len;
    PutLe(len, s.size(), 8);
    sha.update(llvm::StringRef(len));
    sha.update(llvm::StringRef(s.data(), s.size()));
  };
  field(fmt::format("kiln object cache format {}", kCacheFormat));
  field(LLVM_VERSION_STRING);
  field(CompilerFingerprint());
  field(source_sha256);
  field(target.triple);
  field(target.cpu);
  field(target.features);
  field(target.llvm_options);
  return ObjectCacheKey{sha.final()};
}

ObjectCache::ObjectCache(std::string dir, Mode mode) : dir_(std::move(dir)), mode_(mode) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  const bool read_only = mode_ == Mode::kReadOnly;
  std::string error;
  struct stat st;
  if (dir_.empty()) {
    error = "empty directory name";
  } else if (read_only ? ::stat(dir_.c_str(), &st) != 0 && errno == ENOENT
                       : !MakeDirs(dir_, &error)) {
    if (read_only) {
      spdlog::debug("no shipped compile cache at {}", dir_);
      return;
    }
  } else if (::stat(dir_.c_str(), &st) != 0) {
    error = fmt::format("cannot stat {}: {}", dir_, std::strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    error = fmt::format("{} is not a directory", dir_);
  // Whoever can write here can make us execute their code. A shipped cache may be installed by
  // root; a writable one must be ours.
  } else if (st.st_uid != ::geteuid() && !(read_only && st.st_uid == 0)) {
    error = fmt::format("{} belongs to another user", dir_);
  } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    error = fmt::format("{} is writable by other users (mode {:o})", dir_, st.st_mode & 0777);
  }
  enabled_ = error.empty();
  if (!enabled_) {
    spdlog::warn("{}compile cache disabled: {}", read_only ? "shipped " : "", error);
    return;
  }
  if (!read_only) Prune();
}

// Keeps the kCacheMaxEntries most recently used objects and drops temporary files older than an
// hour (a writer that crashed between create and rename). Errors are ignored: at worst the
// directory stays larger than intended.
void ObjectCache::Prune() {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> objects;
  const auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    std::error_code entry_ec;
    if (!e.is_regular_file(entry_ec)) continue;
    std::string name = e.path().filename().string();
    fs::file_time_type mtime = e.last_write_time(entry_ec);
    if (entry_ec) continue;
    if (name.find(".kobj.tmp.") != std::string::npos) {
      if (now - mtime > std::chrono::hours(1) && fs::remove(e.path(), entry_ec)) ++pruned_;
    } else if (name.size() == 64 + 5 && name.ends_with(".kobj")) {
      objects.emplace_back(mtime, e.path());
    }
  }
  if (objects.size() <= kCacheMaxEntries) return;
  std::sort(objects.begin(), objects.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });  // newest first
  for (size_t i = kCacheMaxEntries; i < objects.size(); ++i) {
    std::error_code rm_ec;
    if (fs::remove(objects[i].second, rm_ec)) ++pruned_;
  }
  spdlog::debug("compile cache: removed {} least recently used objects from {}",
                objects.size() - kCacheMaxEntries, dir_);
}

std::string ObjectCache::PathFor(const ObjectCacheKey& key) const {
  return dir_ + "/" + key.Hex() + ".kobj";
}

std::optional<std::string> ObjectCache::Lookup(const ObjectCacheKey& key) {
  auto miss = [&](bool rejected, const std::string& why) -> std::optional<std::string> {
    ++misses_;
    if (rejected) ++rejected_;
    spdlog::debug("compile cache miss {}: {}", key.Hex(), why);
    return std::nullopt;
  };
  if (!enabled_) return miss(false, "cache disabled");
  std::string path = PathFor(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    int err = errno;
    return miss(err != ENOENT, fmt::format("cannot open: {}", std::strerror(err)));
  }
  std::string data;
  std::string why;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    why = fmt::format("cannot stat: {}", std::strerror(errno));
  } else if (!S_ISREG(st.st_mode) ||
             (st.st_uid != ::geteuid() && !(mode_ == Mode::kReadOnly && st.st_uid == 0)) ||
             (st.st_mode & (S_IWGRP | S_IWOTH))) {
    why = "not a regular file of ours";
  } else if (static_cast<uint64_t>(st.st_size) < kHeaderSize ||
             static_cast<uint64_t>(st.st_size) > kHeaderSize + kMaxPayload) {
    why = fmt::format("implausible size {}", st.st_size);
  } else {
    data.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < data.size()) {
      ssize_t n = ::read(fd, data.data() + got, data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != data.size()) why = "short read";
  }
  ::close(fd);
  if (!why.empty()) return miss(true, why);

  const char* h = data.data();
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return miss(true, "bad magic");
  if (GetLe(h + 8, 4) != kCacheFormat)
    return miss(true, fmt::format("format {} (want {})", GetLe(h + 8, 4), kCacheFormat));
  if (std::memcmp(h + 16, key.bytes.data(), key.bytes.size()) != 0)
    return miss(true, "key in the header differs");
  uint64_t length = GetLe(h + 48, 8);
  if (length != data.size() - kHeaderSize)
    return miss(true, fmt::format("payload is {} bytes, header says {}",
                                  data.size() - kHeaderSize, length));
  std::string_view payload(data.data() + kHeaderSize, length);
  auto sum = Sha256(payload);
  if (std::memcmp(h + 56, sum.data(), sum.size()) != 0) return miss(true, "payload checksum");
  ++hits_;
  if (mode_ == Mode::kReadWrite)
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used (see Prune)
  spdlog::debug("compile cache hit {}", key.Hex());
  return std::string(payload);
}

void ObjectCache::Store(const ObjectCacheKey& key, std::string_view object) {
  if (!enabled_ || mode_ == Mode::kReadOnly) return;
  std::string header(kMagic, sizeof kMagic);
  PutLe(header, kCacheFormat, 4);
  PutLe(header, 0, 4);
  header.append(reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size());
  PutLe(header, object.size(), 8);
  auto sum = Sha256(object);
  header.append(reinterpret_cast<const char*>(sum.data()), sum.size());

  std::string path = PathFor(key);
  // Unique per process and per store: the parallel compiles of one process and other processes
  // never write the same temporary file; rename() then replaces the final file atomically.
  std::string temp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), temp_serial_++);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  bool ok = fd >= 0;
  std::string why = ok ? "" : fmt::format("cannot create {}: {}", temp, std::strerror(errno));
  if (ok && !(WriteAll(fd, header) && WriteAll(fd, object))) {
    ok = false;
    why = fmt::format("cannot write {}: {}", temp, std::strerror(errno));
  }
  if (fd >= 0 && ::close(fd) != 0 && ok) {
    ok = false;
    why = fmt::format("cannot write {}: {}", temp, std::strerror(errno));
  }
  // No fsync: a file cut short by a crash fails the length or checksum test and is a miss.
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    why = fmt::format("cannot rename {} into place: {}", temp, std::strerror(errno));
  }
  if (!ok) {
    if (fd >= 0) ::unlink(temp.c_str());
    ++store_failures_;
    spdlog::debug("compile cache store {} dropped: {}", key.Hex(), why);
    return;
  }
  ++stores_;
}

ObjectCacheStats ObjectCache::Stats() const {
  return ObjectCacheStats{hits_.load(), misses_.load(), rejected_.load(), stores_.load(),
                          store_failures_.load(), pruned_.load()};
}

}  // namespace kiln
