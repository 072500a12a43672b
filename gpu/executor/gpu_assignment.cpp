#include "gpu/executor/gpu_assignment.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>

namespace kgym {

namespace {

std::vector<int> gpus_nvidia_smi_lists() {
  std::vector<int> gpus;
  FILE* pipe = ::popen("nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null", "r");
  int index;
  while (pipe && std::fscanf(pipe, "%d", &index) == 1)
    gpus.push_back(index);
  if (pipe)
    ::pclose(pipe);
  if (gpus.empty())
    throw std::invalid_argument("--gpus all: nvidia-smi lists no GPU on this node");
  return gpus;
}

}  // namespace

std::vector<int> gpu_list(const std::string& spec) {
  if (spec == "all")
    return gpus_nvidia_smi_lists();
  std::vector<int> gpus;
  std::set<int> seen;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int gpu = -1;
    try {
      gpu = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || gpu < 0)
      throw std::invalid_argument("--gpus takes GPU indexes like 0,1,3 or all, got '" + spec + "'");
    if (!seen.insert(gpu).second)
      throw std::invalid_argument("--gpus names GPU " + std::to_string(gpu) +
                                  " twice: one executor per GPU (two would time each other's kernels)");
    gpus.push_back(gpu);
  }
  if (gpus.empty())
    throw std::invalid_argument("--gpus takes GPU indexes like 0,1,3 or all, got '" + spec + "'");
  return gpus;
}

std::string visible_gpus() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return visible ? visible : "";
}

std::vector<int> executor_gpus(Device device, int count, const std::vector<int>& listed, const std::string& visible) {
  if (device == CUDA && !listed.empty())
    return listed;
  if (device != CUDA || count <= 0)
    return std::vector<int>(static_cast<size_t>(std::max(count, 0)), -1);
  std::vector<int> gpus;
  if (visible.empty()) {
    for (int i = 0; i < count; ++i)
      gpus.push_back(i);
    return gpus;
  }
  try {
    gpus = gpu_list(visible);
  } catch (const std::invalid_argument&) {
    if (count == 1)
      return {-1};  // named otherwise than by index (UUIDs, MIG): the sandbox sees what the caller named
    throw std::invalid_argument("CUDA_VISIBLE_DEVICES=" + visible + " does not name GPUs by index: say which with --gpus");
  }
  if (static_cast<int>(gpus.size()) < count)
    throw std::invalid_argument(std::to_string(count) + " executors, one a GPU, but CUDA_VISIBLE_DEVICES=" + visible +
                                " names " + std::to_string(gpus.size()));
  gpus.resize(static_cast<size_t>(count));
  return gpus;
}

std::vector<executor_options> executors_on_gpus(const executor_options& exec, const std::vector<int>& gpus) {
  if (exec.launch.device == CUDA)
    reserve_timing_cores(gpus.size());
  std::vector<executor_options> each;
  for (size_t i = 0; i < gpus.size(); ++i) {
    each.push_back(exec);
    each.back().launch.gpu = gpus[i];
    each.back().launch.timing_slot = static_cast<int>(i);
  }
  return each;
}

}  // namespace kgym
