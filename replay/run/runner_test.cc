// The libtorch graph runner on the kept capture of schema 1.5 (tests/data): a stored forward and
// backward graph run from the store alone reproduce their first-call samples, and a graph the
// store lacks is an error that names it.
#include <string>

#include <gtest/gtest.h>

#include "dynrep/replay/query/job.h"
#include "dynrep/replay/run/runner.h"

namespace dynrep::replay::run {
namespace {

const std::string kKept = std::string(DYNREP_SOURCE_DIR) + "/tests/data/capture-1.5/every-record.dynrep";

TEST(Runner, StoredGraphsReproduceTheirSamples) {
  Result<OpenedJob> opened = openJob(kKept);
  ASSERT_TRUE(opened.isOk()) << opened.status().message();
  for (const char* graph : {"forward", "backward"}) {
    RunOptions options;
    options.graph = graph;
    Result<RunReport> r = runGraph(opened->job, "0/0", options);
    ASSERT_TRUE(r.isOk()) << graph << ": " << r.status().message();
    EXPECT_TRUE(r->ok()) << graph << ": " << (r->failure ? r->failure->message : "");
    ASSERT_FALSE(r->outputs.empty()) << graph;
    for (const OutputCheck& o : r->outputs)
      EXPECT_TRUE(o.status == "bitwise" || o.status == "close")
          << graph << " output " << o.position << ": " << o.status;
  }
}

TEST(Runner, AMissingGraphIsNamed) {
  Result<OpenedJob> opened = openJob(kKept);
  ASSERT_TRUE(opened.isOk());
  RunOptions options;
  options.graph = "inference";
  Result<RunReport> r = runGraph(opened->job, "0/0", options);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("inference"), std::string::npos) << r.status().message();
}

TEST(Runner, AMissingCompileIsAnErrorNotAReport) {
  Result<OpenedJob> opened = openJob(kKept);
  ASSERT_TRUE(opened.isOk());
  Result<RunReport> r = runGraph(opened->job, "7/0", RunOptions());
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Status::Code::NotFound);
  EXPECT_EQ(r.status().message(), "no compile 7/0 in this store");
}

TEST(Runner, RandomInputsAreDescribedWithTheirSeed) {
  RunOptions options;
  EXPECT_EQ(inputsDescription(options), "samples");
  options.inputs = InputSource::Random;
  options.seed = 3;
  EXPECT_EQ(inputsDescription(options), "random (seed 3)");
}

}  // namespace
}  // namespace dynrep::replay::run
