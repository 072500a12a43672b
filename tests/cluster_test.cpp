// Many processes on loopback, as a deployment runs them: one `kgym serve` (control plane, no
// executors of its own) and three `kgym worker`s with a CPU slot each; 500 evaluations through
// the API; one worker SIGKILLed while it evaluates, a fourth joining mid-run. Every request is
// answered exactly once with the right verdict, and the late worker gets work.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <openssl/ssl.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/gpu_executor.hpp"
#include "actors/worker_gate.hpp"
#include "cli/cluster.hpp"
#include "cli/loopback_credentials.hpp"
#include "messages/json.hpp"
#include "pipeline/task_loader.hpp"
#include "service/request_journal.hpp"
#include "tests/api_support.hpp"
#include "tests/test_support.hpp"

namespace kgym::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

Verdict expected_verdict(const std::string& candidate) {
  if (candidate == "wrong")
    return INCORRECT;
  if (candidate.rfind("cheat", 0) == 0 || candidate == "identity")
    return HACKED;
  return OK;
}

std::string read_all(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// serve's line for an answered evaluation (from where, the task, the verdict, on which
// executor), from "request <id> from " to the end of its line; "" if there is none.
std::string evaluation_line(const std::string& log, const std::string& id) {
  const size_t at = log.find("request " + id + " from ");
  return at == std::string::npos ? std::string() : log.substr(at, log.find('\n', at) - at);
}

TEST(Cluster, ExactlyOnceWithAWorkerKilledAndOneJoining) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-cluster-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  server s = start_server("cluster", {"--executors", "0", "--eval-cache", "--listen", "127.0.0.1:0",
                                      "--listen-file", tmp + "/port"});
  ASSERT_FALSE(s.endpoint.empty());
  std::string join = "127.0.0.1:" + wait_for_line(tmp + "/port");
  std::map<std::string, pid_t> workers;
  for (const std::string name : {"w1", "w2", "w3"})
    workers[name] = start_kgym({"worker", "--join", join, "--name", name}, tmp + "/" + name + ".log");

  std::vector<std::pair<std::string, std::string>> programs;  // (task, candidate)
  for (const std::string task : {"gelu_scale_residual", "softmax_rows", "rmsnorm_rows", "mse_loss"})
    for (const auto& path : find_candidates(source_path("tasks/" + task)))
      programs.emplace_back(task, fs::path(path).stem().string());
  client c(s.endpoint);
  std::map<std::string, Verdict> expected;
  for (int i = 0; i < 500; ++i) {
    const auto& [task, candidate] = programs[i % programs.size()];
    std::string id = "r" + std::to_string(i) + "-" + task + "-" + candidate;
    expected[id] = expected_verdict(candidate);
    c.send(request(id, task, candidate), i % 2 == 0);
  }

  std::map<std::string, int> answered;
  std::map<std::string, int> by_worker;
  for (size_t n = 0; n < expected.size(); ++n) {
    EvalResult r = c.receive(300s);
    ASSERT_EQ(r.error(), "") << "request " << r.request_id();
    ++answered[r.request_id()];
    ++by_worker[r.result().executor().substr(0, 2)];
    EXPECT_EQ(Verdict_Name(r.result().verdict()), Verdict_Name(expected[r.request_id()]))
        << r.request_id() << ": " << r.result().message();
    if (n == 0) {  // w1 is busy with the next program now: kill it, and let w4 join
      ::kill(workers["w1"], SIGKILL);
      workers["w4"] = start_kgym({"worker", "--join", join, "--name", "w4"}, tmp + "/w4.log");
    }
  }
  for (const auto& [id, verdict] : expected)
    EXPECT_EQ(answered[id], 1) << id;
  EXPECT_GT(by_worker["w4"], 0) << "the worker that joined mid-run got no work";
  std::string serve_log = read_all(fs::temp_directory_path().string() + "/kgym-serve-cluster.log");
  EXPECT_NE(serve_log.find("executor w1#cpu0 lost"), std::string::npos) << serve_log;
  EXPECT_NE(serve_log.find("placed again"), std::string::npos) << serve_log;
  // Each evaluation is logged with where it came from and where it ran.
  for (const auto& [id, verdict] : expected) {
    const std::string line = evaluation_line(serve_log, id);
    EXPECT_EQ(line.rfind("request " + id + " from zmq 127.0.0.1 id ", 0), 0u) << id << ": " << line;
    EXPECT_NE(line.find(": task "), std::string::npos) << line;
    EXPECT_NE(line.find(": " + Verdict_Name(verdict) + " on w"), std::string::npos) << line;
  }

  int status = 0;
  ::waitpid(workers["w1"], &status, 0);
  for (const std::string name : {"w2", "w3", "w4"})
    EXPECT_EQ(stop_process(workers[name]), 0) << name << " did not drain cleanly";
  EXPECT_EQ(stop_process(s.pid), 0);
  fs::remove_all(tmp);
}

// A node that goes silent without closing its connection (SIGSTOP) is dropped after the
// middleman's connection timeout, and its work is placed on the others.
TEST(Cluster, ASilentWorkerIsDroppedAndItsWorkPlacedAgain) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-silent-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  server s = start_server("silent", {"--executors", "0", "--listen", "127.0.0.1:0", "--listen-file", tmp + "/port"});
  ASSERT_FALSE(s.endpoint.empty());
  std::string join = "127.0.0.1:" + wait_for_line(tmp + "/port");
  pid_t quiet = start_kgym({"worker", "--join", join, "--name", "quiet"}, tmp + "/quiet.log");
  pid_t steady = start_kgym({"worker", "--join", join, "--name", "steady"}, tmp + "/steady.log");
  std::this_thread::sleep_for(2s);
  client c(s.endpoint);
  std::vector<std::string> candidates = {"fused", "lazy", "wrong", "cheat", "fused", "lazy"};
  for (size_t i = 0; i < candidates.size(); ++i)
    c.send(request("s" + std::to_string(i), "gelu_scale_residual", candidates[i]));
  std::this_thread::sleep_for(1500ms);  // both workers are evaluating now
  ::kill(quiet, SIGSTOP);
  auto started = std::chrono::steady_clock::now();
  std::map<std::string, int> answered;
  for (size_t n = 0; n < candidates.size(); ++n) {
    EvalResult r = c.receive(120s);
    ASSERT_EQ(r.error(), "");
    ++answered[r.request_id()];
    EXPECT_EQ(Verdict_Name(r.result().verdict()), Verdict_Name(expected_verdict(candidates[std::stoi(r.request_id().substr(1))])));
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(answered.size(), candidates.size());
  std::string serve_log = read_all(fs::temp_directory_path().string() + "/kgym-serve-silent.log");
  EXPECT_NE(serve_log.find("executor quiet#cpu0 lost"), std::string::npos) << serve_log;
  EXPECT_LT(seconds, 90) << "the silent worker held its work too long";
  ::kill(quiet, SIGKILL);
  ::kill(quiet, SIGCONT);
  int status = 0;
  ::waitpid(quiet, &status, 0);
  EXPECT_EQ(stop_process(steady), 0);
  EXPECT_EQ(stop_process(s.pid), 0);
  fs::remove_all(tmp);
}

