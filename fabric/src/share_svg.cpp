// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The share view as an SVG bar chart drawn by gnuplot (Debian: gnuplot-nox), fed a script and
// its data on standard input, so nothing is left behind but the picture.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "rdma-qos/fabric/share.h"

namespace rdmaqos::fabric {

std::string write_share_svg(const ShareView& view, const std::string& path) {
  if (view.classes.empty()) return "no port tables to draw";
  if (path.find('\'') != std::string::npos) return "the SVG file name must not contain '";
  std::string script = fmt::format(
      "set terminal svg size 900,420 dynamic enhanced font 'sans,11'\n"
      "set output '{}'\n"
      "set title 'Bandwidth share per SL under saturation (tables read from the fabric)'\n"
      "set style data histogram\nset style histogram cluster gap 1\n"
      "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
      "set xlabel 'SL'\nset ylabel 'share of the link (%)'\nset yrange [0:*]\n"
      "set key top right\nset grid ytics\n",
      path);
  std::string plot = "plot ";
  std::string data;
  for (size_t i = 0; i < view.classes.size(); ++i) {
    const auto& c = view.classes[i];
    plot += fmt::format("{}'-' using 2:xtic(1) title '{}'", i ? ", " : "",
                        policy::port_class_prefix(c.port_class));
    for (const auto& s : c.sls) data += fmt::format("{} {:.3f}\n", s.sl, 100 * s.share);
    data += "e\n";
  }
  script += plot + "\n" + data;
  FILE* gp = popen("gnuplot", "w");
  if (gp == nullptr) return "cannot run gnuplot";
  std::fwrite(script.data(), 1, script.size(), gp);
  const int rc = pclose(gp);
  if (rc != 0) return fmt::format("gnuplot failed (status {}); is gnuplot installed?", rc);
  return {};
}

}  // namespace rdmaqos::fabric
