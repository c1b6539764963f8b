// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's subscription to the SM's traps: InformInfo and Notice on the wire, and the
// rounds of Sets, the reports and the re-discoveries they start.
#include "rdma-qos/sa-responder/trap_subscription.h"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace rdmaqos::sad {

namespace {

// RespTimeValue of our InformInfo (4.096 us * 2^18, about 1 s); the SM keeps it in the
// subscription and an unsubscription must repeat it.
constexpr uint8_t kRespTimeValue = 18;

std::string trap_name(uint16_t trap) {
  switch (trap) {
    case 64: return "GID in service";
    case 65: return "GID out of service";
    case 128: return "link state change";
    case 144: return "capability change";
    default: return "trap";
  }
}

std::string gid_text(const std::array<uint8_t, 16>& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.data(), text, sizeof text);
  return text;
}

std::string trap_list(const std::vector<uint16_t>& traps) {
  std::string out;
  for (uint16_t t : traps) out += (out.empty() ? "" : ", ") + std::to_string(t);
  return out;
}

// Traps whose change the SM routes after reporting it: a second look once it has.
bool rerouted_after(uint16_t trap) {
  return trap == 65 || trap == 128;
}

}  // namespace

sa::SaMad inform_info_set(uint16_t trap, bool subscribe, uint64_t tid) {
  sa::SaMad mad;
  mad.mad.method = sa::method::kSet;
  mad.mad.attr_id = sa::attr::kInformInfo;
  mad.mad.tid = tid;
  mad.data.assign(kInformInfoSize, 0);
  uint8_t* d = mad.data.data();
  // GID (0..15) zero: the LID range says which issuers, and 0xFFFF says all of them.
  sa::wire::put16(d + 16, 0xFFFF);                                     // LIDRangeBegin
  sa::wire::put16(d + 18, 0);                                          // LIDRangeEnd
  d[22] = 1;                                                           // IsGeneric
  d[23] = subscribe ? 1 : 0;                                           // Subscribe
  sa::wire::put16(d + 24, 0xFFFF);                                     // Type: any
  sa::wire::put16(d + 26, trap);                                       // TrapNumber
  sa::wire::put32(d + 28, uint32_t{sa::kSaQp} << 8 | kRespTimeValue);  // QPN, RespTimeValue
  d[33] = 0xFF;                                                        // ProducerType 0xFFFFFF: any
  d[34] = 0xFF;
  d[35] = 0xFF;
  return mad;
}

rdmaqos::Result<Notice> decode_notice(std::span<const uint8_t> data) {
  if (data.size() < kNoticeSize) {
    return rdmaqos::make_error(
        rdmaqos::ErrorCode::kInvalidArgument,
        fmt::format("a notice of {} bytes (it has {})", data.size(), kNoticeSize));
  }
  const uint8_t* d = data.data();
  Notice n;
  n.generic = (d[0] & 0x80) != 0;
  n.type = d[0] & 0x7F;
  n.producer = uint32_t{d[1]} << 16 | uint32_t{d[2]} << 8 | d[3];
  n.trap = sa::wire::get16(d + 4);
  n.issuer_lid = sa::wire::get16(d + 6);
  std::memcpy(n.issuer_gid.data(), d + 64, 16);
  // DataDetails start at byte 10.
  if (n.generic && n.trap >= 64 && n.trap <= 67) std::memcpy(n.subject_gid.data(), d + 16, 16);
  if (n.generic && n.trap == 128) n.switch_lid = sa::wire::get16(d + 10);
  return n;
}

std::string describe(const Notice& n) {
  if (!n.generic) {
    return fmt::format("vendor notice (vendor 0x{:06x}, device 0x{:04x}) from LID {}", n.producer,
                       n.trap, n.issuer_lid);
  }
  if (n.trap >= 64 && n.trap <= 67) {
    return fmt::format("trap {} ({}) of {}", n.trap, trap_name(n.trap), gid_text(n.subject_gid));
  }
  if (n.trap == 128) {
    return fmt::format("trap 128 (link state change) at switch LID {}", n.switch_lid);
  }
  return fmt::format("trap {} ({}) from LID {}", n.trap, trap_name(n.trap), n.issuer_lid);
}

