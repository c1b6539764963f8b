// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The answering shell both SA front ends share (answer_service.h).
#include "rdma-qos/sa-responder/answer_service.h"

namespace rdmaqos::sad {

void AnswerService::start_workers() {
  if (options_.answer_threads == 0 || pool_) return;
  pool_ = std::make_unique<AnswerPool>(options_.answer_threads,
                                       options_.answer_threads * kQueuedPerWorker, kWorkerNice);
}

void AnswerService::stop_workers() {
  pool_.reset();
}

void AnswerService::install(AnswerState state) {
  AnswerSnapshot s;
  static_cast<AnswerState&>(s) = std::move(state);
  if (s.model->multicast_groups)
    s.groups = std::make_shared<const std::vector<MulticastGroup>>(*s.model->multicast_groups);
  s.levels = counters_.bind_policy(s.policy.get());
  current_.store(std::make_shared<const AnswerSnapshot>(std::move(s)));
}

AnswerContext AnswerService::context(const AnswerSnapshot& now, std::optional<uint16_t> slid,
                                     std::optional<Clock::time_point> received) const {
  AnswerContext ctx;
  ctx.fabric = now.model.get();
  if (slid) ctx.set_requester_lid(*slid);
  ctx.policy = now.policy.get();
  ctx.partitions = &now.policy_fabric->partitions;
  ctx.sa_key = options_.sa_key;
  ctx.groups = now.groups.get();
  if (now.model->routing.assigns_sl) ctx.routing = options_.routing;
  // A table too long or an answer too late is ERR_NO_RESOURCES (counted in stats' bounded), so
  // one query cannot hold the thread that answers it for long.
  ctx.limits.max_records = options_.max_records;
  if (received && options_.answer_time_limit.count() > 0)
    ctx.limits.deadline = *received + options_.answer_time_limit;
  return ctx;
}

AnswerService::Computed AnswerService::compute(const sa::SaMad& request,
                                               const DecodedQuery& decoded, uint16_t slid,
                                               const AnswerSnapshot& now,
                                               Clock::time_point received) {
  CountingObserver observer(counters_, *now.levels);
  AnswerContext ctx = context(now, slid, received);
  ctx.observer = &observer;
  Computed out;
  out.answer = answer(ctx, request, decoded);
  if (out.answer) counters_.response(out.answer->mad.status);
  // The engine's only other silence (responses, SM_Key) the front ends rule out before.
  if (!out.answer && ctx.requester_unknown) {
    counters_.dropped_unknown_requester();
    out.requester_unknown = true;
  }
  counters_.latency(Clock::now() - received);
  return out;
}

AnswerService::Placed AnswerService::submit(const sa::SaMad& request, uint16_t slid,
                                            Clock::time_point received, AnswerPool::Task task) {
  Placed out;
  using Admission = AnswerPool::Admission;
  switch (pool_->submit({slid, request.mad.tid}, std::move(task))) {
    case Admission::kQueued:
      counters_.deferred();
      out.placement = Placement::kQueued;
      break;
    case Admission::kDuplicate:
      counters_.dropped_duplicate();
      out.placement = Placement::kDuplicate;
      break;
    case Admission::kFull:
      counters_.busy();
      out.placement = Placement::kBusy;
      out.busy = status_response(request, sa::status::kBusy);
      counters_.response(out.busy->mad.status);
      counters_.latency(Clock::now() - received);
      break;
  }
  return out;
}

nlohmann::json AnswerService::explain(const AnswerSnapshot& now, const ExplainRequest& request,
                                      const std::string& policy_path) const {
  // On nobody's behalf and unbounded, as the tool asking is the administrator; with the
  // routing engine's SLs, so that it shows what the front end answers.
  AnswerContext ctx = context(now, std::nullopt, std::nullopt);
  ctx.limits = {};
  return sad::explain(ctx, request, policy_path);
}

}  // namespace rdmaqos::sad
