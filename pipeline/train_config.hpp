// The configuration of a training run: embedded defaults, a JSON file over them (the JSON
// mapping of TrainConfig), command-line flags over that; validated with errors that say
// what to change.
#pragma once

#include <string>

#include "messages/kgym.pb.h"

namespace kgym {

TrainConfig default_train_config(Device device = CPU);

// `path`'s JSON object overlaid on the defaults; unknown keys are an error.
TrainConfig load_train_config(const std::string& path, Device device = CPU);

// Throws std::invalid_argument naming the field and the accepted values.
void validate(const TrainConfig& config);

}  // namespace kgym
