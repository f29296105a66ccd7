#pragma once
#include <string>

namespace strata {

// Writes PATH.tmp-XXXX, fsyncs it and renames it over PATH: after a crash or
// a kill at any moment PATH holds either the old contents or the complete new
// ones. On failure the previous file is untouched and bad_input says why.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace strata
