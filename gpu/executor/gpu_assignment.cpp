#include "gpu/executor/gpu_assignment.hpp"

#include <cstdio>
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

std::vector<int> executor_gpus(Device device, int count, const std::vector<int>& listed) {
  if (device == CUDA && !listed.empty())
    return listed;
  std::vector<int> gpus;
  for (int i = 0; i < count; ++i)
    gpus.push_back(device == CUDA && count > 1 ? i : -1);
  return gpus;
}

}  // namespace kgym
