#pragma once
#include <string>

#include "nn/json_fwd.h"
#include "train/Events.h"

namespace strata {

// One JSON object per event, with the field names of docs/events.md.
Json event_to_json(const Event& event);
std::string event_to_jsonl(const Event& event);  // one line, no newline
// Parses one line; bad_input naming the problem for malformed input.
Event event_from_json(const Json& j);
Event event_from_jsonl(const std::string& line);

}  // namespace strata
