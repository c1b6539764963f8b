// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// OpenSM's own answers to a differential scenario, asked once per build tree.
//
// rdma-qos-sad's differential suites and the plugin's build of the same suites both ask OpenSM
// alone the same queries on the same fabric (the topology generator is deterministic, and so
// is OpenSM on the fat trees these suites run). Whichever suite comes first asks OpenSM and
// writes the exit codes and outputs to a file named by a hash of everything that shapes them
// (the fabric's options, the queries, the OpenSM binary); the other reads that file. A lock
// file makes a suite that starts while the first one is asking wait for its answers; a suite
// that dies while asking leaves no file, and the next one asks again.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rdma-qos/testbed/ib_fabric.h"

namespace rdmaqos::sad::differential {

class OpenSmAnswers {
 public:
  // One exit code and output per query, in the queries' order.
  using Answers = std::vector<std::pair<int, std::string>>;

  // `dir` empty: nothing is kept, every suite asks OpenSM itself.
  OpenSmAnswers(const std::string& dir, const std::string& identity) {
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    path_ = dir + "/" + hex(fnv1a(identity)) + ".json";
    lock_ = ::open((path_ + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock_ >= 0 && ::flock(lock_, LOCK_EX) != 0) {
      ::close(lock_);
      lock_ = -1;
    }
  }
  ~OpenSmAnswers() {
    if (lock_ >= 0) ::close(lock_);  // releases the lock
  }
  OpenSmAnswers(const OpenSmAnswers&) = delete;
  OpenSmAnswers& operator=(const OpenSmAnswers&) = delete;

  std::optional<Answers> load() const {
    if (lock_ < 0) return std::nullopt;
    std::ifstream in(path_);
    if (!in) return std::nullopt;
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_array()) return std::nullopt;
    Answers out;
    for (const auto& a : j) out.emplace_back(a.at(0).get<int>(), a.at(1).get<std::string>());
    return out;
  }

  void store(const Answers& answers) const {
    if (lock_ < 0) return;
    nlohmann::json j = nlohmann::json::array();
    for (const auto& [code, output] : answers) j.push_back({code, output});
    const std::string tmp = path_ + ".tmp";
    std::ofstream(tmp) << j.dump();
    std::filesystem::rename(tmp, path_);
  }

  // What shapes OpenSM's answers, as text: the fabric's options and the OpenSM binary. Each
  // part is written with its length, so no two different option sets read the same.
  static std::string identity(const testbed::IbFabricOptions& o) {
    std::string s;
    auto add = [&s](const std::string& label, const std::string& text) {
      s += label + " " + std::to_string(text.size()) + ":" + text + "\n";
    };
    add("netfile", o.topology.netfile);
    add("policy", o.policy);
    add("partitions", o.partitions);
    add("opensm.conf", o.opensm_conf);
    add("qos", std::to_string(o.qos));
    add("lmc", std::to_string(o.lmc));
    add("pin_random", std::to_string(o.pin_random));
    for (const auto& a : o.opensm_args) add("arg", a);
    for (const auto& [name, text] : o.files) add("file " + name, text);
    struct stat st {};
    if (::stat("/usr/sbin/opensm", &st) == 0)
      add("opensm", std::to_string(st.st_size) + " " + std::to_string(st.st_mtime));
    return s;
  }

 private:
  static uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
  }
  static std::string hex(uint64_t v) {
    static const char* digits = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4) out[i] = digits[v & 0xF];
    return out;
  }

  std::string path_;
  int lock_ = -1;
};

}  // namespace rdmaqos::sad::differential
