#include "kubernetes/kubeconfig.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/file_read.h"
#include "runtime/yaml_util.h"

namespace kiln::kube {

namespace {

Result<std::string> ReadFile(const std::string& path, std::string_view what = "kubeconfig") {
  return ReadBoundedFile(path, what == "kubeconfig" ? kMaxKubeconfigBytes : kMaxCredentialBytes,
                         what);
}

// Standard base64 (kubeconfig *-data fields); whitespace is skipped. nullopt on a bad character.
std::optional<std::string> DecodeBase64(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' ) break;
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string DirOf(const std::string& file) {
  size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : file.substr(0, slash);
}

std::string ResolvePath(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  return base_dir + "/" + p;
}

// A named entry (`clusters`, `users`, `contexts`) of the kubeconfig: its inner map.
Result<YAML::Node> FindNamed(const yaml::Reader& r, const YAML::Node& root, std::string_view list,
                             std::string_view inner, const std::string& name,
                             std::string_view referrer) {
  const YAML::Node items = root[std::string(list)];
  if (items.IsDefined() && !items.IsNull() && !items.IsSequence())
    return r.Fail(items, fmt::format("kubeconfig {}: `{}` must be a list", r.file(), list));
  std::vector<std::string> names;
  // A missing key is an invalid node in yaml-cpp: asking its type throws.
  if (items.IsDefined() && items.IsSequence())
    for (const auto& item : items) {
      if (!item.IsMap()) continue;
      const YAML::Node n = item["name"];
      if (n.IsDefined() && n.IsScalar() && n.Scalar() == name) {
        const YAML::Node body = item[std::string(inner)];
        if (!body.IsDefined() || !body.IsMap())
          return r.Fail(item, fmt::format("kubeconfig {}: {} `{}` has no `{}` map", r.file(), list,
                                          name, inner));
        return body;
      }
    }
  return Error{fmt::format("kubeconfig {}: {} names {} `{}`, which is not defined in `{}`", r.file(),
                           referrer, inner, name, list),
               SourceLocation{r.file()}};
}

// A string field of `m`, "" when absent; an error when it is not a scalar.
Result<std::string> OptString(const yaml::Reader& r, const YAML::Node& m, std::string_view key,
                              std::string_view owner) {
  const YAML::Node v = m[std::string(key)];
  if (!v.IsDefined() || v.IsNull()) return std::string();
  if (!v.IsScalar())
    return r.Fail(v, fmt::format("kubeconfig {}: `{}` of {} must be a string", r.file(), key, owner));
  return v.Scalar();
}

// Every map of the document, at any depth, has each key once: kubectl's YAML decoder refuses a
// duplicate, and silently taking the first (or the last) would let two readers of one file
// disagree about which server or token it names.
Status CheckNoDuplicateKeys(const yaml::Reader& r, const YAML::Node& node, std::string_view where,
                            int depth = 0) {
  if (depth > 64) return r.Fail(node, fmt::format("kubeconfig {}: nested too deeply", r.file()));
  if (node.IsMap()) {
    if (Status s = r.ExpectAnyMap(node, fmt::format("kubeconfig {}: {}", r.file(), where)); !s)
      return s;
    for (const auto& kv : node)
      if (Status s = CheckNoDuplicateKeys(r, kv.second, fmt::format("`{}`", kv.first.Scalar()),
                                          depth + 1);
          !s)
        return s;
  } else if (node.IsSequence()) {
    for (const auto& item : node)
      if (Status s = CheckNoDuplicateKeys(r, item, fmt::format("an item of {}", where), depth + 1);
          !s)
        return s;
  }
  return Status::Ok();
}

// The port of a server URL ("https://host:6443/prefix", "https://[::1]:6443"), when one is
// written: it must be a number from 1 to 65535. An empty host is refused too. "" when fine.
std::string CheckServerUrl(std::string_view url) {
  std::string_view rest = url.substr(url.find("://") + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos)
    return "must not carry user information";
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return "has an unclosed `[` in its host";
    host = authority.substr(0, close + 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return "has text after its IPv6 host";
    if (!after.empty()) port = after.substr(1);
    if (after == ":") return "has an empty port";
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) return "has an empty port";
  }
  if (host.empty() || host == "[]") return "has no host";
  if (!port.empty()) {
    if (port.size() > 9 || port.find_first_not_of("0123456789") != std::string_view::npos)
      return fmt::format("has port `{}`, which is not a number from 1 to 65535", port);
    int n = std::stoi(std::string(port));
    if (n < 1 || n > 65535)
      return fmt::format("has port {}, which is not a number from 1 to 65535", n);
  }
  return "";
}

}  // namespace

Result<KubeConfig> ParseKubeConfig(std::string_view text, const std::string& file,
                                   const std::string& context) {
  auto doc = yaml::Load(text, file);
  if (!doc) return doc.error();
  yaml::Reader r(file);
  const YAML::Node& root = *doc;
  if (!root.IsMap()) return Error{fmt::format("kubeconfig {} is not a YAML map", file), {file}};
  if (Status s = CheckNoDuplicateKeys(r, root, "the top level"); !s) return s.error();
  KubeConfig cfg;
  cfg.source = file;
  std::string base = DirOf(file);

#define KILN_GET(var, node, key, owner)                    \
  std::string var;                                         \
  {                                                        \
    auto v_ = OptString(r, node, key, owner);              \
    if (!v_) return v_.error();                            \
    var = std::move(*v_);                                  \
  }

  std::string ctx_name = context;
  if (ctx_name.empty()) {
    KILN_GET(current, root, "current-context", "the kubeconfig");
    ctx_name = current;
  }
  if (ctx_name.empty())
    return Error{fmt::format("kubeconfig {}: no context given and `current-context` is not set",
                             file),
                 {file}};
  cfg.context = ctx_name;
  auto ctx = FindNamed(r, root, "contexts", "context", ctx_name,
                       context.empty() ? "`current-context`" : "--context");
  if (!ctx) return ctx.error();
  std::string owner = fmt::format("context `{}`", ctx_name);
  KILN_GET(cluster_name, *ctx, "cluster", owner);
  KILN_GET(user_name, *ctx, "user", owner);
  KILN_GET(ns, *ctx, "namespace", owner);
  if (!ns.empty()) cfg.namespace_ = ns;
  if (cluster_name.empty())
    return r.Fail(*ctx, fmt::format("kubeconfig {}: context `{}` has no `cluster`", file, ctx_name));

  auto cluster = FindNamed(r, root, "clusters", "cluster", cluster_name, owner);
  if (!cluster) return cluster.error();
  owner = fmt::format("cluster `{}`", cluster_name);
  KILN_GET(server, *cluster, "server", owner);
  if (server.empty())
    return r.Fail(*cluster, fmt::format("kubeconfig {}: cluster `{}` has no `server`", file,
                                        cluster_name));
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0)
    return r.Fail((*cluster)["server"],
                  fmt::format("kubeconfig {}: `server` of cluster `{}` must start with https:// "
                              "or http://, got `{}`",
                              file, cluster_name, server));
  if (std::string why = CheckServerUrl(server); !why.empty())
    return r.Fail((*cluster)["server"], fmt::format("kubeconfig {}: `server` of cluster `{}` {}: `{}`",
                                                    file, cluster_name, why, server));
  while (!server.empty() && server.back() == '/') server.pop_back();
  cfg.server = server;
  KILN_GET(ca_file, *cluster, "certificate-authority", owner);
  KILN_GET(ca_data, *cluster, "certificate-authority-data", owner);
  KILN_GET(insecure, *cluster, "insecure-skip-tls-verify", owner);
  KILN_GET(sni, *cluster, "tls-server-name", owner);
  cfg.ca_file = ResolvePath(base, ca_file);
  cfg.tls_server_name = sni;
  if (!ca_data.empty()) {
    auto pem = DecodeBase64(ca_data);
    if (!pem)
      return r.Fail((*cluster)["certificate-authority-data"],
                    fmt::format("kubeconfig {}: `certificate-authority-data` of cluster `{}` is not "
                                "base64",
                                file, cluster_name));
    cfg.ca_pem = *pem;
  }
  if (!insecure.empty()) {
    auto b = yaml::ParseBoolText(insecure);
    if (!b)
      return r.Fail((*cluster)["insecure-skip-tls-verify"],
                    fmt::format("kubeconfig {}: `insecure-skip-tls-verify` of cluster `{}` must be "
                                "true or false, got `{}`",
                                file, cluster_name, insecure));
    cfg.insecure_skip_tls_verify = *b;
  }