std::vector<sa::SaMad> TrapSubscription::due(Clock::time_point now, uint16_t sm_lid,
                                             uint16_t own_lid, std::string* log) {
  std::lock_guard lock(mutex_);
  std::vector<sa::SaMad> out;
  if (leaving_) return out;
  if (sm_lid == 0 || sm_lid == own_lid) {
    // Nobody to subscribe to: this SA is at the SM's port, or the port has no SM yet.
    if (sm_lid_ != 0 && log) *log = fmt::format("no SM to subscribe to (SM LID {})", sm_lid);
    sm_lid_ = 0;
    pending_.clear();
    subscribed_.clear();
    next_round_.reset();
    return out;
  }
  if (sm_lid != sm_lid_) {
    begin_round(now, sm_lid, out);
    return out;
  }
  if (!pending_.empty() && now - *round_started_ >= timing_.answer_within) {
    std::string what = fmt::format(
        "the SM at LID {} did not answer the subscription to trap{} {} within {} ms: fabric "
        "changes are seen at the next re-discovery; trying again in {} s",
        sm_lid_, pending_.size() > 1 ? "s" : "", trap_list([&] {
          std::vector<uint16_t> t;
          for (const auto& [tid, trap] : pending_) t.push_back(trap);
          return t;
        }()),
        timing_.answer_within.count(), timing_.retry.count());
    pending_.clear();
    next_round_ = now + timing_.retry;
    if (problem_ != what && log) *log = what;
    problem_ = std::move(what);
    return out;
  }
  if (pending_.empty() && next_round_ && now >= *next_round_) begin_round(now, sm_lid, out);
  return out;
}

void TrapSubscription::begin_round(Clock::time_point now, uint16_t sm_lid,
                                   std::vector<sa::SaMad>& out) {
  if (sm_lid != sm_lid_) {
    subscribed_.clear();
    problem_.reset();
  }
  sm_lid_ = sm_lid;
  pending_.clear();
  round_started_ = now;
  next_round_ = now + timing_.renew;
  round_accepted_.clear();
  round_refused_.clear();
  for (uint16_t trap : kSubscribedTraps) out.push_back(inform_info_set(trap, true, take_tid(trap)));
}

uint32_t TrapSubscription::take_tid(uint16_t trap) {
  const uint32_t tid = next_tid_++;
  if (next_tid_ == 0) next_tid_ = 1;  // 0 is no TID
  pending_[tid] = trap;
  return tid;
}

