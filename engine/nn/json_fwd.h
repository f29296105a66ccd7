#pragma once
#include <nlohmann/json_fwd.hpp>

namespace strata {
using Json = nlohmann::json;
}
