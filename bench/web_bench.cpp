// The browser view's API at scale: a run directory with N stored episodes (default 100,000,
// each the size of a real CPU run's: two turns with a 3 kB prompt and a 1.4 kB program), the
// web server started on it, then GET /api/episodes (unfiltered, by task, by verdict),
// /api/episodes/<id> and /api/run timed over loopback, p50 and p95 of 50 calls each. The
// baseline, measured in the same run, is the same server's 404 answer (routing, headers, one
// JSON error: what any call costs). The issue's bound: /api/episodes under 50 ms at 100,000.
//
//   build/web_bench [N]
#include <httplib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/resident_memory.hpp"
#include "pipeline/episode_store.hpp"
#include "pipeline/run_dir.hpp"
#include "web/web_server.hpp"

namespace {

using namespace kgym;
using clock_type = std::chrono::steady_clock;
using bench::rss_kb;

Episode synthetic(size_t i) {
  static const Verdict verdicts[] = {OK, OK, INCORRECT, HACKED, COMPILE_ERROR, OK, RUNTIME_ERROR, OK};
  Episode e;
  e.set_task_id("task_" + std::to_string(i % 50));
  e.set_iteration(static_cast<int64_t>(i / 1000));
  e.set_episode_id("it" + std::to_string(e.iteration()) + "/" + e.task_id() + "/" + std::to_string(i % 20));
  e.set_episode_id(e.episode_id() + "#" + std::to_string(i));  // unique
  e.set_wall_s(3.0);
  for (int t = 0; t < 2; ++t) {
    Turn* turn = e.add_turns();
    turn->set_index(t);
    turn->set_prompt(std::string(3000, 'p'));
    turn->set_response(std::string(1400, 'r'));
    turn->mutable_result()->set_verdict(verdicts[(i + t) % 8]);
    turn->mutable_result()->set_speedup(1.0 + 0.001 * static_cast<double>(i % 500));
    turn->mutable_result()->set_message("correct, speedup 1.234x");
    turn->mutable_reward()->set_total(0.5);
  }
  return e;
}

struct timing {
  double p50_ms, p95_ms;
};

timing time_calls(httplib::Client& client, const std::string& path, int calls = 50) {
  std::vector<double> ms;
  for (int i = 0; i < calls; ++i) {
    auto t0 = clock_type::now();
    auto res = client.Get(path);
    ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
    if (!res) {
      std::fprintf(stderr, "web_bench: GET %s failed\n", path.c_str());
      std::exit(1);
    }
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[ms.size() * 95 / 100]};
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::stoul(argv[1]) : 100000;
  namespace fs = std::filesystem;
  const std::string dir = (fs::temp_directory_path() / ("kgym-web-bench-" + std::to_string(::getpid()))).string();
  TrainConfig config;
  config.set_device(CPU);
  run_dir::create(dir, config);
  auto t0 = clock_type::now();
  {
    episode_store store(run_dir::episodes_path(dir));
    for (size_t i = 0; i < n; ++i)
      store.append(synthetic(i));
  }
  double write_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  long rss_before = rss_kb();
  t0 = clock_type::now();
  web::web_server server(dir, web::web_options{});
  double index_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  long rss_after = rss_kb();
  httplib::Client client("127.0.0.1", server.port());

  utsname host{};
  ::uname(&host);
  std::printf("machine: %s, %u hardware threads; %zu stored episodes (%.0f MB), written in %.1f s\n", host.machine,
              std::thread::hardware_concurrency(), n,
              static_cast<double>(fs::file_size(run_dir::episodes_path(dir))) / 1e6, write_s);
  std::printf("index on start: %.2f s, %.1f MB of memory (%.0f bytes an episode)\n\n", index_s,
              static_cast<double>(rss_after - rss_before) / 1024.0,
              1024.0 * static_cast<double>(rss_after - rss_before) / static_cast<double>(std::max<size_t>(n, 1)));
  timing base = time_calls(client, "/no/such/page");
  std::printf("| call | p50 ms | p95 ms | p50 vs baseline |\n|---|---|---|---|\n");
  std::printf("| baseline: 404 | %.3f | %.3f | 1.0x |\n", base.p50_ms, base.p95_ms);
  const std::string some_id = synthetic(n / 2).episode_id();
  std::string encoded;
  for (char c : some_id)
    encoded += c == '/' ? std::string("%2F") : c == '#' ? std::string("%23") : std::string(1, c);
  for (const std::string& path : {std::string("/api/episodes"), std::string("/api/episodes?task=task_7"),
                                  std::string("/api/episodes?verdict=HACKED&limit=1000"),
                                  "/api/episodes/" + encoded, std::string("/api/run")}) {
    timing t = time_calls(client, path);
    std::printf("| GET %s | %.3f | %.3f | %.1fx |\n", path.c_str(), t.p50_ms, t.p95_ms, t.p50_ms / base.p50_ms);
  }
  fs::remove_all(dir);
  return 0;
}
