// dynamo_replay._core: the C++ core as a private extension module.
#include "bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "dynamo-replay C++ core (private: import dynamo_replay instead)";
  m.attr("__version__") = DYNREP_VERSION;
  dynrep::python::registerStore(m);
  dynrep::python::registerRecords(m);
}
