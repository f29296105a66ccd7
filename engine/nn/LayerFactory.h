#pragma once
#include <string>
#include <vector>

#include "nn/Layer.h"
#include "nn/json_fwd.h"

namespace strata::nn {

// Builds a layer from its project-file JSON ({"type": "dense", "units": 128,
// ...}). Problems are bad_input errors prefixed with `path`, e.g.
// "model.layers[2].units: must be a positive integer, got -3". check_layer
// collects all problems of one layer instead of stopping at the first.
LayerPtr make_layer(const Json& spec, const std::string& path);
std::vector<std::string> check_layer(const Json& spec, const std::string& path);
// Layer types the factory knows, for editors and messages.
std::vector<std::string> layer_types();

}  // namespace strata::nn