  if (!user_name.empty()) {
    auto user = FindNamed(r, root, "users", "user", user_name, fmt::format("context `{}`", ctx_name));
    if (!user) return user.error();
    owner = fmt::format("user `{}`", user_name);
    KILN_GET(token, *user, "token", owner);
    KILN_GET(token_file, *user, "tokenFile", owner);
    KILN_GET(cert_file, *user, "client-certificate", owner);
    KILN_GET(cert_data, *user, "client-certificate-data", owner);
    KILN_GET(key_file, *user, "client-key", owner);
    KILN_GET(key_data, *user, "client-key-data", owner);
    cfg.token = token;
    cfg.token_file = ResolvePath(base, token_file);
    cfg.client_cert_file = ResolvePath(base, cert_file);
    cfg.client_key_file = ResolvePath(base, key_file);
    for (auto [data, out, key] : {std::tuple{&cert_data, &cfg.client_cert_pem, "client-certificate-data"},
                                  std::tuple{&key_data, &cfg.client_key_pem, "client-key-data"}}) {
      if (data->empty()) continue;
      auto pem = DecodeBase64(*data);
      if (!pem)
        return r.Fail((*user)[key], fmt::format("kubeconfig {}: `{}` of user `{}` is not base64",
                                                file, key, user_name));
      *out = *pem;
    }
    bool has_cert = !cfg.client_cert_pem.empty() || !cfg.client_cert_file.empty();
    bool has_key = !cfg.client_key_pem.empty() || !cfg.client_key_file.empty();
    if (has_cert != has_key)
      return r.Fail(*user, fmt::format("kubeconfig {}: user `{}` has a client {} without a {}", file,
                                       user_name, has_cert ? "certificate" : "key",
                                       has_cert ? "key" : "certificate"));
    if ((*user)["exec"].IsDefined() || (*user)["auth-provider"].IsDefined())
      if (cfg.token.empty() && cfg.token_file.empty() && !has_cert)
        return r.Fail(*user, fmt::format("kubeconfig {}: user `{}` authenticates with an exec or "
                                         "auth-provider plugin, which kiln does not run; use a "
                                         "token or a client certificate",
                                         file, user_name));
  }
#undef KILN_GET
  return cfg;
}

