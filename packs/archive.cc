#include "packs/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include <memory>

#include "packs/c_handle.h"
#include "packs/manifest.h"

namespace kiln::packs {

namespace {

la_ssize_t AppendToString(archive*, void* client, const void* buffer, size_t length) {
  static_cast<std::string*>(client)->append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

std::string ArchiveError(archive* a) {
  const char* s = archive_error_string(a);
  return s ? s : "unknown libarchive error";
}

}  // namespace

Result<PackFiles> ReadPackArchive(std::string_view bytes, const std::string& name,
                                  const ArchiveLimits& limits) {
  CHandle<archive, archive_read_free> a(archive_read_new());
  // Only what a .kpack is: zstd-compressed tar. Anything else (zip, plain tar, gzip) is refused
  // rather than parsed by a format reader we never meant to expose.
  archive_read_support_filter_zstd(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK)
    return Error{fmt::format("{}: not a .kpack (zstd-compressed tar): {}", name,
                             ArchiveError(a.get())),
                 SourceLocation{name}};
  if (archive_filter_code(a.get(), 0) != ARCHIVE_FILTER_ZSTD)
    return Error{fmt::format("{}: not a .kpack: the archive is not zstd-compressed", name),
                 SourceLocation{name}};
  PackFiles files;
  size_t total = 0;
  size_t entries = 0;
  archive_entry* entry = nullptr;
  for (;;) {
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      return Error{fmt::format("{}: corrupt archive: {}", name, ArchiveError(a.get())),
                   SourceLocation{name}};
    const char* raw_path = archive_entry_pathname(entry);
    std::string path = raw_path ? raw_path : "";
    auto refuse = [&](std::string_view why) {
      return Error{fmt::format("{}: entry `{}` refused: {}", name, path, why), SourceLocation{name}};
    };
    if (++entries > limits.max_entries)
      return refuse(fmt::format("more than {} entries", limits.max_entries));
    mode_t type = archive_entry_filetype(entry);
    // Directory entries carry nothing a pack needs; tar writers emit them with a trailing `/`.
    if (type == AE_IFDIR) continue;
    if (!path.empty() && path.front() == '/') return refuse("absolute path");
    if (path.rfind("./", 0) == 0) path = path.substr(2);
    if (!IsSafeRelativePath(path))
      return refuse("the path leaves the pack (`..`, `.`, empty component or backslash)");
    if (archive_entry_hardlink(entry) != nullptr) return refuse("hard link");
    if (type == AE_IFLNK || archive_entry_symlink(entry) != nullptr) return refuse("symbolic link");
    if (type != AE_IFREG) return refuse("not a regular file");
    if (archive_entry_size_is_set(entry) &&
        static_cast<uint64_t>(archive_entry_size(entry)) > limits.max_file_bytes)
      return refuse(fmt::format("{} bytes, over the limit of {}", archive_entry_size(entry),
                                limits.max_file_bytes));
    if (files.count(path)) return refuse("duplicate entry");
    std::string data;
    char buf[64 * 1024];
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), buf, sizeof buf);
      if (n < 0)
        return Error{fmt::format("{}: entry `{}`: {}", name, path, ArchiveError(a.get())),
                     SourceLocation{name}};
      if (n == 0) break;
      data.append(buf, static_cast<size_t>(n));
      // The header's size is the writer's claim: the bytes are counted as they arrive.
      if (data.size() > limits.max_file_bytes)
        return refuse(fmt::format("over the limit of {} bytes", limits.max_file_bytes));
      if (total + data.size() > limits.max_total_bytes)
        return refuse(fmt::format("the pack unpacks to more than {} bytes", limits.max_total_bytes));
    }
    total += data.size();
    files.emplace(std::move(path), std::move(data));
  }
  return files;
}

Result<std::string> WritePackArchive(const PackFiles& files) {
  std::string out;
  CHandle<archive, archive_write_free> a(archive_write_new());
  if (archive_write_add_filter_zstd(a.get()) != ARCHIVE_OK ||
      archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK)
    return Error{fmt::format("cannot set up the archive writer: {}", ArchiveError(a.get())), {}};
  // Pad only to 512 bytes (the tar block), not libarchive's 10 KiB default record.
  archive_write_set_bytes_in_last_block(a.get(), 1);
  if (archive_write_open2(a.get(), &out, nullptr, AppendToString, nullptr, nullptr) != ARCHIVE_OK)
    return Error{fmt::format("cannot open the archive: {}", ArchiveError(a.get())), {}};
  for (const auto& [path, data] : files) {  // std::map: sorted, so the bytes are reproducible
    CHandle<archive_entry, archive_entry_free> e(archive_entry_new());
    archive_entry_set_pathname(e.get(), path.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(data.size()));
    archive_entry_set_mtime(e.get(), 0, 0);
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK ||
        archive_write_data(a.get(), data.data(), data.size()) != static_cast<la_ssize_t>(data.size()))
      return Error{fmt::format("cannot write {} into the archive: {}", path, ArchiveError(a.get())),
                   {}};
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    return Error{fmt::format("cannot finish the archive: {}", ArchiveError(a.get())), {}};
  return out;
}

}  // namespace kiln::packs
