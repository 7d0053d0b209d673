#pragma once
// The action singletons, one per file of runtime/actions/. Only action.cc (the registry) and
// tests should need these; everyone else goes through FindAction(name).

#include "runtime/actions/action.h"

namespace kiln {

const Action& EnqueueAction();   // enqueue.cc
const Action& AllocateAction();  // allocate.cc
const Action& BackfillAction();  // backfill.cc
const Action& PreemptAction();   // preempt.cc
const Action& ReclaimAction();   // reclaim.cc
const Action& ShuffleAction();   // shuffle.cc
const Action& GangPreemptAction();  // gang_evict.cc
const Action& GangReclaimAction();  // gang_evict.cc

}  // namespace kiln
