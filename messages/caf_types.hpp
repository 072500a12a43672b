// Lets CAF carry the generated protobuf types between actors, locally and across nodes:
// they travel as their protobuf wire bytes.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/save_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/sec.hpp>
#include <google/protobuf/message.h>

#include <string>
#include <type_traits>

#include "messages/kgym.pb.h"

namespace kgym {

template <class Inspector, class T>
typename std::enable_if<std::is_base_of<google::protobuf::Message, T>::value,
                        typename Inspector::result_type>::type
inspect(Inspector& f, T& x) {
  std::string bytes;
  auto save = [&]() -> caf::error {
    bytes = x.SerializeAsString();
    return caf::none;
  };
  auto load = [&]() -> caf::error {
    if (!x.ParseFromString(bytes))
      return caf::make_error(caf::sec::invalid_argument, "bad protobuf bytes for " + x.GetTypeName());
    return caf::none;
  };
  return f(caf::meta::type_name(T::descriptor()->full_name().c_str()), caf::meta::save_callback(save),
           bytes, caf::meta::load_callback(load));
}

// Registers every kgym message that actors exchange.
inline void add_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<ExecRequest>("kgym.ExecRequest");
  cfg.add_message_type<ExecResult>("kgym.ExecResult");
  cfg.add_message_type<SchedulerStatus>("kgym.SchedulerStatus");
  cfg.add_message_type<SandboxEvent::Built>("kgym.SandboxEvent.Built");
  cfg.add_message_type<ProfileReport>("kgym.ProfileReport");
  cfg.add_message_type<CandidateTrace>("kgym.CandidateTrace");
  cfg.add_message_type<GenerateRequest>("kgym.GenerateRequest");
  cfg.add_message_type<Completion>("kgym.Completion");
  cfg.add_message_type<CompileRequest>("kgym.CompileRequest");
  cfg.add_message_type<CompileResult>("kgym.CompileResult");
  cfg.add_message_type<RewardBreakdown>("kgym.RewardBreakdown");
  cfg.add_message_type<EmbeddedPolicy>("kgym.EmbeddedPolicy");
  cfg.add_message_type<PolicyVersion>("kgym.PolicyVersion");
  cfg.add_message_type<EpisodeSpec>("kgym.EpisodeSpec");
  cfg.add_message_type<Episode>("kgym.Episode");
  cfg.add_message_type<IterationBatch>("kgym.IterationBatch");
  cfg.add_message_type<LearnerStep>("kgym.LearnerStep");
  cfg.add_message_type<IterationMetrics>("kgym.IterationMetrics");
  cfg.add_message_type<EpisodeStatus>("kgym.EpisodeStatus");
  cfg.add_message_type<MonitorView>("kgym.MonitorView");
}

}  // namespace kgym
