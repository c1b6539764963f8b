// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// roce-pcap-dump: prints the RoCE v2 packets of pcap files as TSV, for the VM tests' checks
// (shell scripts) and for people reading a capture.
#include <cstdio>
#include <string>

#include "rdma-qos/testbed/roce_pcap.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE.pcap...\n", argv[0]);
    return 2;
  }
  std::printf("%s\n", rdmaqos::testbed::roce_tsv_header().c_str());
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    auto result = rdmaqos::testbed::read_roce_pcap(argv[i]);
    if (!result.error.empty()) {
      std::fprintf(stderr, "roce-pcap-dump: %s\n", result.error.c_str());
      status = 1;
      continue;
    }
    for (const auto& p : result.packets) std::printf("%s\n", to_tsv(p).c_str());
  }
  return status;
}