// Only the API creates work: on loopback a plain middleman client reaches nothing (the port is
// TLS there too); a node of the cluster (this user's loopback credentials) that asks for the
// scheduler's interface is refused at connect, and an ExecRequest sent to whatever it finds
// there meets no handler; no executor runs it. The join of a real worker is logged with its node.
TEST(Cluster, TheWorkerPortTakesNoWork) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-gate-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  server s = start_server("gate", {"--executors", "0", "--listen", "127.0.0.1:0", "--listen-file", tmp + "/port"});
  ASSERT_FALSE(s.endpoint.empty());
  const uint16_t port = static_cast<uint16_t>(std::stoi(wait_for_line(tmp + "/port")));
  pid_t worker = start_kgym({"worker", "--join", "127.0.0.1:" + std::to_string(port), "--name", "real",
                             "--null-executor"},
                            tmp + "/real.log");
  const std::string serve_log = fs::temp_directory_path().string() + "/kgym-serve-gate.log";
  for (int i = 0; i < 100 && read_all(serve_log).find("joins from node") == std::string::npos; ++i)
    std::this_thread::sleep_for(100ms);
  EXPECT_NE(read_all(serve_log).find("executor real#null0 joins from node"), std::string::npos) << read_all(serve_log);

  {
    caf::actor_system_config plain_cfg;
    cli::configure_cluster(plain_cfg);
    caf::actor_system plain{plain_cfg};
    EXPECT_FALSE(plain.middleman().remote_actor<worker_gate_actor>("127.0.0.1", port))
        << "a plain middleman client reached the worker gate on loopback";
  }
  caf::actor_system_config cfg;
  cli::configure_cluster(cfg, cli::loopback_credentials("member", /*make_ca=*/false));
  caf::actor_system system{cfg};
  auto as_scheduler = caf::openssl::remote_actor<scheduler_actor>(system, "127.0.0.1", port);
  EXPECT_FALSE(as_scheduler) << "the worker port offered the scheduler's interface";
  // The node takes the interface it is offered and sends the ExecRequest all the same.
  auto gate = caf::openssl::remote_actor<worker_gate_actor>(system, "127.0.0.1", port);
  ASSERT_TRUE(gate) << system.render(gate.error());
  auto untyped = caf::actor_cast<caf::actor>(*gate);
  ExecRequest forged;
  forged.set_request_id("forged-by-an-outsider");
  forged.mutable_task()->set_id("gelu_scale_residual");
  forged.mutable_candidate()->set_source("class ModelNew: pass");
  caf::scoped_actor self{system};
  bool answered = false;
  std::string refusal;
  self->request(untyped, std::chrono::seconds(10), forged)
      .receive([&](const ExecResult&) { answered = true; },
               [&](const caf::error& error) { refusal = system.render(error); });
  EXPECT_FALSE(answered) << "an ExecRequest on the worker port was evaluated";
  EXPECT_NE(refusal, "") << "no refusal";
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(read_all(serve_log).find("forged-by-an-outsider"), std::string::npos) << read_all(serve_log);
  EXPECT_EQ(stop_process(worker), 0);
  EXPECT_EQ(stop_process(s.pid), 0);
  fs::remove_all(tmp);
}

// A node joins at most --max-executors-per-worker executors: beyond, its joins are refused and
// logged, and no work reaches them; a name it already joined may join again (a rejoin).
TEST(Cluster, ANodeJoinsAtMostItsShareOfExecutors) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-share-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  server s = start_server("share", {"--executors", "0", "--listen", "127.0.0.1:0", "--listen-file", tmp + "/port",
                                    "--max-executors-per-worker", "2"});
  ASSERT_FALSE(s.endpoint.empty());
  const uint16_t port = static_cast<uint16_t>(std::stoi(wait_for_line(tmp + "/port")));
  // A node of this user's (its loopback credentials, CN "node": its executors are node#...).
  caf::actor_system_config cfg;
  cli::configure_cluster(cfg, cli::loopback_credentials("node", /*make_ca=*/false));
  caf::actor_system system{cfg};
  auto gate = caf::openssl::remote_actor<worker_gate_actor>(system, "127.0.0.1", port);
  ASSERT_TRUE(gate) << system.render(gate.error());
  std::vector<gpu_executor_actor> executors;
  caf::scoped_actor self{system};
  for (const std::string name : {"node#x0", "node#x1", "node#x2", "node#x0"}) {  // the last: x0 joins again
    executors.push_back(spawn_null_executor(system));
    self->send(*gate, join_atom::value, name, caf::actor_cast<caf::strong_actor_ptr>(executors.back()));
  }
  const std::string serve_log = fs::temp_directory_path().string() + "/kgym-serve-share.log";
  for (int i = 0; i < 100 && read_all(serve_log).find("refused executor node#x2") == std::string::npos; ++i)
    std::this_thread::sleep_for(100ms);
  EXPECT_NE(read_all(serve_log).find("refused executor node#x2"), std::string::npos) << read_all(serve_log);
  client c(s.endpoint);
  for (int i = 0; i < 20; ++i)
    c.send(request("share-" + std::to_string(i), "gelu_scale_residual", "fused"), false);
  std::map<std::string, int> by_executor;
  for (int i = 0; i < 20; ++i) {
    EvalResult r = c.receive(60s);
    ASSERT_EQ(r.error(), "") << r.request_id();
    ++by_executor[r.result().executor()];
  }
  EXPECT_EQ(by_executor.count("node#x2"), 0u) << "a refused executor got work";
  EXPECT_EQ(by_executor["node#x0"] + by_executor["node#x1"], 20);
  for (const auto& e : executors)
    self->send_exit(e, caf::exit_reason::user_shutdown);
  EXPECT_EQ(stop_process(s.pid), 0);
  fs::remove_all(tmp);
}

