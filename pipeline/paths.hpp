// Where kgym's own files are: found from the running binary, so a build carried to another
// machine (or installed elsewhere) still finds the sandbox and the built-in tasks.
#pragma once

#include <string>

namespace kgym {

// The directory that holds gpu/sandbox/kgym_sandbox and tasks/; $KGYM_HOME wins if set.
std::string kgym_home();
std::string sandbox_dir();
std::string builtin_tasks_dir();

}  // namespace kgym