TrapSubscription::Outcome TrapSubscription::received(const sa::SaMad& mad, uint16_t from_lid,
                                                     Clock::time_point now) {
  Outcome out;
  const bool answer =
      mad.mad.attr_id == sa::attr::kInformInfo && mad.mad.method == sa::method::kGetResp;
  const bool report = mad.mad.attr_id == sa::attr::kNotice && mad.mad.method == sa::method::kReport;
  if (!answer && !report) return out;
  std::lock_guard lock(mutex_);
  if (answer) {
    // The kernel (or umad2sim) puts its agent's number in the TID's upper half.
    auto it = pending_.find(static_cast<uint32_t>(mad.mad.tid));
    if (it == pending_.end()) {
      out.kind = Received::kStale;
      return out;
    }
    out.kind = Received::kAnswer;
    if (leaving_) {
      pending_.erase(it);
      return out;
    }
    const uint16_t trap = it->second;
    pending_.erase(it);
    if (mad.mad.status == 0) {
      round_accepted_.push_back(trap);
    } else {
      round_refused_.push_back(
          fmt::format("trap {}: {}", trap, sa::mad_status_name(mad.mad.status)));
    }
    if (!pending_.empty()) return out;
    // The round is complete.
    std::sort(round_accepted_.begin(), round_accepted_.end());
    const bool changed = round_accepted_ != subscribed_;
    subscribed_ = round_accepted_;
    if (round_refused_.empty()) {
      if (changed || problem_) {
        out.log = fmt::format(
            "subscribed to the SM's traps {} at LID {}: fabric changes are "
            "re-discovered within seconds",
            trap_list(subscribed_), sm_lid_);
      }
      problem_.reset();
    } else {
      std::string refused;
      for (const auto& r : round_refused_) refused += (refused.empty() ? "" : "; ") + r;
      std::string what = fmt::format(
          "the SM at LID {} refused the subscription ({}): trying "
          "again in {} s",
          sm_lid_, refused, timing_.retry.count());
      if (problem_ != what) out.log = what;
      problem_ = std::move(what);
      next_round_ = now + timing_.retry;
    }
    return out;
  }
  // A Report: answered whoever sent it (a sender that gets no ReportResp sends it again).
  sa::SaMad reply = mad;
  reply.mad.method = sa::method::kReportResp;
  reply.mad.status = 0;
  reply.data.resize(std::min(reply.data.size(), kNoticeSize));
  out.reply = std::move(reply);
  if (sm_lid_ == 0 || from_lid != sm_lid_) {
    out.kind = Received::kNotFromSm;
    if (not_from_sm_++ == 0) {
      out.log = fmt::format("a report from LID {}, not the SM's ({}): ignored", from_lid, sm_lid_);
    }
    return out;
  }
  out.kind = Received::kReport;
  auto notice = decode_notice(mad.data);
  if (!notice) {
    out.log = "a report from the SM with " + notice.error().message + ": ignored";
    return out;
  }
  ++reports_[notice->trap];
  const bool ours = notice->generic && std::find(kSubscribedTraps.begin(), kSubscribedTraps.end(),
                                                 notice->trap) != kSubscribedTraps.end();
  if (!ours) return out;
  if (!settle_at_) out.log = "the SM reports " + describe(*notice);
  if (std::find(burst_.begin(), burst_.end(), notice->trap) == burst_.end())
    burst_.push_back(notice->trap);
  settle_at_ = now + timing_.settle;
  if (rerouted_after(notice->trap)) follow_up_at_ = now + timing_.follow_up;
  return out;
}

bool TrapSubscription::rediscovery_due(Clock::time_point now, std::string* why) {
  std::lock_guard lock(mutex_);
  if (settle_at_ && now >= *settle_at_) {
    std::sort(burst_.begin(), burst_.end());
    if (why) {
      *why =
          fmt::format("the SM reported trap{} {}", burst_.size() > 1 ? "s" : "", trap_list(burst_));
    }
    settle_at_.reset();
    burst_.clear();
    ++rediscoveries_;
    return true;
  }
  if (!settle_at_ && follow_up_at_ && now >= *follow_up_at_) {
    if (why) *why = "a second look after the SM's re-routing";
    follow_up_at_.reset();
    ++rediscoveries_;
    return true;
  }
  return false;
}

std::vector<sa::SaMad> TrapSubscription::unsubscribe(uint16_t* sm_lid) {
  std::lock_guard lock(mutex_);
  std::vector<sa::SaMad> out;
  if (sm_lid) *sm_lid = sm_lid_;
  if (sm_lid_ == 0) return out;
  leaving_ = true;
  pending_.clear();
  for (uint16_t trap : subscribed_) out.push_back(inform_info_set(trap, false, take_tid(trap)));
  subscribed_.clear();
  return out;
}

bool TrapSubscription::waiting() const {
  std::lock_guard lock(mutex_);
  return !pending_.empty();
}

TrapSubscription::Status TrapSubscription::status() const {
  std::lock_guard lock(mutex_);
  return Status{sm_lid_, subscribed_, problem_, reports_, not_from_sm_, rediscoveries_};
}

nlohmann::json to_json(const TrapSubscription::Status& t) {
  nlohmann::json reports = nlohmann::json::object();
  for (const auto& [trap, n] : t.reports) reports[std::to_string(trap)] = n;
  return {{"enabled", true},
          {"sm_lid", t.sm_lid},
          {"subscribed", t.subscribed},
          {"problem", t.problem ? nlohmann::json(*t.problem) : nlohmann::json(nullptr)},
          {"reports", reports},
          {"reports_not_from_sm", t.not_from_sm},
          {"rediscoveries", t.rediscoveries}};
}

}  // namespace rdmaqos::sad
