// html::escape and html::renderJson.
#include "report/html.h"

#include <algorithm>
#include <vector>

#include "dynrep/replay/query/json_fields.h"

namespace dynrep::replay::html {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at text[i], or 0 (overlong forms, surrogates and code
// points past U+10FFFF are invalid).
size_t utf8Length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t n = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 && lead <= 0xDF ? 2 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  unsigned char second = byte(i + 1);
  if (lead == 0xE0 && second < 0xA0) return 0;   // overlong
  if (lead == 0xED && second >= 0xA0) return 0;  // surrogate
  if (lead == 0xF0 && second < 0x90) return 0;   // overlong
  if (lead == 0xF4 && second >= 0x90) return 0;  // past U+10FFFF
  return n;
}

bool scalar(const nlohmann::json& v) { return !v.is_structured(); }

void renderScalar(std::ostream& out, const nlohmann::json& v) {
  if (v.is_null()) {
    out << "<span class=\"none\">none</span>";
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find('\n') != std::string::npos)
      out << "<pre>" << escape(s) << "</pre>";
    else
      out << escape(s);
  } else {
    out << escape(dumpJson(v));
  }
}

void render(std::ostream& out, const nlohmann::json& v, const std::vector<std::string>& first, int depth) {
  if (depth > 12) {  // a store can nest deeper than anyone reads; the rest as JSON text
    out << "<code>" << escape(dumpJson(v)) << "</code>";
    return;
  }
  if (v.is_object()) {
    if (v.empty()) {
      out << "<span class=\"none\">none</span>";
      return;
    }
    std::vector<std::string> keys;
    for (const std::string& k : first)
      if (v.contains(k)) keys.push_back(k);
    for (auto it = v.begin(); it != v.end(); ++it)
      if (std::find(first.begin(), first.end(), it.key()) == first.end()) keys.push_back(it.key());
    out << "<dl class=\"kv\">";
    for (const std::string& k : keys) {
      out << "<dt>" << escape(k) << "</dt><dd>";
      render(out, v[k], first, depth + 1);
      out << "</dd>";
    }
    out << "</dl>";
    return;
  }
  if (v.is_array()) {
    if (v.empty()) {
      out << "<span class=\"none\">none</span>";
      return;
    }
    if (std::all_of(v.begin(), v.end(), scalar) && v.size() <= 16) {
      bool sep = false;
      for (const nlohmann::json& item : v) {
        out << (sep ? ", " : "");
        renderScalar(out, item);
        sep = true;
      }
      return;
    }
    out << "<ol>";
    for (const nlohmann::json& item : v) {
      out << "<li>";
      render(out, item, first, depth + 1);
      out << "</li>";
    }
    out << "</ol>";
    return;
  }
  renderScalar(out, v);
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    unsigned char ch = static_cast<unsigned char>(text[i]);
    if (ch >= 0x80) {
      size_t n = utf8Length(text, i);
      if (n == 0) {
        out += kReplacement;
        ++i;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t':
      case '\n':
      case '\r': out += char(ch); break;
      default:
        if (ch < 0x20 || ch == 0x7F)
          out += kReplacement;
        else
          out += char(ch);
    }
    ++i;
  }
  return out;
}

void renderJson(std::ostream& out, const nlohmann::json& value, const std::vector<std::string>& first) {
  render(out, value, first, 0);
}

}  // namespace dynrep::replay::html
