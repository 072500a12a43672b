// CAF 0.17's TLS sessions (libcaf_openssl, Debian's package) call SSL_read, SSL_write,
// SSL_accept and SSL_connect without first emptying the thread's OpenSSL error queue, which
// OpenSSL requires (SSL_get_error(3)); all sessions share the middleman's one thread. So one
// failed handshake (anyone who connects to the worker port without the cluster's
// certificate) left an error that the next read of a healthy session took for its own, and
// kgym serve dropped every joined worker (seen: Cluster.OnlyNodesOfTheClusterJoin). These
// definitions in the kgym binary take the place of libssl's for libcaf_openssl's calls:
// each empties the queue, then calls libssl's own.
#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace {

template <class Function>
Function libssl(const char* name) {
  static void* handle = ::dlopen("libssl.so.3", RTLD_NOW | RTLD_NOLOAD);
  return reinterpret_cast<Function>(::dlsym(handle ? handle : RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static auto real = libssl<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static auto real = libssl<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_accept(SSL* ssl) {
  static auto real = libssl<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

int SSL_connect(SSL* ssl) {
  static auto real = libssl<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

}  // extern "C"
