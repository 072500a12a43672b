// kgym serve: the evaluation API for RL frameworks. A ZeroMQ ROUTER endpoint takes
// EvalRequest frames (protobuf bytes or their JSON mapping) and answers each with one
// EvalResult, evaluated by this process's executors through the scheduler actor.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "actors/gpu_executor.hpp"
#include "actors/scheduler.hpp"
#include "actors/worker_gate.hpp"
#include "cli/loopback_credentials.hpp"
#include "cli/tls_guard.hpp"
#include "cli/command_line.hpp"
#include "cli/cluster.hpp"
#include "cli/commands.hpp"
#include "cli/stop_signal.hpp"
#include "cli/web_view.hpp"
#include "cli/sandbox_options.hpp"
#include "messages/json.hpp"
#include "service/eval_api.hpp"
#include "service/http_front.hpp"
#include "pipeline/paths.hpp"
#include "service/journal_writer.hpp"
#include "service/request_journal.hpp"
#include "service/request_table.hpp"
#include "service/serve_metrics.hpp"
#include "pipeline/task_loader.hpp"
#include "web/serve_view.hpp"

namespace kgym::cli {

namespace {

command_line serve_command_line() {
  command_line c("serve", "[--api ENDPOINT] [--listen HOST:PORT] [--device cpu|cuda] [--executors N] [options]",
                 "Serves evaluations to RL frameworks (verl/OpenRLHF-style trainers using kgym as their reward\n"
                 "environment). A ZeroMQ ROUTER socket takes EvalRequest frames (messages/kgym.proto: protobuf\n"
                 "bytes, or its JSON mapping when the frame starts with '{') and answers each with one\n"
                 "EvalResult in the same encoding. A request names a task of the server's suite (task_id) or\n"
                 "carries one (task), plus the candidate's source. Refusals (bad frame, too large, unknown\n"
                 "task, missing fields, wrong secret) are EvalResults with `error` set; the server keeps\n"
                 "serving. A retried request_id gets the first answer (duplicate: true), never a second run.\n"
                 "Python client: deploy/client/kgym_client.py. SIGTERM/SIGINT: finish what is in flight, exit.\n"
                 "\n"
                 "The control plane (the scheduler) also takes executors from other nodes: with --listen,\n"
                 "`kgym worker --join HOST:PORT` adds a node's GPUs or CPU slots at any time; the scheduler\n"
                 "monitors them (heartbeats: a node silent for 5 s is dropped) and places again whatever a lost\n"
                 "one had in flight, so every request still gets exactly one answer.\n");
  c.text("api", "ENDPOINT", "ZeroMQ endpoint (default tcp://127.0.0.1:5555; tcp://127.0.0.1:* picks a port)")
      .text("endpoint-file", "FILE", "write the bound API endpoint there (useful with a picked port)")
      .text("http", "HOST:PORT", "also serve HTTP/JSON there (port 0 picks one): POST /v1/evaluations with an\n"
                                 "EvalRequest or {\"requests\": [...]} answers 202 with the accepted ids;\n"
                                 "GET /v1/evaluations/<id>[?wait=S] answers 200 with the EvalResult, or 202\n"
                                 "while pending (wait: long-poll up to S seconds); DELETE /v1/evaluations/<id>\n"
                                 "withdraws one: queued work is dropped, running work stopped, its answer\n"
                                 "is CANCELLED; secret: Authorization: Bearer.\n"
                                 "Also GET /v1/status (queue, executors, counts: ServeStatus), GET /metrics\n"
                                 "(Prometheus text: evaluations by verdict, queue depth, evaluation seconds)\n"
                                 "and GET /v1/health (no secret needed)")
      .text("http-file", "FILE", "write the HTTP port there")
      .text("web", "[HOST:]PORT", "a page for people: the queue, the executors and the latest answers,\n"
                                  "read-only (port 0 picks one); beyond loopback it needs $KGYM_WEB_SECRET\n"
                                  "(or --web-secret-env NAME), as kgym web does")
      .text("web-file", "FILE", "write the page's port there")
      .text("web-secret-env", "NAME", "the page's secret's environment variable (default KGYM_WEB_SECRET)")
      .section("cluster:")
      .text("listen", "HOST:PORT", "accept workers there (CAF middleman; port 0 picks one)")
      .text("listen-file", "FILE", "write the workers' port there")
      .whole("max-executors-per-worker", "N", "executors one worker node may join (default 64); joins beyond are refused")
      .text("cluster-certs", "DIR", "this node's cluster credentials (ca.pem, node.pem, node.key; default\n"
                                    "$KGYM_CLUSTER_CERTS): workers then connect over TLS and must show a\n"
                                    "certificate of the same CA. Required for --listen beyond loopback; make\n"
                                    "them with deploy/cluster_certs.sh (README: \"A cluster\"). On loopback\n"
                                    "without them, kgym makes a CA of this user's own (in\n"
                                    "$XDG_RUNTIME_DIR/kgym-cluster, else $TMPDIR/kgym-cluster-UID, mode 0700):\n"
                                    "TLS all the same, and only this user's workers can join")
      .flag("plain-loopback", "on loopback, the plain middleman instead (any local process can join:\n"
                              "only for measuring what TLS costs, bench/dispatch_bench.py --tls)")
      .text("secret-env", "NAME", "require EvalRequest.secret to equal $NAME (default KGYM_API_SECRET if set);\n"
                                  "binding beyond loopback without a secret is refused")
      .section("evaluation:")
      .choice<Device>("device", "where candidates run (default cpu)")
      .env("KGYM_DEVICE")
      .whole("executors", "N", "executors in this process (default 2 on cpu, 1 on cuda; 0: workers only)")
      .text("tasks-dir", "DIR", "the suite that task_id refers to (default: the built-in tasks)")
      .whole("max-request-bytes", "N", "larger requests are refused (default 4194304)")
      .flag("eval-cache", "answer an identical (task, program) from the first evaluation")
      .section("journal and memory:")
      .text("state-dir", "DIR", "journal accepted requests and their answers in DIR/journal.sqlite: a\n"
                                "restart with the same DIR evaluates the unfinished ones again (no client\n"
                                "re-send; a ZeroMQ client gets its answer when it reconnects under the same\n"
                                "routing id, as kgym_client.py does) and answers finished ones from it\n"
                                "(duplicate: true)")
      .whole("journal-keep", "S", "answers older than S seconds are forgotten, in memory and in the journal\n"
                                  "(default 86400); a later GET or re-send of their id finds nothing")
      .whole("journal-batch-ms", "MS", "accepted ZeroMQ requests are committed in batches at most MS old (default\n"
                                       "20; 0: every turn of the serve loop). A SIGKILL may lose the last MS of\n"
                                       "them (their clients wait and re-send); answers are always committed\n"
                                       "before a client gets them, HTTP submissions before their 202")
      .whole("max-answers", "N", "at most N answers are kept in memory, the oldest forgotten first (default 1000000)")
      .number("drain-timeout", "S", "on SIGTERM, how long evaluations in flight may still finish (default 120);\n"
                                    "then each one's client gets an error saying to send it again")
      .section("sandbox:")
      .flag("gpu-sizes", "on cpu, run tasks at their full (GPU) sizes, not their task.json cpu_sizes")
      .config_file();
  declare_sandbox_options(c);
  return c;
}

// Results come back on CAF threads; only the serving thread touches the socket. An eventfd
// wakes that thread's poll as soon as a result is queued.
struct finished_queue {
  std::mutex mutex;
  std::deque<std::pair<std::string, ExecResult>> items;  // (request_id, result)
  int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ~finished_queue() { ::close(wake_fd); }
  void push(std::string id, ExecResult r) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      items.emplace_back(std::move(id), std::move(r));
    }
    uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }
  std::deque<std::pair<std::string, ExecResult>> take() {
    uint64_t count;
    (void)!::read(wake_fd, &count, sizeof count);
    std::lock_guard<std::mutex> lock(mutex);
    return std::exchange(items, {});
  }
};

