// Records stored by an earlier kgym, read into today's schema. Where the schema came to type a
// field that was a string, the old field keeps its number under a legacy_ name, and reading
// moves its value into the typed field; a record written today has no legacy value.
#pragma once

#include "messages/kgym.pb.h"

namespace kgym {

// The feedback a string named ("first", "correct_fast": the lower-case names kgym wrote), or
// FEEDBACK_STATE_UNSPECIFIED for any other string.
FeedbackState feedback_named(const std::string& legacy);

// legacy_failed_phase -> failed_phase, Evidence.legacy_kind -> Evidence.kind for every piece of
// evidence, and legacy_mode -> mode for every trial and launch record.
void upgrade_stored(ExecResult* result);

// Turn.legacy_feedback_state -> Turn.feedback, and each turn's result as above.
void upgrade_stored(Episode* episode);

// PolicyTable.legacy_state -> PolicyTable.state, for every table.
void upgrade_stored(EmbeddedPolicy* policy);

}  // namespace kgym
