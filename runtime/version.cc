// Kiln's version string, reported by `kiln --version` and in JSON output.
namespace kiln {
const char* Version() { return "0.1.0"; }
}  // namespace kiln
