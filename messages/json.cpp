#include "messages/json.hpp"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <memory>

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
  options.case_insensitive_enum_parsing = true;  // "cuda" as well as "CUDA": config files are written by people
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

namespace {

// `text` as a JSON string literal, quoted and escaped.
std::string json_string(const std::string& text) {
  google::protobuf::Value v;
  v.set_string_value(text);
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(v, &out);
  return out;
}

}  // namespace

std::string set_field(const std::string& setting, google::protobuf::Message* message) {
  auto eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    return "expected NAME=VALUE";
  const std::string name = setting.substr(0, eq), value = setting.substr(eq + 1);
  if (!message->GetDescriptor()->FindFieldByName(name))
    return "no field '" + name + "' in " + message->GetDescriptor()->name();
  std::string merged, error;
  for (const std::string& overlay : {"{\"" + name + "\":" + value + "}", "{\"" + name + "\":" + json_string(value) + "}"}) {
    std::unique_ptr<google::protobuf::Message> copy(message->New());
    copy->CopyFrom(*message);
    error = merge_json(to_json(*message), overlay, &merged);
    if (error.empty())
      error = from_json(merged, copy.get());
    if (error.empty()) {
      message->CopyFrom(*copy);
      return "";
    }
  }
  return error;
}

}  // namespace kgym
