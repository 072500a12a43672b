#include "cli/loopback_credentials.hpp"

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace kgym::cli {

namespace fs = std::filesystem;

namespace {

constexpr long validity_days = 825;

using key_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using cert_ptr = std::unique_ptr<X509, decltype(&X509_free)>;

// A directory of ours only: made 0700 if missing; refused if it is a link, another user's,
// or open to others (someone else could have put a CA there, or read our keys).
void private_directory(const fs::path& dir) {
  ::mkdir(dir.c_str(), 0700);
  struct stat s {};
  if (::lstat(dir.c_str(), &s) != 0 || !S_ISDIR(s.st_mode) || s.st_uid != ::geteuid() || (s.st_mode & 077) != 0)
    throw std::runtime_error("loopback cluster credentials: " + dir.string() +
                             " must be a directory of this user's with mode 0700 (remove it, or pass --cluster-certs)");
}

// One lock for the whole root: a serve and its workers starting at once make the CA once.
struct root_lock {
  int fd;
  explicit root_lock(const fs::path& root) : fd(::open((root / "lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600)) {
    if (fd >= 0)
      ::flock(fd, LOCK_EX);
  }
  ~root_lock() {
    if (fd >= 0)
      ::close(fd);
  }
};

void check(bool ok, const char* what) {
  if (!ok)
    throw std::runtime_error(std::string("loopback cluster credentials: OpenSSL failed to ") + what);
}

key_ptr new_key() {
  key_ptr key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  check(key != nullptr, "make a key");
  return key;
}

// The key or certificate in a PEM file (`read`: PEM_read_PrivateKey or PEM_read_X509).
template <class T, class Reader>
T* read_pem(const fs::path& path, Reader read, const char* what) {
  FILE* f = std::fopen(path.c_str(), "r");
  check(f != nullptr, what);
  T* value = read(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  check(value != nullptr, what);
  return value;
}

key_ptr read_key(const fs::path& path) {
  return key_ptr(read_pem<EVP_PKEY>(path, PEM_read_PrivateKey, "read the CA's key"), EVP_PKEY_free);
}

cert_ptr read_cert(const fs::path& path) {
  return cert_ptr(read_pem<X509>(path, PEM_read_X509, "read the CA's certificate"), X509_free);
}

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr && X509_add_ext(cert, ext, -1) == 1, "add a certificate extension");
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `name`, signed by `issuer_key` (itself when no issuer: the CA).
cert_ptr new_cert(EVP_PKEY* key, const std::string& name, X509* issuer, EVP_PKEY* issuer_key) {
  cert_ptr cert(X509_new(), X509_free);
  check(cert != nullptr && X509_set_version(cert.get(), 2) == 1, "make a certificate");
  std::unique_ptr<BIGNUM, decltype(&BN_free)> serial(BN_new(), BN_free);  // random, positive, 127 bits
  check(serial && BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
            BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) != nullptr,
        "set a serial");
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), validity_days * 24 * 3600);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(name.c_str()), -1,
                             -1, 0);
  check(X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : subject) == 1, "set the issuer");
  check(X509_set_pubkey(cert.get(), key) == 1, "set the key");
  const bool is_ca = issuer == nullptr;
  add_extension(cert.get(), is_ca ? cert.get() : issuer, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (is_ca)
    add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  check(X509_sign(cert.get(), issuer_key, EVP_sha256()) > 0, "sign a certificate");
  return cert;
}

// Written whole under a temporary name, then renamed: a reader never sees half a file.
void write_pem(const fs::path& path, EVP_PKEY* key, X509* cert) {
  const fs::path partial = path.string() + ".partial";
  const int fd = ::open(partial.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  check(fd >= 0, "create a credentials file");
  FILE* f = ::fdopen(fd, "w");
  const bool ok = key ? PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1
                      : PEM_write_X509(f, cert) == 1;
  check(std::fclose(f) == 0 && ok, "write a credentials file");
  fs::rename(partial, path);
}

// A node's directory name from its name: what a path may hold, the rest as '_'.
std::string directory_name(const std::string& node_name) {
  std::string out;
  for (char c : node_name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return out.empty() || out[0] == '.' ? "_" + out : out;
}

}  // namespace

fs::path loopback_credentials_root() {
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime && fs::is_directory(runtime))
    return fs::path(runtime) / "kgym-cluster";
  return fs::temp_directory_path() / ("kgym-cluster-" + std::to_string(::geteuid()));
}

cluster_credentials loopback_credentials(const std::string& node_name, bool make_ca) {
  const fs::path root = loopback_credentials_root();
  private_directory(root);
  root_lock lock(root);
  const fs::path ca_key_path = root / "ca.key", ca_path = root / "ca.pem";
  if (!fs::exists(ca_key_path) || !fs::exists(ca_path)) {
    if (!make_ca)
      throw std::runtime_error("no loopback cluster CA in " + root.string() +
                               ": start kgym serve --listen on this machine as this user first (it makes one), or "
                               "pass --cluster-certs");
    key_ptr ca_key = new_key();
    cert_ptr ca = new_cert(ca_key.get(), "kgym loopback CA", nullptr, ca_key.get());
    write_pem(ca_key_path, ca_key.get(), nullptr);
    write_pem(ca_path, nullptr, ca.get());
  }
  key_ptr ca_key = read_key(ca_key_path);
  cert_ptr ca = read_cert(ca_path);
  private_directory(root / "nodes");
  const fs::path dir = root / "nodes" / directory_name(node_name);
  private_directory(dir);
  key_ptr key = new_key();
  cert_ptr cert = new_cert(key.get(), node_name, ca.get(), ca_key.get());
  write_pem(dir / "node.key", key.get(), nullptr);
  write_pem(dir / "node.pem", nullptr, cert.get());
  write_pem(dir / "ca.pem", nullptr, ca.get());
  return cluster_credentials{dir.string()};
}

}  // namespace kgym::cli
