// What this machine can hold: checked before allocating anything whose size a file or a flag decides.
#pragma once

#include <cstdint>
#include <string>

namespace sharelens {

int64_t physicalMemoryBytes();  // installed RAM (sysconf); 0 when unknown

// Throws a named Error when `bytes` (what `what` needs, e.g. "training 'demo' at batch 16") exceeds this
// machine's memory; `hint` says what to change.
void requireFitsInMemory(double bytes, const std::string& what, const std::string& hint);

// A TCP port on the loopback interface that nothing listens on now: bound and released, for a c10d
// rendezvous that binds it again at once. Throws a named Error (`where` says who asked) when the kernel gives
// none.
int freeLoopbackPort(const std::string& where);

}  // namespace sharelens
