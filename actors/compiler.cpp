#include "actors/compiler.hpp"

#include <caf/all.hpp>

#include <memory>
#include <unordered_map>

#include "pipeline/bounded_cache.hpp"
#include "pipeline/content_hash.hpp"
#include "compiler/python_syntax.hpp"
#include "policy/prompt.hpp"

namespace kgym {

CompileResult static_checks(const CompileRequest& request) {
  CompileResult r;
  auto program = extract_program(request.response());
  if (!program) {
    r.set_error("no fenced code block in the answer: put the whole program in one ```python block");
    return r;
  }
  r.set_source(*program);
  r.set_source_hash(content_hash(*program));
  if (program->find("class ModelNew") == std::string::npos)
    r.set_error("the program defines no class ModelNew");
  return r;
}

namespace {

struct compiler_state {
  std::unique_ptr<python_syntax_checker> parser;
  bounded_cache<CompileResult> cache{100000};  // source hash -> result (no source kept beyond)
  static inline const char* name = "compiler";
};

compiler_actor::behavior_type compiler_impl(compiler_actor::stateful_pointer<compiler_state> self,
                                            std::string python) {
  self->state.parser = std::make_unique<python_syntax_checker>(std::move(python));
  return {
      [self](const CompileRequest& request) -> CompileResult {
        CompileResult r = static_checks(request);
        if (!r.error().empty() || r.source().empty())
          return r;
        if (const CompileResult* hit = self->state.cache.find(r.source_hash())) {
          CompileResult cached = *hit;
          cached.set_cached(true);
          return cached;
        }
        try {
          r.set_error(self->state.parser->error_of(r.source()));
        } catch (const std::exception& e) {
          r.set_error(std::string("the syntax check could not run: ") + e.what());
          return r;  // kgym's problem, not the program's: do not cache
        }
        r.set_ok(r.error().empty());
        self->state.cache.put(r.source_hash(), r);
        return r;
      },
  };
}

}  // namespace

compiler_actor spawn_compiler(caf::actor_system& system, std::string python) {
  return system.spawn<caf::detached>(compiler_impl, std::move(python));
}

}  // namespace kgym
