// kgym serve: the evaluation API for RL frameworks. A ZeroMQ ROUTER endpoint takes
// EvalRequest frames (protobuf bytes or their JSON mapping) and answers each with one
// EvalResult, evaluated by this process's executors through the scheduler actor.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include <zmq.hpp>


#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>

#include "actors/gpu_executor.hpp"
#include "actors/scheduler.hpp"
#include "actors/worker_gate.hpp"
#include "cli/loopback_credentials.hpp"
#include "cli/tls_guard.hpp"
#include "cli/command_line.hpp"
#include "cli/cluster.hpp"
#include "cli/commands.hpp"
#include "cli/eval_option_flags.hpp"
#include "cli/stop_signal.hpp"
#include "cli/web_view.hpp"
#include "cli/log_level.hpp"
#include "cli/sandbox_options.hpp"
#include "gpu/executor/gpu_assignment.hpp"
#include "messages/json.hpp"
#include "service/eval_api.hpp"
#include "service/http_front.hpp"
#include "pipeline/paths.hpp"
#include "service/eval_service.hpp"
#include "service/request_journal.hpp"
#include "service/request_table.hpp"
#include "pipeline/task_loader.hpp"
#include "web/serve_view.hpp"
#include "service/free_memory.hpp"

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
                                    "them with deploy/cluster_certs.sh (README: \"Only our workers join\"). On loopback\n"
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
      .whole("executors", "N", "executors in this process (default 2 on cpu, 1 on cuda; 0: workers only);\n"
                               "on cuda one GPU each: N > 1 takes the first N of CUDA_VISIBLE_DEVICES\n"
                               "(unset: GPUs 0..N-1)")
      .text("gpus", "LIST|all", "on cuda, one executor per GPU: \"0,1,3\" or \"all\" (nvidia-smi counts them);\n"
                                "replaces --executors")
      .text("tasks-dir", "DIR", "the suite that task_id refers to (default: the built-in tasks)")
      .whole("max-request-bytes", "N", "larger requests are refused (default 4194304)")
      .flag("eval-cache", "answer an identical (task, program) from the first evaluation");
  declare_eval_option_flags(c, ": the\nserver's defaults for what a request's own options leave unset (a field\n"
                               "at its zero value is unset), e.g. timing_precision=0.002 on cuda for more\n"
                               "evaluations an hour at a little less precision (README)");
  c.section("journal and memory:")
      .text("state-dir", "DIR", "journal accepted requests and their answers in DIR/journal.sqlite: a\n"
                                "restart with the same DIR evaluates the unfinished ones again (no client\n"
                                "re-send; a ZeroMQ client gets its answer when it reconnects under the same\n"
                                "routing id, as kgym_client.py does) and answers finished ones from it\n"
                                "(duplicate: true)")
      .whole("journal-keep", "S", "answers older than S seconds are forgotten, in memory and in the journal\n"
                                  "(default 86400); a later GET or re-send of their id finds nothing")
      .whole("journal-batch-ms", "MS", "accepted ZeroMQ requests are committed in batches within 1.5 x MS of\n"
                                       "their arrival, most with their answer (default 20; 0: every turn of the\n"
                                       "serve loop). A SIGKILL may lose the last 1.5 x MS of them (their clients\n"
                                       "wait and re-send); answers are always committed before a client gets\n"
                                       "them, HTTP submissions before their 202")
      .whole("max-answers", "N", "at most N answers are kept in memory, the oldest forgotten first (default 1000000)")
      .number("drain-timeout", "S", "on SIGTERM, how long evaluations in flight may still finish (default 120);\n"
                                    "then each one's client gets an error saying to send it again")
      .section("sandbox:")
      .flag("gpu-sizes", "on cpu, run tasks at their full (GPU) sizes, not their task.json cpu_sizes")
      .config_file();
  declare_sandbox_options(c);
  declare_log_level(c);
  return c;
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
  apply_log_level(a);
  bound_thread_caches();  // a long-running process: memory that stays flat (service/free_memory.hpp)
  std::string endpoint = a.get("api", "tcp://127.0.0.1:5555");
  std::string secret_env = a.get("secret-env", "KGYM_API_SECRET");
  const char* secret_value = std::getenv(secret_env.c_str());
  std::string secret = secret_value ? secret_value : "";
  if (a.has("secret-env") && secret.empty())
    throw std::invalid_argument("--secret-env " + secret_env + ": that variable is not set");
  if (!is_loopback_endpoint(endpoint) && secret.empty())
    throw std::invalid_argument("refusing to serve the API on " + endpoint + " without a secret: set " + secret_env +
                                " (clients then send it in EvalRequest.secret), or use tcp://127.0.0.1");
  const Device device = choice<Device>(a, "device", CPU);
  EvalOptions default_options;
  apply_eval_option_flags(a, &default_options);
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
  if (a.has("gpus") && device != CUDA)
    throw std::invalid_argument("--gpus places executors on GPUs: it needs --device cuda");
  const auto gpus = executor_gpus(device, static_cast<int>(a.whole("executors", device == CUDA ? 1 : 2)),
                                  a.has("gpus") ? gpu_list(a.get("gpus")) : std::vector<int>{}, visible_gpus());
  for (const auto& on_gpu : executors_on_gpus(exec, gpus))
    executors.push_back(spawn_gpu_executor(system, on_gpu));
  const int n_executors = static_cast<int>(gpus.size());
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

  std::string on = lower_name(device);
  if (device == CUDA && !gpus.empty() && gpus.front() >= 0) {  // one GPU each (gpu_assignment)
    on += " GPUs";
    for (size_t i = 0; i < gpus.size(); ++i)
      on += (i ? "," : " ") + std::to_string(gpus[i]);
  }
  spdlog::info("kgym serve: {} executors on {}, {} tasks, listening on {}{}", n_executors, on, suite.size(), bound,
               secret.empty() ? "" : " (secret required)");
  if (default_options.ByteSizeLong() > 0)
    spdlog::info("kgym serve: evaluation options where a request sets none: {}", to_json(default_options));
  stop_on_signals();

  // The page for people (--web): a board the service keeps, the scheduler asked from its threads.
  auto board = std::make_shared<web::serve_board>();
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

  eval_service_setup setup;
  setup.socket = &socket;
  setup.http = http.get();
  setup.max_request_bytes = max_bytes;
  setup.service.scheduler = scheduler;
  setup.service.suite = &suite;
  setup.service.secret = secret;
  setup.service.device = device;
  setup.service.cpu_sizes = !a.has("gpu-sizes");
  setup.service.default_options = default_options;
  setup.service.journal = journal.get();
  setup.service.table_limits = table_limits;
  setup.service.drain_timeout = std::chrono::duration<double>(a.number("drain-timeout", 120));
  if (web_page) {  // without a page nobody reads the board: the service keeps nothing for it
    setup.service.on_counts = [board](const ServeStatus& counts) { board->set_counts(counts); };
    setup.service.on_answer = [board](const EvalResult& answer) {
      board->answered(answer, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    };
  }
  run_eval_service(system, setup, stop_requested);
  caf::scoped_actor self{system};
  for (const auto& e : executors)
    self->send_exit(e, caf::exit_reason::user_shutdown);
  self->send_exit(scheduler, caf::exit_reason::user_shutdown);
  return 0;
}

}  // namespace kgym::cli
