// extension_compiler: the compiler stage's CUDA part. A candidate whose ModelNew builds
// kernels with torch.utils.cpp_extension (load_inline) has them built by nvcc here, in a
// sandboxed builder process on CPU cores, before its evaluation takes the GPU; results go to
// a cache only kgym writes (gpu/executor/extension_builder.hpp). It lives on the node of the
// executors it builds for, not beside the program checks of actors/compiler.hpp: what it
// builds is loaded from that node's disk, by that node's sandbox. Blocking: spawned detached.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>

#include "gpu/executor/sandbox_process.hpp"
#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

// Every extension the request's candidate asks for, built or found in the cache; a failed
// build answers with its error (Built.error; Built.internal when it was kgym's fault).
using extension_compiler_actor = caf::typed_actor<caf::replies_to<ExecRequest>::with<SandboxEvent::Built>>;

// How many extension compilers each GPU executor keeps (candidates built at once).
constexpr int extension_compilers_per_executor = 2;

// `launch` as the executor's sandbox (the builder runs confined like a candidate); builds
// work under `work_root` (empty: a directory of its own).
extension_compiler_actor spawn_extension_compiler(caf::actor_system& system, sandbox_launch launch,
                                                  std::string cache_dir, std::string work_root);

}  // namespace kgym
