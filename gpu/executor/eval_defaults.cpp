#include "gpu/executor/eval_defaults.hpp"

#include <stdexcept>
#include <vector>

#include "messages/ascii_case.hpp"
#include "messages/enum_names.hpp"
#include "messages/json.hpp"

namespace kgym {

Precision precision_named(const std::string& name) {
  if (auto precision = enum_named<Precision>(name))
    return *precision;
  throw std::invalid_argument("precision must be " + enum_choices<Precision>() + ", got '" + name + "'");
}

ToleranceSet tolerance_set_named(const std::string& name) {
  ToleranceSet set;
  if (!ToleranceSet_Parse(ascii_upper(name) + "_TOLERANCES", &set))
    throw std::invalid_argument("tolerances must be kernelbench or dr_kernel, got '" + name + "'");
  return set;
}

// The schema's values are PLACEMENT_KEPT, ...; people write "kept".
const std::string placement_prefix = "placement_";

Placement placement_named(const std::string& name) {
  if (auto placement = enum_named<Placement>(placement_prefix + name))
    return *placement;
  throw std::invalid_argument("placement must be " + choices_text(placement_names()) + ", got '" + name + "'");
}

std::string placement_name(Placement placement) {
  return lower_name(placement).substr(placement_prefix.size());
}

std::vector<std::string> placement_names() {
  std::vector<std::string> names;
  for (const auto& name : enum_names<Placement>())
    names.push_back(name.substr(placement_prefix.size()));
  return names;
}

const EvalDefaults& eval_defaults() {
  static const EvalDefaults defaults = [] {
    EvalDefaults d;
    const std::string error = from_json(eval_defaults_json(), &d);
    if (!error.empty())  // a build from a broken messages/eval_defaults.json: nothing can run
      throw std::logic_error("messages/eval_defaults.json does not parse as EvalDefaults: " + error);
    return d;
  }();
  return defaults;
}

double default_tolerance(Precision precision, ToleranceSet tolerances) {
  for (const auto& t : eval_defaults().tolerances())
    if (t.set() == tolerances && t.precision() == precision)
      return t.tolerance();
  throw std::logic_error("messages/eval_defaults.json has no tolerance for " + ToleranceSet_Name(tolerances) + " " +
                         Precision_Name(precision));
}

namespace {

// Every numeric field of `options` that is zero or less, and every enum at its zero value, takes
// the value `defaults` sets.
void fill_unset(EvalOptions* options, const EvalOptions& defaults) {
  using google::protobuf::FieldDescriptor;
  const auto* reflection = options->GetReflection();
  std::vector<const FieldDescriptor*> given;
  defaults.GetReflection()->ListFields(defaults, &given);
  for (const FieldDescriptor* f : given) {
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        if (reflection->GetInt32(*options, f) <= 0) reflection->SetInt32(options, f, reflection->GetInt32(defaults, f));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        if (reflection->GetInt64(*options, f) <= 0) reflection->SetInt64(options, f, reflection->GetInt64(defaults, f));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        if (reflection->GetUInt64(*options, f) == 0)
          reflection->SetUInt64(options, f, reflection->GetUInt64(defaults, f));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        if (reflection->GetDouble(*options, f) <= 0)
          reflection->SetDouble(options, f, reflection->GetDouble(defaults, f));
        break;
      case FieldDescriptor::CPPTYPE_ENUM:  // an enum's zero value is its "unset" (Placement)
        if (reflection->GetEnumValue(*options, f) == 0)
          reflection->SetEnumValue(options, f, reflection->GetEnumValue(defaults, f));
        break;
      default:
        throw std::logic_error("messages/eval_defaults.json sets " + f->name() + ", which has no default rule");
    }
  }
}

}  // namespace

EvalOptions with_defaults(EvalOptions o, Device device) {
  fill_unset(&o, eval_defaults().all());
  fill_unset(&o, device == CUDA ? eval_defaults().cuda() : eval_defaults().cpu());
  if (o.atol() <= 0) o.set_atol(default_tolerance(o.precision(), o.tolerances()));
  if (o.rtol() <= 0) o.set_rtol(default_tolerance(o.precision(), o.tolerances()));
  if (o.max_timed_s() <= 0) o.set_max_timed_s(o.min_timed_s());  // a fixed span where no cap is given
  if (o.max_timed_s() < o.min_timed_s()) o.set_max_timed_s(o.min_timed_s());
  return o;
}

}  // namespace kgym
