// Helpers shared by kgym's tests: paths into the source tree, devices, requests.
#pragma once

#include <string>
#include <vector>

#include "messages/kgym.pb.h"

namespace kgym::test {

std::string source_path(const std::string& relative);  // under kgym_home()
std::string read_text(const std::string& path);

// Whether a process whose command line holds `needle` is alive (gtest's own command lines,
// which name it in their filters, left out): the tests' marker for what a candidate started.
// Processes below another test binary are another test's (shards or ctest entries side by side
// on one host run the same candidates); one that escaped to the host's init counts.
bool process_with_argument(const std::string& needle);
// Every process /proc lists now, by pid.
std::vector<int> all_processes();
// The processes `parent` started that still run (not zombies).
std::vector<int> live_children_of(int parent);
// The parent of process `pid` (/proc/PID/stat), 0 once it is gone.
int parent_of(int pid);
// The device the suite runs on: $KGYM_TEST_DEVICE ("cpu" by default, or "cuda").
Device test_device();
bool gpu_present();
std::string python();
// A request for `candidate_source` against a built-in task, with the suite's short limits.
ExecRequest request_for(const std::string& task_id, const std::string& candidate_id,
                        const std::string& candidate_source);

// Trace phase calls by the names the executor gives them ("batch", "timed:0"; see
// messages/trace_phase.hpp), and back; a phase call in the trace's JSON, by its name.
std::vector<PhaseCall> phase_calls_named(const std::vector<std::string>& names);
std::vector<std::string> phase_names(const std::vector<PhaseCall>& calls);
std::string phase_json(const std::string& name);

}  // namespace kgym::test
