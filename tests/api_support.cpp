#include "tests/api_support.hpp"

#include <httplib.h>

#include <sstream>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "messages/json.hpp"
#include "tests/test_support.hpp"

namespace kgym::test {

namespace fs = std::filesystem;

std::string kgym_binary() { return KGYM_BINARY; }

namespace {

// Every program a test starts. What still runs when the test ends (an ASSERT returned before
// its stop_process) is stopped then: kgym serve and worker have no parent-death signal, and
// one left behind outlived the test binary with its evaluations' prepared processes, whose
// memory a later test's count by the candidates' uid then charged to its candidate.
std::vector<pid_t>& started_programs() {
  static std::vector<pid_t> pids;
  return pids;
}

class stop_leftover_programs : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo&) override {
    for (pid_t pid : started_programs()) {
      if (::waitpid(pid, nullptr, WNOHANG) != 0)
        continue;  // it ended (collected now) or was collected by the test
      ::kill(pid, SIGTERM);
      for (int i = 0; i < 300 && ::waitpid(pid, nullptr, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (::waitpid(pid, nullptr, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    started_programs().clear();
  }
};

const bool leftovers_stopped_after_each_test = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new stop_leftover_programs);
  return true;
}();

}  // namespace

pid_t start_kgym(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> full = {KGYM_BINARY};
  full.insert(full.end(), args.begin(), args.end());
  return start_program(full, log);
}

pid_t start_program(std::vector<std::string> full, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!log.empty()) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (auto& arg : full)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  started_programs().push_back(pid);
  return pid;
}

std::string wait_for_line(const std::string& path, std::chrono::seconds timeout) {
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (line.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream(path) >> line;
  }
  return line;
}

server start_server(const std::string& name, const std::vector<std::string>& extra, const char* secret) {
  std::string file = (fs::temp_directory_path() / ("kgym-serve-" + std::to_string(::getpid()) + "-" + name)).string();
  fs::remove(file);
  std::vector<std::string> args = {"serve", "--api", "tcp://127.0.0.1:*", "--endpoint-file", file};
  args.insert(args.end(), extra.begin(), extra.end());
  if (secret)
    ::setenv("KGYM_API_SECRET", secret, 1);
  else
    ::unsetenv("KGYM_API_SECRET");
  server s;
  s.pid = start_kgym(args, (fs::temp_directory_path() / ("kgym-serve-" + name + ".log")).string());
  ::unsetenv("KGYM_API_SECRET");
  s.endpoint = wait_for_line(file);
  return s;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int wait_exit_within(pid_t pid, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int stop_process(pid_t pid) {
  ::kill(pid, SIGTERM);
  return wait_exit(pid);
}

client::client(const std::string& endpoint, const std::string& routing_id)
    : socket_(context_, zmq::socket_type::dealer) {
  socket_.set(zmq::sockopt::linger, 0);
  if (!routing_id.empty())
    socket_.set(zmq::sockopt::routing_id, routing_id);
  socket_.connect(endpoint);
}

void client::send(const std::string& frame) { socket_.send(zmq::buffer(frame), zmq::send_flags::none); }

void client::send(const EvalRequest& r, bool json) { send(json ? to_json(r) : r.SerializeAsString()); }

bool client::message_within(std::chrono::milliseconds wait) {
  zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
  zmq::poll(items, 1, wait);
  return (items[0].revents & ZMQ_POLLIN) != 0;
}

EvalResult client::receive(std::chrono::seconds timeout) {
  zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
  zmq::poll(items, 1, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  EvalResult r;
  if (!(items[0].revents & ZMQ_POLLIN)) {
    ADD_FAILURE() << "no answer within " << timeout.count() << " s";
    r.set_error("timeout");
    return r;
  }
  zmq::message_t message;
  (void)socket_.recv(message);
  std::string frame = message.to_string();
  if (!frame.empty() && frame[0] == '{')
    EXPECT_EQ(from_json(frame, &r), "") << frame;
  else
    EXPECT_TRUE(r.ParseFromString(frame));
  return r;
}

http_reply http_call(int port, const std::string& method, const std::string& target, const std::string& body,
                     const std::string& extra_headers, const std::string& host) {
  http_reply reply;
  httplib::Client client(host, port);
  client.set_read_timeout(std::chrono::seconds(700));  // past the longest long poll
  httplib::Request request;
  request.method = method;
  request.path = target;
  request.body = body;
  std::istringstream lines(extra_headers);  // "Name: value\r\n" each
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    const size_t colon = line.find(':');
    if (colon != std::string::npos)
      request.headers.emplace(line.substr(0, colon), line.substr(line.find_first_not_of(' ', colon + 1)));
  }
  if (!body.empty())
    request.headers.emplace("Content-Type", "application/json");
  auto result = client.send(request);
  if (!result)
    return reply;
  reply.status = result->status;
  reply.body = result->body;
  return reply;
}

EvalRequest request(const std::string& id, const std::string& task, const std::string& candidate) {
  EvalRequest r;
  r.set_request_id(id);
  r.set_task_id(task);
  r.set_candidate_source(read_text(source_path("tasks/" + task + "/candidates/" + candidate + ".py")));
  r.mutable_options()->set_correctness_trials(2);
  return r;
}

}  // namespace kgym::test
