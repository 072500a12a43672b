#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <zmq.hpp>

#include "actors/learner.hpp"
#include "messages/ids.hpp"
#include "messages/json.hpp"
#include "pipeline/iteration_metrics.hpp"
#include "pipeline/run_dir.hpp"

namespace kgym {

namespace {

// A REQ socket to the trainer; a request that times out drops the socket (REQ cannot send
// again before it has a reply), so the next request starts clean.
class trainer_connection {
 public:
  explicit trainer_connection(TrainerConfig config) : config_(std::move(config)) {}

  TrainerReply call(const TrainerRequest& request) {
    TrainerReply reply;
    if (!socket_) {
      socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::req);
      socket_->set(zmq::sockopt::linger, 0);
      socket_->connect(config_.endpoint());
    }
    std::string json = to_json(request);
    socket_->send(zmq::buffer(json), zmq::send_flags::none);
    zmq::pollitem_t item{static_cast<void*>(*socket_), 0, ZMQ_POLLIN, 0};
    long timeout_ms = static_cast<long>(config_.timeout_s() * 1000);
    if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) == 0) {
      socket_.reset();
      reply.set_error("the trainer at " + config_.endpoint() + " did not answer within " +
                      std::to_string(config_.timeout_s()) + " s");
      return reply;
    }
    zmq::message_t frame;
    (void)socket_->recv(frame);
    std::string error = from_json(frame.to_string(), &reply);
    if (!error.empty())
      reply.set_error("the trainer's answer is not a TrainerReply: " + error);
    return reply;
  }

 private:
  TrainerConfig config_;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;
};

// How the learner and the trainer name a turn.
std::string sample_id(const Episode& e, int t) { return turn_id(e.episode_id(), t); }

TrainSample sample_of(const Episode& e, int t, const std::string& system_prompt) {
  const Turn& turn = e.turns(t);
  TrainSample s;
  s.set_sample_id(sample_id(e, t));
  s.set_system_prompt(system_prompt);
  s.set_prompt(turn.prompt());
  s.mutable_prompt_token_ids()->CopyFrom(turn.prompt_token_ids());
  s.mutable_response_token_ids()->CopyFrom(turn.token_ids());
  s.mutable_rollout_logprobs()->CopyFrom(turn.rollout_logprobs());
  s.set_policy_version(turn.policy_version());
  return s;
}

struct trainer_learner_state {
  int64_t version = 0;
  learner_options options;
  std::unique_ptr<trainer_connection> trainer;
  static inline const char* name = "learner";
};

// The trainer's log-probs of every scorable turn, by sample id; empty (and logged) on failure.
std::map<std::string, std::vector<double>> score(trainer_learner_state& s, const IterationBatch& batch) {
  TrainerRequest request;
  for (const auto& e : batch.episodes())
    for (int t = 0; t < e.turns_size(); ++t)
      if (e.turns(t).token_ids_size() > 0)
        *request.mutable_score()->add_samples() = sample_of(e, t, s.options.system_prompt);
  std::map<std::string, std::vector<double>> out;
  if (request.score().samples_size() == 0)
    return out;
  TrainerReply reply = s.trainer->call(request);
  if (!reply.error().empty()) {
    spdlog::error("learner: iteration {}: scoring failed: {}", batch.iteration(), reply.error());
    return out;
  }
  for (const auto& sample : reply.score().samples())
    out[sample.sample_id()] = {sample.trainer_logprobs().begin(), sample.trainer_logprobs().end()};
  return out;
}

learner_actor::behavior_type trainer_learner_impl(learner_actor::stateful_pointer<trainer_learner_state> self,
                                                  int64_t version, learner_options options) {
  auto& st = self->state;
  st.version = version;
  st.options = std::move(options);
  if (!st.options.trainer.endpoint().empty())
    st.trainer = std::make_unique<trainer_connection>(st.options.trainer);
  return {
      [self](const IterationBatch& batch) -> IterationMetrics {
        auto& s = self->state;
        std::map<std::string, std::vector<double>> scored;
        if (s.trainer)
          scored = score(s, batch);
        // Without a trainer nothing learns: the rollout's own log-probs stand in (ratio 1).
        auto trainer_logprobs = [&](const Episode& e, int t) -> std::optional<std::vector<double>> {
          if (!s.trainer)
            return std::vector<double>(e.turns(t).rollout_logprobs().begin(), e.turns(t).rollout_logprobs().end());
          auto found = scored.find(sample_id(e, t));
          return found == scored.end() ? std::nullopt : std::optional<std::vector<double>>(found->second);
        };
        turn_selection selection = select_training_turns(batch, s.version, s.options.settings, trainer_logprobs);
        if (s.trainer && !selection.kept.empty()) {
          TrainerRequest request;
          TrainBatch* train = request.mutable_train();
          train->set_iteration(batch.iteration());
          train->set_policy_version(s.version);
          train->set_clip(s.options.clip);
          for (const auto& k : selection.kept) {
            const Episode& e = batch.episodes(k.episode);
            TrainSample sample = sample_of(e, k.turn, s.options.system_prompt);
            const auto& logp = scored[sample.sample_id()];
            sample.mutable_trainer_logprobs()->Add(logp.begin(), logp.end());
            for (int i = 0; i < sample.response_token_ids_size(); ++i)
              sample.add_advantages(k.advantage);
            *train->add_samples() = std::move(sample);
          }
          TrainerReply reply = s.trainer->call(request);
          if (!reply.error().empty()) {
            spdlog::error("learner: iteration {}: the trainer's update failed: {} (the policy stays at version {})",
                          batch.iteration(), reply.error(), s.version);
          } else {
            spdlog::info("learner: iteration {}: version {} from the trainer (loss {:.4f}, {} tokens, {:.1f} s) at {}",
                         batch.iteration(), reply.version().version(), reply.version().loss(),
                         reply.version().tokens(), reply.version().train_s(), reply.version().weights_path());
            s.version = reply.version().version();
            self->send(s.options.inference, reply.version());
          }
        }
        selection.step.set_version(s.version);
        IterationMetrics metrics = iteration_metrics(batch, selection.step, s.options.lazy_coverage);
        EmbeddedPolicy marker;  // an LLM's weights live with the trainer: the run keeps how far it got
        marker.set_version(batch.iteration() + 1);
        run_dir::record_iteration(s.options.run_dir, metrics, marker);
        self->send(s.options.monitor, metrics);
        return metrics;
      },
  };
}

}  // namespace

learner_actor spawn_trainer_learner(caf::actor_system& system, int64_t version, learner_options options) {
  return system.spawn<caf::detached>(trainer_learner_impl, version, std::move(options));
}

}  // namespace kgym