// deploy/cluster_certs.sh DIR NODE...: a CA and each node's credentials; its exit code.
int make_cluster_certs(const std::string& dir, const std::vector<std::string>& nodes, const std::string& log = "") {
  std::vector<std::string> argv = {"bash", source_path("deploy/cluster_certs.sh"), dir};
  argv.insert(argv.end(), nodes.begin(), nodes.end());
  return wait_exit(start_program(argv, log));
}

// Only our workers join: with cluster credentials (deploy/cluster_certs.sh) the worker port
// speaks TLS and both ends must show a certificate of the cluster's CA. A worker of the
// cluster joins and evaluates; one without credentials, one with another CA's, and a plain
// middleman client get nothing; and --listen beyond loopback without credentials is refused.
TEST(Cluster, OnlyNodesOfTheClusterJoin) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-tls-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  const std::string certs = tmp + "/certs", other_ca = tmp + "/other";
  ASSERT_EQ(make_cluster_certs(certs, {"serve", "w1"}, tmp + "/certs.log"), 0) << read_all(tmp + "/certs.log");
  ASSERT_EQ(make_cluster_certs(other_ca, {"w1"}), 0);

  pid_t open_to_all = start_kgym({"serve", "--executors", "0", "--api", "tcp://127.0.0.1:*", "--listen", "0.0.0.0:0"},
                                 tmp + "/open.log");
  EXPECT_NE(wait_exit(open_to_all), 0);
  EXPECT_NE(read_all(tmp + "/open.log").find("without cluster credentials"), std::string::npos)
      << read_all(tmp + "/open.log");

  server s = start_server("tls", {"--executors", "0", "--listen", "127.0.0.1:0", "--listen-file", tmp + "/port",
                                  "--cluster-certs", certs + "/serve"});
  ASSERT_FALSE(s.endpoint.empty());
  const std::string port = wait_for_line(tmp + "/port");
  const std::string join = "127.0.0.1:" + port;
  // A member joins under its certificate's name (w1, the default --name with credentials).
  pid_t member = start_kgym({"worker", "--join", join, "--cluster-certs", certs + "/w1"}, tmp + "/member.log");
  const std::string serve_log_path = fs::temp_directory_path().string() + "/kgym-serve-tls.log";
  for (int i = 0; i < 100 && read_all(serve_log_path).find("w1#cpu0 joins") == std::string::npos; ++i)
    std::this_thread::sleep_for(100ms);
  // Refused handshakes after it joined must not cost it its connection (tls_guard.cpp).
  pid_t no_credentials = start_kgym({"worker", "--join", join, "--name", "plain"}, tmp + "/plain.log");
  pid_t foreign = start_kgym({"worker", "--join", join, "--name", "foreign", "--cluster-certs", other_ca + "/w1"},
                             tmp + "/foreign.log");
  EXPECT_NE(wait_exit(no_credentials), 0) << read_all(tmp + "/plain.log");
  EXPECT_NE(wait_exit(foreign), 0) << read_all(tmp + "/foreign.log");
  // A member of the cluster under another name than its certificate's: its executors are refused.
  pid_t impostor = start_kgym({"worker", "--join", join, "--name", "serve", "--cluster-certs", certs + "/w1"},
                              tmp + "/impostor.log");
  for (int i = 0; i < 100 && read_all(serve_log_path).find("refused executor serve#cpu0") == std::string::npos; ++i)
    std::this_thread::sleep_for(100ms);
  EXPECT_NE(read_all(serve_log_path).find("refused executor serve#cpu0"), std::string::npos)
      << read_all(serve_log_path);
  {
    caf::actor_system_config cfg;
    cli::configure_cluster(cfg);
    caf::actor_system system{cfg};
    auto gate = system.middleman().remote_actor<worker_gate_actor>("127.0.0.1", static_cast<uint16_t>(std::stoi(port)));
    EXPECT_FALSE(gate) << "a plain middleman client reached the worker gate";
  }

  client c(s.endpoint);
  c.send(request("over-tls", "gelu_scale_residual", "fused"));
  EvalResult r = c.receive(120s);
  EXPECT_EQ(r.error(), "");
  EXPECT_EQ(Verdict_Name(r.result().verdict()), "OK") << r.result().message();
  EXPECT_EQ(r.result().executor(), "w1#cpu0");
  std::this_thread::sleep_for(2s);  // past a heartbeat: the member is still there
  const std::string serve_log = read_all(serve_log_path);
  EXPECT_EQ(serve_log.find("w1#cpu0 lost"), std::string::npos) << serve_log;
  EXPECT_EQ(serve_log.find("plain#"), std::string::npos) << serve_log;
  EXPECT_EQ(serve_log.find("foreign#"), std::string::npos) << serve_log;
  EXPECT_EQ(serve_log.find("executor serve#cpu0 joins"), std::string::npos) << serve_log;
  EXPECT_EQ(stop_process(impostor), 0);
  EXPECT_EQ(stop_process(member), 0);
  EXPECT_EQ(stop_process(s.pid), 0);
  fs::remove_all(tmp);
}

// A free loopback port (bound, read, released), for a server that must come back on it.
uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// How often `text` occurs in the file at `path`, waiting up to `timeout` for at least `count`.
int wait_for_count(const std::string& path, const std::string& text, int count, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const std::string all = read_all(path);
    int n = 0;
    for (auto at = all.find(text); at != std::string::npos; at = all.find(text, at + 1)) ++n;
    if (n >= count || std::chrono::steady_clock::now() > until)
      return n;
    std::this_thread::sleep_for(100ms);
  }
}

// What several tests start from: a kgym serve `name` with no executors of its own, listening
// for workers on a loopback port, and one worker of null executors joined to it. `tmp`: the
// test's own directory (the worker's log is worker.log there); serve's log is serve_log.
struct one_worker_cluster {
  std::string tmp, join, serve_log;
  server serve;
  pid_t worker = -1;
  std::string worker_log() const { return tmp + "/worker.log"; }
};

