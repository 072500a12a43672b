// Gives the allocator's free pages back to the system. kgym's binaries link tcmalloc, which
// keeps what a long-running server freed in its own free lists: over a soak of 700,000 API
// evaluations serve's heap grew by 8 MiB while the bytes it held stayed at 15-18 MiB (README,
// "Control plane"). Found at run time (dlsym), so libraries linked without tcmalloc (the
// tests) need nothing; there it does nothing.
#pragma once

namespace kgym {

void release_free_memory();

}  // namespace kgym
