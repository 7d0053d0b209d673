#include "packs/crypto.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "packs/c_handle.h"

namespace kiln::packs {

namespace {

constexpr size_t kEd25519KeyBytes = 32;
constexpr size_t kEd25519SigBytes = 64;

using Pkey = CHandle<EVP_PKEY, EVP_PKEY_free>;
using MdCtx = CHandle<EVP_MD_CTX, EVP_MD_CTX_free>;

std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(n);
  return out;
}

// Decodes standard base64 of a value exactly `want` bytes long (EVP_DecodeBlock pads the output
// to a multiple of 3 with zeros, so the length is checked against the text's padding).
std::optional<std::string> Unbase64(std::string_view text, size_t want) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  size_t pad = text.back() == '=' ? (text[text.size() - 2] == '=' ? 2 : 1) : 0;
  out.resize(static_cast<size_t>(n) - pad);
  if (out.size() != want) return std::nullopt;
  return out;
}

PublicKey MakePublicKey(std::string raw, std::string source) {
  PublicKey k;
  k.id = "ed25519:" + Sha256Hex(raw).substr(0, 16);
  k.raw = std::move(raw);
  k.source = std::move(source);
  return k;
}

Result<Pkey> ReadPem(const std::string& path, bool want_private) {
  CHandle<BIO, BIO_free> bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return Error{fmt::format("cannot read key file {}", path), SourceLocation{path}};
  EVP_PKEY* key = want_private ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                               : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
  if (!key && !want_private) {
    // A private key file names its public half too: accept it as a trust anchor.
    ERR_clear_error();
    BIO_reset(bio.get());
    key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  }
  if (!key)
    return Error{fmt::format("{}: not a PEM {} key ({})", path, want_private ? "private" : "public",
                             OpenSslError()),
                 SourceLocation{path}};
  Pkey owned(key);
  if (EVP_PKEY_id(key) != EVP_PKEY_ED25519)
    return Error{fmt::format("{}: the key is not an Ed25519 key (make one with `openssl genpkey "
                             "-algorithm ed25519`)",
                             path),
                 SourceLocation{path}};
  return owned;
}

Result<std::string> RawPublic(EVP_PKEY* key, const std::string& path) {
  std::string raw(kEd25519KeyBytes, '\0');
  size_t len = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &len) != 1 ||
      len != kEd25519KeyBytes)
    return Error{fmt::format("{}: cannot read the public key ({})", path, OpenSslError()),
                 SourceLocation{path}};
  return raw;
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

Result<PublicKey> LoadPublicKeyPem(const std::string& path) {
  auto key = ReadPem(path, false);
  if (!key) return key.error();
  auto raw = RawPublic(key->get(), path);
  if (!raw) return raw.error();
  return MakePublicKey(std::move(*raw), path);
}

Result<std::string> SignManifest(std::string_view message, const std::string& key_path) {
  auto key = ReadPem(key_path, true);
  if (!key) return key.error();
  auto raw = RawPublic(key->get(), key_path);
  if (!raw) return raw.error();
  MdCtx ctx(EVP_MD_CTX_new());
  std::string sig(kEd25519SigBytes, '\0');
  size_t sig_len = sig.size();
  // Ed25519 is a one-shot scheme: no digest is named, the whole message is signed.
  if (EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key->get()) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &sig_len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    return Error{fmt::format("{}: signing failed ({})", key_path, OpenSslError()),
                 SourceLocation{key_path}};
  PublicKey pub = MakePublicKey(std::move(*raw), key_path);
  return fmt::format(
      "kiln-pack-signature: v1\nalgorithm: ed25519\nkey-id: {}\npublic-key: {}\nsignature: {}\n",
      pub.id, Base64(pub.raw), Base64(std::string_view(sig.data(), sig_len)));
}

Result<SignatureInfo> VerifySignature(std::string_view message, std::string_view sig_text) {
  std::map<std::string, std::string> fields;
  std::istringstream in{std::string(sig_text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    size_t colon = line.find(": ");
    if (colon == std::string::npos)
      return Error{fmt::format("malformed line `{}` (expected `key: value`)", line),
                   SourceLocation{"kiln-pack.sig", n}};
    fields[line.substr(0, colon)] = line.substr(colon + 2);
  }
  auto field = [&](const std::string& k) -> std::string {
    auto it = fields.find(k);
    return it == fields.end() ? std::string() : it->second;
  };
  if (field("kiln-pack-signature") != "v1" || field("algorithm") != "ed25519")
    return Error{"not a kiln-pack signature (expected `kiln-pack-signature: v1` and "
                 "`algorithm: ed25519`)",
                 SourceLocation{"kiln-pack.sig"}};
  auto raw = Unbase64(field("public-key"), kEd25519KeyBytes);
  if (!raw) return Error{"`public-key` is not a base64 Ed25519 key", SourceLocation{"kiln-pack.sig"}};
  auto sig = Unbase64(field("signature"), kEd25519SigBytes);
  if (!sig)
    return Error{"`signature` is not a base64 Ed25519 signature", SourceLocation{"kiln-pack.sig"}};
  PublicKey signer = MakePublicKey(*raw, "");
  if (!field("key-id").empty() && field("key-id") != signer.id)
    return Error{fmt::format("`key-id` {} does not belong to the public key it names ({})",
                             field("key-id"), signer.id),
                 SourceLocation{"kiln-pack.sig"}};
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                       reinterpret_cast<const unsigned char*>(raw->data()),
                                       raw->size()));
  if (!key) return Error{fmt::format("bad public key ({})", OpenSslError()), SourceLocation{"kiln-pack.sig"}};
  MdCtx ctx(EVP_MD_CTX_new());
  int ok = EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1
               ? EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig->data()),
                                  sig->size(), reinterpret_cast<const unsigned char*>(message.data()),
                                  message.size())
               : -1;
  ERR_clear_error();
  if (ok != 1)
    return Error{fmt::format("the signature by {} does not match kiln-pack.yaml: the manifest or "
                             "the signature was changed after signing",
                             signer.id),
                 SourceLocation{"kiln-pack.sig"}};
  return SignatureInfo{std::move(signer)};
}

}  // namespace kiln::packs