// Starts it: `worker` the worker's --name, `slots` its executors, `more_serve` / `more_worker`
// more arguments. `worker` stays -1 where serve did not start or the worker's last executor did
// not join within 30 s (the test then fails on it with the logs).
one_worker_cluster start_one_worker_cluster(const std::string& name, const std::string& worker, int slots = 1,
                                            const std::vector<std::string>& more_serve = {},
                                            const std::vector<std::string>& more_worker = {}) {
  one_worker_cluster c;
  c.tmp = fs::temp_directory_path().string() + "/kgym-" + name + "-" + std::to_string(::getpid());
  fs::remove_all(c.tmp);
  fs::create_directories(c.tmp);
  c.join = "127.0.0.1:" + std::to_string(free_port());
  std::vector<std::string> serve_args{"--executors", "0", "--listen", c.join};
  serve_args.insert(serve_args.end(), more_serve.begin(), more_serve.end());
  c.serve = start_server(name, serve_args);
  c.serve_log = fs::temp_directory_path().string() + "/kgym-serve-" + name + ".log";
  if (c.serve.endpoint.empty())
    return c;
  std::vector<std::string> worker_args{"worker", "--join", c.join, "--null-executor", "--name", worker,
                                       "--cpu-slots", std::to_string(slots)};
  worker_args.insert(worker_args.end(), more_worker.begin(), more_worker.end());
  const pid_t pid = start_kgym(worker_args, c.worker_log());
  if (wait_for_count(c.serve_log, worker + "#null" + std::to_string(slots - 1) + " joins", 1, 30s) == 1)
    c.worker = pid;
  return c;
}

// A loopback TCP connection to `port` (-1 if refused).
int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the peer closed `fd` within `timeout` (whatever it sent before is read and dropped).
bool closed_within(int fd, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (auto now = std::chrono::steady_clock::now(); now < until; now = std::chrono::steady_clock::now()) {
    pollfd p{fd, POLLIN, 0};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(wait + 1, 50))) > 0) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
        return true;
    }
  }
  return false;
}

// A TLS connection to the worker port on loopback with a node's credentials (DIR/node.pem,
// node.key): a member of the cluster speaking raw bytes. `handshaken`: TLS completed.
struct tls_member {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = nullptr;
  int fd = -1;
  bool handshaken = false;
  tls_member(uint16_t port, const std::string& dir) {
    if (SSL_CTX_use_certificate_file(ctx, (dir + "/node.pem").c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, (dir + "/node.key").c_str(), SSL_FILETYPE_PEM) != 1)
      return;
    fd = connect_to(port);
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    handshaken = SSL_connect(ssl) == 1;
  }
  ~tls_member() {
    SSL_free(ssl);
    if (fd >= 0)
      ::close(fd);
    SSL_CTX_free(ctx);
  }
};

// Resident memory of a process, in MiB.
long resident_mib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6)) / 1024;
  return -1;
}

// On loopback without any setup the worker port is TLS all the same (cli/loopback_credentials.hpp):
// kgym serve makes a CA of this user's own in a private directory, a worker joins under a
// certificate of it and evaluates; a plain middleman client cannot reach the gate and a
// connection that never starts TLS is closed by the handshake deadline (before, on plain
// loopback, both stayed); a worker that finds no CA says to start kgym serve first.
TEST(Cluster, OnLoopbackWithoutSetupOnlyThisUsersWorkersJoin) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-loopback-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  const char* saved_runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = saved_runtime ? saved_runtime : "";
  ::setenv("XDG_RUNTIME_DIR", tmp.c_str(), 1);  // this test's own CA, for it and its processes
  pid_t early = start_kgym({"worker", "--join", "127.0.0.1:9", "--name", "early", "--rejoin-for", "0"},
                           tmp + "/early.log");
  EXPECT_NE(wait_exit(early), 0);
  EXPECT_NE(read_all(tmp + "/early.log").find("start kgym serve --listen"), std::string::npos)
      << read_all(tmp + "/early.log");
  ::setenv("KGYM_TLS_HANDSHAKE_S", "2", 1);
  server s = start_server("loopback", {"--executors", "0", "--listen", "127.0.0.1:0", "--listen-file", tmp + "/port"});
  ::unsetenv("KGYM_TLS_HANDSHAKE_S");
  ASSERT_FALSE(s.endpoint.empty());
  const auto port = static_cast<uint16_t>(std::stoi(wait_for_line(tmp + "/port")));
  struct stat root {};
  ASSERT_EQ(::lstat((tmp + "/kgym-cluster").c_str(), &root), 0);
  EXPECT_EQ(root.st_mode & 0777, 0700u) << "the loopback CA's directory is open to others";
  pid_t worker = start_kgym({"worker", "--join", "127.0.0.1:" + std::to_string(port), "--name", "local"},
                            tmp + "/worker.log");
  const std::string serve_log = fs::temp_directory_path().string() + "/kgym-serve-loopback.log";
  ASSERT_EQ(wait_for_count(serve_log, "local#cpu0 joins", 1, 30s), 1) << read_all(serve_log) << read_all(tmp + "/worker.log");
  {
    caf::actor_system_config cfg;
    cli::configure_cluster(cfg);
    caf::actor_system plain{cfg};
    EXPECT_FALSE(plain.middleman().remote_actor<worker_gate_actor>("127.0.0.1", port))
        << "a plain middleman client reached the worker gate";
  }
  const int idle = connect_to(port);
  EXPECT_TRUE(closed_within(idle, 4s)) << "a connection that never started TLS outlived the handshake deadline";
  ::close(idle);
  client c(s.endpoint);
  c.send(request("on-loopback", "gelu_scale_residual", "fused"));
  EvalResult r = c.receive(120s);
  EXPECT_EQ(Verdict_Name(r.result().verdict()), "OK") << r.error() << r.result().message();
  EXPECT_EQ(r.result().executor(), "local#cpu0");
  EXPECT_EQ(stop_process(worker), 0);
  EXPECT_EQ(stop_process(s.pid), 0);
  if (saved_runtime)
    ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  else
    ::unsetenv("XDG_RUNTIME_DIR");
  fs::remove_all(tmp);
}

