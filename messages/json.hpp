// The proto3 JSON mapping of kgym messages, as the sandbox and `--json` outputs speak it.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace kgym {

// One line of JSON with the .proto field names (snake_case).
std::string to_json(const google::protobuf::Message& message);

// Parses strictly: unknown fields are an error. Returns the error text, empty on success.
std::string from_json(const std::string& json, google::protobuf::Message* message);

}  // namespace kgym