// Where the answer to the request in `frames` goes: its ROUTER routing frames (all but the last).
ReplyRoute route_of(const std::vector<zmq::message_t>& frames, bool json) {
  ReplyRoute route;
  for (size_t i = 0; i + 1 < frames.size(); ++i)
    route.add_frames(frames[i].to_string());
  route.set_json(json);
  return route;
}

// Where a ZeroMQ request came from, for the log: the peer's address where the transport
// has one, and the client's routing id (printable, or in hex).
std::string zmq_origin(std::vector<zmq::message_t>& frames) {
  std::string origin = "zmq";
  try {
    origin += std::string(" ") + frames.back().gets("Peer-Address");
  } catch (const zmq::error_t&) {  // ipc:// and inproc:// have no peer address
  }
  if (frames.size() < 2)
    return origin;
  const std::string id = frames.front().to_string().substr(0, 32);
  const bool printable = std::all_of(id.begin(), id.end(), [](unsigned char c) { return c > 32 && c < 127; });
  std::string shown;
  for (unsigned char c : id)
    shown += printable ? std::string(1, char(c)) : fmt::format("{:02x}", c);
  return origin + " id " + shown;
}

// Hands `result` to the client at `route`; false when it cannot take it now (not connected, as
// after a restart of either side, or its queue full): the socket is ROUTER_MANDATORY, and a send
// never blocks the serving thread.
bool reply(zmq::socket_t& socket, const ReplyRoute& route, const EvalResult& result) {
  try {
    for (const auto& frame : route.frames())
      if (!socket.send(zmq::buffer(frame), zmq::send_flags::sndmore | zmq::send_flags::dontwait))
        return false;
    return socket.send(zmq::buffer(encode_eval_result(result, route.json())), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t&) {  // EHOSTUNREACH: no such client connected now
    return false;
  }
}

// Binds `socket` to `endpoint`, or says which port could not be had and why.
void bind_or_explain(zmq::socket_t& socket, const std::string& endpoint, const std::string& what) {
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& error) {
    throw std::runtime_error("cannot bind " + what + " to " + endpoint + ": " + error.what() +
                             " (is another kgym serve running there?)");
  }
}

}  // namespace

