// Which GPU each CUDA executor of a process gets. One executor per GPU: two executors on one
// GPU would run kernels inside each other's timed regions (each sandbox's quiet-GPU lock is
// its own), so a count above one means one GPU each, never a shared one.
#pragma once

#include <string>
#include <vector>

#include "gpu/executor/sandbox_evaluator.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

// "0,1,3" -> {0, 1, 3}; "all" -> every GPU nvidia-smi lists. Throws std::invalid_argument on
// a malformed list, a repeated GPU or, for "all", no GPU.
std::vector<int> gpu_list(const std::string& spec);

// The GPU of each executor (sandbox_launch::gpu; -1: the GPUs the process inherits):
// `listed` when given (--gpus), else `count` executors: on the CPU all -1, on CUDA the first
// `count` GPUs of `visible` (the caller's CUDA_VISIBLE_DEVICES, "" when unset: GPUs
// 0..count-1). A single executor gets one GPU too, so its candidates see no other GPU of the
// host (where `visible` names GPUs otherwise than by index, -1: the first it names,
// sandbox_visible_gpu). Throws
// std::invalid_argument where `visible` names fewer GPUs or, for several executors, names
// them otherwise than by index (then --gpus says which).
std::vector<int> executor_gpus(Device device, int count, const std::vector<int>& listed,
                               const std::string& visible = "");

// This process's CUDA_VISIBLE_DEVICES ("" when unset).
std::string visible_gpus();

// `exec` once for each of `gpus` (executor_gpus, gpu_list), each with its gpu and its place
// among them (sandbox_launch::timing_slot, which picks its timing cores). On CUDA this process's
// threads first keep off every one's timing cores (reserve_timing_cores), before any starts.
std::vector<executor_options> executors_on_gpus(const executor_options& exec, const std::vector<int>& gpus);

}  // namespace kgym
