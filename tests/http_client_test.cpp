// The OpenAI backend's HTTP client (policy/http_client.hpp) against real servers on loopback
// (cpp-httplib's): plain and TLS, kept-alive connections, chunked answers, errors, deadlines.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "policy/http_client.hpp"
#include "tests/test_support.hpp"

namespace kgym {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A server of the test's, on a port of its own, stopped when the test ends.
struct running_server {
  httplib::Server& server;
  int port;
  std::thread thread;
  explicit running_server(httplib::Server& s) : server(s), port(s.bind_to_any_port("127.0.0.1")) {
    thread = std::thread([this] { server.listen_after_bind(); });
    for (int i = 0; i < 200 && !server.is_running(); ++i) std::this_thread::sleep_for(5ms);
  }
  ~running_server() {
    server.stop();
    thread.join();
  }
};

http_url url_of(const std::string& text) {
  std::string error;
  auto url = parse_http_url(text, &error);
  EXPECT_TRUE(url) << error;
  return url.value_or(http_url{});
}

TEST(HttpClient, ParsesHttpAndHttpsUrls) {
  http_url plain = url_of("http://127.0.0.1:8000/v1/");
  EXPECT_EQ(plain.scheme, "http");
  EXPECT_EQ(plain.host, "127.0.0.1");
  EXPECT_EQ(plain.port, 8000);
  EXPECT_EQ(plain.path, "/v1");
  http_url tls = url_of("https://api.example.com/v1");
  EXPECT_EQ(tls.scheme, "https");
  EXPECT_EQ(tls.port, 443);
  EXPECT_EQ(tls.origin(), "https://api.example.com:443");
  EXPECT_EQ(url_of("http://host").port, 80);
  std::string error;
  EXPECT_FALSE(parse_http_url("ftp://host/v1", &error));
  EXPECT_NE(error.find("not an http:// or https:// URL"), std::string::npos) << error;
  EXPECT_FALSE(parse_http_url("http://host:99999/v1", &error));
  EXPECT_NE(error.find("bad port"), std::string::npos) << error;
  EXPECT_FALSE(parse_http_url("http://:80/v1", &error));
}

TEST(HttpClient, AnswersErrorsChunksKeepAliveAndTheDeadline) {
  httplib::Server server;
  std::mutex mutex;
  std::vector<int> client_ports;  // the peer port of each request: one connection, one port
  server.Post("/v1/echo", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      client_ports.push_back(req.remote_port);
    }
    res.set_content(req.body + "|" + req.get_header_value("Authorization") + "|" +
                        req.get_header_value("Content-Type"),
                    "application/json");
  });
  server.Get("/v1/busy", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content("overloaded", "text/plain");
  });
  server.Get("/v1/chunked", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
      sink.write("abc", 3);
      sink.write("de", 2);
      sink.done();
      return true;
    });
  });
  server.Get("/v1/drip", [](const httplib::Request&, httplib::Response& res) {  // 20 bytes over 4 s
    res.set_chunked_content_provider("application/json", [](size_t offset, httplib::DataSink& sink) {
      if (offset >= 20) {
        sink.done();
        return true;
      }
      std::this_thread::sleep_for(200ms);
      return sink.write("x", 1);
    });
  });
  int port = 0;
  {
    running_server running(server);
    port = running.port;
    ASSERT_GT(port, 0);
    const http_url base = url_of("http://127.0.0.1:" + std::to_string(port) + "/v1");
    for (int i = 0; i < 2; ++i) {
      http_reply r = http_post_json(base, "/echo", R"({"a":1})", {{"Authorization", "Bearer k"}}, 5.0);
      EXPECT_EQ(r.status, 200) << r.error;
      EXPECT_EQ(r.body, R"({"a":1}|Bearer k|application/json)");
    }
    ASSERT_EQ(client_ports.size(), 2u);
    EXPECT_EQ(client_ports[0], client_ports[1]) << "the second request opened a new connection";

    http_reply busy = http_get(base, "/busy", {}, 5.0);
    EXPECT_EQ(busy.status, 503);
    EXPECT_EQ(describe_failure(busy), "HTTP 503: overloaded");
    EXPECT_EQ(http_get(base, "/chunked", {}, 5.0).body, "abcde");

    const auto started = std::chrono::steady_clock::now();
    http_reply slow = http_get(base, "/drip", {}, 1.0);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_EQ(slow.status, 0);
    EXPECT_TRUE(slow.timed_out) << slow.error;
    EXPECT_LT(took, 2.0) << "an answer dripping past the deadline held the caller " << took << " s";
  }
  http_reply refused = http_get(url_of("http://127.0.0.1:" + std::to_string(port)), "/busy", {}, 2.0);
  EXPECT_EQ(refused.status, 0);
  EXPECT_FALSE(refused.timed_out);
  EXPECT_NE(refused.error.find("failed"), std::string::npos) << refused.error;
}

// HTTPS with the server's certificate checked: trusted through $SSL_CERT_FILE (the CA that
// signed it), refused without, with a message that says what to set.
TEST(HttpClient, SpeaksHttpsAndChecksTheServersCertificate) {
  const fs::path dir = fs::temp_directory_path() / ("kgym-https-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string make = "bash " + test::source_path("deploy/cluster_certs.sh") + " " + dir.string() + " 127.0.0.1 >/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0);
  const fs::path node = dir / "127.0.0.1";
  httplib::SSLServer server((node / "node.pem").c_str(), (node / "node.key").c_str());
  ASSERT_TRUE(server.is_valid());
  server.Post("/v1/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.body, "application/json");
  });
  running_server running(server);
  const http_url base = url_of("https://127.0.0.1:" + std::to_string(running.port) + "/v1");
  // Each exchange in a thread of its own: a client (and the CAs it loaded) is kept per thread.
  http_reply trusted, untrusted;
  ::setenv("SSL_CERT_FILE", (dir / "ca.pem").c_str(), 1);
  std::thread([&] { trusted = http_post_json(base, "/echo", "{}", {}, 5.0); }).join();
  ::unsetenv("SSL_CERT_FILE");
  std::thread([&] { untrusted = http_post_json(base, "/echo", "{}", {}, 5.0); }).join();
  EXPECT_EQ(trusted.status, 200) << trusted.error;
  EXPECT_EQ(trusted.body, "{}");
  EXPECT_EQ(untrusted.status, 0);
  EXPECT_NE(untrusted.error.find("SSL_CERT_FILE"), std::string::npos) << untrusted.error;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kgym