// The worker port's bounds (tls_guard.hpp): a connection that does not finish its TLS handshake
// within the deadline is closed, and so is one beyond the pending handshakes' limit; a member
// of the cluster whose BASP header announces 0xF0000000 bytes is cut off before the server
// allocates them; the joined member keeps evaluating through all of it.
TEST(Cluster, TheWorkerPortBoundsHandshakesAndMessages) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-bounds-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  const std::string certs = tmp + "/certs";
  ASSERT_EQ(make_cluster_certs(certs, {"serve", "w1", "w2"}, tmp + "/certs.log"), 0);
  ::setenv("KGYM_TLS_HANDSHAKE_S", "2", 1);
  server s = start_server("bounds", {"--executors", "0", "--listen", "127.0.0.1:0", "--listen-file", tmp + "/port",
                                     "--cluster-certs", certs + "/serve"});
  ::unsetenv("KGYM_TLS_HANDSHAKE_S");
  ASSERT_FALSE(s.endpoint.empty());
  const auto port = static_cast<uint16_t>(std::stoi(wait_for_line(tmp + "/port")));
  pid_t member = start_kgym({"worker", "--join", "127.0.0.1:" + std::to_string(port), "--cluster-certs",
                             certs + "/w1"},
                            tmp + "/member.log");
  const std::string serve_log = fs::temp_directory_path().string() + "/kgym-serve-bounds.log";
  ASSERT_EQ(wait_for_count(serve_log, "w1#cpu0 joins", 1, 30s), 1) << read_all(serve_log);

  // 70 connections that never start TLS: those beyond 64 pending go at once, the rest by the deadline.
  std::vector<int> idle;
  for (int i = 0; i < 70; ++i)
    idle.push_back(connect_to(port));
  std::this_thread::sleep_for(500ms);
  int closed_early = 0;
  for (int fd : idle)
    closed_early += closed_within(fd, 10ms);
  EXPECT_GE(closed_early, 6) << "connections beyond the pending limit stayed open";
  EXPECT_LE(closed_early, 20) << "pending handshakes closed before their deadline";
  int closed_late = 0;
  for (int fd : idle)
    closed_late += closed_within(fd, 4s);
  EXPECT_EQ(closed_late, 70) << "connections without a TLS handshake outlived its deadline";
  for (int fd : idle)
    ::close(fd);

  // A member of the cluster (w2's credentials) that finishes TLS and then says nothing is closed too.
  {
    tls_member quiet(port, certs + "/w2");
    ASSERT_TRUE(quiet.handshaken);
    EXPECT_TRUE(closed_within(quiet.fd, 4s)) << "a member that never sent its BASP handshake stayed connected";
  }
  // A member of the cluster (w2's credentials) announces a 3.75 GB message.
  const long before = resident_mib(s.pid);
  {
    tls_member announcer(port, certs + "/w2");
    ASSERT_TRUE(announcer.handshaken) << "a member's TLS handshake failed";
    unsigned char header[32] = {1, 0, 0, 0, 0xF0, 0, 0, 0};  // client_handshake, payload 0xF0000000 bytes
    ASSERT_EQ(SSL_write(announcer.ssl, header, sizeof header), 32);
    bool cut_off = false;
    char buf[4096];
    for (int i = 0; i < 100 && !cut_off; ++i) {  // its server handshake comes first, then the end
      pollfd p{announcer.fd, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0)
        cut_off = SSL_read(announcer.ssl, buf, sizeof buf) <= 0 &&
                  SSL_get_error(announcer.ssl, 0) != SSL_ERROR_WANT_READ;
    }
    EXPECT_TRUE(cut_off) << "the connection stayed open after an oversized header";
    std::this_thread::sleep_for(500ms);
    EXPECT_LT(resident_mib(s.pid) - before, 256) << "kgym serve grew from " << before << " MiB";
  }
  EXPECT_NE(read_all(serve_log).find("a BASP header announced 4026531840 bytes"), std::string::npos)
      << read_all(serve_log);

  client c(s.endpoint);
  c.send(request("after-the-attacks", "gelu_scale_residual", "fused"));
  EvalResult r = c.receive(120s);
  EXPECT_EQ(Verdict_Name(r.result().verdict()), "OK") << r.error() << r.result().message();
  EXPECT_EQ(r.result().executor(), "w1#cpu0");
  EXPECT_EQ(stop_process(member), 0);
  EXPECT_EQ(stop_process(s.pid), 0);
  fs::remove_all(tmp);
}

