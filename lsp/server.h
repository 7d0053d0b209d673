#pragma once
// `kiln lsp`: a Language Server Protocol server over a byte stream (stdio in the command).
// JSON-RPC 2.0 messages with Content-Length framing; full-text document sync; diagnostics pushed
// on open and change; hover, definition, completion and document symbols answered from
// lsp/analysis.h. Malformed input is answered with a JSON-RPC error, never a crash.
#include <iosfwd>

namespace kiln::lsp {

// Serves until `exit` or the end of `in`. Returns the process exit code the protocol asks for:
// 0 after shutdown then exit, 1 when exit (or the end of input) comes without shutdown.
int Serve(std::istream& in, std::ostream& out);

}  // namespace kiln::lsp
