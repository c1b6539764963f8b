// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A bounded, TTL-limited cache of PathRecord answers keyed by the whole query (every record
// byte, the component mask and the method), invalid once the SM LID changes. Sharded with one
// lock per shard so many threads can look up at once.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rdma-qos/sa-client/client.h"
#include "rdma-qos/sa-client/path_record.h"

namespace rdmaqos::sa {

struct PathCacheOptions {
  std::chrono::milliseconds ttl{std::chrono::minutes(5)};
  size_t capacity = 4096;  // entries over all shards (each shard holds capacity/shards)
  size_t shards = 16;
};

class PathCache {
 public:
  using Clock = std::chrono::steady_clock;
  // Key bytes: the encoded PathRecord, the component mask and the method.
  using Key = std::array<uint8_t, kPathRecordSize + 8 + 1>;

  explicit PathCache(PathCacheOptions options = {});
  ~PathCache();
  PathCache(const PathCache&) = delete;
  PathCache& operator=(const PathCache&) = delete;

  // nullopt when the query cannot be encoded (it can never be cached).
  static std::optional<Key> key_of(const PathQuery& query);
  // The key of a PathRecord request already encoded (make_path_request): no second encoding.
  static Key key_of(const SaRequest& request);

  // The answer stored for `query`, unless it expired or was stored under another SM
  // generation (Client::sm_generation()).
  std::optional<std::vector<PathRecord>> lookup(const PathQuery& query, uint64_t sm_generation,
                                                Clock::time_point now = Clock::now());
  std::optional<std::vector<PathRecord>> lookup(const Key& key, uint64_t sm_generation,
                                                Clock::time_point now = Clock::now());
  void insert(const PathQuery& query, std::vector<PathRecord> paths, uint64_t sm_generation,
              Clock::time_point now = Clock::now());
  void insert(const Key& key, std::vector<PathRecord> paths, uint64_t sm_generation,
              Clock::time_point now = Clock::now());
  void clear();
  size_t size() const;

 private:
  struct Shard;
  Shard& shard_for(const Key& key);
  PathCacheOptions options_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace rdmaqos::sa
