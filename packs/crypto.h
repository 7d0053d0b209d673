#pragma once
// The digests and signatures of policy packs, over OpenSSL's EVP interface (kept out of this
// header): sha256 of every file, and an Ed25519 signature over the canonical manifest bytes.
//
// The signature file (`kiln-pack.sig`) is a few `key: value` lines (valid YAML):
//
//   kiln-pack-signature: v1
//   algorithm: ed25519
//   key-id: ed25519:<first 16 hex digits of sha256(raw public key)>
//   public-key: <base64 of the 32-byte raw public key>
//   signature: <base64 of the 64-byte signature of kiln-pack.yaml>
//
// The public key travels with the signature so that `kiln pack verify` without --trust can still
// check integrity and say who signed; trust is deciding whether that key is one of yours.

#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace kiln::packs {

// Lowercase hex sha256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

// An Ed25519 public key: the raw 32 bytes and the short id shown to users.
struct PublicKey {
  std::string raw;
  std::string id;      // "ed25519:0123456789abcdef"
  std::string source;  // the PEM file it came from ("" when it came from a signature)
};

// Reads a PEM public key (`openssl pkey -pubout`); an Ed25519 private key PEM is accepted too
// (its public half is used). Errors name the file and say what is wrong.
Result<PublicKey> LoadPublicKeyPem(const std::string& path);

// Signs `message` with the Ed25519 private key in the PEM file `key_path`
// (`openssl genpkey -algorithm ed25519 -out key.pem`); returns the signature file's text.
Result<std::string> SignManifest(std::string_view message, const std::string& key_path);

struct SignatureInfo {
  PublicKey signer;
};

// Parses `sig_text` (a kiln-pack.sig) and checks it against `message`. Errors: a malformed
// signature file, or a signature that does not match the message.
Result<SignatureInfo> VerifySignature(std::string_view message, std::string_view sig_text);

}  // namespace kiln::packs
