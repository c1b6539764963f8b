// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-qos env`: every host configuration knob with its value, where the value came from and
// its documentation (like ucx_info -cf), derived from the one knob table.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "command.h"
#include "rdma-qos/config/host_config.h"
#include "rdma-qos/config/knobs.h"

namespace rdmaqos::cli::cmd_env {
namespace {

void setup_env(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "env", "list every RDMA_QOS_* knob: value, source (default, file, environment), meaning");
  auto json = std::make_shared<bool>(false);
  auto config = std::make_shared<std::string>();
  cmd->add_flag("--json", *json, "print JSON");
  cmd->add_option("--config", *config,
                  "configuration file (default: $RDMA_QOS_CONFIG or /etc/rdma/rdma-qos.conf)");
  cmd->callback([json, config] {
    auto r = config::load_host_config(&config::process_env,
                                      config->empty() ? std::nullopt : std::optional(*config));
    for (const auto& e : r.errors) std::cerr << format_diagnostic(e) << "\n";
    for (const auto& w : r.warnings) std::cerr << format_diagnostic(w) << "\n";
    // RDMA_QOS_CONFIG is no knob (the file cannot name itself) but is listed like one.
    const bool from_option = !config->empty();
    const std::string config_source =
        from_option ? "option" : std::string(config::to_string(r.config.path_source()));
    const std::string config_origin = from_option ? "--config"
                                      : r.config.path_source() == config::Source::kEnvironment
                                          ? std::string(config::kConfigEnv)
                                          : "";
    constexpr std::string_view kConfigDoc =
        "host configuration file (rdma-qos.conf(5)); every key can be overridden by its "
        "variable";
    if (*json) {
      nlohmann::json out{{"config_file", r.config.path()},
                         {"config_file_found", r.config.file_found()}};
      auto& list = out["knobs"] = nlohmann::json::array();
      list.push_back({{"key", nullptr},
                      {"env", config::kConfigEnv},
                      {"value", r.config.path()},
                      {"default", config::kDefaultConfigPath},
                      {"source", config_source},
                      {"origin", config_origin},
                      {"doc", kConfigDoc}});
      for (const auto& k : config::knobs()) {
        const auto& v = r.config.get(k.key);
        list.push_back(
            {{"key", k.environment_only ? nlohmann::json(nullptr) : nlohmann::json(k.key)},
             {"env", k.env},
             {"value", v.text},
             {"default", k.default_value},
             {"source", config::to_string(v.source)},
             {"origin", v.origin},
             {"doc", k.doc}});
      }
      auto& errors = out["errors"] = nlohmann::json::array();
      for (const auto& e : r.errors) errors.push_back(format_diagnostic(e));
      auto& warnings = out["warnings"] = nlohmann::json::array();
      for (const auto& w : r.warnings) warnings.push_back(format_diagnostic(w));
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << fmt::format("# configuration file: {}{}\n", r.config.path(),
                               r.config.file_found() ? "" : " (not present)");
      std::cout << fmt::format("#\n# {}\n# default: \"{}\"; from {}{}\n{}=\"{}\"\n", kConfigDoc,
                               config::kDefaultConfigPath, config_source,
                               config_origin.empty() ? "" : " (" + config_origin + ")",
                               config::kConfigEnv, r.config.path());
      for (const auto& k : config::knobs()) {
        const auto& v = r.config.get(k.key);
        std::cout << fmt::format("#\n# {}\n# {}; default: \"{}\"; from {}{}\n{}=\"{}\"\n", k.doc,
                                 k.environment_only ? std::string("environment only")
                                                    : fmt::format("rdma-qos.conf key: {}", k.key),
                                 k.default_value, config::to_string(v.source),
                                 v.origin.empty() ? "" : " (" + v.origin + ")", k.env, v.text);
      }
    }
    set_exit_code(r.errors.empty() ? 0 : 1);
  });
}

const CommandRegistration kRegistration{"env", &setup_env};

}  // namespace
}  // namespace rdmaqos::cli::cmd_env
