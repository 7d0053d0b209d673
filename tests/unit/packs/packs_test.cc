// Policy packs (packs/): manifest parsing and its errors, semantic version ranges, sha256, the
// .kpack archive's determinism and refusals, Ed25519 signing and verification with tampering.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "packs/archive.h"
#include "packs/conf_merge.h"
#include "runtime/conf.h"
#include "packs/crypto.h"
#include "packs/manifest.h"
#include "packs/pack.h"

namespace kiln::packs {
namespace {

constexpr const char* kManifest = R"(# comment
name: team-fairness
version: 1.2.3
description: fair teams
language: ">=0.1.0 <0.2.0"
policies:
- file: policies/a.policy
  plugin: a
- file: policies/b.policy
  plugin: b
conf: scheduler.conf
tests: [tests/one.yaml]
)";

TEST(PackManifest, ParsesEveryField) {
  auto m = ParseManifest(kManifest, "kiln-pack.yaml");
  ASSERT_TRUE(m.ok()) << m.error().Format();
  EXPECT_EQ(m->name, "team-fairness");
  EXPECT_EQ(m->version, "1.2.3");
  EXPECT_EQ(m->language, ">=0.1.0 <0.2.0");
  ASSERT_EQ(m->policies.size(), 2u);
  EXPECT_EQ(m->policies[1].file, "policies/b.policy");
  EXPECT_EQ(m->policies[1].plugin, "b");
  EXPECT_EQ(m->policies[1].where.line, 9);
  EXPECT_EQ(m->conf, "scheduler.conf");
  EXPECT_EQ(m->tests, std::vector<std::string>{"tests/one.yaml"});
  EXPECT_EQ(m->ReferencedFiles(),
            (std::vector<std::string>{"policies/a.policy", "policies/b.policy", "scheduler.conf",
                                      "tests/one.yaml"}));
}

TEST(PackManifest, CanonicalFormRoundTripsAndIsStable) {
  auto m = ParseManifest(kManifest, "kiln-pack.yaml");
  ASSERT_TRUE(m.ok());
  m->files["policies/a.policy"] = Sha256Hex("a");
  m->files["scheduler.conf"] = Sha256Hex("conf");
  std::string text = CanonicalManifest(*m);
  auto again = ParseManifest(text, "canonical");
  ASSERT_TRUE(again.ok()) << again.error().Format() << "\n" << text;
  EXPECT_EQ(CanonicalManifest(*again), text);
  EXPECT_EQ(again->files, m->files);
  EXPECT_NE(text.find("\"policies/a.policy\": \"sha256:ca978112ca1bbdca"), std::string::npos)
      << text;
}

struct BadManifest {
  std::string text;
  int line;
  std::string message;
};

TEST(PackManifest, ErrorsNameTheLineAndTheProblem) {
  const std::string head = "name: p\nversion: 1.0.0\nlanguage: \">=0.1\"\n";
  const std::string pol = "policies:\n- {file: a.policy, plugin: a}\n";
  std::vector<BadManifest> cases = {
      {head + pol + "colour: blue\n", 6, "unknown"},
      {"name: Bad_Name\nversion: 1.0.0\nlanguage: \">=0.1\"\n" + pol, 1, "lowercase letters"},
      {"name: p\nversion: 1.0\nlanguage: \">=0.1\"\n" + pol, 2, "not a semantic version"},
      {"name: p\nversion: 1.0.0\nlanguage: \"~>banana\"\n" + pol, 3, "bad version range"},
      {head + "policies:\n- {file: ../escape.policy, plugin: a}\n", 5, "inside the pack"},
      {head + "policies:\n- {file: /etc/passwd, plugin: a}\n", 5, "inside the pack"},
      {head + "policies:\n- {file: a.policy, plugin: a}\n- {file: b.policy, plugin: a}\n", 6,
       "listed twice (first at line 5)"},
      {head + "policies:\n- {file: a.policy, plugin: \"x/y\"}\n", 5, "plugin name"},
      {head + pol + "files:\n  a.policy: sha256:1234\n", 7, "64 lowercase hex"},
      {head, 1, "no `policies`"},
      {"version: 1.0.0\nlanguage: \">=0.1\"\n" + pol, 1, "no `name`"},
  };
  for (const BadManifest& c : cases) {
    auto m = ParseManifest(c.text, "m.yaml");
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.error().where.file, "m.yaml");
    EXPECT_EQ(m.error().where.line, c.line) << m.error().Format();
    EXPECT_NE(m.error().message.find(c.message), std::string::npos) << m.error().Format();
  }
}

