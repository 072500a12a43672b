// Where kgym's own files are: found from the running binary, so a build carried to another
// machine (or installed elsewhere) still finds the sandbox and the built-in tasks.
#pragma once

#include <string>

namespace kgym {

// The directory that holds gpu/sandbox/kgym_sandbox and tasks/; $KGYM_HOME wins if set.
std::string kgym_home();
std::string sandbox_dir();
std::string builtin_tasks_dir();
// gpu/cupti's injection library: $KGYM_CUPTI_LIB, else next to (or one above) the running
// binary, as a build leaves it. Empty when there is none.
std::string cupti_library();
// gpu/trace's CPU library, found the same way ($KGYM_TRACE_LIB).
std::string trace_library();
// gpu/checks' one-pass output checks for the judge on the GPU, found the same way ($KGYM_CHECKS_LIB).
std::string checks_library();
// Where candidates' CUDA extensions are cached once built: $KGYM_EXTENSION_CACHE, else
// $XDG_CACHE_HOME/kgym/extensions, else ~/.cache/kgym/extensions. Only kgym writes there.
std::string extension_cache_dir();

}  // namespace kgym