// The cluster on simulated hosts (tests/cluster_hosts.sh: network namespaces on one bridge):
// kgym serve on 10.77.0.1 with TLS, a member worker on 10.77.0.2, an outsider on 10.77.0.3 with
// no credentials and then another CA's; the client on the bridge over HTTP with the API secret.
// The outsider gets nothing; the member's link is pulled past the heartbeat timeout while it
// evaluates, then mended: it rejoins by itself and every request is answered right, by it.
TEST(Cluster, OnSimulatedHostsOnlyTheMemberWorksAndSurvivesAPulledLink) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-hosts-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  const std::string net = "kg" + std::to_string(::getpid() % 100000);
  const std::string hosts = source_path("tests/cluster_hosts.sh");
  // The namespaces go whatever happens (an ASSERT returning early too): a bridge left behind
  // holds 10.77.0.254 and the next run's hosts cannot be reached.
  struct hosts_down {
    std::string script, net;
    ~hosts_down() { wait_exit(start_program({"bash", script, "down", net})); }
  } down{hosts, net};
  if (wait_exit(start_program({"bash", hosts, "up", net}, tmp + "/hosts.log")) != 0)
    GTEST_SKIP() << "no network namespaces here (needs root and veth): " << read_all(tmp + "/hosts.log");
  const std::string certs = tmp + "/certs", other_ca = tmp + "/other";
  ASSERT_EQ(make_cluster_certs(certs, {"serve", "w1"}), 0);
  ASSERT_EQ(make_cluster_certs(other_ca, {"w1"}), 0);
  auto on = [&](const std::string& host, std::vector<std::string> args) {
    args.insert(args.begin(), {"ip", "netns", "exec", net + "-" + host, kgym_binary()});
    return args;
  };
  ::setenv("KGYM_API_SECRET", "hosts-secret", 1);
  pid_t serve = start_program(on("serve", {"serve", "--executors", "0", "--eval-cache", "--listen", "10.77.0.1:7000",
                                           "--cluster-certs", certs + "/serve", "--http", "10.77.0.1:8080"}),
                              tmp + "/serve.log");
  ::unsetenv("KGYM_API_SECRET");
  ASSERT_GE(wait_for_count(tmp + "/serve.log", "workers join at", 1, 30s), 1) << read_all(tmp + "/serve.log");
  pid_t member = start_program(on("w1", {"worker", "--join", "10.77.0.1:7000", "--cluster-certs", certs + "/w1",
                                         "--rejoin-for", "120"}),
                               tmp + "/w1.log");
  ASSERT_EQ(wait_for_count(tmp + "/serve.log", "w1#cpu0 joins", 1, 30s), 1) << read_all(tmp + "/serve.log");
  pid_t plain = start_program(on("outsider", {"worker", "--join", "10.77.0.1:7000", "--name", "plain"}),
                              tmp + "/plain.log");
  pid_t foreign = start_program(on("outsider", {"worker", "--join", "10.77.0.1:7000", "--cluster-certs",
                                                other_ca + "/w1", "--rejoin-for", "0"}),
                                tmp + "/foreign.log");
  EXPECT_NE(wait_exit(plain), 0) << read_all(tmp + "/plain.log");
  EXPECT_NE(wait_exit(foreign), 0) << read_all(tmp + "/foreign.log");

  const std::string auth = "Authorization: Bearer hosts-secret\r\n";
  EXPECT_EQ(http_call(8080, "POST", "/v1/evaluations", "{}", "", "10.77.0.1").status, 401);
  EvalBatch batch;
  std::map<std::string, Verdict> expected;
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"gelu_scale_residual", "fused"}, {"softmax_rows", "wrong"}, {"rmsnorm_rows", "fused"}, {"mse_loss", "fused"}};
  for (int i = 0; i < 20; ++i) {
    const auto& [task, candidate] = programs[i % programs.size()];
    const std::string id = "h" + std::to_string(i) + "-" + task + "-" + candidate;
    *batch.add_requests() = request(id, task, candidate);
    expected[id] = expected_verdict(candidate);
  }
  ASSERT_EQ(http_call(8080, "POST", "/v1/evaluations", to_json(batch), auth, "10.77.0.1").status, 202);
  wait_exit(start_program({"bash", hosts, "cut", net, "w1"}));
  EXPECT_EQ(wait_for_count(tmp + "/serve.log", "w1#cpu0 lost", 1, 20s), 1) << read_all(tmp + "/serve.log");
  wait_exit(start_program({"bash", hosts, "mend", net, "w1"}));
  EXPECT_GE(wait_for_count(tmp + "/serve.log", "w1#cpu0 joins", 2, 60s), 2) << read_all(tmp + "/w1.log");
  for (const auto& [id, verdict] : expected) {
    http_reply done = http_call(8080, "GET", "/v1/evaluations/" + id + "?wait=120", "", auth, "10.77.0.1");
    ASSERT_EQ(done.status, 200) << id << ": " << done.body;
    EvalResult r;
    ASSERT_EQ(from_json(done.body, &r), "") << done.body;
    EXPECT_EQ(Verdict_Name(r.result().verdict()), Verdict_Name(verdict)) << id;
    EXPECT_EQ(r.result().executor(), "w1#cpu0") << id;
  }
  const std::string serve_log = read_all(tmp + "/serve.log");
  EXPECT_EQ(serve_log.find("plain#"), std::string::npos) << serve_log;
  for (const auto& [id, verdict] : expected) {  // where each came from and where it ran
    const std::string line = evaluation_line(serve_log, id);
    EXPECT_EQ(line.rfind("request " + id + " from http 10.77.0.254:", 0), 0u) << id << ": " << line;
    EXPECT_NE(line.find(": " + Verdict_Name(verdict) + " on w1#cpu0"), std::string::npos) << line;
  }
  EXPECT_EQ(stop_process(member), 0);
  EXPECT_EQ(stop_process(serve), 0);
  fs::remove_all(tmp);
}

// Workers come back: after the server is SIGKILLed and started again on the same port, and
// after the worker was stopped past the heartbeat timeout, it rejoins by itself and gets
// work; no person restarts it.
TEST(Cluster, AWorkerRejoinsAfterARestartAndAPause) {
  one_worker_cluster first = start_one_worker_cluster("rejoin1", "back", 1, {}, {"--rejoin-for", "60"});
  ASSERT_NE(first.worker, -1) << read_all(first.serve_log) << read_all(first.worker_log());
  {
    client c(first.serve.endpoint);
    c.send(request("before", "gelu_scale_residual", "fused"));
    EXPECT_EQ(c.receive(30s).result().executor(), "back#null0");
  }
  ::kill(first.serve.pid, SIGKILL);
  wait_exit(first.serve.pid);
  server second = start_server("rejoin2", {"--executors", "0", "--listen", first.join});
  ASSERT_FALSE(second.endpoint.empty());
  const std::string log2 = fs::temp_directory_path().string() + "/kgym-serve-rejoin2.log";
  EXPECT_EQ(wait_for_count(log2, "back#null0 joins", 1, 30s), 1) << read_all(first.worker_log());
  client c(second.endpoint);
  c.send(request("after-restart", "gelu_scale_residual", "fused"));
  EXPECT_EQ(c.receive(30s).result().executor(), "back#null0");

  ::kill(first.worker, SIGSTOP);
  EXPECT_EQ(wait_for_count(log2, "back#null0 lost", 1, 20s), 1) << read_all(log2);
  ::kill(first.worker, SIGCONT);
  EXPECT_EQ(wait_for_count(log2, "back#null0 joins", 2, 30s), 2) << read_all(first.worker_log());
  c.send(request("after-pause", "gelu_scale_residual", "fused"));
  EXPECT_EQ(c.receive(30s).result().executor(), "back#null0");
  EXPECT_EQ(stop_process(first.worker), 0) << read_all(first.worker_log());
  EXPECT_EQ(stop_process(second.pid), 0);
  fs::remove_all(first.tmp);
}

