#include "service/free_memory.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace kgym {

void release_free_memory() {
  using release_fn = void (*)();
  static const auto release = reinterpret_cast<release_fn>(::dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
  if (release)
    release();
}

void bound_thread_caches(std::size_t bytes) {
  if (std::getenv("TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES"))
    return;  // tcmalloc's own setting, given by whoever started us, wins
  using set_fn = int (*)(const char*, std::size_t);
  const auto set = reinterpret_cast<set_fn>(::dlsym(RTLD_DEFAULT, "MallocExtension_SetNumericProperty"));
  if (set)
    set("tcmalloc.max_total_thread_cache_bytes", bytes);
}

}  // namespace kgym
