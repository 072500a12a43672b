// The sandbox settings every command that runs executors takes from its flags: the Python
// (--python, else $KGYM_PYTHON, else python3), kgym's sandbox package, and on CUDA the CUPTI
// library unless --no-cupti.
#pragma once

#include "cli/args.hpp"
#include "gpu/executor/sandbox_evaluator.hpp"

namespace kgym::cli {

executor_options sandbox_options(const args& a, Device device);

}  // namespace kgym::cli