TEST(PackSemVer, RangesAndOrdering) {
  auto v = [](const char* s) { return *ParseSemVer(s); };
  EXPECT_LT(Compare(v("1.0.0-rc1"), v("1.0.0")), 0);
  EXPECT_LT(Compare(v("1.9.0"), v("1.10.0")), 0);
  EXPECT_FALSE(ParseSemVer("01.0.0").ok());
  EXPECT_FALSE(ParseSemVer("1.0").ok());
  EXPECT_TRUE(*VersionSatisfies(">=0.1.0 <0.2.0", v("0.1.5")));
  EXPECT_FALSE(*VersionSatisfies(">=0.1.0 <0.2.0", v("0.2.0")));
  EXPECT_TRUE(*VersionSatisfies(">=0.1, <1", v("0.9.9")));
  EXPECT_TRUE(*VersionSatisfies("^1.2.0", v("1.9.0")));
  EXPECT_FALSE(*VersionSatisfies("^1.2.0", v("2.0.0")));
  EXPECT_FALSE(*VersionSatisfies("^0.1.0", v("0.2.0")));  // 0.x: the minor is the major
  EXPECT_TRUE(*VersionSatisfies("~1.2.0", v("1.2.7")));
  EXPECT_FALSE(*VersionSatisfies("~1.2.0", v("1.3.0")));
  EXPECT_TRUE(*VersionSatisfies("1.2.3", v("1.2.3")));
  EXPECT_FALSE(VersionSatisfies("", v("1.2.3")).ok());
}

TEST(PackDigest, Sha256KnownAnswers) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(PackArchive, RoundTripIsDeterministic) {
  PackFiles files = {{"kiln-pack.yaml", "name: x\n"}, {"policies/a.policy", "policy a;\n"},
                     {"tests/t.yaml", std::string(100000, 'x')}};
  auto a = WritePackArchive(files);
  auto b = WritePackArchive(files);
  ASSERT_TRUE(a.ok()) << a.error().Format();
  EXPECT_EQ(*a, *b);
  EXPECT_LT(a->size(), 4096u);  // zstd did compress the 100 kB of x
  auto back = ReadPackArchive(*a, "x.kpack");
  ASSERT_TRUE(back.ok()) << back.error().Format();
  EXPECT_EQ(*back, files);
}

// A hand-made zstd tar with one entry, for the refusals the writer would never produce.
std::string CraftArchive(const std::string& path, mode_t type, const std::string& data,
                         const char* link = nullptr, int filter = ARCHIVE_FILTER_ZSTD) {
  std::string out;
  archive* a = archive_write_new();
  if (filter == ARCHIVE_FILTER_ZSTD) archive_write_add_filter_zstd(a);
  else archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  archive_write_set_bytes_in_last_block(a, 1);  // no zero padding after the zstd frame
  archive_write_open2(
      a, &out, nullptr,
      [](archive*, void* client, const void* buf, size_t n) -> la_ssize_t {
        static_cast<std::string*>(client)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr, nullptr);
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, path.c_str());
  archive_entry_set_filetype(e, type);
  archive_entry_set_perm(e, 0644);
  if (link) archive_entry_set_symlink(e, link);
  archive_entry_set_size(e, type == AE_IFREG ? static_cast<la_int64_t>(data.size()) : 0);
  archive_write_header(a, e);
  if (type == AE_IFREG) archive_write_data(a, data.data(), data.size());
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

TEST(PackArchive, RefusesEntriesThatLeaveThePackOrAreTooBig) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  ArchiveLimits small;
  small.max_file_bytes = 1000;
  std::vector<Case> cases = {
      {CraftArchive("/etc/cron.d/x", AE_IFREG, "x"), "entry `/etc/cron.d/x` refused: absolute path"},
      {CraftArchive("policies/../../x", AE_IFREG, "x"), "the path leaves the pack"},
      {CraftArchive("policies/link", AE_IFLNK, "", "/etc/passwd"), "symbolic link"},
      {CraftArchive("big.policy", AE_IFREG, std::string(5000, 'x')), "over the limit of 1000"},
      {CraftArchive("a.policy", AE_IFREG, "x", nullptr, ARCHIVE_FILTER_GZIP), "not a .kpack"},
      {"not an archive at all", "not a .kpack"},
  };
  for (const Case& c : cases) {
    auto files = ReadPackArchive(c.bytes, "evil.kpack", small);
    ASSERT_FALSE(files.ok()) << c.message;
    EXPECT_NE(files.error().message.find(c.message), std::string::npos) << files.error().message;
    EXPECT_EQ(files.error().message.rfind("evil.kpack: ", 0), 0u) << files.error().message;
  }
}

