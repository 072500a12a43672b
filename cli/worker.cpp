// kgym worker: adds this node's executors to a running `kgym serve` (CAF's middleman). One
// executor per GPU (or per CPU slot); each joins the scheduler, which monitors it. SIGTERM or
// SIGINT: leave (no new work), finish what is in flight, exit.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "actors/gpu_executor.hpp"
#include "actors/worker_gate.hpp"
#include "cli/loopback_credentials.hpp"
#include "cli/tls_guard.hpp"
#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "cli/stop_signal.hpp"
#include "cli/log_level.hpp"
#include "cli/sandbox_options.hpp"
#include "cli/cluster.hpp"
#include "gpu/executor/gpu_assignment.hpp"
#include "pipeline/paths.hpp"
#include "service/free_memory.hpp"

namespace kgym::cli {

namespace {

command_line worker_command_line() {
  command_line c("worker", "--join HOST:PORT [--cpu-slots N | --gpus LIST|all] [--name NAME]",
                 "Starts one sandbox executor per GPU (or per CPU slot) on this node and registers them with\n"
                 "the scheduler of the `kgym serve --listen HOST:PORT` running there. The scheduler places work\n"
                 "on them, monitors them, and places again whatever a lost worker had in flight. SIGTERM or\n"
                 "SIGINT drains: no new work, the evaluations in flight finish and are answered, then it exits.\n"
                 "A worker that loses the control plane (a cut link, a restarted server) rejoins when it is back.\n");
  c.text("join", "HOST:PORT", "the control plane (kgym serve --listen)")
      .whole("cpu-slots", "N", "N executors on the CPU (Triton's interpreter); the default without --gpus: 1")
      .text("gpus", "LIST|all", "one CUDA executor per GPU: \"0,1,3\" or \"all\" (nvidia-smi counts them)")
      .text("name", "NAME", "how results name this worker's executors (default: the certificate's name\n"
                            "with --cluster-certs, where it must be that name; else hostname-pid)")
      .number("rejoin-for", "S", "after losing the control plane, keep trying to rejoin for S seconds\n"
                                 "(backoff 0.25 s doubling to 10 s; default 600; 0: exit at once)")
      .text("cluster-certs", "DIR", "this node's cluster credentials (default $KGYM_CLUSTER_CERTS): TLS to a\n"
                                    "kgym serve that has certificates of the same CA (deploy/cluster_certs.sh).\n"
                                    "Joining on loopback without them, a certificate from the CA that kgym\n"
                                    "serve made for this user (see kgym serve --help)")
      .flag("plain-loopback", "to a kgym serve --plain-loopback (no TLS; only for measurements)")
      .flag("null-executor", "executors that answer at once without running anything: only for\n"
                             "measuring the control plane (bench/dispatch_bench.py)")
      .config_file();
  declare_sandbox_options(c);
  declare_log_level(c);
  return c;
}

// Leaves the scheduler, executor by executor: each leave is answered once that executor's
// evaluations in flight are done. A control plane that stops meanwhile (serve stopped with its
// workers) answers none, so wait in steps of a second and stop waiting once it is down (the
// scheduler is monitored). Asking again is harmless: the scheduler answers every ask. False
// where the control plane went away first.
bool leave(caf::scoped_actor& self, const worker_gate_actor& scheduler,
           const std::vector<std::pair<std::string, gpu_executor_actor>>& executors) {
  for (const auto& [executor_name, executor] : executors)
    for (bool left = false; !left;) {
      self->request(scheduler, std::chrono::seconds(1), leave_atom::value,
                    caf::actor_cast<caf::strong_actor_ptr>(executor))
          .receive([&](caf::ok_atom) { left = true; },
                   [&](caf::error& e) { left = e != caf::make_error(caf::sec::request_timeout); });
      bool gone = false;
      if (!left)
        self->receive([&](caf::down_msg&) { gone = true; }, caf::after(std::chrono::seconds(0)) >> [] {});
      if (gone)
        return false;
    }
  return true;
}

}  // namespace

int run_worker(const std::vector<std::string>& argv) {
  auto parsed = worker_command_line().parse(argv);
  if (!parsed)
    return 0;  // --help
  const args& a = *parsed;
  apply_log_level(a);
  bound_thread_caches();  // a long-running process: memory that stays flat (service/free_memory.hpp)
  if (!a.has("join"))
    throw std::invalid_argument("kgym worker needs --join HOST:PORT, the kgym serve --listen to join (see kgym worker --help)");
  auto [host, port] = parse_host_port(a.get("join"));
  char hostname[256] = "node";
  ::gethostname(hostname, sizeof hostname - 1);
  auto credentials = find_cluster_credentials(a.get("cluster-certs", ""));
  // On loopback without credentials: a certificate under its name from this user's own CA,
  // which kgym serve made (cli/loopback_credentials.hpp).
  if (!credentials.enabled() && is_loopback_host(host) && !a.has("plain-loopback"))
    credentials = loopback_credentials(a.get("name", std::string(hostname) + "-" + std::to_string(::getpid())),
                                       /*make_ca=*/false);
  // Over TLS the control plane takes executors only under the node's certificate name.
  const std::string certified =
      credentials.enabled() ? certificate_name((std::filesystem::path(credentials.dir) / "node.pem").string()) : "";
  std::string name = a.get("name", certified.empty() ? std::string(hostname) + "-" + std::to_string(::getpid())
                                                     : certified);
  if (!certified.empty() && name != certified)
    spdlog::warn("kgym worker: --name {} is not this node's certificate name {}: kgym serve will refuse its "
                 "executors",
                 name, certified);
  caf::actor_system_config cfg;
  configure_cluster(cfg, credentials);
  caf::actor_system system{cfg};
  auto scheduler = reach_control_plane<worker_gate_actor>(system, host, port, credentials);
  if (!scheduler)
    throw std::runtime_error("cannot reach kgym serve at " + a.get("join") + ": " + system.render(scheduler.error()) +
                             " (is it running with --listen " + a.get("join") + "? " +
                             (credentials.enabled() ? "Over TLS both ends need certificates of the same cluster CA)"
                                                    : "Beyond loopback it needs --cluster-certs on both ends)"));
  std::vector<std::pair<std::string, gpu_executor_actor>> executors;
  if (a.has("null-executor")) {
    int slots = static_cast<int>(a.whole("cpu-slots", 1));
    for (int i = 0; i < slots; ++i)
      executors.emplace_back(name + "#null" + std::to_string(i), spawn_null_executor(system));
  } else if (a.has("gpus")) {
    executor_options exec = sandbox_options(a, CUDA);
    for (const auto& on_gpu : executors_on_gpus(exec, gpu_list(a.get("gpus"))))
      executors.emplace_back(name + "#gpu" + std::to_string(on_gpu.launch.gpu), spawn_gpu_executor(system, on_gpu));
  } else {
    executor_options exec = sandbox_options(a, CPU);
    int slots = static_cast<int>(a.whole("cpu-slots", 1));
    for (int i = 0; i < slots; ++i)
      executors.emplace_back(name + "#cpu" + std::to_string(i), spawn_gpu_executor(system, exec));
  }
  caf::scoped_actor self{system};
  stop_on_signals();
  const double rejoin_for_s = a.number("rejoin-for", 600);
  bool control_plane_gone = false;
  for (;;) {
    self->monitor(*scheduler);
    for (const auto& [executor_name, executor] : executors)
      self->send(*scheduler, join_atom::value, executor_name, caf::actor_cast<caf::strong_actor_ptr>(executor));
    spdlog::info("kgym worker {}: {} executors joined {}", name, executors.size(), a.get("join"));
    control_plane_gone = false;
    while (!stop_requested && !control_plane_gone)
      self->receive_while([&] { return !stop_requested && !control_plane_gone; })(
          [&](caf::down_msg&) { control_plane_gone = true; },
          caf::after(std::chrono::milliseconds(200)) >> [] {});
    if (!control_plane_gone)
      break;
    // Lost (a cut link, a pause past the heartbeat timeout, a restarted server): try again
    // with backoff; the same names rejoin, and a server that still holds the old ones
    // replaces them.
    spdlog::warn("kgym worker {}: the control plane is gone; rejoining for up to {:.0f} s", name, rejoin_for_s);
    const auto lost_at = std::chrono::steady_clock::now();
    auto backoff = std::chrono::milliseconds(250);
    auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - lost_at).count(); };
    scheduler = caf::error{};
    while (!stop_requested && since() < rejoin_for_s) {
      for (auto slept = std::chrono::milliseconds(0); slept < backoff && !stop_requested; slept += std::chrono::milliseconds(50))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      scheduler = reach_control_plane<worker_gate_actor>(system, host, port, credentials);
      if (scheduler)
        break;
      spdlog::info("kgym worker {}: {} not back yet ({}); next try in {} ms", name, a.get("join"),
                   system.render(scheduler.error()), std::min<long>(backoff.count() * 2, 10000));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(10000));
    }
    if (!scheduler)
      break;
    spdlog::info("kgym worker {}: the control plane is back after {:.1f} s", name, since());
  }
  if (!control_plane_gone) {
    spdlog::info("kgym worker {}: draining", name);
    if (!leave(self, *scheduler, executors))
      spdlog::info("kgym worker {}: the control plane went away while draining", name);
  } else if (stop_requested) {
    spdlog::info("kgym worker {}: stopped while the control plane was gone", name);
  } else {
    spdlog::warn("kgym worker {}: the control plane is gone (no rejoin within {:.0f} s)", name, rejoin_for_s);
  }
  size_t down = 0;
  for (const auto& [executor_name, executor] : executors) {
    self->monitor(executor);
    self->send_exit(executor, caf::exit_reason::user_shutdown);
  }
  bool timed_out = false;
  self->receive_while([&] { return down < executors.size() && !timed_out; })(
      [&](caf::down_msg&) { ++down; }, caf::after(std::chrono::seconds(60)) >> [&] { timed_out = true; });
  spdlog::info("kgym worker {}: stopped ({} of {} executors shut down)", name, down, executors.size());
  spdlog::default_logger()->flush();
  // Nothing is left to lose: leave without waiting on the actor system's teardown (a remote
  // connection can hold it), so a drained worker always exits.
  // 1 only where it gave up: a stop asked for (SIGTERM, SIGINT) is a clean end, rejoining or not.
  std::_Exit(control_plane_gone && !stop_requested ? 1 : 0);
}

}  // namespace kgym::cli
