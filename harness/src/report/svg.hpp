// What the SVG writers (timeline.svg, the line plots) share.
#pragma once

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>

namespace wanlab::harness::detail {

// Text for SVG/XML content and attribute values.
inline std::string xml_escape(std::string_view text) {
  std::string escaped;
  for (char c : text) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

// A round tick step for an axis spanning `span`: the least of `multiples` x a
// power of ten that gives at most about `target` steps.
inline double tick_step(double span, int target, std::initializer_list<double> multiples) {
  double raw = std::max(span, 1e-12) / target;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double multiple : multiples) {
    if (multiple * magnitude >= raw) return multiple * magnitude;
  }
  return 10 * magnitude;
}

}  // namespace wanlab::harness::detail
