// The proto3 JSON mapping of kgym messages, as the sandbox and `--json` outputs speak it.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace kgym {

// One line of JSON with the .proto field names (snake_case); `all_fields` also prints
// fields that hold their zero value (what a config file written for people needs).
std::string to_json(const google::protobuf::Message& message, bool all_fields = false);

// Parses strictly: unknown fields are an error; an enum's value may be named in lower case
// ("cuda" for CUDA). Returns the error text, empty on success.
std::string from_json(const std::string& json, google::protobuf::Message* message);

// Overlays one JSON object on another (nested objects merge key by key; anything else in
// `overlay` replaces). Returns the error text, empty on success.
std::string merge_json(const std::string& base, const std::string& overlay, std::string* merged);

// "NAME=VALUE" (a command line's --option): sets the field NAME of `message` to VALUE, read
// as JSON (a number, true, an enum's name in quotes) or else as a string. Returns the error
// text, empty on success; `message` is unchanged on error.
std::string set_field(const std::string& setting, google::protobuf::Message* message);

}  // namespace kgym

namespace kgym {

// `from_json` for records read in bulk (a trace holds thousands): scalar, enum, nested and
// repeated fields by their .proto or JSON names, no maps or well-known types. As strict as
// `from_json` on what the tests name, and many times faster (Protobuf's JSON parser took
// ~30 us a trace line on the H100's host: 0.1-0.25 s of an evaluation's answer).
std::string from_json_record(const std::string& json, google::protobuf::Message* message);

}  // namespace kgym
