// An experiment from plan to simulated run (simulate.hpp).
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace wanlab::harness {

RunRecord simulate_experiment(const Experiment& experiment, const emulator::Scenario& scenario) {
  return simulate(make_plan(experiment, scenario), scenario, link_model_for(scenario, experiment.scale),
                  experiment.iterations);
}

}  // namespace wanlab::harness
