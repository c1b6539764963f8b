// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The plugin's policy and partitions files, read and parsed once for both of their users inside
// OpenSM: the engine's model rebuild (the compiled policy answering PathRecords) and the
// qos-setup hooks of OpenSM's heavy sweeps (the SL2VL and VLArb scopes). Each file is read again
// only when it changed, and the policy parsed again only when its text did.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "rdma-qos/common/result.h"
#include "rdma-qos/opensm-plugin/options.h"
#include "rdma-qos/policy/policy.h"

namespace rdmaqos::osmp {

// What the plugin takes from OpenSM's own configuration.
struct OsmConfig {
  std::optional<std::string> qos_policy_file;  // used when the options name no policy
  std::optional<std::string> partition_config_file;
  uint8_t subnet_timeout = 18;
  uint64_t sa_key = 1;
  // OpenSM's qos option. Off (OpenSM's own default), OpenSM answers every path SL 0 (partition
  // SLs included) and programs no QoS tables: the plugin then leaves every query to OpenSM.
  bool qos = true;
};

// The policy file in force for these options: the plugin's own, else OpenSM's (when its QoS is
// on and the file exists), else none.
std::optional<std::string> policy_path(const Options& options, const OsmConfig& osm);
// The partitions file: the plugin's own, else OpenSM's partition_config_file when it exists.
std::optional<std::string> partitions_path(const Options& options, const OsmConfig& osm);

// One file as last read.
struct FileContents {
  std::string path;
  std::shared_ptr<const std::string> text;  // null: it could not be read (`error` says why)
  std::optional<rdmaqos::Error> error;      // config::read_regular_file's, set when text is null
  uint64_t version = 0;                     // the same as long as the text is the same; never 0
};

// Both files at one moment, and the policy parsed once per version of its text.
struct PolicyInputs {
  std::optional<FileContents> policy;      // nullopt: no policy file in force
  std::optional<FileContents> partitions;  // nullopt: none (OpenSM's default partition)
  // The policy text parsed; null without a policy text. Shared: the compiled policy is built
  // from a copy of parsed->policy, the qos-setup scopes from another.
  std::shared_ptr<const policy::ParseResult> parsed;

  uint64_t policy_version() const { return policy ? policy->version : 0; }
  uint64_t partitions_version() const { return partitions ? partitions->version : 0; }
  // Every file in force could be read.
  bool readable() const { return (!policy || policy->text) && (!partitions || partitions->text); }
};

class PolicySource {
 public:
  PolicySource(Options options, OsmConfig osm);

  // The files as they are now. Each is looked at with stat(2) and read again only when its
  // identity (device, inode, size, modification and change times) differs from its last read,
  // or when that read came so soon after the file's last modification that a later write within
  // the clock's granularity could have left the times as they were (then the text read is
  // compared). `force` reads both whatever their identity (a reload someone asked for). The
  // same object is returned as long as nothing changed. Thread-safe; a parse happens under the
  // lock, once for every caller.
  std::shared_ptr<const PolicyInputs> current(bool force = false);

  uint64_t reads() const;   // files read
  uint64_t parses() const;  // policy texts parsed

 private:
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  struct Tracked {
    std::optional<FileContents> contents;
    std::optional<Identity> identity;  // of the file when `contents` was read
    int64_t read_at_ns = 0;            // the clock when it was read
  };
  // Brings `t` up to date with `path` (nullopt: no file in force); true when its contents
  // changed.
  bool refresh(Tracked& t, const std::optional<std::string>& path, bool force);

  const Options options_;
  const OsmConfig osm_;
  mutable std::mutex mutex_;
  Tracked policy_, partitions_;
  uint64_t next_version_ = 0;
  uint64_t reads_ = 0, parses_ = 0;
  std::shared_ptr<const PolicyInputs> current_;
};

}  // namespace rdmaqos::osmp
