// (being written) lowerings of this family.
#include "ops.h"

namespace dynrep::replay::lowering {

void addConvolutionOps(OpTable& table) { (void)table; }

}  // namespace dynrep::replay::lowering
