// Helpers for results and the facts behind a verdict, so every place that makes one says it alike.
#pragma once

#include <string>
#include <vector>

#include "messages/enum_names.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

// The result answering `request`: its request, task and candidate ids, nothing decided yet.
inline ExecResult result_for(const ExecRequest& request) {
  ExecResult r;
  r.set_request_id(request.request_id());
  r.set_task_id(request.task().id());
  r.set_candidate_id(request.candidate().id());
  return r;
}

inline void add_evidence(ExecResult* result, EvidenceKind kind, const std::string& detail,
                         const std::string& source) {
  auto* e = result->add_evidence();
  e->set_kind(kind);
  e->set_detail(detail);
  e->set_source(source);
}

// A list in an evidence's detail: its first item, and how many more ("a", "a and 2 more");
// "" when empty.
inline std::string first_and_more(const std::vector<std::string>& items) {
  if (items.empty())
    return "";
  return items.front() + (items.size() > 1 ? " and " + std::to_string(items.size() - 1) + " more" : "");
}

inline bool has_evidence(const ExecResult& result, EvidenceKind kind) {
  for (const auto& e : result.evidence())
    if (e.kind() == kind)
      return true;
  return false;
}

// A phase as the judge names it: "load" for PHASE_LOAD (kgym.proto says so at EvalPhase).
inline std::string phase_name(EvalPhase phase) {
  const std::string name = lower_name(phase);
  return name.rfind("phase_", 0) == 0 ? name.substr(6) : name;
}

// A hacking finding ends the result's standing: HACKED counts as incorrect.
inline void mark_hacked(ExecResult* result, EvalPhase phase, const std::string& message) {
  result->set_verdict(HACKED);
  result->set_correct(false);
  result->set_failed_phase(phase);
  result->set_message(message);
}

}  // namespace kgym
