#pragma once
// How the commands that ask a running `kiln serve` (snapshot, whatif) reach it: one blocking HTTP
// request through libcurl, with a timeout and a cap on the answer's size. curl's header stays in
// serve_client.cc.

#include <cstddef>
#include <optional>
#include <string>

#include "runtime/status.h"

namespace CLI {
class App;
}

namespace kiln::cli {

// The options of a command that asks a running `kiln serve`, in this order: --server, -o/--output
// (`output_help` says what it takes) and --timeout in seconds (the default is `timeout_s`'s value).
void AddServeClientOptions(CLI::App& cmd, std::string& server, std::string& output,
                           const std::string& output_help, double& timeout_s);

// `--server` as a base URL: without trailing '/', and http:// when it names no scheme.
std::string ServerBaseUrl(std::string server);

struct ServeRequest {
  std::string url;
  double timeout_s = 30;
  size_t max_answer_bytes = 0;  // an answer longer than this fails the request
  // A POST of this body with this Content-Type (and Accept: application/json); GET when unset.
  std::optional<std::string> post_body;
  std::string content_type;
};

struct ServeAnswer {
  long status = 0;  // the HTTP status
  std::string body;
};

// Any answer the server gave, whatever its status. Error when none came (no connection, timeout,
// answer too long): "GET <url>: <curl's reason>" (or POST).
Result<ServeAnswer> AskServe(const ServeRequest& request);

}  // namespace kiln::cli
