// The experiment's [fabric] section (fabric.hpp): reading it strictly, like
// the rest of the file. Used by the experiment parser (experiment.cpp).
#pragma once

#include "experiment/toml_fields.hpp"

namespace wanlab::harness::detail {

// [fabric] into experiment().fabric; absent, the fabric stays unset (the
// simulator then models the emulated testbed).
void read_fabric(FieldReader& reader, const toml::table& root);

}  // namespace wanlab::harness::detail
