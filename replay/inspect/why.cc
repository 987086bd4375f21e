// Placeholder until the why-answer lands: an empty answer of the documented shape.
#include "why.h"

namespace dynrep::replay {

nlohmann::json explainJob(const Job&, const std::string&, const std::string&) {
  return {{"compiles", nlohmann::json::array()}, {"functions", nlohmann::json::array()}};
}

}  // namespace dynrep::replay
