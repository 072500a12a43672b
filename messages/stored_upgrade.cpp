#include "messages/stored_upgrade.hpp"

#include "messages/enum_names.hpp"

namespace kgym {

FeedbackState feedback_named(const std::string& legacy) {
  return enum_named<FeedbackState>("feedback_" + legacy).value_or(FEEDBACK_STATE_UNSPECIFIED);
}

namespace {

// A trial's or launch record's "train"/"eval" into its ForwardMode.
template <class Record>
void upgrade_mode(Record* record) {
  if (record->legacy_mode().empty())
    return;
  if (record->mode() == FORWARD_MODE_UNSPECIFIED)
    record->set_mode(enum_named<ForwardMode>("mode_" + record->legacy_mode()).value_or(FORWARD_MODE_UNSPECIFIED));
  record->clear_legacy_mode();
}

}  // namespace

void upgrade_stored(ExecResult* result) {
  if (!result->legacy_failed_phase().empty()) {
    if (result->failed_phase() == EVAL_PHASE_UNSPECIFIED)
      result->set_failed_phase(
          enum_named<EvalPhase>("phase_" + result->legacy_failed_phase()).value_or(EVAL_PHASE_UNSPECIFIED));
    result->clear_legacy_failed_phase();
  }
  for (auto& e : *result->mutable_evidence()) {
    if (e.legacy_kind().empty())
      continue;
    if (e.kind() == EVIDENCE_KIND_UNSPECIFIED)
      e.set_kind(enum_named<EvidenceKind>(e.legacy_kind()).value_or(EVIDENCE_KIND_UNSPECIFIED));
    e.clear_legacy_kind();
  }
  for (auto& trial : *result->mutable_trials()) upgrade_mode(&trial);
  for (auto& launch : *result->mutable_launches()) upgrade_mode(&launch);
}

void upgrade_stored(Episode* episode) {
  for (auto& turn : *episode->mutable_turns()) {
    upgrade_stored(turn.mutable_result());
    if (turn.legacy_feedback_state().empty())
      continue;
    if (turn.feedback() == FEEDBACK_STATE_UNSPECIFIED)
      turn.set_feedback(feedback_named(turn.legacy_feedback_state()));
    turn.clear_legacy_feedback_state();
  }
}

void upgrade_stored(EmbeddedPolicy* policy) {
  for (auto& table : *policy->mutable_tables()) {
    if (table.legacy_state().empty())
      continue;
    if (table.state() == FEEDBACK_STATE_UNSPECIFIED)
      table.set_state(feedback_named(table.legacy_state()));
    table.clear_legacy_state();
  }
}

}  // namespace kgym
