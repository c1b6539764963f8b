// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PolicySource: the policy and partitions files read when they change, the policy parsed once
// per text, shared by the engine and the qos-setup hooks.
#include "rdma-qos/opensm-plugin/policy_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "rdma-qos/config/read_file.h"

namespace rdmaqos::osmp {
namespace {

// A read this close to the file's last change is not certified by the file's times: a write in
// the same tick of the file system's clock (coarse, and whole seconds on some file systems)
// leaves them unchanged. Such a file is read again, and its text compared, at the next look.
constexpr int64_t kRacyNs = int64_t{2'000'000'000};

int64_t ns(const timespec& t) {
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return ns(t);
}

}  // namespace

std::optional<std::string> policy_path(const Options& options, const OsmConfig& osm) {
  if (options.no_policy) return std::nullopt;
  if (options.policy) return options.policy;
  if (osm.qos_policy_file && access(osm.qos_policy_file->c_str(), R_OK) == 0)
    return osm.qos_policy_file;
  return std::nullopt;
}

std::optional<std::string> partitions_path(const Options& options, const OsmConfig& osm) {
  if (options.partitions) return options.partitions;
  if (osm.partition_config_file && access(osm.partition_config_file->c_str(), R_OK) == 0)
    return osm.partition_config_file;
  return std::nullopt;
}

PolicySource::PolicySource(Options options, OsmConfig osm)
    : options_(std::move(options)), osm_(std::move(osm)) {}

bool PolicySource::refresh(Tracked& t, const std::optional<std::string>& path, bool force) {
  if (!path) {
    const bool had = t.contents.has_value();
    t = Tracked{};
    return had;
  }
  const bool same_path = t.contents && t.contents->path == *path;
  const int64_t started = now_ns();
  struct stat st {};
  std::optional<Identity> identity;
  if (::stat(path->c_str(), &st) == 0)
    identity = Identity{st.st_dev, st.st_ino, st.st_size, ns(st.st_mtim), ns(st.st_ctim)};
  // A write sets the modification time: one well before the read vouches for the text read.
  if (!force && same_path && identity && t.identity == identity && t.contents->text &&
      identity->mtime_ns + kRacyNs <= t.read_at_ns)
    return false;  // unchanged since a read its times certify

  ++reads_;
  FileContents next;
  next.path = *path;
  auto read = config::read_regular_file(*path, config::kMaxPolicyFileBytes);
  if (read) {
    next.text = std::make_shared<const std::string>(std::move(read).value());
  } else {
    next.error = read.error();
  }
  const bool same_text =
      same_path && t.contents->text && next.text && *t.contents->text == *next.text;
  // The same reason: the object in force stays, as for the same text.
  const bool same_error = same_path && !t.contents->text && !next.text && t.contents->error &&
                          next.error && t.contents->error->code == next.error->code &&
                          t.contents->error->message == next.error->message;
  t.identity = next.text ? identity : std::nullopt;
  t.read_at_ns = started;
  if (same_text || same_error) return false;  // the object in force stays
  next.version = ++next_version_;
  t.contents = std::move(next);
  return true;
}

std::shared_ptr<const PolicyInputs> PolicySource::current(bool force) {
  std::lock_guard lock(mutex_);
  const bool policy_changed = refresh(policy_, policy_path(options_, osm_), force);
  const bool partitions_changed = refresh(partitions_, partitions_path(options_, osm_), force);
  if (current_ && !policy_changed && !partitions_changed) return current_;
  auto next = std::make_shared<PolicyInputs>();
  next->policy = policy_.contents;
  next->partitions = partitions_.contents;
  if (!policy_changed && current_) {
    next->parsed = current_->parsed;
  } else if (next->policy && next->policy->text) {
    ++parses_;
    next->parsed =
        std::make_shared<const policy::ParseResult>(policy::parse_policy(*next->policy->text));
  }
  current_ = std::move(next);
  return current_;
}

uint64_t PolicySource::reads() const {
  std::lock_guard lock(mutex_);
  return reads_;
}

uint64_t PolicySource::parses() const {
  std::lock_guard lock(mutex_);
  return parses_;
}

}  // namespace rdmaqos::osmp
