#include "messages/json.hpp"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace kgym {

std::string to_json(const google::protobuf::Message& message, bool all_fields) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = all_fields;
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

namespace {
void merge_struct(google::protobuf::Struct& base, const google::protobuf::Struct& overlay) {
  for (const auto& [key, value] : overlay.fields()) {
    auto& target = (*base.mutable_fields())[key];
    if (value.has_struct_value() && target.has_struct_value())
      merge_struct(*target.mutable_struct_value(), value.struct_value());
    else
      target = value;
  }
}
}  // namespace

std::string merge_json(const std::string& base, const std::string& overlay, std::string* merged) {
  google::protobuf::Struct a, b;
  auto status = google::protobuf::util::JsonStringToMessage(base, &a);
  if (status.ok())
    status = google::protobuf::util::JsonStringToMessage(overlay, &b);
  if (!status.ok())
    return std::string(status.message());
  merge_struct(a, b);
  status = google::protobuf::util::MessageToJsonString(a, merged);
  return status.ok() ? std::string{} : std::string(status.message());
}

}  // namespace kgym
