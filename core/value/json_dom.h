// The simdjson document of a JSON text, for readers that check a document
// against an expected shape without building a Value of all of it (the
// structured replies of lm_schema_call). from_json is
// json_value(parse_json_dom(text)).
#pragma once

#include <simdjson.h>

#include <string_view>

#include "value/value.h"

namespace af {

// Parses json with this thread's parser: the element stays valid until the
// thread's next call of parse_json_dom or from_json. INVALID_ARGUMENT
// "invalid JSON: ..." as from_json.
simdjson::dom::element parse_json_dom(std::string_view json);

// The Value of an element (and all under it). INVALID_ARGUMENT where a
// Value cannot hold what JSON can: an integer beyond int64, a duplicate key.
Value json_value(simdjson::dom::element e);

}  // namespace af
