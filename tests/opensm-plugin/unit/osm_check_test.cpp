// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The version and layout check the plugin makes before it touches OpenSM: it accepts the OpenSM
// it was built for and refuses, saying why, any other version or a layout it does not recognise.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "fake_opensm.h"

namespace {

struct FakeDeleter {
  void operator()(fake_opensm* f) const { fake_opensm_free(f); }
};
using Fake = std::unique_ptr<fake_opensm, FakeDeleter>;

constexpr const char* kBuiltFor = "OpenSM 3.3.23";

// The check's verdict: empty when accepted, else its reason.
std::string check(const fake_opensm* f, const void* pr = reinterpret_cast<const void*>(&fake_pr),
                  const void* mpr = reinterpret_cast<const void*>(&fake_mpr)) {
  char why[256] = "";
  int rc = rdma_qos_osmp_check_opensm(fake_opensm_osm(f), kBuiltFor, pr, mpr, why, sizeof(why));
  if (rc == 0) return {};
  return why[0] != '\0' ? std::string(why) : std::string("(refused without a reason)");
}

TEST(OsmCheck, AcceptsTheOpenSmItWasBuiltFor) {
  Fake f(fake_opensm_new("OpenSM 3.3.23"));
  EXPECT_EQ(check(f.get()), "");
}

TEST(OsmCheck, RefusesAnotherVersionNamingBoth) {
  Fake f(fake_opensm_new("OpenSM 3.3.24"));
  EXPECT_EQ(check(f.get()), "built for OpenSM 3.3.23, running in OpenSM 3.3.24");
}

TEST(OsmCheck, RefusesASaThatDoesNotPointIntoTheSameOpenSm) {
  Fake f(fake_opensm_new("OpenSM 3.3.23"));
  fake_opensm_break_sa_subnet(f.get());
  EXPECT_EQ(check(f.get()), "osm_opensm_t / osm_sa_t layout differs");
}

TEST(OsmCheck, RefusesWhenThePathRecordHandlerIsNotOpenSmsOwn) {
  Fake f(fake_opensm_new("OpenSM 3.3.23"));
  fake_opensm_replace_pr_handler(f.get());
  EXPECT_EQ(check(f.get()), "the PathRecord handler is not OpenSM's own");
}

TEST(OsmCheck, RefusesWithoutAMultiPathRecordRegistration) {
  Fake f(fake_opensm_new("OpenSM 3.3.23"));
  fake_opensm_drop_mpr_handler(f.get());
  EXPECT_EQ(check(f.get()), "the MultiPathRecord handler is not OpenSM's own");
}

TEST(OsmCheck, RefusesWhenOpenSmDoesNotExportItsHandlers) {
  Fake f(fake_opensm_new("OpenSM 3.3.23"));
  EXPECT_EQ(check(f.get(), nullptr), "OpenSM does not export osm_pr_rcv_process");
}

}  // namespace
