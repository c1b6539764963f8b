// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SPANK plugin: --rdma-qos=CLASS on srun, sbatch and salloc. At submission (srun, sbatch,
// salloc) it checks the class against the site's rules and refuses a forbidden one; when a step
// starts (slurmstepd, as root) it checks again, where the account and partition are known, and
// fills the tasks' environment. Anything that goes wrong on the rdma-qos side leaves the job
// running with stock behaviour and says why once. No exception leaves this file: Slurm is C.
// spank.h declares the slurm_spank_* hooks outside its own extern "C" block.
extern "C" {
#include <slurm/spank.h>
}
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "identity.h"
#include "rdma-qos/slurm/class_names.h"
#include "rdma-qos/slurm/job_env.h"
#include "rdma-qos/slurm/site_rules.h"

extern "C" {
// Slurm reads these three symbols to know what it loaded.
extern const char plugin_name[] __attribute__((visibility("default")));
extern const char plugin_type[] __attribute__((visibility("default")));
extern const unsigned int plugin_version __attribute__((visibility("default")));
extern const unsigned int spank_plugin_version __attribute__((visibility("default")));
const char plugin_name[] = "rdma_qos";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER;
const unsigned int spank_plugin_version = 1;
}

namespace rdmaqos::slurm {
namespace {

// One instance per process that loads the plugin (srun, sbatch, salloc, each slurmstepd).
struct PluginState {
  ParsedRules parsed;
  bool rules_ok = false;
  std::optional<ClassSpec> option;  // --rdma-qos
  std::string option_text;
  std::string task_message;  // printed once on the job's stderr by task 0
  bool refused = false;      // task_message is a refusal: every task fails
};

PluginState& state() {
  static PluginState s;
  return s;
}

std::string job_env(spank_t sp, const char* name) {
  std::vector<char> buf(4096);
  if (spank_getenv(sp, name, buf.data(), static_cast<int>(buf.size())) != ESPANK_SUCCESS) return {};
  return std::string(buf.data());
}

int on_option(int, const char* value, int) {
  try {
    PluginState& s = state();
    s.option_text = value ? value : "";
    s.option = parse_class_spec(s.option_text);
    if (!s.option) {
      slurm_error(
          "rdma-qos: --rdma-qos=%s: a class is a number 0..4095 or a level name of up to "
          "64 letters, digits, '_', '-', '.'",
          s.option_text.c_str());
      return -1;
    }
    return 0;
  } catch (const std::exception& e) {
    slurm_error("rdma-qos: %s", e.what());
    return 0;
  }
}

struct spank_option rdma_qos_option = {
    const_cast<char*>("rdma-qos"),
    const_cast<char*>("CLASS"),
    const_cast<char*>("QoS class of the job's RDMA traffic: a number or a level name of the "
                      "site's QoS policy (rdma-qos-slurm(8))"),
    1,
    0,
    on_option};

std::string step_name(uint32_t step) {
  switch (step) {
    case 0xfffffffbU: return "batch";
    case 0xfffffffcU: return "extern";
    case 0xfffffffdU: return "interactive";
    default: return std::to_string(step);
  }
}

std::string refusal(const AllowRule& rule, const ClassNames& names, uint16_t number,
                    const Identity& who) {
  return fmt::format("rdma-qos: class {} is reserved by {}; {} is not named there",
                     names.describe(number), argument_origin(rule.argument, rule.text),
                     describe(who));
}

// srun, sbatch, salloc: refuse what the rules forbid before the job is queued.
int check_at_submission(spank_t sp) {
  PluginState& s = state();
  if (!s.option) return 0;
  ClassNames names = ClassNames::load(s.parsed.rules);
  auto number = names.resolve(*s.option);
  if (!number) {
    if (names.problem()) {
      slurm_error(
          "rdma-qos: --rdma-qos=%s cannot be resolved (%s); the job runs without an "
          "rdma-qos class",
          s.option_text.c_str(), names.problem()->message.c_str());
      return 0;
    }
    slurm_error(
        "rdma-qos: --rdma-qos=%s: no such class: not a number, no level of %s reached "
        "by a qos-class rule, no class= alias in plugstack.conf",
        s.option_text.c_str(), names.policy_file().c_str());
    return -1;
  }
  // The account is known here only from the environment; account= rules are checked again,
  // with the job's real account, when the step starts.
  std::string account;
  for (const char* var : {"SLURM_ACCOUNT", "SBATCH_ACCOUNT", "SALLOC_ACCOUNT"})
    if (const char* v = getenv(var); v != nullptr && *v != '\0') account = v;
  std::vector<gid_t> groups(static_cast<size_t>(std::max(getgroups(0, nullptr), 0)));
  groups.resize(
      static_cast<size_t>(std::max(getgroups(static_cast<int>(groups.size()), groups.data()), 0)));
  Identity who = identity_of(getuid(), getgid(), groups, account);
  auto resolve = [&](const ClassSpec& c) { return names.resolve(c); };
  if (const AllowRule* rule = refusing_rule(s.parsed.rules, *number, who, resolve)) {
    // Without a known account an account= rule may still let the job through at start.
    bool account_may_allow = account.empty();
    bool names_account = false;
    for (const AllowRule& r : s.parsed.rules.allow)
      if (resolve(r.cls) == number)
        for (const Principal& p : r.who) names_account |= p.kind == PrincipalKind::kAccount;
    if (!(account_may_allow && names_account)) {
      slurm_error("%s", refusal(*rule, names, *number, who).c_str());
      return -1;
    }
  }
  // Recorded with the job: prolog and epilog scripts see it as SPANK_RDMA_QOS_CLASS.
  spank_job_control_setenv(sp, "RDMA_QOS_CLASS", std::to_string(*number).c_str(), 1);
  return 0;
}

// slurmstepd: decide the step's class and fill its environment.
int prepare_step(spank_t sp) {
  PluginState& s = state();
  uint32_t job = 0, step = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  spank_get_item(sp, S_JOB_UID, &uid);
  spank_get_item(sp, S_JOB_GID, &gid);
  gid_t* gids = nullptr;
  int ngids = 0;
  std::vector<gid_t> supplementary;
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) == ESPANK_SUCCESS && gids)
    supplementary.assign(gids, gids + ngids);
  const std::string where = fmt::format("job {} step {}", job, step_name(step));
  const std::string partition = job_env(sp, "SLURM_JOB_PARTITION");
  Identity who = identity_of(uid, gid, supplementary, job_env(sp, "SLURM_JOB_ACCOUNT"));
  const SiteRules& rules = s.parsed.rules;

