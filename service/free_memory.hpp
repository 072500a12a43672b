// Keeps a long-running server's memory flat. kgym's binaries link tcmalloc, which keeps what a
// server freed in its own free lists: over a soak of 700,000 API evaluations serve's heap grew by
// 8 MiB while the bytes it held stayed at 15-18 MiB (bench/RESULTS.md, "The pipeline's control
// plane and serve's memory"). Both calls find tcmalloc at run time (dlsym), so libraries linked
// without it (the tests) need nothing; there they do nothing.
#pragma once

#include <cstddef>

namespace kgym {

// Gives the allocator's free pages back to the system (serve: every progress interval).
void release_free_memory();

// Bounds what the threads' caches may hold together (tcmalloc's default: 32 MiB), so that what
// one thread frees is soon reusable by another and given back by release_free_memory. Nothing
// where $TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES says otherwise.
// 2 MiB: over a soak of 500,000 API evaluations serve's RSS then stayed at 46.8-47.6 MiB (it grew
// 4.7 MiB without), at the same answers/s.
inline constexpr std::size_t thread_cache_bytes = std::size_t{2} << 20;
void bound_thread_caches(std::size_t bytes = thread_cache_bytes);

}  // namespace kgym
