#pragma once
// Where the API server is and how to authenticate to it: a kubeconfig file (its current context,
// or a named one) or the in-cluster service account, resolved into one plain struct the client
// uses. Errors name the file and the field ("kubeconfig /x: context `a` names user `b`, which is
// not defined").

#include <string>
#include <string_view>

#include "runtime/status.h"

namespace kiln::kube {

struct KubeConfig {
  std::string server;  // "https://host:port" (no trailing slash)
  // TLS: the CA to trust (PEM text, or a file), or no verification at all.
  std::string ca_pem;
  std::string ca_file;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  // Authentication: a bearer token (inline, or a file re-read when it changes, as a projected
  // service-account token rotates) and/or a client certificate and key (PEM text or files).
  std::string token;
  std::string token_file;
  std::string client_cert_pem;
  std::string client_cert_file;
  std::string client_key_pem;
  std::string client_key_file;
  std::string namespace_ = "default";  // the context's namespace
  std::string source;                  // the file it came from, or "in-cluster"
  std::string context;                 // the context used ("" in-cluster)
};

// Parses kubeconfig YAML text; `file` names it in errors and resolves relative paths (as
// kubectl does, relative to the file's directory). `context` "" = current-context.
Result<KubeConfig> ParseKubeConfig(std::string_view text, const std::string& file,
                                   const std::string& context = "");
Result<KubeConfig> LoadKubeConfig(const std::string& file, const std::string& context = "");

// The pod's service account: KUBERNETES_SERVICE_HOST/PORT and `dir`/{token,ca.crt,namespace}.
// The token is read through token_file, so a rotated token is picked up.
Result<KubeConfig> InClusterConfig(
    const std::string& dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// `file` if given; else $KUBECONFIG (its first entry); else in-cluster when
// KUBERNETES_SERVICE_HOST is set; else ~/.kube/config.
Result<KubeConfig> ResolveKubeConfig(const std::string& file, const std::string& context = "");

}  // namespace kiln::kube
