// kiln_bench's main: Google Benchmark's own, except that CSV output (--benchmark_format=csv,
// --benchmark_out_format=csv) is written once all benchmarks have run. The library's CSV reporter
// takes its header from the first benchmark's counters and aborts when a later one has a counter
// that header lacks; kiln_bench's benchmarks count different things (calls, policies, binds...).
// Buffered, the header is the union of every run's counters, and a run without one leaves the
// column empty.
#include <benchmark/benchmark.h>

#include <memory>
#include <string_view>
#include <vector>

namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
class BufferedCsvReporter : public benchmark::CSVReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    runs_.insert(runs_.end(), runs.begin(), runs.end());
  }
  void Finalize() override {
    if (!runs_.empty()) CSVReporter::ReportRuns(runs_);
    CSVReporter::Finalize();
  }

 private:
  std::vector<Run> runs_;
};
#pragma GCC diagnostic pop

// Whether argv has `flag` (exactly, or as a prefix when it ends in '=').
bool HasFlag(int argc, char** argv, std::string_view flag) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (flag.back() == '=' ? arg.substr(0, flag.size()) == flag : arg == flag) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Read before Initialize, which removes the flags it knows from argv.
  const bool csv = HasFlag(argc, argv, "--benchmark_format=csv");
  // The library insists on --benchmark_out when given a file reporter.
  const bool csv_file = HasFlag(argc, argv, "--benchmark_out_format=csv") &&
                        HasFlag(argc, argv, "--benchmark_out=");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::unique_ptr<benchmark::BenchmarkReporter> display, file;
  if (csv) display = std::make_unique<BufferedCsvReporter>();
  if (csv_file) file = std::make_unique<BufferedCsvReporter>();
  // nullptr reporters are the library's defaults for the flags given.
  benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  benchmark::Shutdown();
  return 0;
}