Result<KubeConfig> LoadKubeConfig(const std::string& file, const std::string& context) {
  auto text = ReadFile(file);
  if (!text) return text.error();
  return ParseKubeConfig(*text, file, context);
}

Result<KubeConfig> InClusterConfig(const std::string& dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port)
    return Error{"in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
                 "set (not running in a pod? pass --kubeconfig)",
                 {}};
  KubeConfig cfg;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  cfg.server = fmt::format("https://{}:{}", h, port);
  if (std::string why = CheckServerUrl(cfg.server); !why.empty())
    return Error{fmt::format("in-cluster config: KUBERNETES_SERVICE_HOST/PORT give a server that {}: "
                             "`{}`",
                             why, cfg.server),
                 {}};
  cfg.token_file = dir + "/token";
  cfg.ca_file = dir + "/ca.crt";
  cfg.source = "in-cluster";
  auto token = ReadFile(cfg.token_file, "tokenFile");
  if (!token) return Error{fmt::format("in-cluster config: {}", token.error().message), {}};
  if (auto ns = ReadFile(dir + "/namespace", "namespace"); ns && !ns->empty()) {
    std::string n = *ns;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    cfg.namespace_ = n;
  }
  return cfg;
}

Result<KubeConfig> ResolveKubeConfig(const std::string& file, const std::string& context) {
  if (!file.empty()) return LoadKubeConfig(file, context);
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string first = env;
    first = first.substr(0, first.find(':'));
    return LoadKubeConfig(first, context);
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host && *host)
    return InClusterConfig();
  const char* home = std::getenv("HOME");
  return LoadKubeConfig(std::string(home ? home : "") + "/.kube/config", context);
}

}  // namespace kiln::kube