// A server restart with 200 requests in flight, two workers evaluating them: the restarted
// server (same --state-dir and ports) answers all 200, each with its right verdict, without any
// client re-sending; the workers rejoin by themselves. The client only polls over HTTP.
TEST(Cluster, ARestartWithTwoHundredInFlightAnswersAll) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-restart-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string join = "127.0.0.1:" + std::to_string(free_port());
  const std::string http = "127.0.0.1:" + std::to_string(free_port());
  const int http_port = std::stoi(http.substr(http.find(':') + 1));
  const std::vector<std::string> serve_args = {"--executors", "0", "--eval-cache", "--listen", join,
                                               "--http", http, "--state-dir", tmp + "/state"};
  server first = start_server("restart1", serve_args);
  ASSERT_FALSE(first.endpoint.empty());
  std::vector<pid_t> workers;
  for (const std::string name : {"r1", "r2"})
    workers.push_back(start_kgym({"worker", "--join", join, "--name", name, "--rejoin-for", "120"},
                                 tmp + "/" + name + ".log"));
  const std::string log1 = fs::temp_directory_path().string() + "/kgym-serve-restart1.log";
  ASSERT_EQ(wait_for_count(log1, "#cpu0 joins", 2, 30s), 2) << read_all(log1);

  std::vector<std::pair<std::string, std::string>> programs;  // (task, candidate)
  for (const std::string task : {"gelu_scale_residual", "softmax_rows", "rmsnorm_rows", "mse_loss"})
    for (const auto& path : find_candidates(source_path("tasks/" + task)))
      programs.emplace_back(task, fs::path(path).stem().string());
  EvalBatch batch;
  std::map<std::string, Verdict> expected;
  for (int i = 0; i < 200; ++i) {
    const auto& [task, candidate] = programs[i % programs.size()];
    const std::string id = "f" + std::to_string(i) + "-" + task + "-" + candidate;
    *batch.add_requests() = request(id, task, candidate);
    expected[id] = expected_verdict(candidate);
  }
  http_reply submitted = http_call(http_port, "POST", "/v1/evaluations", to_json(batch));
  ASSERT_EQ(submitted.status, 202) << submitted.body;
  // Some answered, most still in flight: the server dies.
  ASSERT_EQ(http_call(http_port, "GET", "/v1/evaluations/" + batch.requests(0).request_id() + "?wait=120").status,
            200);
  ::kill(first.pid, SIGKILL);
  wait_exit(first.pid);

  server second = start_server("restart2", serve_args);
  ASSERT_FALSE(second.endpoint.empty());
  const std::string log2 = fs::temp_directory_path().string() + "/kgym-serve-restart2.log";
  std::map<std::string, int> by_worker;
  for (const auto& [id, verdict] : expected) {
    http_reply done = http_call(http_port, "GET", "/v1/evaluations/" + id + "?wait=300");
    ASSERT_EQ(done.status, 200) << id << ": " << done.body << "\n" << read_all(log2);
    EvalResult r;
    ASSERT_EQ(from_json(done.body, &r), "") << done.body;
    EXPECT_EQ(Verdict_Name(r.result().verdict()), Verdict_Name(verdict)) << id << ": " << r.result().message();
    ++by_worker[r.result().executor().substr(0, 2)];
  }
  const std::string restarted = read_all(log2);
  EXPECT_NE(restarted.find("unfinished requests evaluated again"), std::string::npos) << restarted;
  EXPECT_EQ(restarted.find(" kept, 0 unfinished"), std::string::npos) << "nothing was in flight: " << restarted;
  EXPECT_GT(by_worker["r1"] + by_worker["r2"], 0);
  EXPECT_GE(wait_for_count(log2, "#cpu0 joins", 2, 1s), 2) << "the workers did not rejoin";
  for (pid_t w : workers)
    EXPECT_EQ(stop_process(w), 0);
  EXPECT_EQ(stop_process(second.pid), 0);
  fs::remove_all(tmp);
}

// Clear failures: a port that cannot be bound ends kgym serve at once, naming it; SIGTERM with
// work queued and no executor to run it answers that work with an error after the drain
// limit and exits.
TEST(Cluster, ServeFailsClearlyAndStopsWithWorkQueued) {
  std::string tmp = fs::temp_directory_path().string() + "/kgym-stop-" + std::to_string(::getpid());
  fs::create_directories(tmp);
  const std::string listen = "127.0.0.1:" + std::to_string(free_port());
  server s = start_server("stop", {"--executors", "0", "--listen", listen, "--drain-timeout", "2"});
  ASSERT_FALSE(s.endpoint.empty());
  const auto started = std::chrono::steady_clock::now();
  pid_t same_api = start_kgym({"serve", "--executors", "0", "--api", s.endpoint}, tmp + "/api.log");
  EXPECT_NE(wait_exit(same_api), 0);
  EXPECT_NE(read_all(tmp + "/api.log").find("cannot bind the API to " + s.endpoint), std::string::npos)
      << read_all(tmp + "/api.log");
  pid_t same_listen =
      start_kgym({"serve", "--executors", "1", "--api", "tcp://127.0.0.1:*", "--listen", listen}, tmp + "/listen.log");
  EXPECT_NE(wait_exit(same_listen), 0);
  EXPECT_NE(read_all(tmp + "/listen.log").find("cannot listen for workers on " + listen), std::string::npos)
      << read_all(tmp + "/listen.log");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 20);

  client c(s.endpoint);
  c.send(request("queued", "gelu_scale_residual", "fused"));  // no executor anywhere
  std::this_thread::sleep_for(300ms);
  ::kill(s.pid, SIGTERM);
  EvalResult r = c.receive(20s);
  EXPECT_EQ(r.request_id(), "queued");
  EXPECT_NE(r.error().find("stopped before this evaluation finished"), std::string::npos) << r.error();
  EXPECT_EQ(wait_exit(s.pid), 0);
  fs::remove_all(tmp);
}

