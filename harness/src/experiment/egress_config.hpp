// The experiment's [egress] section (egress.hpp), read strictly like the rest
// of the file. Used by the experiment parser (experiment.cpp).
#pragma once

#include "experiment/toml_fields.hpp"

namespace wanlab::harness::detail {

// [egress] price_per_gb and [egress.pairs] "a-b" = price into experiment().egress.
// DC names are checked against the testbed by the planner (check_egress_dcs).
void read_egress(FieldReader& reader, const toml::table& root);

// Throws ExperimentError at "egress.pairs.<a-b>" for a DC the testbed lacks.
void check_egress_dcs(const Experiment& experiment, const emulator::Scenario& scenario);

}  // namespace wanlab::harness::detail
