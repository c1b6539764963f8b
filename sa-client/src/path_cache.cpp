// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Path cache: per-shard LRU list + hash map under one mutex per shard.
#include "rdma-qos/sa-client/path_cache.h"

#include <algorithm>
#include <list>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace rdmaqos::sa {

namespace {

struct KeyHash {
  size_t operator()(const PathCache::Key& k) const {
    return std::hash<std::string_view>()(
        std::string_view(reinterpret_cast<const char*>(k.data()), k.size()));
  }
};

struct Entry {
  PathCache::Key key;
  std::vector<PathRecord> paths;
  uint64_t generation = 0;
  PathCache::Clock::time_point expires;
};

}  // namespace

struct PathCache::Shard {
  std::mutex mutex;
  std::list<Entry> lru;  // most recently used first
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index;
  size_t capacity = 1;
};

PathCache::PathCache(PathCacheOptions options) : options_(options) {
  options_.shards = std::max<size_t>(1, options_.shards);
  size_t per_shard = std::max<size_t>(1, options_.capacity / options_.shards);
  for (size_t i = 0; i < options_.shards; ++i) {
    shards_.push_back(std::make_unique<Shard>());
    shards_.back()->capacity = per_shard;
  }
}

PathCache::~PathCache() = default;

std::optional<PathCache::Key> PathCache::key_of(const PathQuery& query) {
  auto req = make_path_request(query);  // normalises the mask as the wire will carry it
  if (!req) return std::nullopt;        // such a query is never sent, so never cached
  return key_of(*req);
}

PathCache::Key PathCache::key_of(const SaRequest& request) {
  Key k{};
  const std::vector<uint8_t>& data = request.mad.data;
  std::copy_n(data.begin(), std::min(data.size(), kPathRecordSize), k.begin());
  wire::put64(k.data() + kPathRecordSize, request.mad.sa.comp_mask);
  k[kPathRecordSize + 8] = request.mad.mad.method;
  return k;
}

PathCache::Shard& PathCache::shard_for(const Key& key) {
  return *shards_[KeyHash()(key) % shards_.size()];
}

std::optional<std::vector<PathRecord>> PathCache::lookup(const PathQuery& query,
                                                         uint64_t sm_generation,
                                                         Clock::time_point now) {
  auto key = key_of(query);
  if (!key) return std::nullopt;
  return lookup(*key, sm_generation, now);
}

std::optional<std::vector<PathRecord>> PathCache::lookup(const Key& key, uint64_t sm_generation,
                                                         Clock::time_point now) {
  Shard& s = shard_for(key);
  std::lock_guard lock(s.mutex);
  auto it = s.index.find(key);
  if (it == s.index.end()) return std::nullopt;
  const Entry& e = *it->second;
  if (e.generation != sm_generation || now >= e.expires) {
    s.lru.erase(it->second);
    s.index.erase(it);
    return std::nullopt;
  }
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  return e.paths;
}

void PathCache::insert(const PathQuery& query, std::vector<PathRecord> paths,
                       uint64_t sm_generation, Clock::time_point now) {
  if (auto key = key_of(query)) insert(*key, std::move(paths), sm_generation, now);
}

void PathCache::insert(const Key& key, std::vector<PathRecord> paths, uint64_t sm_generation,
                       Clock::time_point now) {
  Shard& s = shard_for(key);
  std::lock_guard lock(s.mutex);
  if (auto it = s.index.find(key); it != s.index.end()) {
    s.lru.erase(it->second);
    s.index.erase(it);
  }
  s.lru.push_front(Entry{key, std::move(paths), sm_generation, now + options_.ttl});
  s.index.emplace(key, s.lru.begin());
  while (s.lru.size() > s.capacity) {
    s.index.erase(s.lru.back().key);
    s.lru.pop_back();
  }
}

void PathCache::clear() {
  for (auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    s->lru.clear();
    s->index.clear();
  }
}

size_t PathCache::size() const {
  size_t n = 0;
  for (auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    n += s->lru.size();
  }
  return n;
}

}  // namespace rdmaqos::sa
