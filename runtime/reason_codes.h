#pragma once
// Stable reason codes (docs/reasons.md): every reason a pod is unschedulable or a PodGroup is not
// admitted carries a code beside its text, so tools can act on the code while people read the
// text. The texts stay Volcano's, byte for byte; the code is extra.
//
// How a code travels:
//   * a policy gives it with its reason: `unschedulable(coded("NodePorts", "node(s) didn't ..."))`
//     (the stdlib's `coded`), or with its vote: `return reject_with("QueueOverCapability", msg)`;
//   * inside the session a reason string starts with kReasonCodeMark, the code, kReasonCodeMark,
//     then the text (PluginStatus::reasons, FitErrors' task-level error). The session's model keeps
//     its plain strings that way; every reader that shows a text takes it through ReasonText, so
//     the mark never reaches a Volcano message (the goldens check the bytes);
//   * the explain structures (explain.h) and SessionResult carry the codes as separate fields.
//
// The catalog (ReasonCodes) is the one list of codes: docs/reasons.md documents exactly these, and
// a test checks that the two agree and that every reason the golden scenarios produce has one.

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class FitErrors;
struct PluginStatus;
struct Task;

inline constexpr char kReasonCodeMark = '\x1e';

struct ReasonCodeInfo {
  std::string_view code;
  std::string_view producer;  // the plugin or action that gives it
  std::string_view meaning;
};
// Every code, in the order docs/reasons.md lists them.
std::span<const ReasonCodeInfo> ReasonCodes();
bool IsReasonCode(std::string_view code);

// `text` marked with `code` (`code` empty: `text` unchanged).
std::string CodedReason(std::string_view code, std::string_view text);
struct SplitReason {
  std::string_view code;  // "" when the reason carries none
  std::string_view text;
};
SplitReason SplitCodedReason(std::string_view reason);
inline std::string ReasonText(std::string_view reason) {
  return std::string(SplitCodedReason(reason).text);
}

// The code of each of the status's reasons, in order ("Unspecified" where one has none: a pack
// that does not use `coded`).
std::vector<std::string> CodesOf(const PluginStatus& status);
// The distinct codes of every reason the errors hold (the task-level error first, then the node
// reasons by how many nodes gave them, as FitErrors::Message orders its counts).
std::vector<std::string> CodesOf(const FitErrors& errors);

// The codes of the reason the session reports for a task it did not place (the text of
// Job::TaskSchedulingReason): its nodes' fit errors, gang's job-level error, the HyperNode search.
std::vector<std::string> UnschedulableCodes(const Task& t);

// Why enqueue left a PodGroup Pending: the plugin whose vote refused it, the code and the message
// the plugin gave (reject_with), or EnqueueRejected and a generic message for a bare `reject`.
struct AdmissionRefusal {
  std::string plugin;
  std::string code;
  std::string message;
};

// ---- what a vote handler said with its reject --------------------------------------------------
// The stdlib's reject_with records its code and message for the calling thread; the session's vote
// dispatcher clears it before each handler and, when a handler rejects, keeps it with the plugin's
// name as the thread's last refusal. A thread runs one handler at a time, so no lock is needed.
void StateVoteReason(std::string code, std::string message);
void ClearStatedVoteReason();
// The stated reason of the handler that just ran (plugin left empty), and clears it.
AdmissionRefusal TakeStatedVoteReason();
void SetLastVoteRefusal(AdmissionRefusal refusal);
// The last refusal a vote on this thread ended with (plugin, code, message; code "" when the
// plugin gave none).
const AdmissionRefusal& LastVoteRefusal();

// Where enqueue reports the PodGroups it refused in the session running on this thread (job uid →
// refusal): the scheduler installs a sink for the length of a session and copies it into the
// SessionResult. Without one, a refusal is only explained (ExplainRecorder).
class AdmissionSink {
 public:
  explicit AdmissionSink(std::map<std::string, AdmissionRefusal>* out);
  ~AdmissionSink();
  AdmissionSink(const AdmissionSink&) = delete;
  AdmissionSink& operator=(const AdmissionSink&) = delete;

 private:
  std::map<std::string, AdmissionRefusal>* previous_;
};
void NoteAdmissionRefusal(const std::string& job_uid, const AdmissionRefusal& refusal);

}  // namespace kiln
