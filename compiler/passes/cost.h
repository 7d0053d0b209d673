#pragma once
// The static cost check's settings and answers (compiler/passes/check_cost.cc), shared by the
// front end's callers: `kiln check --cost` prints the formulas.

#include <map>
#include <string>
#include <vector>

#include "compiler/source.h"

namespace kiln {

// The process-wide ceiling and sizes every CostLimits starts from (`kiln --policy-max-cost`,
// `--policy-cost-size`, set once at startup before anything compiles).
double DefaultMaxHandlerCost();
void SetDefaultMaxHandlerCost(double steps);
// Overrides one size of DefaultCostBounds(); false when `symbol` is not one of its sizes.
bool SetDefaultCostBound(const std::string& symbol, double value);

// The sizes assumed for what handlers iterate (symbol → largest value; unset symbols take
// DefaultCostBounds()), and the most steps one handler call may take at those sizes.
struct CostLimits {
  std::map<std::string, double> bounds;
  // 1e11 steps: the built-in policies' most expensive handlers (predicates' topology spread, drf's
  // hierarchical reclaim) estimate 1e9-1e10 at the bounds; two nested range(1000000) loops
  // estimate 2e12. At run time each call is also held to PolicyCallIterationBudget() (1e8 loop
  // iterations): the static check catches hopeless loop nests before they load, the run-time
  // budget catches the rest.
  double max_handler_cost = DefaultMaxHandlerCost();
};

// One handler's estimate: the formula in the size symbols and its value at the bounds.
struct HandlerCost {
  std::string handler;
  SourceRange range;
  std::string formula;
  double worst = 0;
};

// nodes 10k, jobs 10k, queues 1k, candidates and tasks 100k, tasks_per_job 1k, tasks_per_node
// 1k, collection 100, ... (as changed by SetDefaultCostBound)
std::map<std::string, double> DefaultCostBounds();

}  // namespace kiln
