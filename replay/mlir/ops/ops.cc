// The table of operator lowerings that each ops/*.cc family adds itself to.
#include "ops.h"

namespace dynrep::replay::lowering {

const OpTable& builtinOps() {
  static const OpTable table = [] {
    OpTable t;
    addElementwiseOps(t);
    addCreationOps(t);
    addShapeOps(t);
    addLinearOps(t);
    addConvolutionOps(t);
    addReductionOps(t);
    addNormalizationOps(t);
    addIndexingOps(t);
    addDataDependentOps(t);
    addLossOps(t);
    addAttentionOps(t);
    addDistanceOps(t);
    addGridSampleOps(t);
    addRoutingOps(t);
    addQuantizeOps(t);
    addStridedOps(t);
    addComplexOps(t);  // after addElementwiseOps: it extends abs and exp
    addFftOps(t);
    return t;
  }();
  return table;
}

}  // namespace dynrep::replay::lowering
