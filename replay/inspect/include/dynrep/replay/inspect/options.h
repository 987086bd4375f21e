// How a replay-inspect report is printed: as JSON or text, with colour or without. Its own
// header so the renderers every report shares (render.h) need not see the commands.
#pragma once

namespace dynrep::replay {

struct InspectOptions {
  bool json = false;
  bool color = false;  // ANSI colour in text output
};

}  // namespace dynrep::replay