// A fresh Ed25519 key pair in PEM files under a temp dir.
struct TempKey {
  std::filesystem::path dir;
  std::string priv, pub;
  TempKey() {
    dir = std::filesystem::temp_directory_path() /
          ("kiln-packs-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir);
    priv = (dir / "key.pem").string();
    pub = (dir / "pub.pem").string();
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    FILE* f = std::fopen(priv.c_str(), "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    f = std::fopen(pub.c_str(), "w");
    PEM_write_PUBKEY(f, key);
    std::fclose(f);
    EVP_PKEY_free(key);
  }
  ~TempKey() { std::filesystem::remove_all(dir); }
  static inline int counter = 0;
};

// A built, signed pack in memory, as ReadPackBytes would return it.
Pack SignedPack(const TempKey& key) {
  Pack pack;
  pack.source = "p.kpack";
  pack.archive = true;
  pack.files = {{"policies/a.policy", "policy a;\n"}, {"policies/b.policy", "policy b;\n"},
                {"scheduler.conf", "actions: \"\"\n"}, {"tests/one.yaml", "name: t\n"}};
  auto m = ParseManifest(kManifest, "kiln-pack.yaml");
  pack.manifest = *m;
  for (const auto& [path, bytes] : pack.files) pack.manifest.files[path] = Sha256Hex(bytes);
  pack.manifest_text = CanonicalManifest(pack.manifest);
  auto sig = SignManifest(pack.manifest_text, key.priv);
  EXPECT_TRUE(sig.ok()) << sig.error().Format();
  pack.signature_text = *sig;
  return pack;
}

TEST(PackVerify, SignedPackVerifiesAndTamperingIsNamed) {
  TempKey key, other;
  auto trusted = LoadTrustedKeys({key.pub});
  ASSERT_TRUE(trusted.ok()) << trusted.error().Format();
  auto stranger = LoadTrustedKeys({other.pub});
  ASSERT_TRUE(stranger.ok());

  Pack good = SignedPack(key);
  auto report = VerifyPack(good, *trusted);
  ASSERT_TRUE(report.ok()) << report.error().Format();
  EXPECT_EQ(report->files_checked, 4u);
  EXPECT_TRUE(report->trusted);
  EXPECT_EQ(report->signer->id, (*trusted)[0].id);

  auto fails_with = [](const Pack& p, const std::vector<PublicKey>& trust, const std::string& what) {
    auto r = VerifyPack(p, trust);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_NE(r.error().message.find(what), std::string::npos) << r.error().message;
  };
  Pack file = good;
  file.files["policies/b.policy"][0] = 'P';
  fails_with(file, *trusted, "policies/b.policy: sha256 differs from the manifest");

  Pack manifest = good;  // a consistent new digest, but the manifest no longer matches the signature
  manifest.files["policies/b.policy"] = "policy b; // changed\n";
  manifest.manifest.files["policies/b.policy"] = Sha256Hex(manifest.files["policies/b.policy"]);
  manifest.manifest_text = CanonicalManifest(manifest.manifest);
  fails_with(manifest, *trusted, "kiln-pack.sig: the signature by");

  Pack sig = good;
  size_t at = sig.signature_text->find("\nsignature: ") + 13;
  (*sig.signature_text)[at] = (*sig.signature_text)[at] == 'A' ? 'B' : 'A';
  fails_with(sig, *trusted, "does not match kiln-pack.yaml");

  fails_with(good, *stranger, "signed by unknown key");
  Pack unsigned_pack = good;
  unsigned_pack.signature_text.reset();
  fails_with(unsigned_pack, *trusted, "the pack is not signed");
  EXPECT_TRUE(VerifyPack(unsigned_pack, {}).ok());  // no trust configured: integrity only

  Pack extra = good;
  extra.files["smuggled.policy"] = "policy s;\n";
  fails_with(extra, {}, "smuggled.policy: in the pack but not listed");
  Pack missing = good;
  missing.files.erase("tests/one.yaml");
  fails_with(missing, {}, "tests/one.yaml: listed in the manifest but missing");
}

TEST(PackVerify, PackBytesRoundTripThroughTheArchive) {
  TempKey key;
  Pack pack = SignedPack(key);
  PackFiles all = pack.files;
  all["kiln-pack.yaml"] = pack.manifest_text;
  all["kiln-pack.sig"] = *pack.signature_text;
  auto bytes = WritePackArchive(all);
  ASSERT_TRUE(bytes.ok());
  auto back = ReadPackBytes(*bytes, "p.kpack");
  ASSERT_TRUE(back.ok()) << back.error().Format();
  EXPECT_EQ(back->files, pack.files);
  auto trusted = LoadTrustedKeys({key.pub});
  EXPECT_TRUE(CheckPackForUse(*back, *trusted).ok());
  auto named = NamedPolicies(*back);
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].conf_name, "team-fairness/a");
  EXPECT_EQ(named[0].declared_name, "a");
  EXPECT_EQ(named[0].source.path, "p.kpack:policies/a.policy");
}