int run_serve(const std::vector<std::string>& argv) {
  auto parsed = serve_command_line().parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  std::string endpoint = a.get("api", "tcp://127.0.0.1:5555");
  std::string secret_env = a.get("secret-env", "KGYM_API_SECRET");
  const char* secret_value = std::getenv(secret_env.c_str());
  std::string secret = secret_value ? secret_value : "";
  if (a.has("secret-env") && secret.empty())
    throw std::invalid_argument("--secret-env " + secret_env + ": that variable is not set");
  if (!is_loopback_endpoint(endpoint) && secret.empty())
    throw std::invalid_argument("refusing to serve the API on " + endpoint + " without a secret: set " + secret_env +
                                " (clients then send it in EvalRequest.secret), or use tcp://127.0.0.1");
  const Device device = a.has("device") ? choice<Device>(a, "device") : CPU;
  size_t max_bytes = static_cast<size_t>(a.whole("max-request-bytes", 4 << 20));
  std::map<std::string, Task> suite;
  for (const auto& path : find_tasks(a.get("tasks-dir", builtin_tasks_dir()))) {
    Task task = load_task(path);
    suite[task.id()] = task;
  }

  std::unique_ptr<request_journal> journal;
  if (a.has("state-dir"))
    journal = std::make_unique<request_journal>(
        a.get("state-dir"), request_journal::default_delivery_grace,
        std::chrono::milliseconds(a.whole("journal-batch-ms", request_journal::default_batch_window.count())));
  request_table::limits table_limits;
  table_limits.keep = std::chrono::seconds(a.whole("journal-keep", 86400));
  table_limits.max_answers = static_cast<size_t>(a.whole("max-answers", 1000000));
  // Every port is bound before any actor exists: one that is taken ends kgym serve at once.
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::router);
  socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(16 * max_bytes));  // a hard cap on memory
  socket.set(zmq::sockopt::linger, 1000);
  // A send to a client that is not connected fails instead of vanishing (reply() keeps it for
  // later), and a client that reconnects under its routing id takes over its old connection.
  socket.set(zmq::sockopt::router_mandatory, true);
  socket.set(zmq::sockopt::router_handover, true);
  bind_or_explain(socket, endpoint, "the API");
  std::string bound = socket.get(zmq::sockopt::last_endpoint);
  if (a.has("endpoint-file"))
    std::ofstream(a.get("endpoint-file")) << bound << "\n";

  // The HTTP/JSON endpoint (cpp-httplib's threads; the calls are answered by this thread).
  std::unique_ptr<http_front> http;
  if (a.has("http")) {
    auto [host, port] = parse_host_port(a.get("http"));
    if (!is_loopback_host(host) && secret.empty())
      throw std::invalid_argument("refusing to serve HTTP on " + a.get("http") + " without a secret: set " +
                                  secret_env + " (clients send it as Authorization: Bearer ...)");
    http = std::make_unique<http_front>(host, port, max_bytes);
    if (a.has("http-file"))
      std::ofstream(a.get("http-file")) << http->port() << "\n";
    spdlog::info("kgym serve: HTTP/JSON on {}:{}", host, http->port());
  }

  auto credentials = find_cluster_credentials(a.get("cluster-certs", ""));
  if (a.has("listen")) {
    const std::string listen_host = parse_host_port(a.get("listen")).first;
    require_credentials_beyond_loopback(listen_host, credentials);
    // On loopback without credentials, ones of this user's own (cli/loopback_credentials.hpp):
    // the worker port is TLS with its bounds there too, and only this user's workers join.
    if (!credentials.enabled() && !a.has("plain-loopback"))
      credentials = loopback_credentials("serve", /*make_ca=*/true);
  }
  const int max_per_worker = static_cast<int>(a.whole("max-executors-per-worker", default_max_executors_per_node));
  if (max_per_worker < 1)
    throw std::invalid_argument("--max-executors-per-worker must be at least 1");
  caf::actor_system_config cfg;
  configure_cluster(cfg, credentials);
  caf::actor_system system{cfg};
  executor_options exec = sandbox_options(a, device);
  std::vector<gpu_executor_actor> executors;
  int n_executors = static_cast<int>(a.whole("executors", device == CUDA ? 1 : 2));
  for (int i = 0; i < n_executors; ++i)
    executors.push_back(spawn_gpu_executor(system, exec));
  auto scheduler = spawn_scheduler(system, executors, scheduler_options{a.has("eval-cache"), {}});
  if (a.has("listen")) {
    auto [host, port] = parse_host_port(a.get("listen"));
    node_identity identity;  // over TLS: a worker joins under its certificate's name only
    if (credentials.enabled())
      identity = [](const caf::node_id& node) { return tls_peer_name(to_string(node)); };
    auto published = publish_to_workers(system, spawn_worker_gate(system, scheduler, max_per_worker, identity),
                                        host, port, credentials);
    if (!published) {
      for (const auto& executor : executors)
        caf::anon_send_exit(executor, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);  // so the actor system can end
      throw std::runtime_error("cannot listen for workers on " + a.get("listen") + ": " +
                               system.render(published.error()) + " (is the port taken?)");
    }
    if (a.has("listen-file"))
      std::ofstream(a.get("listen-file")) << *published << "\n";
    spdlog::info("kgym serve: workers join at {}:{}{}", host, *published,
                 credentials.enabled() ? " (TLS, certificates of the cluster's CA on both ends)" : "");
  }

  spdlog::info("kgym serve: {} executors on {}, {} tasks, listening on {}{}", n_executors, lower_name(device), suite.size(), bound,
               secret.empty() ? "" : " (secret required)");
  stop_on_signals();

  auto finished = std::make_shared<finished_queue>();
  request_table requests(table_limits);
  size_t served = 0, refused = 0;
  serve_metrics metrics;
  const auto started_at = std::chrono::steady_clock::now();
  caf::scoped_actor asking{system};
  // The request table's counts: with the scheduler's queue and executors in /v1/status and
  // /metrics, alone on the board of the page for people (--web).
  auto counts_now = [&]() {
    ServeStatus status;
    status.set_requests_in_flight(static_cast<int64_t>(requests.in_flight()));
    status.set_answers_kept(static_cast<int64_t>(requests.answers_kept()));
    status.set_awaiting_redelivery(static_cast<int64_t>(requests.waiting_redelivery()));
    status.set_answered(static_cast<int64_t>(served));
    status.set_refused(static_cast<int64_t>(refused));
    status.set_uptime_s(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at).count());
    return status;
  };
  auto status_now = [&]() {
    ServeStatus status = counts_now();
    asking->request(scheduler, std::chrono::seconds(2), status_atom::value)
        .receive([&](const SchedulerStatus& s) { *status.mutable_scheduler() = s; },
                 [&](const caf::error& e) { spdlog::warn("kgym serve: no status from the scheduler: {}",
                                                         system.render(e)); });
    return status;
  };

  // The page for people (--web): a board this loop keeps, the scheduler asked from its threads.
  auto board = std::make_shared<web::serve_board>();
  auto publish_counts = [&]() { board->set_counts(counts_now()); };
  std::unique_ptr<web::serve_view> web_page;
  if (a.has("web")) {
    auto options = web_listen_options(a.get("web"), a);
    web_page = std::make_unique<web::serve_view>(options, board, [&system, scheduler]() -> std::optional<SchedulerStatus> {
      std::optional<SchedulerStatus> status;
      caf::scoped_actor asker{system};
      asker->request(scheduler, std::chrono::seconds(2), status_atom::value)
          .receive([&](const SchedulerStatus& s) { status = s; }, [](const caf::error&) {});
      return status;
    });
    if (a.has("web-file"))
      std::ofstream(a.get("web-file")) << web_page->port() << "\n";
    spdlog::info("kgym serve: its page on http://{}:{}/", options.host, web_page->port());
  }

  // Every evaluation is logged with where it came from (here) and where it ran (when answered).
  auto start_evaluation = [&](const EvalRequest& request, const std::string& origin) {
    spdlog::info("request {} from {}: task {}", request.request_id(), origin, request.task_id());
    ExecRequest exec_request;
    exec_request.set_request_id(request.request_id());
    *exec_request.mutable_task() = request.task();
    exec_request.mutable_candidate()->set_id(request.request_id());
    exec_request.mutable_candidate()->set_source(request.candidate_source());
    exec_request.set_device(exec.launch.device);
    *exec_request.mutable_options() = request.options();
    exec_request.mutable_options()->set_apply_cpu_sizes(device == CPU && !a.has("gpu-sizes"));
    system.spawn([=](caf::event_based_actor* self) {
      self->request(scheduler, caf::infinite, exec_request)
          .then([=](const ExecResult& result) { finished->push(exec_request.request_id(), result); },
                [=](caf::error& error) {
                  ExecResult failed;
                  failed.set_verdict(INTERNAL_ERROR);
                  failed.set_message("the scheduler failed: " + self->system().render(error));
                  finished->push(exec_request.request_id(), failed);
                });
    });
  };
  // A task of the suite is journaled by its id only (the journal stays small); a restart
  // resolves it again. `route`: a ZeroMQ client's, so a restarted server answers it unasked.
  // The journal is its writer's (a thread of its own) once the restart below has read it.
  std::unique_ptr<journal_writer> writer;
  // Called once its evaluation started: the request is the journal's then (what the serve loop's
  // thread does per request is a move; the comparison with the suite is the writer's).
  auto journal_accepted = [&](EvalRequest&& request, const ReplyRoute* route) {
    if (!writer)
      return;
    auto in_suite = suite.find(request.task_id());
    writer->accepted(std::move(request), route ? std::optional<ReplyRoute>(*route) : std::nullopt,
                     in_suite == suite.end() ? nullptr : &in_suite->second);
  };
  // An answer for a ZeroMQ client; one it cannot take now is tried again (request_table).
  auto deliver = [&](const ReplyRoute& route, const EvalResult& answer) {
    if (reply(socket, route, answer))
      return true;
    requests.redeliver_later(route, answer, std::chrono::steady_clock::now());
    return false;
  };
  // `connection`: the http_front's id of the call (a string: the request table keeps it).
  auto http_send = [&](const std::string& connection, int status, const std::string& body,
                       const std::string& content_type = "application/json") {
    http->answer(std::stoull(connection), {status, body, content_type});
  };
  auto http_error = [&](const std::string& connection, int status, const std::string& message) {
    EvalResult error;
    error.set_error(message);
    http_send(connection, status, to_json(error));
  };
  // Withdraws request `id` (DELETE, or an EvalRequest with withdraw set): 202 when the
  // scheduler answered it CANCELLED; else the HTTP status and why not.
  auto withdraw = [&](const std::string& id) -> std::pair<int, std::string> {
    if (!requests.known(id))
      return {404, "unknown request id '" + id + "': nothing to withdraw"};
    if (requests.answer_of(id))
      return {409, "request '" + id + "' is answered already: nothing to withdraw"};
    bool withdrawn = false;
    asking->request(scheduler, std::chrono::seconds(2), cancel_atom::value, id)
        .receive([&](bool found) { withdrawn = found; },
                 [&](const caf::error& e) { spdlog::warn("kgym serve: cancel of {}: {}", id, system.render(e)); });
    if (!withdrawn)
      return {409, "request '" + id + "' is no longer waiting to be evaluated: its answer is on its way"};
    spdlog::info("request {} withdrawn by its client", id);
    return {202, ""};
  };
  auto handle_http = [&](const std::string& connection, const http_request& r) {
    if (r.path == "/v1/health" && r.method == "GET") {  // for load balancers: no secret, no details
      ServeHealth health;
      health.set_ok(true);
      health.set_executors(status_now().scheduler().executors_size());
      return http_send(connection, 200, to_json(health));
    }
    if (!secret.empty() && r.headers.count("authorization") == 0)
      return http_error(connection, 401, "this server requires a secret: send Authorization: Bearer <secret>");
    if (!secret.empty() && !secrets_equal(r.headers.at("authorization"), "Bearer " + secret))
      return http_error(connection, 401, "wrong secret: the request is refused");
    if (r.path == "/v1/status" && r.method == "GET")
      return http_send(connection, 200, to_json(status_now()));
    if (r.path == "/metrics" && r.method == "GET")
      return http_send(connection, 200, metrics.prometheus_text(status_now()), "text/plain; version=0.0.4");
    const std::string prefix = "/v1/evaluations";
    if (r.path == prefix && r.method == "POST") {
      EvalBatch batch;
      if (!from_json(r.body, &batch).empty()) {
        batch.Clear();
        std::string error = from_json(r.body, batch.add_requests());
        if (!error.empty())
          return http_error(connection, 400, "the body is neither an EvalRequest nor an EvalBatch: " + error);
      }
      EvalSubmitted submitted;
      for (auto& request : *batch.mutable_requests()) {
        request.set_secret(secret);  // the header carried it
        std::string error = stop_requested ? "the server is shutting down: send the request to another server"
                                           : check_eval_request(&request, suite, secret);
        if (!error.empty()) {
          auto* refusal = submitted.add_refused();
          refusal->set_request_id(request.request_id());
          refusal->set_error(error);
          ++refused;
          continue;
        }
        submitted.add_accepted(request.request_id());
        if (requests.submit_http(request.request_id()) != request_table::seen::new_request)
          continue;  // a retry: the first submission answers it
        start_evaluation(request, "http " + r.peer);
        journal_accepted(std::move(request), nullptr);
      }
      if (writer)
        writer->commit_synced();  // on disk before it is acknowledged
      return http_send(connection, 202, to_json(submitted));
    }
    if (r.path.rfind(prefix + "/", 0) == 0 && r.method == "GET") {
      std::string id = r.path.substr(prefix.size() + 1);
      if (!requests.known(id))
        return http_error(connection, 404,
                          "unknown request id '" + id + "': never submitted here, or answered more than " +
                              std::to_string(table_limits.keep.count()) + " s or " +
                              std::to_string(table_limits.max_answers) + " answers ago and forgotten (" +
                              "--journal-keep, --max-answers); submit it with POST " + prefix);
      if (const EvalResult* answer = requests.answer_of(id))
        return http_send(connection, 200, to_json(*answer));
      double wait = r.query.count("wait") ? std::atof(r.query.at("wait").c_str()) : 0.0;
      if (wait > 0)
        return requests.long_poll(id, connection,
                                  std::chrono::steady_clock::now() +
                                      std::chrono::milliseconds(static_cast<int>(1000 * std::min(wait, 600.0))));
      return http_send(connection, 202, pending_json(id));
    }
    if (r.path.rfind(prefix + "/", 0) == 0 && r.method == "DELETE") {  // withdraw (cancel) it
      const std::string id = r.path.substr(prefix.size() + 1);
      const auto [status, why] = withdraw(id);
      if (status != 202)
        return http_error(connection, status, why);
      return http_send(connection, 202, pending_json(id));  // its answer, CANCELLED, follows at once
    }
    if (r.path == prefix || r.path.rfind(prefix + "/", 0) == 0)
      return http_error(connection, 405, "use POST " + prefix + ", GET " + prefix + "/<request_id>[?wait=S] or DELETE " +
                                             prefix + "/<request_id>");
    return http_error(connection, 404, "no such path: the API is POST " + prefix + ", GET " + prefix +
                                           "/<id>, GET /v1/status, GET /v1/health and GET /metrics");
  };

  if (journal) {  // a restart: answers kept are served from it, the rest evaluated again
    const int forgotten = journal->compact(table_limits.keep);
    size_t kept = 0, again = 0, undelivered = 0;
    const auto now = std::chrono::steady_clock::now();
    for (auto& e : journal->load()) {
      if (e.answer) {
        requests.restore_answer(*e.answer, now);
        ++kept;
        if (e.route && !e.delivered) {
          if (deliver(*e.route, *e.answer))
            journal->delivered(e.request.request_id());
          else
            ++undelivered;  // its client has not reconnected yet
        }
        continue;
      }
      if (!e.request.has_task() && suite.count(e.request.task_id()))
        *e.request.mutable_task() = suite.at(e.request.task_id());
      requests.restore_unfinished(e.request.request_id(), e.route);
      start_evaluation(e.request, "the journal (accepted before a restart)");
      ++again;
    }
    spdlog::info("kgym serve: journal {}: {} answers kept ({} waiting for their ZeroMQ client), {} unfinished "
                 "requests evaluated again, {} answers older than {} s forgotten",
                 journal->path(), kept, undelivered, again, forgotten, table_limits.keep.count());
    writer = std::make_unique<journal_writer>(*journal);
  }
  // One request from a ZeroMQ client: refused with its reason, answered from the table, or evaluated.
  auto handle_zmq = [&](std::vector<zmq::message_t>& frames) {
    auto decoded = decode_eval_request(frames.back().to_string(), max_bytes);
    const ReplyRoute route = route_of(frames, decoded.json);
    if (decoded.error.empty() && stop_requested)
      decoded.error = "the server is shutting down: send the request to another server";
    if (decoded.error.empty())
      decoded.error = check_eval_request(&decoded.request, suite, secret);
    if (decoded.error.empty() && decoded.request.withdraw()) {  // its answer goes to the request's own client
      decoded.error = withdraw(decoded.request.request_id()).second;
      if (decoded.error.empty())
        return;
    }
    if (!decoded.error.empty()) {
      EvalResult refusal;
      refusal.set_request_id(decoded.request.request_id());
      refusal.set_error(decoded.error);
      reply(socket, route, refusal);
      ++refused;
      spdlog::info("refused request '{}': {}", decoded.request.request_id(), decoded.error);
      return;
    }
    EvalRequest& request = decoded.request;
    switch (requests.submit_zmq(request.request_id(), route)) {
      case request_table::seen::answered: {
        EvalResult answer = *requests.answer_of(request.request_id());
        answer.set_duplicate(true);
        reply(socket, route, answer);
        break;
      }
      case request_table::seen::in_progress:
        break;  // the first one's evaluation will answer this one too
      case request_table::seen::new_request:
        start_evaluation(request, zmq_origin(frames));
        journal_accepted(std::move(request), &route);
        break;
    }
  };
  size_t answers_since_compaction = 0;
  // An answer now committed: kept, logged, counted, and sent to whoever waits for it.
  auto release = [&](EvalResult answer, std::chrono::steady_clock::time_point now) {
    const ExecResult& result = answer.result();
    auto waiting = requests.finish(answer, now);
    spdlog::info("request {}: {} on {}", answer.request_id(), Verdict_Name(result.verdict()),
                 result.executor().empty() ? "no executor" : result.executor());
    metrics.evaluated(result);
    board->answered(answer, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    bool delivered = true;
    for (auto& w : waiting.zmq) {
      EvalResult copy = answer;
      copy.set_duplicate(w.duplicate);
      delivered &= deliver(w.route, copy);
      ++served;
    }
    for (const auto& connection : waiting.http) {
      http_send(connection, 200, to_json(answer));
      ++served;
    }
    if (writer && !waiting.zmq.empty() && delivered)
      writer->delivered(answer.request_id());
    if (writer && ++answers_since_compaction >= 100000) {
      writer->compact(table_limits.keep);
      answers_since_compaction = 0;
    }
  };
  // SIGTERM: no new requests; those in flight get drain_timeout to finish, then an error.
  const auto drain_timeout = std::chrono::duration<double>(a.number("drain-timeout", 120));
  std::optional<std::chrono::steady_clock::time_point> drain_until;
  while (!stop_requested || requests.in_flight() > 0) {
    if (stop_requested && !drain_until) {
      drain_until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(drain_timeout);
      spdlog::info("kgym serve: stopping; {} requests in flight get up to {:.0f} s", requests.in_flight(),
                   drain_timeout.count());
    }
    if (drain_until && std::chrono::steady_clock::now() > *drain_until)
      break;
    auto now = std::chrono::steady_clock::now();
    // Answers are journaled and committed (by the writer's thread) before any client has them,
    // so one a client got is never evaluated again after a crash.
    for (auto& [id, result] : finished->take()) {
      EvalResult answer;
      *answer.mutable_result() = std::move(result);
      answer.set_request_id(id);
      if (!writer) {
        release(std::move(answer), now);
        continue;
      }
      // Over HTTP an answer counts as delivered once kept (its client fetches it).
      const bool delivered = !requests.waits_over_zmq(id);
      writer->answered(std::move(answer), delivered);
    }
    if (writer)
      for (auto& answer : writer->take_committed())
        release(std::move(answer), now);
    for (auto& r : requests.due(now)) {  // answers whose ZeroMQ client could not take them before
      if (!reply(socket, r.route, r.answer)) {
        requests.retry(std::move(r), now);
      } else if (writer) {
        writer->delivered(r.answer.request_id());
      }
    }
    for (const auto& [id, connection] : requests.expired_polls(now))  // long polls out of time: still pending
      http_send(connection, 202, pending_json(id));
    zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, finished->wake_fd, ZMQ_POLLIN, 0},
                               {nullptr, http ? http->wake_fd() : finished->wake_fd, 0, 0},
                               {nullptr, writer ? writer->wake_fd() : finished->wake_fd, 0, 0}};
    if (http)
      items[2].events = ZMQ_POLLIN;
    if (writer)
      items[3].events = ZMQ_POLLIN;  // answers committed
    const auto wait = std::chrono::milliseconds(requests.waiting_redelivery() ? 100 : 200);
    publish_counts();  // for the page (--web): what this pass did, before it sleeps
    if (writer)
      writer->flush();  // what this pass gave the journal: one hand-over a pass
    try {
      zmq::poll(items, 4, wait);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR)
        continue;  // a signal: the loop condition decides
      throw;
    }
    if (writer && (items[3].revents & ZMQ_POLLIN))
      writer->clear_wake();
    if (http && (items[2].revents & ZMQ_POLLIN))
      for (const auto& [call, request] : http->take())
        handle_http(std::to_string(call), request);
    if (!(items[0].revents & ZMQ_POLLIN))
      continue;
    // Every request waiting now (up to 256) in this turn: one poll for a burst, not one each.
    for (int n = 0; n < 256; ++n) {
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait))
        break;
      if (frames.size() >= 2)
        handle_zmq(frames);
    }
  }
  size_t unfinished = 0;
  for (const auto& [id, waiting] : requests.unfinished()) {  // past the drain limit: each waiter hears why
    EvalResult answer;
    answer.set_request_id(id);
    answer.set_error("the server stopped before this evaluation finished (its drain limit is " +
                     std::to_string(int(drain_timeout.count())) + " s): send the request again");
    for (const auto& w : waiting.zmq) {
      reply(socket, w.route, answer);
      ++unfinished;
    }
    for (const auto& connection : waiting.http) {
      http_send(connection, 503, to_json(answer));
      ++unfinished;
    }
  }
  socket.close();  // sends what ZeroMQ still holds (linger: 1 s)
  if (writer)
    writer->stop();  // everything posted is committed; the journal is this thread's again
  if (journal)
    journal->settle_deliveries();  // then every answer handed over counts as delivered
  spdlog::info("kgym serve: stopped after {} answers and {} refusals{}", served, refused,
               unfinished ? "; " + std::to_string(unfinished) + " left unfinished were told so" : "");
  caf::scoped_actor self{system};
  for (const auto& e : executors)
    self->send_exit(e, caf::exit_reason::user_shutdown);
  self->send_exit(scheduler, caf::exit_reason::user_shutdown);
  return 0;
}

}  // namespace kgym::cli