  auto stock = [&](const std::string& why) {
    slurm_error("rdma-qos: %s: %s; the job runs with the stacks' own defaults", where.c_str(),
                why.c_str());
    s.task_message = fmt::format("rdma-qos: {}; this job runs with the stacks' own defaults", why);
    return 0;
  };

  ClassNames names = ClassNames::load(rules);
  auto resolve = [&](const ClassSpec& c) { return names.resolve(c); };
  std::optional<uint16_t> number;
  std::string source;
  bool asked = false;
  const std::string user_class = job_env(sp, "RDMA_QOS_CLASS");
  if (s.option) {
    number = names.resolve(*s.option);
    if (!number) {
      if (names.problem())
        return stock(fmt::format("--rdma-qos={} cannot be resolved ({})", s.option_text,
                                 names.problem()->message));
      s.task_message = fmt::format("rdma-qos: --rdma-qos={}: no such class in {}", s.option_text,
                                   names.policy_file());
      s.refused = true;
      slurm_error("%s (%s)", s.task_message.c_str(), where.c_str());
      return 0;
    }
    if (const AllowRule* rule = refusing_rule(rules, *number, who, resolve)) {
      // Failing here would leave the user with Slurm's "Plugin initialization failed"; the
      // tasks fail instead, and task 0 prints the rule on the job's stderr.
      s.task_message = refusal(*rule, names, *number, who);
      s.refused = true;
      slurm_error("%s (%s)", s.task_message.c_str(), where.c_str());
      return 0;
    }
    source = "--rdma-qos";
    asked = true;
  } else if (!user_class.empty()) {
    // The user's own RDMA_QOS_CLASS stays; the stacks' variables follow it unless the class is
    // reserved to others.
    auto spec = parse_class_spec(user_class);
    number = spec ? names.resolve(*spec) : std::nullopt;
    if (!number)
      return stock(
          fmt::format("RDMA_QOS_CLASS={} in the job's environment is not a class", user_class));
    auto ours = parse_marker(job_env(sp, std::string(kMarkerVariable).c_str()));
    auto earlier = ours.find("RDMA_QOS_CLASS");
    if (earlier != ours.end() && earlier->second == user_class) {
      source = "an earlier step of the job";  // checked when that step started
    } else {
      if (const AllowRule* rule = refusing_rule(rules, *number, who, resolve))
        return stock(fmt::format("RDMA_QOS_CLASS={} in the job's environment: {}", user_class,
                                 refusal(*rule, names, *number, who)));
      source = "RDMA_QOS_CLASS in the job's environment";
    }
  } else if (const ClassSpec* def = site_default(rules, partition)) {
    number = names.resolve(*def);
    if (!number)
      return stock(
          fmt::format("the site's default class '{}' cannot be resolved ({})", def->text,
                      names.problem() ? names.problem()->message : "no such level or alias"));
    source = rules.default_class && def == &*rules.default_class
                 ? std::string("the site's default (default=)")
                 : fmt::format("partition {}'s default", partition);
  } else {
    return 0;  // no class asked, none by default: stock behaviour, nothing to say
  }

