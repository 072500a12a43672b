// The sandbox settings every command that runs executors takes from its flags: the Python
// (--python, else $KGYM_PYTHON, else python3), kgym's sandbox package, and on CUDA the CUPTI
// library unless --no-cupti.
#pragma once

#include "cli/command_line.hpp"
#include "gpu/executor/sandbox_evaluator.hpp"

namespace kgym::cli {

// The options sandbox_options reads, on a command line that runs executors.
void declare_sandbox_options(command_line& c);

executor_options sandbox_options(const args& a, Device device);

}  // namespace kgym::cli
