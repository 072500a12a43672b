// The kgym subcommands; each takes the arguments after its name and returns an exit code.
#pragma once

#include <string>
#include <vector>

namespace kgym::cli {

int run_check(const std::vector<std::string>& argv);
int run_tasks(const std::vector<std::string>& argv);
int run_train(const std::vector<std::string>& argv);
int run_report(const std::vector<std::string>& argv);
int run_top(const std::vector<std::string>& argv);
int run_serve(const std::vector<std::string>& argv);
int run_worker(const std::vector<std::string>& argv);
int run_eval(const std::vector<std::string>& argv);
int run_web(const std::vector<std::string>& argv);

}  // namespace kgym::cli
