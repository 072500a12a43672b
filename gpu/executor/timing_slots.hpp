// Timing slots held host-wide. A CUDA executor times on the cores of its timing slot
// (timing_cores_for); slots were numbered within each process, so two kgym processes on one
// host (kgym serve on GPU 0 beside kgym train on GPU 1, or kgym check beside either) both took
// slot 0 and timed on the same cores (on 4 H100s the identity answers of a level-1 sweep came
// back 0.60-0.96 while a kgym train ran beside it, most likely from this). Now each process slot is claimed on the
// host: the first slot no other process holds (a lock on a file in the temporary directory,
// kept for the process's lifetime and released by the kernel when it ends, however it ends).
#pragma once

#include <string>
#include <vector>

namespace kgym {

// The first slot, from 0, whose lock file in `dir` ("kgym-timing-slot-N.lock") no one else
// holds, now held by this process through a descriptor appended to `held`; -1 when none of
// the first `limit` can be opened and locked.
int claim_free_timing_slot(const std::string& dir, int limit, std::vector<int>* held);

// The host slot of this process's slot `local` (0, 1, ...: an executor's place among the
// process's executors): claimed on first use in the temporary directory, the same answer
// afterwards; `local` itself where no slot can be claimed (a read-only /tmp).
int host_timing_slot(int local);

}  // namespace kgym
