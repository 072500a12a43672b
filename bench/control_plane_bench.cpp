// Control-plane throughput of `kgym train`: the real actors (episode, inference, compiler,
// scheduler, reward, learner, monitor, run_controller) with executors that answer at once,
// so what is measured is the pipeline itself. Episodes/s, messages/s and memory per
// episode at 1, 100 and 10,000 concurrent episodes; the baseline, measured in the same run,
// is a bare CAF request/response loop between two actors. Last, the 10,000 case once more with
// the run's episode store written as `kgym train` writes it, without and then with 5 browsers
// on the web view (web/): each holds the event stream and fetches the episode table on every
// "episodes" event, as the page does; the ratio is what watching costs the pipeline.
#include <caf/all.hpp>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "actors/gpu_executor.hpp"
#include "actors/monitor.hpp"
#include "bench/resident_memory.hpp"
#include "pipeline/run_dir.hpp"
#include "web/web_server.hpp"
#include "pipeline/embedded_programs.hpp"
#include "pipeline/paths.hpp"
#include "pipeline/task_loader.hpp"
#include "pipeline/train_config.hpp"
#include "pipeline/actor_system_setup.hpp"
#include "policy/embedded_policy.hpp"
#include "runtime/training_pipeline.hpp"

namespace {

using namespace kgym;
using clock_type = std::chrono::steady_clock;
using bench::rss_kb;

using echo_actor = caf::typed_actor<caf::replies_to<int>::with<int>>;

echo_actor::behavior_type echo(echo_actor::pointer) {
  return {[](int x) { return x; }};
}

// Baseline: request/response round trips between two event-based actors, `window` in
// flight at a time (as the pipeline keeps many requests in flight).
double baseline_messages_per_s(caf::actor_system& system, int total, int window) {
  auto target = system.spawn(echo);
  auto start = clock_type::now();
  auto pinger = system.spawn([=](caf::event_based_actor* self) {
    auto remaining = std::make_shared<int>(total);
    auto step = std::make_shared<std::function<void()>>();
    *step = [=] {
      if (*remaining <= 0)
        return;
      --*remaining;
      self->request(target, caf::infinite, *remaining).then([=](int left) {
        if (left == 0)
          self->quit();
        (*step)();
      });
    };
    for (int i = 0; i < window; ++i)
      (*step)();
  });
  caf::scoped_actor self{system};
  self->wait_for(pinger);
  double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  self->send_exit(target, caf::exit_reason::user_shutdown);
  return 2.0 * total / seconds;
}

// A browser on the web view, as web/page/app.js behaves: the event stream open, the episode
// table fetched again on each "episodes" event. Returns the calls it made.
long browse(int port, const std::atomic<bool>& done) {
  long calls = 0;
  httplib::Client stream("127.0.0.1", port), table("127.0.0.1", port);
  stream.set_read_timeout(5, 0);
  while (!done) {
    stream.Get("/api/events", [&](const char* data, size_t size) {
      if (std::string(data, size).find("event: episodes") != std::string::npos && table.Get("/api/episodes?limit=200"))
        ++calls;
      return !done.load();
    });
  }
  return calls;
}

struct measurement {
  int concurrency;
  long episodes;
  double seconds;
  double episodes_per_s;
  double messages_per_s;
  double kb_per_episode;
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool pairs_value = arg == "--pairs" && i + 1 < argc && std::atoi(argv[i + 1]) > 0;
    if (!pairs_value) {
      std::fprintf(stderr,
                   "usage: control_plane_bench [--pairs N]   (default 5)\n"
                   "Episodes/s, messages/s and memory per episode of kgym train's actors with executors that\n"
                   "answer at once, at 1, 100 and 10,000 episodes, beside a bare CAF loop; then N pairs of the\n"
                   "10,000 case without and with 5 browsers on the web view.\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
    ++i;
  }
  spdlog::set_level(spdlog::level::warn);  // a pipeline per run: its executors' joins are not news
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system system{cfg};

  auto suite = load_embedded_suite(builtin_tasks_dir());
  const auto& tasks = suite.tasks;
  // One compiler across the runs (its parsed programs cached); the rest is the runtime's, per run.
  kept_services kept{spawn_compiler(system, "python3")};

  const int turns = 3;
  auto run = [&](int concurrency, int group_size, int iterations, const std::string& store = "", int browsers = 0) {
    TrainConfig config = default_train_config();
    config.set_iterations(iterations);
    config.set_group_size(group_size);
    config.set_turns(turns);
    config.set_max_concurrent_episodes(concurrency);
    EmbeddedPolicy policy = make_embedded_policy(suite.actions);
    std::vector<gpu_executor_actor> executors;
    for (int i = 0; i < 8; ++i)
      executors.push_back(spawn_null_executor(system));
    auto p = start_pipeline(system, config, std::move(executors), "python3", CPU, "", policy, suite,
                            scheduler_options{false, {}}, false, kept);
    run_plan plan;
    plan.config = config;
    plan.tasks = tasks;
    plan.quiet = true;
    plan.store_path = store.empty() ? "" : run_dir::episodes_path(store);
    std::unique_ptr<web::web_server> view;
    std::atomic<bool> browsing_done{false};
    std::vector<std::thread> browsing;
    if (browsers > 0) {
      view = std::make_unique<web::web_server>(store, web::web_options{},
                                               [&] { return ask_view(system, p.services.monitor); });
      for (int b = 0; b < browsers; ++b)
        browsing.emplace_back([&, port = view->port()] { browse(port, browsing_done); });
    }
    long before = rss_kb(), peak = before;
    std::atomic<bool> done{false};
    std::thread sampler([&] {
      while (!done) {
        peak = std::max(peak, rss_kb());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    auto start = clock_type::now();
    auto outcome = run_to_end(system, plan, p);
    if (!outcome)
      std::fprintf(stderr, "run failed: %s\n", system.render(outcome.error()).c_str());
    const bool ok = static_cast<bool>(outcome);
    double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    done = true;
    sampler.join();
    browsing_done = true;
    for (auto& b : browsing)
      b.join();
    view.reset();
    long episodes = static_cast<long>(tasks.size()) * group_size * iterations;
    // Per turn: 5 request/response pairs (inference, compiler, scheduler, executor, reward)
    // and 4 monitor events; per episode: its spec and result, and the "done" event.
    double messages = episodes * (3.0 + turns * 14.0);
    long in_flight = std::min<long>(concurrency, episodes);
    return measurement{concurrency, ok ? episodes : 0, seconds, episodes / seconds, messages / seconds,
                       static_cast<double>(peak - before) / in_flight};
  };

  run(100, 10, 2);  // warm-up: the compiler's cache, the allocator
  std::vector<measurement> rows = {run(1, 10, 10), run(100, 10, 10), run(10000, 1000, 2)};
  // The web view's cost: the same setting with the store written, without and with browsers.
  // `--pairs N` (default 5): on a small machine one pair's ratio moves by 10-20%, the median of
  // a few by several percent. One run first, not counted: the first one written was slower.
  namespace fs = std::filesystem;
  int pairs = 5;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--pairs")
      pairs = std::max(1, std::atoi(argv[i + 1]));
  std::vector<measurement> watched;
  auto watched_run = [&](int browsers) {
    std::string store = (fs::temp_directory_path() / ("kgym-cp-bench-" + std::to_string(::getpid()) + "-" +
                                                      std::to_string(watched.size()))).string();
    run_dir::create(store, default_train_config());
    auto m = run(10000, 1000, 2, store, browsers);
    fs::remove_all(store);
    return m;
  };
  watched_run(0);
  for (int i = 0; i < 2 * pairs; ++i)  // 0 5, 5 0, 0 5, ...: neither side always first
    watched.push_back(watched_run((i % 4 == 1 || i % 4 == 2) ? 5 : 0));
  double baseline = baseline_messages_per_s(system, 400000, 100);

  utsname host{};
  uname(&host);
  std::printf("kgym control-plane bench: %s, %u hardware threads, CAF scheduler threads %zu\n", host.nodename,
              std::thread::hardware_concurrency(), system.scheduler().num_workers());
  std::printf("executors answer at once (8 of them); %d turns per episode; 10 built-in tasks\n", turns);
  std::printf("%12s %9s %9s %12s %14s %14s %10s\n", "concurrent", "episodes", "seconds", "episodes/s", "messages/s",
              "vs baseline", "kB/episode");
  for (const auto& r : rows)
    std::printf("%12d %9ld %9.2f %12.0f %14.0f %13.2fx %10.1f\n", r.concurrency, r.episodes, r.seconds,
                r.episodes_per_s, r.messages_per_s, r.messages_per_s / baseline, r.kb_per_episode);
  std::printf("baseline: request/response between two actors, 100 in flight: %.0f messages/s\n", baseline);
  std::printf("\nthe web view's cost (10,000 concurrent, episode store written), pairs of runs:\n");
  std::printf("%6s %16s %16s %8s\n", "pair", "0 browsers ep/s", "5 browsers ep/s", "ratio");
  std::vector<double> ratios;
  for (size_t i = 0; i + 1 < watched.size(); i += 2) {
    // Each pair holds one run without and one with browsers, in either order.
    const bool first_watched = i % 4 == 2;
    const auto& none = watched[first_watched ? i + 1 : i];
    const auto& with = watched[first_watched ? i : i + 1];
    ratios.push_back(with.episodes_per_s / none.episodes_per_s);
    std::printf("%6zu %16.0f %16.0f %7.3fx\n", i / 2 + 1, none.episodes_per_s, with.episodes_per_s, ratios.back());
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("median ratio with 5 browsers: %.3fx (the issue's bound: at least 0.95x)\n", ratios[ratios.size() / 2]);
  anon_send_exit(kept.compiler, caf::exit_reason::user_shutdown);
  return 0;
}
