// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-qos-sad in its second deployment on ibsim: at another node's port while OpenSM stays the
// SM and SA at LID 1. Shared by the tests of that deployment (operation_test.cpp,
// sm_traps_test.cpp); RDMA_QOS_SAD and RDMA_QOS_CLI name the programs.
#pragma once

#include <string>

#include "rdma-qos/testbed/ib_fabric.h"
#include "rdma-qos/testbed/process.h"

namespace rdmaqos::sad {

// Starts the daemon at `node` with the policy at `policy_path`, the control socket `socket`, its
// log in sad.log of the fabric's directory and no periodic re-discovery; returns once
// `rdma-qos path cpi --sa-lid` answers at the node's LID (the probe's result says whether it did).
inline testbed::IbFabric::Started start_sad_at(const testbed::IbFabric& fabric,
                                               const std::string& node,
                                               const std::string& policy_path,
                                               const std::string& socket) {
  testbed::ProcessOptions p;
  p.argv = {RDMA_QOS_SAD,
            "--policy",
            policy_path,
            "--control-socket",
            socket,
            "--foreground",
            "--rediscover-interval",
            "0"};
  p.env = fabric.client_env(node);
  p.cwd = fabric.dir();
  p.output_path = fabric.dir() + "/sad.log";
  return fabric.start_until_answering(
      p, {RDMA_QOS_CLI, "path", "cpi", "--sa-lid", fabric.lid_arg(node)});
}

}  // namespace rdmaqos::sad