  RunEnvAnswer answer = run_run_env(rules, *number);
  if (answer.error) return stock(answer.error->message);
  // Said where the job's owner and the administrator look: the job's stderr (task 0) and
  // slurmd's log. The variables are set all the same.
  for (const std::string& w : answer.warnings) {
    slurm_info("rdma-qos: %s: warning: %s", where.c_str(), w.c_str());
    s.task_message += (s.task_message.empty() ? "" : "\n") + std::string("rdma-qos: warning: ") + w;
  }
  auto lookup = [&](std::string_view name) -> std::optional<std::string> {
    std::string v = job_env(sp, std::string(name).c_str());
    if (v.empty()) return std::nullopt;
    return v;
  };
  std::vector<std::string> set, kept;
  for (const EnvChange& c : plan_job_env(*number, asked, answer.values, rules, lookup)) {
    if (c.kept_user) {
      kept.push_back(fmt::format("{}={} (policy: {})", c.name, c.user_value, c.value));
      continue;
    }
    if (spank_setenv(sp, c.name.c_str(), c.value.c_str(), 1) != ESPANK_SUCCESS)
      return stock(fmt::format("cannot set {} in the job's environment", c.name));
    if (c.name != kMarkerVariable) set.push_back(fmt::format("{}={}", c.name, c.value));
  }
  slurm_info("rdma-qos: %s user %s: class %s from %s; set %s%s%s", where.c_str(), who.user.c_str(),
             names.describe(*number).c_str(), source.c_str(),
             set.empty() ? "nothing" : fmt::format("{}", fmt::join(set, " ")).c_str(),
             kept.empty() ? "" : "; kept the user's ",
             fmt::format("{}", fmt::join(kept, " ")).c_str());
  return 0;
}

template <typename F>
int guarded(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    slurm_error("rdma-qos: %s: %s; the job runs with stock behaviour", what, e.what());
  } catch (...) {
    slurm_error("rdma-qos: %s failed; the job runs with stock behaviour", what);
  }
  return 0;
}

}  // namespace
}  // namespace rdmaqos::slurm

using namespace rdmaqos::slurm;

extern "C" __attribute__((visibility("default"))) int slurm_spank_init(spank_t sp, int ac,
                                                                       char** av) {
  return guarded("init", [&] {
    const spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE) return 0;
    PluginState& s = state();
    std::vector<std::string_view> args(av, av + ac);
    s.parsed = parse_site_rules(args);
    s.rules_ok = s.parsed.errors.empty();
    for (const rdmaqos::Diagnostic& e : s.parsed.errors)
      slurm_error("rdma-qos: %s: %s; --rdma-qos is ignored until it is fixed", e.origin.c_str(),
                  e.message.c_str());
    // The option exists even with broken rules, so job scripts that use it keep working.
    if (spank_option_register(sp, &rdma_qos_option) != ESPANK_SUCCESS)
      slurm_error("rdma-qos: cannot register --rdma-qos");
    return 0;
  });
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_init_post_opt(spank_t sp, int,
                                                                                char**) {
  PluginState& s = state();
  if (!s.rules_ok) {
    if (spank_context() == S_CTX_REMOTE && !s.parsed.errors.empty())
      s.task_message =
          "rdma-qos: the site's plugstack.conf arguments for rdma-qos have errors "
          "(slurmd's log names them); this job runs with the stacks' own defaults";
    return 0;
  }
  switch (spank_context()) {
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR:
      return guarded("submission check", [&] { return check_at_submission(sp); });
    case S_CTX_REMOTE: return guarded("step set-up", [&] { return prepare_step(sp); });
    default: return 0;
  }
}

extern "C" __attribute__((visibility("default"))) int slurm_spank_task_init(spank_t sp, int,
                                                                            char**) {
  return guarded("task", [&] {
    PluginState& s = state();
    uint32_t rank = 0;
    if (s.task_message.empty()) return 0;
    if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) == ESPANK_SUCCESS && rank == 0)
      std::fprintf(stderr, "%s\n", s.task_message.c_str());
    return s.refused ? -1 : 0;
  });
}
