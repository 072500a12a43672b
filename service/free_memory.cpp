#include "service/free_memory.hpp"

#include <dlfcn.h>

namespace kgym {

void release_free_memory() {
  using release_fn = void (*)();
  static const auto release = reinterpret_cast<release_fn>(::dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
  if (release)
    release();
}

}  // namespace kgym