// Stopping a deployment while a worker's link is busy: 5,000 requests sent to a server whose one
// worker has eight null executors, then serve and the worker SIGTERMed together mid-stream. serve
// stops within its drain limit (and a margin), exits 0, and the client gets an answer for every
// request, evaluated or "stopped before this evaluation finished"; the worker exits too. (Once, a
// serve stopped this way waited in the actor system's teardown for an actor that never ended.)
// 5000 requests sent at once, serve (and, with `stop_worker`, its worker) stopped once 200 are
// answered, and the client reading nothing for a second: every request gets an answer, a
// refusal or a "stopped" error.
void stop_mid_stream(const std::string& name, bool stop_worker) {
  one_worker_cluster cluster = start_one_worker_cluster(name, "busy", 8, {"--drain-timeout", "5"});
  ASSERT_NE(cluster.worker, -1) << read_all(cluster.serve_log) << read_all(cluster.worker_log());
  client c(cluster.serve.endpoint);
  const int sent = 5000;
  for (int i = 0; i < sent; ++i)
    c.send(request("b" + std::to_string(i), "gelu_scale_residual", "fused"));
  int answered = 0, stopped = 0, refused = 0;
  while (answered < 200 && c.message_within(10s)) {  // the link is busy: answers are flowing
    c.receive(1s);
    ++answered;
  }
  ASSERT_EQ(answered, 200) << read_all(cluster.serve_log);
  if (stop_worker)
    ::kill(cluster.worker, SIGTERM);
  ::kill(cluster.serve.pid, SIGTERM);
  // The client reads nothing for a second: its queue at serve (1,000) fills while serve stops,
  // and what did not fit must still reach it (held refusals, answers awaiting redelivery).
  std::this_thread::sleep_for(1s);
  while (answered < sent && c.message_within(20s)) {
    EvalResult r = c.receive(1s);
    ++answered;
    stopped += r.error().find("stopped before this evaluation finished") != std::string::npos;
    refused += r.error().find("shutting down") != std::string::npos;
  }
  EXPECT_EQ(answered, sent) << stopped << " stopped, " << refused << " refused\n" << read_all(cluster.serve_log);
  std::cout << answered << " answered, " << stopped << " of them stopped before they ran, " << refused
            << " refused\n";
  EXPECT_EQ(wait_exit_within(cluster.serve.pid, 30s), 0) << read_all(cluster.serve_log);
  if (!stop_worker)
    ::kill(cluster.worker, SIGTERM);
  // A worker stopped while it waits for serve to come back ends cleanly too.
  EXPECT_EQ(wait_exit_within(cluster.worker, 30s), 0) << read_all(cluster.worker_log());
  fs::remove_all(cluster.tmp);
}

TEST(Cluster, StoppingServeAndAWorkerMidStreamAnswersEveryRequest) {
  stop_mid_stream("busystop", true);
}

// The worker goes on, so serve's evaluations in flight end at once: serve must not stop while
// requests still wait in its socket (they are refused) or answers wait for their client.
TEST(Cluster, StoppingServeMidStreamAnswersEveryRequestSent) {
  stop_mid_stream("busystop2", false);
}

// Answers sent one at a time through a journaled server and a worker on loopback, as a client
// that waits for each answer sends them: nearly every answer is committed on the API service's
// own thread, with its request's record, and sent at once (here 275-294 of 300, 94-98%, on a
// 2-core VM, also beside two busy loops). When the records were handed to the
// journal's writer a millisecond after they came, the answer often found the writer still busy
// with its record and went the slow way, through the writer's thread and a message back (the
// twenty-first session counted 136 of 315 so; here 94-110 of 300); /v1/status counts both.
TEST(Cluster, AJournaledAnswerOneAtATimeIsCommittedOnTheWayOut) {
  const std::string http = "127.0.0.1:" + std::to_string(free_port());
  const std::string state = fs::temp_directory_path().string() + "/kgym-at-once-state-" + std::to_string(::getpid());
  fs::remove_all(state);
  one_worker_cluster cluster = start_one_worker_cluster("at-once", "quick", 1, {"--http", http, "--state-dir", state});
  ASSERT_NE(cluster.worker, -1) << read_all(cluster.serve_log) << read_all(cluster.worker_log());
  client c(cluster.serve.endpoint);
  const int sent = 300;
  for (int i = 0; i < sent; ++i) {
    c.send(request("one" + std::to_string(i), "gelu_scale_residual", "fused"));
    ASSERT_EQ(c.receive(30s).request_id(), "one" + std::to_string(i));
  }
  http_reply reply = http_call(std::stoi(http.substr(http.find(':') + 1)), "GET", "/v1/status");
  ASSERT_EQ(reply.status, 200) << reply.body;
  ServeStatus status;
  ASSERT_EQ(from_json(reply.body, &status), "") << reply.body;
  std::cout << status.answers_committed_at_once() << " answers committed at once, "
            << status.answers_committed_by_writer() << " by the writer\n";
  EXPECT_EQ(status.answers_committed_at_once() + status.answers_committed_by_writer(), sent);
  EXPECT_GE(status.answers_committed_at_once(), sent * 8 / 10) << status.answers_committed_by_writer()
                                                                << " went through the writer's thread";
  EXPECT_EQ(stop_process(cluster.worker), 0);
  EXPECT_EQ(stop_process(cluster.serve.pid), 0);
  // Each named a task of the suite, so each is journaled by its task id alone. (The comparison of
  // two serializations this replaced failed, for a task with cpu_sizes, whenever the copy's map
  // came out in another order: that build kept 175 of these 300 tasks whole.)
  int without_task = 0;
  for (const auto& e : request_journal(state).load())
    without_task += !e.request.has_task() && e.request.task_id() == "gelu_scale_residual";
  EXPECT_EQ(without_task, sent);
  fs::remove_all(cluster.tmp);
  fs::remove_all(state);
}

// A worker draining while its server goes away: the worker asks to leave (SIGTERM) while serve
// is paused, so no answer comes, then serve is killed. The worker notices the control plane is
// gone and exits 0 at once. (CI once saw a worker wait for ever on a leave that serve, stopping
// at the same moment, never answered.)
TEST(Cluster, AWorkerDrainingWhenServeDiesExits) {
  one_worker_cluster c = start_one_worker_cluster("drain-dies", "leaving", 2);
  ASSERT_NE(c.worker, -1) << read_all(c.serve_log) << read_all(c.worker_log());
  ::kill(c.serve.pid, SIGSTOP);
  ::kill(c.worker, SIGTERM);
  ASSERT_EQ(wait_for_count(c.worker_log(), "draining", 1, 10s), 1) << read_all(c.worker_log());
  std::this_thread::sleep_for(1s);
  ::kill(c.serve.pid, SIGKILL);
  wait_exit(c.serve.pid);
  EXPECT_EQ(wait_exit_within(c.worker, 15s), 0) << read_all(c.worker_log());
  EXPECT_NE(read_all(c.worker_log()).find("the control plane went away while draining"), std::string::npos)
      << read_all(c.worker_log());
  fs::remove_all(c.tmp);
}

}  // namespace
}  // namespace kgym::test
