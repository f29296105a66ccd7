#pragma once
// Stands in for the toolkit's cuda_runtime.h (the device half of which
// only nvcc compiles) in the emulated kernel files.
#include "EmuCuda.h"
