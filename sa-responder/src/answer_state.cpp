// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one loader of the policy and partitions against a fabric model (answer_state.h).
#include "rdma-qos/sa-responder/answer_state.h"

#include <fmt/format.h>

#include "rdma-qos/sa-responder/path_bits.h"

namespace rdmaqos::sad {

StateLoad load_answer_state(std::shared_ptr<const FabricModel> model, const StateInputs& inputs) {
  namespace pol = rdmaqos::policy;
  StateLoad out;
  auto say = [&out](const rdmaqos::Diagnostic& d, const std::string& file) {
    out.diagnostics.push_back(rdmaqos::format_diagnostic(d, file));
    out.errors.push_back(d.severity == rdmaqos::Severity::kError);
  };
  bool ok = true;
  for (const auto* f : {&inputs.partitions, &inputs.policy}) {
    if (*f && !(*f)->text) {
      out.diagnostics.push_back(
          fmt::format("{}: cannot read the file: {}", (*f)->path, (*f)->error));
      out.errors.push_back(true);
      ok = false;
    }
  }
  if (!ok) return out;
  auto fabric = std::make_shared<pol::Fabric>(model->policy_fabric());
  if (!inputs.partitions) {
    fabric->partitions = pol::default_partitions(*fabric);
  } else {
    auto r = pol::parse_partitions(*inputs.partitions->text, *fabric);
    for (const auto& d : r.diagnostics) say(d, inputs.partitions->path);
    if (rdmaqos::has_errors(r.diagnostics)) ok = false;
    fabric->partitions = std::move(r.partitions);
  }
  std::shared_ptr<const pol::CompiledPolicy> policy;
  if (inputs.policy) {
    // load_policy's diagnostics: the parse's and the compilation's, in file order.
    pol::CompileResult compiled = inputs.parsed
                                      ? pol::load_policy(*inputs.parsed, fabric.get())
                                      : pol::load_policy(*inputs.policy->text, fabric.get());
    for (const auto& d : compiled.diagnostics) say(d, inputs.policy->path);
    policy = std::move(compiled.policy);
    if (!policy) {
      ok = false;
    } else {
      if (inputs.qos) {
        for (const auto& d : pol::check_level_sls(policy->policy(), *inputs.qos))
          say(d, inputs.policy->path);
      }
      for (const auto& d : path_bits_warnings(*policy, *model)) say(d, inputs.policy->path);
    }
  }
  auto groups = std::make_shared<const std::vector<MulticastGroup>>(
      ipoib_broadcast_groups(fabric->partitions, inputs.subnet_timeout));
  if (ok) {
    out.state =
        AnswerState{std::move(model), std::move(fabric), std::move(policy), std::move(groups)};
  }
  return out;
}

}  // namespace rdmaqos::sad
