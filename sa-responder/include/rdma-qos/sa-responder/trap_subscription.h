// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad's subscription to the SM's traps: SubnAdmSet(InformInfo) for the traps that say
// the fabric changed (64 and 65: a port in or out of service; 128: a link state changed; 144: a
// port's capabilities changed), the Report(Notice) the SM then sends, and when a re-discovery is
// due because of one. Decisions and wire formats only: the daemon sends and receives the MADs
// and passes the time in.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdma-qos/common/result.h"
#include "rdma-qos/sa-client/mad.h"

namespace rdmaqos::sad {

// The generic traps subscribed to, in the order their Sets go out.
inline constexpr std::array<uint16_t, 4> kSubscribedTraps = {64, 65, 128, 144};

// InformInfo (IBA 15.2.5.12): 36 bytes. This SA subscribes to every issuer (GID zero,
// LIDRangeBegin 0xFFFF), every type and producer (0xFFFF, 0xFFFFFF), one generic trap number.
constexpr size_t kInformInfoSize = 36;
// SubnAdmSet(InformInfo) for generic trap `trap`: subscribe, or take the subscription back.
// The QPN field says QP1, where the reports go: the SM keeps the subscription with the QPN it
// received, and matches an unsubscription against it field by field.
sa::SaMad inform_info_set(uint16_t trap, bool subscribe, uint64_t tid);

// Notice (IBA 14.2.5.1): 80 bytes; the fields this SA reads.
struct Notice {
  bool generic = false;
  uint8_t type = 0;       // 0 fatal, 1 urgent, 2 security, 3 SM, 4 informational
  uint32_t producer = 0;  // ProducerType (generic) or VendorID, 24 bits
  uint16_t trap = 0;      // TrapNumber (generic) or DeviceID
  uint16_t issuer_lid = 0;
  std::array<uint8_t, 16> issuer_gid{};
  // Traps 64-67: the GID that came in or went out of service (the SM is the issuer).
  std::array<uint8_t, 16> subject_gid{};
  uint16_t switch_lid = 0;  // trap 128: the switch whose link state changed
};
constexpr size_t kNoticeSize = 80;
// The notice in a Report's SA data; kInvalidArgument when shorter than a notice.
rdmaqos::Result<Notice> decode_notice(std::span<const uint8_t> data);
// One line for the log, e.g. "trap 65 (GID out of service) fe80::2:c903:0:3 from LID 1".
std::string describe(const Notice& notice);

class TrapSubscription {
 public:
  using Clock = std::chrono::steady_clock;
  struct Timing {
    // A burst of traps re-discovers once, this long after its last trap: OpenSM reports a new
    // port (64) once the sweep routed it, and the forwarding tables settle with the burst.
    std::chrono::milliseconds settle{2000};
    // And once more this long after the burst: a link change (128) or a port gone (65) comes
    // before the SM's re-routing, which may take longer than `settle` on a large fabric.
    std::chrono::milliseconds follow_up{30000};
    // Subscriptions are renewed this often (the SM keeps one per subscriber, so a renewal
    // only refreshes it): a new master SM at the same LID, or an SM that restarted, has none.
    std::chrono::seconds renew{300};
    // An answer to a Set not in by then counts as none; the Sets go out again after `retry`.
    std::chrono::milliseconds answer_within{5000};
    std::chrono::seconds retry{30};
  };

  TrapSubscription() : TrapSubscription(Timing{}) {}
  explicit TrapSubscription(Timing timing) : timing_(timing) {}

  // The Sets to send the SM at `sm_lid` now (none when nothing is due): at the first call, when
  // the SM LID moved, when the renewal is due, and `retry` after Sets that were not accepted
  // (none answered within `answer_within`, or one refused). No SM, or the SM at this very port
  // (`own_lid`: the SA took over the SM's port), gets none. `log` gets a line to log when the
  // state changed for the worse (said once, not at every retry).
  std::vector<sa::SaMad> due(Clock::time_point now, uint16_t sm_lid, uint16_t own_lid,
                             std::string* log = nullptr);

  // What a received MAD means for the subscription, on the receiving thread.
  enum class Received {
    kNotOurs,    // not an InformInfo answer nor a Report: the SA answers it as usual
    kAnswer,     // an answer to one of our Sets: nothing to send
    kStale,      // an answer to a Set no longer waited for (its TID unknown): nothing to send
    kReport,     // a Report from the SM: send `reply` (its ReportResp)
    kNotFromSm,  // a Report from another LID: answered (the sender retries otherwise), ignored
  };
  struct Outcome {
    Received kind = Received::kNotOurs;
    std::optional<sa::SaMad> reply;
    std::string log;  // a line for the log, empty for none
  };
  // `from_lid`: the MAD's source LID.
  Outcome received(const sa::SaMad& mad, uint16_t from_lid, Clock::time_point now);

  // True once when a re-discovery is due because of reports (at most one per call); `why` then
  // says which traps.
  bool rediscovery_due(Clock::time_point now, std::string* why = nullptr);

  // At exit: the Sets that take the accepted subscriptions back, and the SM LID they go to
  // (the SM would otherwise keep sending reports nobody answers).
  // Their answers are waited for as the Sets' are (waiting()); due() sends nothing more.
  std::vector<sa::SaMad> unsubscribe(uint16_t* sm_lid);
  // Sets sent and not answered yet.
  bool waiting() const;

  struct Status {
    uint16_t sm_lid = 0;                   // where the Sets went (0: nowhere yet)
    std::vector<uint16_t> subscribed;      // traps the SM accepted in the last round
    std::optional<std::string> problem;    // why the last round failed, if it did
    std::map<uint16_t, uint64_t> reports;  // reports from the SM, by trap number
    uint64_t not_from_sm = 0;              // reports from other LIDs, ignored
    uint64_t rediscoveries = 0;            // re-discoveries the reports started
  };
  Status status() const;

 private:
  void begin_round(Clock::time_point now, uint16_t sm_lid, std::vector<sa::SaMad>& out);
  // The next TID, waited for as a Set about `trap`.
  uint32_t take_tid(uint16_t trap);

  const Timing timing_;
  mutable std::mutex mutex_;
  uint16_t sm_lid_ = 0;
  uint32_t next_tid_ = 1;
  bool leaving_ = false;                  // unsubscribed: nothing is due any more
  std::map<uint32_t, uint16_t> pending_;  // TID (low 32 bits) -> trap
  std::optional<Clock::time_point> round_started_, next_round_;
  std::vector<uint16_t> subscribed_;
  // The round under way: traps accepted so far, and the refusals ("trap N: STATUS").
  std::vector<uint16_t> round_accepted_;
  std::vector<std::string> round_refused_;
  std::optional<std::string> problem_;
  std::map<uint16_t, uint64_t> reports_;
  uint64_t not_from_sm_ = 0, rediscoveries_ = 0;
  // The re-discoveries the reports ask for, and the traps behind them.
  std::optional<Clock::time_point> settle_at_, follow_up_at_;
  std::vector<uint16_t> burst_;
};

// The stats' "sm_traps" object of a daemon that subscribes: enabled, sm_lid, subscribed, problem
// (null when none), reports by trap number, reports_not_from_sm, rediscoveries.
nlohmann::json to_json(const TrapSubscription::Status& status);

}  // namespace rdmaqos::sad
