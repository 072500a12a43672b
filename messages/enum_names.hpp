// The schema's enums as people write them: on command lines and in config files a value is
// its name in lower case ("cuda" for CUDA), and errors list the names a field accepts.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/generated_enum_reflection.h>

#include "messages/ascii_case.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kgym {

// An enum's "not set" value (FOO_UNSPECIFIED = 0), which no person names.
inline bool unspecified(const google::protobuf::EnumValueDescriptor* v) {
  const std::string suffix = "_UNSPECIFIED";
  return v->number() == 0 && v->name().size() > suffix.size() &&
         v->name().compare(v->name().size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `value`'s name in lower case ("cuda").
template <class E>
std::string lower_name(E value) {
  const auto* v = google::protobuf::GetEnumDescriptor<E>()->FindValueByNumber(static_cast<int>(value));
  return ascii_lower(v ? v->name() : std::to_string(static_cast<int>(value)));
}

// The value `text` names in any case; none for an unknown name or the unspecified value.
template <class E>
std::optional<E> enum_named(const std::string& text) {
  const auto* v = google::protobuf::GetEnumDescriptor<E>()->FindValueByName(ascii_upper(text));
  if (!v || unspecified(v))
    return std::nullopt;
  return static_cast<E>(v->number());
}

// The names a field of type E accepts, in the schema's order: {"cpu", "cuda"}.
template <class E>
std::vector<std::string> enum_names() {
  const auto* d = google::protobuf::GetEnumDescriptor<E>();
  std::vector<std::string> names;
  for (int i = 0; i < d->value_count(); ++i)
    if (!unspecified(d->value(i)))
      names.push_back(lower_name(static_cast<E>(d->value(i)->number())));
  return names;
}

// Names for an error: "cpu or cuda", "trloo, grpo or ...".
inline std::string choices_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

// The same for an enum's names.
template <class E>
std::string enum_choices() {
  return choices_text(enum_names<E>());
}

}  // namespace kgym
