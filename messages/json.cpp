#include "messages/json.hpp"

#include <google/protobuf/util/json_util.h>

namespace kgym {

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  return status.ok() ? out : std::string{};
}

std::string from_json(const std::string& json, google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(json, message, options);
  return status.ok() ? std::string{} : std::string(status.message());
}

}  // namespace kgym
