// api_service: the evaluation API's requests and answers. The serve loop (service/eval_service)
// owns the sockets: it hands this actor each request it decoded and each HTTP call, and sends
// what the actor leaves in its outbox (service/api_outbox.hpp). The actor checks each request,
// sends it to the scheduler, journals it, keeps who waits for what (the pure request_table)
// and each answer for its time, and answers every waiter. Spawned by spawn_api_service
// (service/api_service.hpp).
#pragma once

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actors/scheduler.hpp"
#include "messages/caf_types.hpp"
#include "messages/kgym.pb.h"

namespace kgym {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
using http_atom = caf::atom_constant<caf::atom("http")>;
using delivered_atom = caf::atom_constant<caf::atom("delivered")>;
using undelivered_atom = caf::atom_constant<caf::atom("undeliver")>;
using committed_atom = caf::atom_constant<caf::atom("committed")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using finish_atom = caf::atom_constant<caf::atom("finish")>;

using api_service_actor = caf::typed_actor<
    // A ZeroMQ client's request as the loop decoded it (the last string: why it could not be
    // decoded, else empty), where its answer goes, and where it came from (for the log).
    caf::reacts_to<submit_atom, EvalRequest, ReplyRoute, std::string, std::string>,
    // An HTTP call (its answer goes to the outbox under HttpCall.id).
    caf::reacts_to<http_atom, HttpCall>,
    // Answers the loop handed to their ZeroMQ clients, by request id (the journal marks them).
    caf::reacts_to<delivered_atom, std::vector<std::string>>,
    // One the loop could not hand over now (its client away): tried again later, until the
    // given steady-clock deadline (ns) for a redelivery, or for as long as configured (0).
    caf::reacts_to<undelivered_atom, ReplyRoute, EvalResult, int64_t>,
    // The journal's writer committed answers: their waiters are answered now.
    caf::reacts_to<committed_atom>,
    // Its own timers: redeliveries due, long polls out of time, the progress line, the counts;
    // what it gave the journal's writer handed over (true: the timer's, false: after the
    // messages already in its mailbox).
    caf::reacts_to<tick_atom>,
    caf::reacts_to<flush_atom, bool>,
    // No new requests from now; the outbox says when none is in flight (api_outbox::drained).
    caf::reacts_to<drain_atom>,
    // The end (drained, or the drain's limit passed): every waiter left is told to send again,
    // the journal's writer is stopped and the journal settled; the counts at the end.
    caf::replies_to<finish_atom>::with<ServeStatus>,
    // The request table's counts and the scheduler's queue and executors, now.
    caf::replies_to<status_atom>::with<ServeStatus>>;

}  // namespace kgym
