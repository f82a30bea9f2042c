// SPDX-License-Identifier: MIT
// The `edgetrace merge` subcommand: several dumps into one (.etr) or one JSON timeline.
#include "cli.hpp"

#include <edgetrace/sinks/chrome_json/writer.hpp>
#include <edgetrace/sinks/merge.hpp>
#include <string>
#include <vector>

namespace edgetrace_cli {

namespace {

/// The merge as Chrome JSON: every input shifted and renumbered per plan.
std::vector<et::chrome_json_input> merged_json_inputs(const std::vector<et::dump_reader*>& inputs,
                                                      const et::merge_plan& plan) {
  std::vector<et::chrome_json_input> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    et::chrome_json_input in;
    in.reader = inputs[i];
    in.shift_ns = plan.shift_ns[i];
    in.pid_override = plan.pid_override[i];
    out.push_back(in);
  }
  return out;
}

}  // namespace

int run_merge(const command& c, const arguments& args) {
  parsed_options p;
  if (const int rc = parse_options(c, args, {"--output", "--clock"}, p); rc != exit_ok) return rc;
  if (p.help) return command_help(c);
  if (p.positional.size() < 2) return usage_error(&c, "'merge' needs at least two dumps");
  const std::string* output = p.get("--output");
  if (!output || output->empty()) return usage_error(&c, "'merge' needs -o OUT.etr or -o OUT.json");
  const bool etr = ends_with(*output, ".etr");
  if (!etr && !ends_with(*output, ".json"))
    return usage_error(&c, "the output's extension picks the format: .etr or .json, not '" + *output + "'");
  if (const int rc = refuse_overwriting_inputs(p.positional, {*output}); rc != exit_ok) return rc;
  et::merge_clock clock = et::merge_clock::automatic;
  if (const std::string* v = p.get("--clock")) {
    if (*v == "auto") clock = et::merge_clock::automatic;
    else if (*v == "monotonic") clock = et::merge_clock::monotonic;
    else if (*v == "realtime") clock = et::merge_clock::realtime;
    else return usage_error(&c, "--clock must be auto, monotonic or realtime, not '" + *v + "'");
  }
  std::vector<std::unique_ptr<et::dump_reader>> readers;
  if (const int rc = open_dumps(p.positional, readers); rc != exit_ok) return rc;
  for (std::size_t i = 1; i < readers.size(); ++i)
    if (readers[i]->version_major() != readers[0]->version_major())
      return input_error(p.positional[i], "dump format " + std::to_string(readers[i]->version_major()) +
                                              ".x cannot be merged with " + p.positional[0]);
  if (!etr)  // a .etr merge copies chunks; JSON needs times
    for (const auto& r : readers)
      if (!r->unknown_rate().empty()) return input_error(r->path(), r->unknown_rate());
  std::vector<et::dump_reader*> inputs;
  for (auto& r : readers) inputs.push_back(r.get());
  et::merge_plan plan;
  std::string error;
  if (!et::plan_merge(inputs, p.positional, clock, plan, error)) return input_error("merge", error);
  for (const std::string& note : plan.notes) std::fprintf(stderr, "edgetrace: note: %s\n", note.c_str());
  std::FILE* out = std::fopen(output->c_str(), "wb");
  if (!out) return output_error(*output, "cannot write");
  bool ok;
  if (etr) {
    ok = et::write_merged_dump(inputs, plan, out, error);
  } else {
    et::chrome_json_options options;
    options.source_name = joined(p.positional);
    ok = et::write_chrome_json(merged_json_inputs(inputs, plan), out, options, nullptr, &error);
  }
  const bool closed = std::fclose(out) == 0;
  if (!ok || !closed) {
    remove_partial_output(*output);
    return input_error(*output, error.empty() ? "write error" : error);
  }
  return report_all(readers, "merged into " + *output);
}

}  // namespace edgetrace_cli
