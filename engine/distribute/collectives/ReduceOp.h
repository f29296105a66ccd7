#pragma once

namespace strata {
enum class ReduceOp { Sum, Mean };
}
