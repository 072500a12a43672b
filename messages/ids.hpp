// Ids built from other ids, in one place: whoever makes or reads one uses these.
#pragma once

#include <string>

namespace kgym {

// A turn of an episode: its evaluation's request id and its training sample's id.
inline std::string turn_id(const std::string& episode_id, int turn) {
  return episode_id + "/t" + std::to_string(turn);
}

}  // namespace kgym
