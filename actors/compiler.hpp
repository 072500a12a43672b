// compiler: the static checks an answer passes before it may use a GPU: a fenced code
// block, class ModelNew, Python's parser. Content-addressed cache: a program is checked once.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>

#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using compiler_actor = caf::typed_actor<caf::replies_to<CompileRequest>::with<CompileResult>>;

// Pure part: the checks that need no Python. Fills source, source_hash, and error if any.
CompileResult static_checks(const CompileRequest& request);

// Spawned detached: the parser is one long-lived child Python process of this actor's, which
// parses every program it is sent (compiler/python_syntax.hpp).
compiler_actor spawn_compiler(caf::actor_system& system, std::string python);

}  // namespace kgym
