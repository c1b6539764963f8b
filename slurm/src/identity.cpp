// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// uid/gid to names through NSS (getpwuid_r, getgrgid_r), as slurmstepd itself resolves them.
#include "identity.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace rdmaqos::slurm {
namespace {

std::string user_name(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{}, *out = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &out) == 0 && out != nullptr)
    return out->pw_name;
  return std::to_string(uid);
}

std::string group_name(gid_t gid) {
  std::vector<char> buf(65536);
  group gr{}, *out = nullptr;
  if (getgrgid_r(gid, &gr, buf.data(), buf.size(), &out) == 0 && out != nullptr)
    return out->gr_name;
  return std::to_string(gid);
}

}  // namespace

Identity identity_of(uid_t uid, gid_t gid, const std::vector<gid_t>& supplementary,
                     std::string account) {
  Identity who;
  who.user = user_name(uid);
  who.groups.push_back(group_name(gid));
  for (gid_t g : supplementary) {
    std::string name = group_name(g);
    if (std::find(who.groups.begin(), who.groups.end(), name) == who.groups.end())
      who.groups.push_back(std::move(name));
  }
  who.account = std::move(account);
  return who;
}

std::string describe(const Identity& who) {
  return fmt::format("user {} (groups {}; account {})", who.user, fmt::join(who.groups, ", "),
                     who.account.empty() ? "not given" : who.account);
}

}  // namespace rdmaqos::slurm