TEST(PackVerify, LanguageRangeOutsideThisCompilerIsRefused) {
  auto m = ParseManifest(std::string(kManifest).replace(std::string(kManifest).find(">=0.1.0 <0.2.0"),
                                                        14, ">=9.0.0"),
                         "kiln-pack.yaml");
  ASSERT_TRUE(m.ok()) << m.error().Format();
  Status s = CheckLanguageVersion(*m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("needs Kiln policy language `>=9.0.0`"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(s.error().where.line, 5);
}

}  // namespace
}  // namespace kiln::packs

namespace kiln::packs {
namespace {

TEST(PackConfMerge, PutsThePacksPluginsBesideTheirNeighbours) {
  const char* pack_conf = R"(actions: "allocate"
tiers:
- plugins:
  - name: priority
- plugins:
  - name: tf/share
    arguments: {share.weight.ml: 2}
  - name: drf
  - name: nodeorder
  - name: tf/nodes
- plugins:
  - name: tf/extra
)";
  const char* conf = R"(actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: drf
  - name: nodeorder
  - name: binpack
)";
  auto merged = MergePackConf("tf", pack_conf, "pack.conf", conf, "my.conf");
  ASSERT_TRUE(merged.ok()) << merged.error().Format();
  EXPECT_EQ(merged->added,
            (std::vector<std::string>{"tf/share (tier 2, before drf)",
                                      "tf/nodes (tier 2, after nodeorder)",
                                      "tf/extra (tier 3, at the end)"}));
  auto parsed = ParseSchedulerConf(merged->text, "merged");
  ASSERT_TRUE(parsed.ok()) << parsed.error().Format() << "\n" << merged->text;
  std::vector<std::string> tier2;
  for (const PluginOption& p : parsed->tiers[1].plugins) tier2.push_back(p.name);
  EXPECT_EQ(tier2, (std::vector<std::string>{"predicates", "tf/share", "drf", "nodeorder",
                                             "tf/nodes", "binpack"}));
  ASSERT_EQ(parsed->tiers.size(), 3u);
  EXPECT_EQ(parsed->tiers[2].plugins[0].name, "tf/extra");
  EXPECT_EQ(parsed->tiers[1].plugins[1].arguments.size(), 1u);  // the arguments came along
  EXPECT_EQ(parsed->actions, (std::vector<std::string>{"enqueue", "allocate"}));  // the operator's

  // Merging again changes nothing: every pack plugin is kept as the conf has it.
  auto again = MergePackConf("tf", pack_conf, "pack.conf", merged->text, "merged");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->added.empty());
  EXPECT_EQ(again->kept.size(), 3u);
  EXPECT_EQ(again->text, merged->text);
}

TEST(PackConfMerge, BadYamlNamesTheFile) {
  auto merged = MergePackConf("tf", "tiers: [", "pack.conf", "actions: x\n", "my.conf");
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.error().where.file, "pack.conf");
  auto bad_tiers = MergePackConf("tf", "tiers: []\n", "pack.conf", "tiers: 3\n", "my.conf");
  ASSERT_FALSE(bad_tiers.ok());
  EXPECT_NE(bad_tiers.error().message.find("`tiers` must be a list"), std::string::npos);
  EXPECT_EQ(bad_tiers.error().where.line, 1);
}

}  // namespace
}  // namespace kiln::packs
