#pragma once
// How every `kiln` command ends: one set of exit codes and one way to print an error.

#include <initializer_list>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace kiln::cli {

// The exit codes of every command. What "failed" means is the command's: a scenario differs from
// its `expect`, a test case failed, a policy has errors, a pack does not verify.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;  // bad arguments, files, scenario, conf or policies

// "file:line:col: error: message" (the parts that are known), then the offending source line
// with a caret under the column when the file can be read. Ends with a newline.
std::string FormatError(const Error& e);
// FormatError on stderr.
void PrintError(const Error& e);
// "N error(s) generated." on stderr after a policy's diagnostics, when there are any.
void PrintErrorCount(int errors);
// PrintError(e), then kExitBadInput: the end of a command that met bad input.
int BadInput(const Error& e);

// An error unless `value` is one of `choices`: "--output must be table, json or html, got `x`".
Status CheckChoice(std::string_view option, const std::string& value,
                   std::initializer_list<std::string_view> choices);

// Ends a command's callback with `code`: CLI11 carries a non-zero code out of App::parse to main.
void EndCommand(int code);

}  // namespace kiln::cli
