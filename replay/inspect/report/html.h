// HTML text for the report: escaping of everything that comes from a store (untrusted: a
// captured string may hold markup), and a JSON value rendered as nested lists. Private to
// replay/inspect.
// Thread-safety: pure functions.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dynrep::replay::html {

// Text safe in element content and in quoted attribute values: & < > " ' as character
// references, invalid UTF-8 and control characters other than tab, newline and carriage
// return as U+FFFD.
std::string escape(std::string_view text);

// A JSON value as HTML: an object as a definition list (the keys in `first` first, in that
// order, then the rest), an array as an ordered list (scalars inline), multi-line text as
// <pre>. Every string is escaped.
void renderJson(std::ostream& out, const nlohmann::json& value, const std::vector<std::string>& first = {});

}  // namespace dynrep::replay::html
