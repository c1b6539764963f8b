// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The incremental re-discovery (see discovery_incremental.h).
#include "discovery_incremental.h"

#include <fmt/format.h>

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace rdmaqos::sad {
namespace {

// SMP attributes (IBA 14.2.5).
constexpr uint16_t kNodeDescription = 0x10;
constexpr uint16_t kNodeInfo = 0x11;
constexpr uint16_t kSwitchInfo = 0x12;
constexpr uint16_t kPortInfo = 0x15;
constexpr uint16_t kPKeyTable = 0x16;
constexpr uint16_t kSl2VlTable = 0x17;
constexpr uint16_t kLinearForwardingTable = 0x19;

using Peer = std::pair<uint64_t, uint8_t>;  // node GUID, port
using Answer = std::optional<SmpData>;

// The walk's failure when the fabric does not answer as a consistent fabric does; the caller
// turns it into a fallback to the full discovery.
rdmaqos::Error inconsistent(std::string why) {
  return rdmaqos::make_error(rdmaqos::ErrorCode::kMalformed, std::move(why));
}

// The model in force cannot start an incremental re-discovery (the caller runs a full one).
rdmaqos::Error unsuitable(std::string why) {
  return rdmaqos::make_error(rdmaqos::ErrorCode::kInvalidArgument, std::move(why));
}

std::string route(const std::vector<uint8_t>& path) {
  if (path.empty()) return "the local node";
  std::string out = "directed route 0";
  for (uint8_t p : path) out += fmt::format(",{}", p);
  return out;
}

SmpGet directed(const std::vector<uint8_t>& path, uint16_t attr, uint32_t mod) {
  SmpGet g;
  g.directed = true;
  g.path = path;
  g.attr = attr;
  g.mod = mod;
  return g;
}

std::vector<uint8_t> extended(const std::vector<uint8_t>& path, uint8_t port) {
  std::vector<uint8_t> out = path;
  out.push_back(port);
  return out;
}

// Gets sent together, each with where its answer goes.
class Batch {
 public:
  void add(SmpGet get, std::function<void(const Answer&)> sink) {
    gets_.push_back(std::move(get));
    sinks_.push_back(std::move(sink));
  }
  size_t size() const { return gets_.size(); }
  // Sends them; returns how many were sent.
  size_t run(SmpTransport& smp) {
    if (gets_.empty()) return 0;
    auto answers = smp.get(gets_);
    for (size_t i = 0; i < sinks_.size(); ++i)
      sinks_[i](i < answers.size() ? answers[i] : Answer{});
    const size_t n = gets_.size();
    gets_.clear();
    sinks_.clear();
    return n;
  }

 private:
  std::vector<SmpGet> gets_;
  std::vector<std::function<void(const Answer&)>> sinks_;
};

// One NodeInfo Get of a wave: through port `from_port` of scan node `from` (-1: the local
// node, path empty), where the previous model had `expected`.
struct Probe {
  std::vector<uint8_t> path;
  int from = -1;
  uint8_t from_port = 0;
  std::optional<Peer> expected;
};

// What was asked of a node before its NodeInfo was in, on the previous model's word that it
// would be there: taken when the NodeInfo says it is.
struct Speculation {
  std::optional<SmpData> switch_info;
  std::vector<std::optional<SmpData>> port_info;  // by port
  std::vector<std::optional<SmpData>> lft;        // by block
  bool answered_all = true;
};

class Walk {
 public:
  Walk(SmpTransport& smp, const Discovery& previous) : smp_(smp), previous_(previous) {
    for (size_t i = 0; i < previous.model.nodes.size(); ++i) {
      previous_index_.emplace(previous.model.nodes[i].guid, i);
    }
  }

  // The scan of the fabric as it is now, tables not yet read.
  rdmaqos::Result<void> run() {
    const NodeModel& self = previous_.model.nodes.at(static_cast<size_t>(previous_.self.node));
    std::vector<Probe> wave = {Probe{{}, -1, 0, Peer{self.guid, previous_.self.port}}};
    while (!wave.empty()) {
      if (++waves_ > static_cast<int>(kMaxDirectedHops) + 1) {
        return inconsistent("the walk goes deeper than a directed route reaches");
      }
      auto next = step(wave);
      if (!next) return next.error();
      wave = std::move(*next);
    }
    if (auto read = read_lfts(); !read) return read;
    if (scan_.self_guid != self.guid) {
      return inconsistent(fmt::format("discovery runs at node {:#x}, the model in force at {:#x}",
                                      scan_.self_guid, self.guid));
    }
    return {};
  }

  Scan& scan() { return scan_; }
  size_t smps() const { return smps_; }
  int waves() const { return waves_; }

  // Reads `tables` (PKey blocks and SL2VL tables) through the routes the walk found.
  rdmaqos::Result<void> read_tables(const std::vector<TableRef>& tables) {
    Batch b;
    for (const TableRef& t : tables) {
      ScanNode& n = scan_.nodes[t.node];
      ScanPort& port = n.ports[t.port];
      const std::vector<uint8_t>& path = n.is_switch() ? n.path : port.path;
      if (t.kind == TableRef::Kind::kPKeys) {
        const unsigned blocks = pkey_blocks(n.ni.partition_cap);
        auto read = std::make_shared<std::vector<std::optional<SmpData>>>(blocks);
        auto answered = std::make_shared<unsigned>(0);
        for (unsigned block = 0; block < blocks; ++block) {
          b.add(directed(path, kPKeyTable, block),
                [this, &port, read, answered, block, blocks, where = route(path)](const Answer& a) {
                  if (!a) return fail(fmt::format("no PKey table block {} from {}", block, where));
                  (*read)[block] = a;
                  if (++*answered < blocks) return;
                  port.pkeys.clear();
                  for (const auto& data : *read) append_pkeys(*data, port.pkeys);
                  port.pkeys_read = true;
                });
        }
        continue;
      }
      const uint32_t mod = n.is_switch() ? static_cast<uint32_t>(t.in << 8 | t.port) : 0;
      b.add(directed(path, kSl2VlTable, mod),
            [this, &port, t, where = route(path)](const Answer& a) {
              if (!a)
                return fail(fmt::format("no SL2VL table {}->{} from {}", t.in, t.port, where));
              if (port.sl2vl.size() <= t.in) port.sl2vl.resize(static_cast<size_t>(t.in) + 1);
              port.sl2vl[t.in] = decode_sl2vl(*a);
            });
    }
    return run_batch(b);
  }

 private:
  // An inconsistency seen by an answer's sink (inside Batch::run): the first one is kept and
  // returned by run_batch.
  void fail(std::string why) {
    if (!failed_) failed_ = inconsistent(std::move(why));
  }

  // Sends `b`; the first inconsistency its answers showed, if any.
  rdmaqos::Result<void> run_batch(Batch& b) {
    smps_ += b.run(smp_);
    if (!failed_) return {};
    rdmaqos::Error e = std::move(*failed_);
    failed_.reset();
    return e;
  }

  const NodeModel* previous_node(uint64_t guid) const {
    auto it = previous_index_.find(guid);
    return it == previous_index_.end() ? nullptr : &previous_.model.nodes[it->second];
  }

  std::optional<Peer> previous_peer(uint64_t guid, size_t port) const {
    const NodeModel* n = previous_node(guid);
    if (n == nullptr || port >= n->ports.size()) return std::nullopt;
    const PortModel& pm = n->ports[port];
    if (pm.peer_node < 0 || static_cast<size_t>(pm.peer_node) >= previous_.model.nodes.size()) {
      return std::nullopt;
    }
    return Peer{previous_.model.nodes[static_cast<size_t>(pm.peer_node)].guid, pm.peer_port};
  }

  // Asks, in `b`, what the check needs of the previous model's switch `n`, expected at the
  // end of `path`: its answers describe whichever node is there, so they count when the
  // NodeInfo shows a switch of as many ports.
  std::unique_ptr<Speculation> speculate(Batch& b, const std::vector<uint8_t>& path,
                                         const NodeModel& n) {
    auto s = std::make_unique<Speculation>();
    Speculation* sp = s.get();
    auto keep = [sp](std::optional<SmpData>& slot) {
      return [sp, &slot](const Answer& a) {
        slot = a;
        if (!a) sp->answered_all = false;
      };
    };
    b.add(directed(path, kSwitchInfo, 0), keep(sp->switch_info));
    sp->port_info.resize(n.ports.size());
    for (size_t p = 0; p < n.ports.size(); ++p) {
      b.add(directed(path, kPortInfo, static_cast<uint32_t>(p)), keep(sp->port_info[p]));
    }
    if (!n.lft.empty()) {
      sp->lft.resize(lft_blocks(static_cast<uint16_t>(n.lft.size() - 1)));
      for (size_t block = 0; block < sp->lft.size(); ++block) {
        b.add(directed(path, kLinearForwardingTable, static_cast<uint32_t>(block)),
              keep(sp->lft[block]));
      }
    }
    return s;
  }

  // Fills switch `node` from what was asked at its route before its NodeInfo was in; false when
  // that does not fit it.
  rdmaqos::Result<bool> take_speculation(ScanNode& node, std::unique_ptr<Speculation>& s) {
    if (!s || s->port_info.size() != node.ports.size()) return false;
    if (!s->answered_all) {
      return inconsistent(fmt::format("switch {:#x} at {} did not answer every check",
                                      node.ni.node_guid, route(node.path)));
    }
    node.switch_info = *s->switch_info;
    for (size_t p = 0; p < node.ports.size(); ++p) node.ports[p].set_info(*s->port_info[p]);
    lft_blocks_read_[node.ni.node_guid] = std::move(s->lft);
    s.reset();
    return true;
  }

  rdmaqos::Result<void> link(int a, uint8_t pa, int b, uint8_t pb) {
    ScanPort& x = scan_.nodes[static_cast<size_t>(a)].ports[pa];
    ScanPort& y = scan_.nodes[static_cast<size_t>(b)].ports[pb];
    const uint64_t ga = scan_.nodes[static_cast<size_t>(a)].ni.node_guid;
    const uint64_t gb = scan_.nodes[static_cast<size_t>(b)].ni.node_guid;
    if ((x.linked && Peer{x.remote_guid, x.remote_port} != Peer{gb, pb}) ||
        (y.linked && Peer{y.remote_guid, y.remote_port} != Peer{ga, pa})) {
      return inconsistent(
          fmt::format("port {} of {:#x} and port {} of {:#x} each answer as linked "
                      "to another port too",
                      pa, ga, pb, gb));
    }
    x.linked = y.linked = true;
    x.remote_guid = gb;
    x.remote_port = pb;
    y.remote_guid = ga;
    y.remote_port = pa;
    return {};
  }

  // One wave: the NodeInfo of every probe (with the checks of the nodes the model expects
  // there), then what the nodes it did not expect need, then the next wave's probes.
  rdmaqos::Result<std::vector<Probe>> step(const std::vector<Probe>& wave) {
    Batch b;
    std::vector<std::optional<SmpData>> node_infos(wave.size());
    std::vector<std::unique_ptr<Speculation>> switches(wave.size());
    // A CA port's PortInfo at the probe's route, for the port the model expects there.
    std::vector<std::optional<SmpData>> ca_ports(wave.size());
    std::vector<uint8_t> ca_port_asked(wave.size(), 0);
    std::unordered_set<uint64_t> asked;
    for (size_t i = 0; i < wave.size(); ++i) {
      const Probe& probe = wave[i];
      b.add(directed(probe.path, kNodeInfo, 0),
            [&node_infos, i](const Answer& a) { node_infos[i] = a; });
      if (!probe.expected) continue;
      const NodeModel* n = previous_node(probe.expected->first);
      if (n == nullptr) continue;
      if (n->type == policy::NodeType::kSwitch) {
        if (!index_.contains(n->guid) && asked.insert(n->guid).second) {
          switches[i] = speculate(b, probe.path, *n);
        }
        continue;
      }
      ca_port_asked[i] = probe.expected->second;
      b.add(directed(probe.path, kPortInfo, probe.expected->second),
            [&ca_ports, i](const Answer& a) { ca_ports[i] = a; });
    }
    smps_ += b.run(smp_);

    Batch follow;
    std::vector<size_t> new_switches;
    std::optional<size_t> self_node;
    for (size_t i = 0; i < wave.size(); ++i) {
      const Probe& probe = wave[i];
      if (!node_infos[i]) return inconsistent("no NodeInfo from " + route(probe.path));
      const NodeInfoFields f = decode_node_info(*node_infos[i]);
      if (f.ports == 0 || f.ports == 0xFF || f.local_port > f.ports ||
          (f.type != kNodeTypeSwitch && f.local_port == 0) ||
          (f.type != kNodeTypeCa && f.type != kNodeTypeSwitch && f.type != kNodeTypeRouter)) {
        return inconsistent(
            fmt::format("{} answers a NodeInfo no node has (type {}, {} ports, "
                        "port {})",
                        route(probe.path), f.type, f.ports, f.local_port));
      }
      auto [it, is_new] = index_.emplace(f.node_guid, scan_.nodes.size());
      const size_t k = it->second;
      if (is_new) {
        ScanNode n;
        n.set_node_info(*node_infos[i]);
        n.path = probe.path;
        scan_.nodes.push_back(std::move(n));
      } else if (scan_.nodes[k].ni.type != f.type || scan_.nodes[k].ni.ports != f.ports) {
        return inconsistent(
            fmt::format("node GUID {:#x} answers as two different nodes", f.node_guid));
      }
      const uint8_t port = f.local_port;
      if (probe.from < 0) {
        scan_.self_guid = f.node_guid;
        scan_.self_port = port;
        self_node = k;
      } else {
        if (auto linked = link(probe.from, probe.from_port, static_cast<int>(k), port); !linked)
          return linked.error();
      }
      // The answers below land after scan_.nodes has grown: by index, not by reference.
      if (is_new) {
        ScanNode& node = scan_.nodes[k];
        const NodeModel* was = previous_node(f.node_guid);
        if (was != nullptr && static_cast<uint8_t>(was->type) == f.type &&
            was->ports.size() == node.ports.size()) {
          node.description = was->description;
        } else {
          follow.add(directed(probe.path, kNodeDescription, 0), [this, k](const Answer& a) {
            if (!a) return fail("no NodeDescription from " + route(scan_.nodes[k].path));
            scan_.nodes[k].description = decode_node_description(*a);
          });
        }
        if (node.is_switch()) {
          new_switches.push_back(k);
          auto taken = take_speculation(node, switches[i]);
          if (!taken) return taken.error();
          if (!*taken) {
            follow.add(directed(probe.path, kSwitchInfo, 0), [this, k](const Answer& a) {
              if (!a) return fail("no SwitchInfo from " + route(scan_.nodes[k].path));
              scan_.nodes[k].switch_info = *a;
            });
            for (size_t p = 0; p < node.ports.size(); ++p) {
              follow.add(directed(probe.path, kPortInfo, static_cast<uint32_t>(p)),
                         [this, k, p](const Answer& a) {
                           if (!a) {
                             return fail(fmt::format("no PortInfo {} from {}", p,
                                                     route(scan_.nodes[k].path)));
                           }
                           scan_.nodes[k].ports[p].set_info(*a);
                         });
            }
          }
        }
      }
      ScanNode& node = scan_.nodes[k];
      if (node.is_switch() || node.ports[port].present) continue;
      // A CA or router port: its PortInfo, read through it.
      node.ports[port].guid = f.port_guid;
      node.ports[port].path = probe.path;
      if (ca_port_asked[i] == port && ca_ports[i]) {
        node.ports[port].set_info(*ca_ports[i]);
        continue;
      }
      follow.add(directed(probe.path, kPortInfo, port), [this, k, port](const Answer& a) {
        if (!a) {
          return fail(fmt::format("no PortInfo from {}", route(scan_.nodes[k].ports[port].path)));
        }
        scan_.nodes[k].ports[port].set_info(*a);
      });
    }
    if (auto followed = run_batch(follow); !followed) return followed.error();

    // Onwards through every physically linked switch port but the one the walk came in at (as
    // libibnetdisc goes), and out of the local CA's port.
    std::vector<Probe> next;
    auto out_through = [&](size_t k, size_t p) {
      const ScanNode& n = scan_.nodes[k];
      next.push_back(
          Probe{extended(n.is_switch() ? n.path : n.ports[p].path, static_cast<uint8_t>(p)),
                static_cast<int>(k), static_cast<uint8_t>(p), previous_peer(n.ni.node_guid, p)});
    };
    for (size_t k : new_switches) {
      const ScanNode& n = scan_.nodes[k];
      for (size_t p = 1; p < n.ports.size(); ++p) {
        const ScanPort& sp = n.ports[p];
        if (sp.pi.link_up() && p != sp.pi.local_port) out_through(k, p);
      }
    }
    if (self_node && !scan_.nodes[*self_node].is_switch()) {
      const ScanPort& sp = scan_.nodes[*self_node].ports[scan_.self_port];
      if (sp.pi.link_up()) out_through(*self_node, scan_.self_port);
    }
    return next;
  }

  // Each switch's forwarding table: the blocks the check read for the LinearFDBTop it had, and
  // the rest now.
  rdmaqos::Result<void> read_lfts() {
    Batch b;
    for (ScanNode& n : scan_.nodes) {
      if (!n.is_switch()) continue;
      const uint16_t top = decode_lft_top(n.switch_info);
      n.lft.assign(static_cast<size_t>(top) + 1, 0xFF);
      std::vector<std::optional<SmpData>> read;
      if (auto it = lft_blocks_read_.find(n.ni.node_guid); it != lft_blocks_read_.end()) {
        read = std::move(it->second);
      }
      for (unsigned block = 0; block < lft_blocks(top); ++block) {
        if (block < read.size() && read[block]) {
          put_lft_block(*read[block], block, n.lft);
          continue;
        }
        b.add(directed(n.path, kLinearForwardingTable, block), [this, &n, block](const Answer& a) {
          if (!a) {
            return fail(fmt::format("no LFT block {} from switch {:#x}", block, n.ni.node_guid));
          }
          put_lft_block(*a, block, n.lft);
        });
      }
    }
    lft_blocks_read_.clear();
    return run_batch(b);
  }

  SmpTransport& smp_;
  const Discovery& previous_;
  std::unordered_map<uint64_t, size_t> previous_index_;
  Scan scan_;
  std::unordered_map<uint64_t, size_t> index_;  // node GUID -> scan_.nodes
  std::unordered_map<uint64_t, std::vector<std::optional<SmpData>>> lft_blocks_read_;
  size_t smps_ = 0;
  int waves_ = 0;
  std::optional<rdmaqos::Error> failed_;  // see fail()
};

}  // namespace

IncrementalOutcome incremental_discovery(SmpTransport& smp, const Discovery& previous,
                                         const IncrementalLimits& limits,
                                         const std::function<void(const std::string&)>& progress) {
  IncrementalOutcome out;
  auto say = [&progress](const std::string& s) {
    if (progress) progress("incremental: " + s);
  };
  if (!previous.missing.empty()) {
    out.fallback = unsuitable("the model in force is incomplete");
    return out;
  }
  if (previous.self.node < 0 ||
      static_cast<size_t>(previous.self.node) >= previous.model.nodes.size()) {
    out.fallback = unsuitable("the model in force has no node of its own");
    return out;
  }
  say(fmt::format("checking the {} nodes of the model in force", previous.model.nodes.size()));
  Walk walk(smp, previous);
  if (auto walked = walk.run(); !walked) {
    out.fallback = walked.error();
    return out;
  }
  out.nodes = walk.scan().nodes.size();
  out.check_smps = walk.smps();
  const std::vector<TableRef> plan = plan_tables(walk.scan());
  const std::vector<TableRef> left = take_over_tables(walk.scan(), plan, previous.model);
  out.tables_kept = plan.size() - left.size();
  out.tables_read = left.size();
  say(fmt::format("checked {} nodes in {} waves, {} SMPs; {} of {} tables to read again", out.nodes,
                  walk.waves(), out.check_smps, left.size(), plan.size()));
  if (!plan.empty() && static_cast<double>(left.size()) >
                           limits.max_reread_share * static_cast<double>(plan.size())) {
    out.fallback = unsuitable(fmt::format("{} of the {} tables changed", left.size(), plan.size()));
    return out;
  }
  if (auto read = walk.read_tables(left); !read) {
    out.fallback = read.error();
    return out;
  }
  out.found = assemble(walk.scan());
  if (!out.found) {
    out.fallback = inconsistent("the scan has no node of its own");
    return out;
  }
  if (!out.found->missing.empty()) {
    // Every table was either taken over or answered: a gap means the two disagree.
    out.fallback = inconsistent("incomplete: " + out.found->missing.front());
    out.found.reset();
    return out;
  }
  const ModelChanges c = compare_models(previous.model, out.found->model);
  out.changes = c.any() ? fmt::format(
                              "{} node(s) added, {} gone, {} port(s) with another link, "
                              "{} with another LID",
                              c.nodes_added, c.nodes_gone, c.links_changed, c.lids_changed)
                        : "no change";
  say(fmt::format("{}; {} SMPs in all", out.changes, walk.smps()));
  return out;
}

}  // namespace rdmaqos::sad
