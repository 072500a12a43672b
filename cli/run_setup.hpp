// What `kgym train` and `kgym eval` share besides the pipeline (runtime/training_pipeline.hpp):
// the run configuration from flags, the run's directory name, the logs.
#pragma once

#include <string>

#include "cli/command_line.hpp"
#include "runtime/training_pipeline.hpp"

namespace kgym::cli {

// The options that set a TrainConfig (--config FILE, then the flags over it), declared on a
// run command's command line after its own.
void declare_config_options(command_line& c);
TrainConfig config_from_args(const args& a);

// PARENT/<date>-<time>: where a run or an evaluation goes unless told.
std::string timestamped_dir(const std::string& parent);

// Everything to DIR's train.log; progress lines (and warnings) also to the console.
void setup_logging(const std::string& log_path, bool quiet);

}  // namespace kgym::cli
